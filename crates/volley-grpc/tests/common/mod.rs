//! What the gateway's tests share: a gateway served on a local port.

use tonic::transport::Endpoint;
use volley_grpc::Gateway;

// Not every test sends raw bodies.
#[allow(dead_code)]
pub mod raw;
#[allow(unused_imports)]
pub use raw::RawCodec;

/// How long the suites wait for a condition that no message announces:
/// HTTP/2 windows and hyper's tasks settle on their own time.
const WAIT: std::time::Duration = std::time::Duration::from_secs(30);

/// Waits until `what` holds (the testkit's `eventually`, with this suite's
/// limit); fails the test naming `why` if it does not.
#[allow(dead_code)] // not every module waits for a condition
#[track_caller]
pub fn wait_for<'a>(
    why: &'a str,
    what: impl FnMut() -> bool + 'a,
) -> impl std::future::Future<Output = ()> + 'a {
    volley_testkit::eventually_within(WAIT, why, what)
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

/// A bare HTTP/2 connection to the gateway on `port`, for what tonic's
/// client neither sends nor shows; its connection task runs on its own.
#[allow(dead_code)] // not every module sends bare requests
pub async fn bare_http2<B>(port: u16) -> hyper::client::conn::http2::SendRequest<B>
where
    B: http_body::Body + Send + Unpin + 'static,
    B::Data: Send,
    B::Error: Into<Box<dyn std::error::Error + Send + Sync>>,
{
    let tcp = tokio::net::TcpStream::connect(("127.0.0.1", port))
        .await
        .unwrap();
    let (send, connection) = hyper::client::conn::http2::handshake(
        hyper_util::rt::TokioExecutor::new(),
        hyper_util::rt::TokioIo::new(tcp),
    )
    .await
    .unwrap();
    tokio::spawn(connection);
    send
}
