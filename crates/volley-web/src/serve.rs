//! Serving the gateway over HTTP/1.1 under its own limits.
//!
//! `axum::serve` builds hyper's connections with no timer, and hyper
//! reads a request's headers with no deadline unless it has one: a
//! client past the gate's first bytes could then trickle its headers for
//! ever, and each connection may buffer up to hyper's default maximum
//! (about 400 KiB) of headers it has not finished. With 16,384
//! connections allowed from one address that is gigabytes a single
//! client could make the node hold. So the gateway builds its connections
//! itself: headers within `header_timeout` and at most `max_header_bytes`
//! buffered (hyper answers 431, or closes), then axum's router as usual,
//! upgrades (WebSockets) included. Writes a client does not take for
//! `send_timeout` end the connection (`volley::net::WriteStall`).

use std::future::Future;

use axum::Router;
use hyper::server::conn::http1;
use hyper_util::rt::{TokioIo, TokioTimer};
use hyper_util::service::TowerToHyperService;
use tokio::sync::watch;
use volley::net::{GatedListener, WriteStall};

use crate::settings::WebSettings;

/// hyper's smallest read buffer.
const HYPER_MIN_BUF: usize = 8 * 1024;

/// Serves `router` on `listener` until `shutdown` resolves, then asks
/// every connection to finish its request under way and waits for them
/// (an upgraded connection is its handler's from the upgrade on).
pub(crate) async fn serve(
    listener: GatedListener,
    router: Router,
    settings: &WebSettings,
    shutdown: impl Future<Output = ()>,
) {
    let mut connections = http1::Builder::new();
    connections
        .timer(TokioTimer::new())
        .header_read_timeout(settings.header_timeout)
        .max_buf_size(settings.max_header_bytes.max(HYPER_MIN_BUF));
    // Each connection holds a receiver: `closing` is how it hears of the
    // shutdown, and the sender's `closed` is when the last one is gone.
    let (stop, closing) = watch::channel(false);
    tokio::pin!(shutdown);
    loop {
        tokio::select! {
            (stream, _) = listener.accept() => {
                let service = TowerToHyperService::new(router.clone());
                // A response the client never reads would hold the
                // connection for ever: hyper has no write deadline.
                let stream = WriteStall::new(stream, settings.send_timeout);
                let connection = connections
                    .serve_connection(TokioIo::new(stream), service)
                    .with_upgrades();
                tokio::spawn(serve_one(connection, closing.clone()));
            }
            () = &mut shutdown => break,
        }
    }
    drop(listener);
    drop(closing);
    let _ = stop.send(true);
    stop.closed().await;
}

/// Drives one connection; at shutdown, lets its request under way end.
async fn serve_one<C>(connection: C, mut closing: watch::Receiver<bool>)
where
    C: Future + GracefulEnd,
{
    tokio::pin!(connection);
    tokio::select! {
        _ = connection.as_mut() => return,
        _ = closing.wait_for(|stop| *stop) => {}
    }
    connection.as_mut().end_gracefully();
    // A client that goes away mid-request is its own affair.
    let _ = connection.await;
}

/// A connection that can be asked to end after its request under way.
trait GracefulEnd {
    fn end_gracefully(self: std::pin::Pin<&mut Self>);
}

impl<I, S, B> GracefulEnd for http1::UpgradeableConnection<I, S>
where
    S: hyper::service::HttpService<hyper::body::Incoming, ResBody = B>,
    S::Error: Into<Box<dyn std::error::Error + Send + Sync>>,
    I: hyper::rt::Read + hyper::rt::Write + Unpin + Send + 'static,
    B: hyper::body::Body + 'static,
    B::Error: Into<Box<dyn std::error::Error + Send + Sync>>,
{
    fn end_gracefully(self: std::pin::Pin<&mut Self>) {
        self.graceful_shutdown();
    }
}
