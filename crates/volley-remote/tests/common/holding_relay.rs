//! A TCP relay in front of a node's listener that can hold bytes back, in
//! either direction or both, without closing anything: a partition as TCP
//! sees one (nothing is lost, it waits), healed by letting the bytes go on.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::tcp::{OwnedReadHalf, OwnedWriteHalf};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::watch;
use tokio::task::JoinHandle;

/// Relays every connection made to `port` to a node's port on loopback.
pub struct HoldingRelay {
    pub port: u16,
    /// Holds the bytes towards the node.
    to_node: watch::Sender<bool>,
    /// Holds the bytes the node sends back.
    from_node: watch::Sender<bool>,
    /// Chunks read while held, either way.
    held_chunks: Arc<AtomicU64>,
    tasks: Arc<Mutex<Vec<JoinHandle<()>>>>,
}

/// Copies `from` to `to`, holding each chunk read while `held` says so.
async fn pump(
    mut from: OwnedReadHalf,
    mut to: OwnedWriteHalf,
    mut held: watch::Receiver<bool>,
    held_chunks: Arc<AtomicU64>,
) {
    let mut buf = vec![0u8; 64 * 1024];
    loop {
        let n = match from.read(&mut buf).await {
            Ok(0) | Err(_) => return,
            Ok(n) => n,
        };
        if *held.borrow() {
            held_chunks.fetch_add(1, Ordering::Relaxed);
        }
        if held.wait_for(|held| !*held).await.is_err() {
            return;
        }
        if to.write_all(&buf[..n]).await.is_err() {
            return;
        }
    }
}

impl HoldingRelay {
    /// A relay on a port of its own to `target` on loopback.
    pub async fn start(target: u16) -> HoldingRelay {
        let listener = TcpListener::bind(("127.0.0.1", 0)).await.unwrap();
        let port = listener.local_addr().unwrap().port();
        let (to_node, to_node_held) = watch::channel(false);
        let (from_node, from_node_held) = watch::channel(false);
        let tasks = Arc::new(Mutex::new(Vec::new()));
        let links = tasks.clone();
        let held_chunks = Arc::new(AtomicU64::new(0));
        let counted = held_chunks.clone();
        let accept = tokio::spawn(async move {
            while let Ok((client, _)) = listener.accept().await {
                let Ok(node) = TcpStream::connect(("127.0.0.1", target)).await else {
                    continue;
                };
                let (client_r, client_w) = client.into_split();
                let (node_r, node_w) = node.into_split();
                let mut links = links.lock().unwrap();
                let (to, from) = (to_node_held.clone(), from_node_held.clone());
                links.push(tokio::spawn(pump(client_r, node_w, to, counted.clone())));
                links.push(tokio::spawn(pump(node_r, client_w, from, counted.clone())));
            }
        });
        tasks.lock().unwrap().push(accept);
        HoldingRelay {
            port,
            to_node,
            from_node,
            held_chunks,
            tasks,
        }
    }

    /// How many chunks were read while held (either way), since the start.
    pub fn held_chunks(&self) -> u64 {
        self.held_chunks.load(Ordering::Relaxed)
    }

    /// Holds the bytes towards the node, those from it, or both.
    pub fn hold(&self, to_node: bool, from_node: bool) {
        self.to_node.send_replace(to_node);
        self.from_node.send_replace(from_node);
    }

    /// Lets everything held go on, and holds nothing more.
    pub fn heal(&self) {
        self.hold(false, false);
    }
}

/// A node with `settings`, known to its peers by its relay's port.
pub async fn behind_holding_relay(
    name: &str,
    settings: volley_remote::RemoteSettings,
) -> (super::Node, HoldingRelay) {
    let port = super::free_port();
    let relay = HoldingRelay::start(port).await;
    let settings = volley_remote::RemoteSettings {
        port,
        canonical_port: Some(relay.port),
        ..settings
    };
    (super::node(name, settings).await, relay)
}

impl Drop for HoldingRelay {
    fn drop(&mut self) {
        for task in self.tasks.lock().unwrap().drain(..) {
            task.abort();
        }
    }
}
