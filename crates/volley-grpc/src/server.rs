//! Serving a gateway over TCP: HTTP/2 only (gRPC needs nothing else), with
//! `TCP_NODELAY` on every connection (small replies must not wait for
//! Nagle), connections admitted through the gateway's gate (its
//! `connections` limits), and a graceful stop.

use std::convert::Infallible;
use std::future::Future;

use hyper::body::Incoming;
use hyper::server::conn::http2;
use hyper::service::Service;
use hyper_util::rt::{TokioExecutor, TokioIo, TokioTimer};
use hyper_util::server::graceful::GracefulShutdown;
use tokio::net::TcpListener;
use volley::net::{GatedListener, WriteStall};

use crate::body::UnaryBody;
use crate::gateway::Gateway;

impl Service<http::Request<Incoming>> for Gateway {
    type Response = http::Response<UnaryBody>;
    type Error = Infallible;
    type Future = std::pin::Pin<
        Box<dyn Future<Output = Result<http::Response<UnaryBody>, Infallible>> + Send>,
    >;

    fn call(&self, request: http::Request<Incoming>) -> Self::Future {
        let gateway = self.clone();
        Box::pin(async move { Ok(gateway.handle(request).await) })
    }
}

/// Serves `gateway` on `listener` until `shutdown` resolves; then stops
/// accepting, lets the calls in progress finish, and returns.
pub async fn serve(
    listener: TcpListener,
    gateway: Gateway,
    shutdown: impl Future<Output = ()>,
) -> std::io::Result<()> {
    let graceful = GracefulShutdown::new();
    let mut builder = http2::Builder::new(TokioExecutor::new());
    builder.timer(TokioTimer::new());
    gateway.http2_limits().apply(&mut builder);
    let listener = GatedListener::new(listener, gateway.connection_gate().clone());
    let mut shutdown = std::pin::pin!(shutdown);
    loop {
        let (stream, peer) = tokio::select! {
            accepted = listener.accept() => accepted,
            () = &mut shutdown => break,
        };
        let stream = WriteStall::new(stream, gateway.http2_limits().send_timeout);
        let connection = builder.serve_connection(TokioIo::new(stream), gateway.clone());
        let connection = graceful.watch(connection);
        tokio::spawn(async move {
            if let Err(e) = connection.await {
                tracing::debug!(%peer, "gRPC gateway: connection ended: {e}");
            }
        });
    }
    graceful.shutdown().await;
    Ok(())
}
