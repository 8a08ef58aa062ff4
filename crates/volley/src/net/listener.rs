//! A TCP listener whose connections pass a [`ConnectionGate`] before
//! anything reads them.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use tokio::net::{TcpListener, TcpStream};

use super::gate::ConnectionGate;
use super::gated_stream::GatedStream;

/// How long to wait after `accept` failed (no file descriptor left, most
/// often) before accepting again, so that a full table is not spun on.
const ACCEPT_RETRY: Duration = Duration::from_millis(10);

/// Accepts connections and admits them through its gate; a refused one
/// is closed at once, unread.
#[derive(Debug)]
pub struct GatedListener {
    listener: TcpListener,
    gate: Arc<ConnectionGate>,
}

impl GatedListener {
    /// `listener`, admitting through `gate`.
    pub fn new(listener: TcpListener, gate: Arc<ConnectionGate>) -> Self {
        GatedListener { listener, gate }
    }

    /// The gate, for its counts.
    pub fn gate(&self) -> &Arc<ConnectionGate> {
        &self.gate
    }

    /// The address it listens on.
    pub fn local_addr(&self) -> std::io::Result<SocketAddr> {
        self.listener.local_addr()
    }

    /// The next admitted connection, with `TCP_NODELAY` set.
    pub async fn accept(&self) -> (GatedStream<TcpStream>, SocketAddr) {
        loop {
            let (stream, peer) = match self.listener.accept().await {
                Ok(accepted) => accepted,
                Err(e) => {
                    tracing::warn!("accept failed: {e}");
                    tokio::time::sleep(ACCEPT_RETRY).await;
                    continue;
                }
            };
            let Ok(admission) = self.gate.admit(peer.ip()) else {
                continue;
            };
            if let Err(e) = stream.set_nodelay(true) {
                tracing::debug!(%peer, "cannot set TCP_NODELAY: {e}");
            }
            return (GatedStream::new(stream, admission), peer);
        }
    }
}
