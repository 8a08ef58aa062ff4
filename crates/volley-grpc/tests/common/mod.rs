//! What the gateway's tests share: a gateway served on a local port.

use tonic::transport::Endpoint;
use volley_grpc::Gateway;

// Not every test sends raw bodies.
#[allow(dead_code)]
pub mod raw;
#[allow(unused_imports)]
pub use raw::RawCodec;

/// Waits until `actor` has terminated (at most 10 s).
#[allow(dead_code)] // not every test stops an actor
pub async fn stopped<M: Send + 'static>(actor: &volley::ActorRef<M>) {
    for _ in 0..2000 {
        if actor.is_terminated() {
            return;
        }
        tokio::time::sleep(std::time::Duration::from_millis(5)).await;
    }
    panic!("{} did not stop within 10 s", actor.path());
}

/// A gateway served on 127.0.0.1 until this is dropped.
pub struct Served {
    pub port: u16,
    _stop: tokio::sync::oneshot::Sender<()>,
}

impl Served {
    pub async fn start(gateway: Gateway) -> Served {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let port = listener.local_addr().unwrap().port();
        let (stop, stopped) = tokio::sync::oneshot::channel();
        tokio::spawn(volley_grpc::serve(listener, gateway, async {
            let _ = stopped.await;
        }));
        Served { port, _stop: stop }
    }

    /// Where a tonic client reaches it.
    pub fn endpoint(&self) -> Endpoint {
        Endpoint::from_shared(format!("http://127.0.0.1:{}", self.port)).unwrap()
    }
}
