//! Finding the diallers of relayed connections: one look-up for all the
//! connections waiting. A look-up reads the kernel's socket tables and
//! every member's descriptors, which under load takes as long for one
//! socket as for a hundred; one per connection, the redials that follow a
//! restart queued behind each other past their handshake timeout, and a
//! look-up per connection running side by side starved everything else.

use std::io;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::mpsc::{channel, Receiver, Sender};
use std::sync::Arc;

/// Which member's process holds each socket `(local_port, remote_port)`,
/// given the members' pids: [`super::owner::owners`], or a stand-in in
/// the unit tests.
pub(crate) type Identify = dyn Fn(&[(u16, u16)], &[u32]) -> Vec<Option<usize>> + Send + Sync;

/// One connection's question: who holds `socket`, of `pids`.
struct Ask {
    socket: (u16, u16),
    pids: Vec<u32>,
    answer: Sender<Option<usize>>,
}

/// The look-up thread's door; the thread ends once this is dropped.
pub(crate) struct Identifier {
    asks: Sender<Ask>,
    waiting: Arc<AtomicUsize>,
}

impl Identifier {
    /// Starts the look-up thread, finding diallers with `identify`.
    pub(crate) fn start(identify: Arc<Identify>) -> io::Result<Identifier> {
        let (asks, received) = channel();
        std::thread::Builder::new()
            .name("relay-identify".into())
            .spawn(move || answer_in_batches(&received, &*identify))?;
        Ok(Identifier {
            asks,
            waiting: Arc::new(AtomicUsize::new(0)),
        })
    }

    /// The member whose process (of `pids`) holds `socket`, found by the
    /// next look-up, which answers every connection waiting by then.
    pub(crate) fn find(&self, socket: (u16, u16), pids: Vec<u32>) -> Option<usize> {
        let (answer, answered) = channel();
        self.waiting.fetch_add(1, Ordering::SeqCst);
        let found = match self.asks.send(Ask {
            socket,
            pids,
            answer,
        }) {
            Ok(()) => answered.recv().ok().flatten(),
            Err(_) => None,
        };
        self.waiting.fetch_sub(1, Ordering::SeqCst);
        found
    }

    /// Connections waiting for a look-up now, the one under way included.
    #[cfg(test)]
    pub(crate) fn waiting(&self) -> usize {
        self.waiting.load(Ordering::SeqCst)
    }
}

/// Takes every question waiting, answers them with one look-up, and
/// again, until the [`Identifier`] is dropped.
fn answer_in_batches(received: &Receiver<Ask>, identify: &Identify) {
    while let Ok(first) = received.recv() {
        let mut batch = vec![first];
        batch.extend(received.try_iter());
        // The latest pids: a restarted member's is set before it dials.
        let pids = batch.last().map(|ask| ask.pids.clone()).unwrap_or_default();
        let sockets: Vec<(u16, u16)> = batch.iter().map(|ask| ask.socket).collect();
        let found = identify(&sockets, &pids);
        for (ask, found) in batch.into_iter().zip(found) {
            let _ = ask.answer.send(found);
        }
    }
}
