//! A lane's part in stopping an idle association (`idle/`) and in its
//! metrics (`metrics.rs`): the counts it keeps under the lock it already
//! holds, and stopping and starting it again.

use std::sync::Arc;

use bytes::BytesMut;

use super::{LaneConnection, OutboundLane};
use crate::transport::outbound::association::Association;
use crate::wire::Pdu;

impl<C: LaneConnection> OutboundLane<C> {
    /// How much the lane has been used so far (see `LaneState::activity`).
    pub(crate) fn activity(&self) -> u64 {
        self.state.lock().activity
    }

    /// Stops the lane for idleness if nothing is queued or being written
    /// (false otherwise): sends are refused until [`Self::unretire`], and
    /// `goodbye`, if any, is queued as the last thing the writer writes
    /// before it closes the connection. The buffer's memory is released.
    /// `seen` is the activity count the lane was judged idle at: if it
    /// moved since, the lane is not idle after all.
    pub(crate) fn retire(&self, seen: u64, goodbye: Option<&Pdu<'_>>) -> bool {
        let mut st = self.state.lock();
        if st.activity != seen || !st.buf.is_empty() || st.handoff.is_some() {
            return false;
        }
        self.retired
            .store(true, std::sync::atomic::Ordering::Relaxed);
        self.update_limit();
        st.buf = BytesMut::new();
        // Nothing is queued under the table's numbering, and the next
        // connection declares afresh: the table's refs are let go, so a
        // stopped association holds no ref (which could be one to the
        // same node, keeping the association alive for ever).
        st.exports.borrow_mut().clear();
        st.generation = st.generation.next();
        if let Some(goodbye) = goodbye {
            if let Err(e) = self.encoder.encode(goodbye, &mut st.buf) {
                tracing::error!(remote = %self.remote, "cannot encode a goodbye: {e}");
            }
        }
        drop(st);
        self.wake_writer.notify_one();
        true
    }

    /// The association this lane belongs to, while it is alive.
    pub(crate) fn association(&self) -> Option<Arc<Association>> {
        self.association.upgrade()
    }

    /// Takes sends again after [`Self::retire`].
    pub(crate) fn unretire(&self) {
        let mut st = self.state.lock();
        self.retired
            .store(false, std::sync::atomic::Ordering::Relaxed);
        self.update_limit();
        // While stopped nothing is appended (sends start the association
        // first), so what is queued can only be a goodbye no connection
        // took: it must not reach the peer now.
        st.buf.clear();
        if st.buf.capacity() == 0 {
            st.buf.reserve(64 * 1024);
        }
    }

    /// What the lane has sent so far, and what waits now.
    pub(crate) fn traffic(&self) -> crate::transport::metrics::LaneTraffic {
        let st = self.state.lock();
        let exported_refs = st.exports.borrow().held() as u64;
        crate::transport::metrics::LaneTraffic {
            bytes_out: st.bytes_out,
            frames_out: self.frames_out.load(std::sync::atomic::Ordering::Relaxed),
            connects: st.connects,
            queued_bytes: st.buf.len() as u64,
            exported_refs,
        }
    }
}
