//! Waiting for the other end to close a raw connection: what a test of a
//! listener's limits expects of a connection the server should not keep.

use std::time::Duration;

use tokio::io::{AsyncRead, AsyncReadExt};

use crate::wait::default_timeout;

/// Reads and discards until the peer closes `stream` (end of stream, or a
/// reset); false if it is still open after `max`.
pub async fn closed_by_peer_within<S: AsyncRead + Unpin>(max: Duration, stream: &mut S) -> bool {
    let drain = async {
        let mut buf = [0u8; 512];
        while let Ok(n) = stream.read(&mut buf).await {
            if n == 0 {
                return;
            }
        }
    };
    tokio::time::timeout(max, drain).await.is_ok()
}

/// Waits, up to the testkit's default timeout, for the peer to close
/// `stream`; fails the test if it does not.
#[track_caller]
pub fn closed_by_peer<S: AsyncRead + Unpin>(
    stream: &mut S,
) -> impl std::future::Future<Output = ()> + '_ {
    let caller = std::panic::Location::caller();
    async move {
        let max = default_timeout();
        if !closed_by_peer_within(max, stream).await {
            panic!("{caller}: the peer kept the connection open for {max:?}");
        }
    }
}
