//! Reading a request's body whole, within two bounds: the call's own
//! (`max_request_bytes`) and the gateway's, shared by every call being
//! read at once (`max_buffered_request_bytes`).
//!
//! The shared bound is what keeps a client from making the gateway hold
//! memory without limit: HTTP/2 lets one connection open a couple of
//! hundred streams, and each may send up to `max_request_bytes` before
//! the gateway can decode anything. A body takes its bytes from the
//! shared budget as they arrive, and gives them back once its message
//! is decoded; a body that finds the budget spent is answered
//! RESOURCE_EXHAUSTED without being read further.

use std::sync::Arc;

use bytes::{Buf, Bytes, BytesMut};
use http_body::Body;
use http_body_util::BodyExt;
use tokio::sync::{OwnedSemaphorePermit, Semaphore};
use tonic::Status;

/// The bytes a whole request body holds, and its share of the budget.
pub(crate) struct Buffered {
    pub(crate) bytes: Bytes,
    _budget: Option<OwnedSemaphorePermit>,
}

/// The gateway's budget of request bytes being read at once.
#[derive(Clone)]
pub(crate) struct RequestBudget {
    semaphore: Arc<Semaphore>,
    total: usize,
}

impl RequestBudget {
    /// A budget of `total` bytes.
    pub(crate) fn new(total: usize) -> Self {
        let total = total.min(Semaphore::MAX_PERMITS);
        RequestBudget {
            semaphore: Arc::new(Semaphore::new(total)),
            total,
        }
    }

    /// Bytes not held by a body being read.
    pub(crate) fn available(&self) -> usize {
        self.semaphore.available_permits()
    }

    /// Takes `n` bytes, added to `held`; an error when fewer are left.
    fn take(&self, n: usize, held: &mut Option<OwnedSemaphorePermit>) -> Result<(), Status> {
        let spent = || {
            Status::resource_exhausted(format!(
                "the gateway is reading as many request bytes as it holds at once \
                 (max_buffered_request_bytes = {})",
                self.total
            ))
        };
        let n = u32::try_from(n).map_err(|_| spent())?;
        let permit = self
            .semaphore
            .clone()
            .try_acquire_many_owned(n)
            .map_err(|_| spent())?;
        match held {
            Some(held) => held.merge(permit),
            None => *held = Some(permit),
        }
        Ok(())
    }
}

/// Reads `body` whole: at most `max` bytes, each taken from `budget`
/// before it is kept.
pub(crate) async fn read_whole<B>(
    body: B,
    max: usize,
    budget: &RequestBudget,
) -> Result<Buffered, Status>
where
    B: Body,
    B::Error: std::error::Error + Send + Sync + 'static,
{
    let mut body = std::pin::pin!(body);
    let mut held = None;
    let mut first: Option<Bytes> = None;
    let mut joined: Option<BytesMut> = None;
    let mut len = 0usize;
    while let Some(frame) = body.frame().await {
        let frame =
            frame.map_err(|e| Status::cancelled(format!("reading the request failed: {e}")))?;
        let Ok(mut data) = frame.into_data() else {
            continue;
        };
        // A `Bytes` body (hyper's) gives its chunk as it is, without a copy.
        let data = data.copy_to_bytes(data.remaining());
        len += data.len();
        if len > max {
            return Err(Status::resource_exhausted(format!(
                "the request is larger than the gateway takes (max_request_bytes = {})",
                max.saturating_sub(crate::frame::PREFIX_LEN)
            )));
        }
        budget.take(data.len(), &mut held)?;
        // One chunk, the usual case, is kept as it came: no copy.
        match (&mut joined, first.take()) {
            (Some(joined), _) => joined.extend_from_slice(&data),
            (None, None) => first = Some(data),
            (None, Some(before)) => {
                let mut both = BytesMut::with_capacity(before.len() + data.len());
                both.extend_from_slice(&before);
                both.extend_from_slice(&data);
                joined = Some(both);
            }
        }
    }
    let bytes = match joined {
        Some(joined) => joined.freeze(),
        None => first.unwrap_or_default(),
    };
    Ok(Buffered {
        bytes,
        _budget: held,
    })
}
