//! A TCP relay in front of a node's listener whose connections can all be
//! cut at once: a connection failure that both ends see, while the node
//! behind it lives on.

use std::sync::{Arc, Mutex};

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::tcp::{OwnedReadHalf, OwnedWriteHalf};
use tokio::net::{TcpListener, TcpStream};
use tokio::task::JoinHandle;

/// Relays every connection made to `port` to the target port.
pub struct Relay {
    pub port: u16,
    links: Arc<Mutex<Vec<JoinHandle<()>>>>,
    accept: JoinHandle<()>,
}

async fn pump(mut from: OwnedReadHalf, mut to: OwnedWriteHalf) {
    let mut buf = vec![0u8; 64 * 1024];
    while let Ok(n) = from.read(&mut buf).await {
        if n == 0 || to.write_all(&buf[..n]).await.is_err() {
            return;
        }
    }
}

impl Relay {
    /// A relay on a port of its own to `target` on loopback.
    pub async fn start(target: u16) -> Relay {
        let listener = TcpListener::bind(("127.0.0.1", 0)).await.unwrap();
        let port = listener.local_addr().unwrap().port();
        let links = Arc::new(Mutex::new(Vec::new()));
        let l = links.clone();
        let accept = tokio::spawn(async move {
            while let Ok((inbound, _)) = listener.accept().await {
                let Ok(outbound) = TcpStream::connect(("127.0.0.1", target)).await else {
                    continue;
                };
                let (in_r, in_w) = inbound.into_split();
                let (out_r, out_w) = outbound.into_split();
                let mut links = l.lock().unwrap();
                links.push(tokio::spawn(pump(in_r, out_w)));
                links.push(tokio::spawn(pump(out_r, in_w)));
            }
        });
        Relay {
            port,
            links,
            accept,
        }
    }

    /// Closes every relayed connection: both ends see it fail.
    pub fn cut(&self) {
        for link in self.links.lock().unwrap().drain(..) {
            link.abort();
        }
    }
}

impl Drop for Relay {
    fn drop(&mut self) {
        self.cut();
        self.accept.abort();
    }
}
