//! The bytes of one relayed connection, each direction judged by its
//! link's [`LinkMode`] chunk by chunk.

use std::io::{Read, Write};
use std::net::TcpStream;
use std::sync::mpsc::{sync_channel, Receiver};
use std::sync::Arc;
use std::time::Instant;

use super::{close, Dialler, Link, LinkMode, Shared};

/// Chunks read ahead of the writer per direction: with `CHUNK` bytes
/// each, what a held or delayed direction buffers at most before the
/// sender feels back-pressure.
const AHEAD: usize = 64;
const CHUNK: usize = 64 * 1024;

/// Relays both directions of connection `id`, dialled by `from` (once
/// found) to member `to`, on threads of their own.
pub(super) fn relay(
    shared: Arc<Shared>,
    id: u64,
    inbound: TcpStream,
    outbound: TcpStream,
    from: Dialler,
    to: usize,
) {
    let _ = inbound.set_nodelay(true);
    let _ = outbound.set_nodelay(true);
    let (Ok(in2), Ok(out2)) = (inbound.try_clone(), outbound.try_clone()) else {
        close(&[inbound, outbound]);
        return;
    };
    let shared2 = shared.clone();
    let forward = Direction {
        from: from.clone(),
        to,
        toward_member: true,
    };
    let backward = Direction {
        from,
        to,
        toward_member: false,
    };
    let _ = std::thread::Builder::new()
        .name("relay-link".into())
        .spawn(move || direction(&shared, id, inbound, outbound, forward));
    let _ = std::thread::Builder::new()
        .name("relay-link".into())
        .spawn(move || direction(&shared2, id, out2, in2, backward));
}

/// One direction of a relayed connection: toward member `to`, or back
/// to the member that dialled it.
struct Direction {
    from: Dialler,
    to: usize,
    toward_member: bool,
}

impl Direction {
    /// The link this direction carries, once its dialler is known.
    fn link(&self) -> Option<Link> {
        let from = *self.from.get()?;
        Some(match self.toward_member {
            true => (from, self.to),
            false => (self.to, from),
        })
    }
}

/// Copies `src` to `dst` until either ends or the link drops, then
/// closes both (the other direction ends with them).
fn direction(shared: &Shared, id: u64, src: TcpStream, mut dst: TcpStream, link: Direction) {
    let (tx, rx) = sync_channel::<(Instant, Vec<u8>)>(AHEAD);
    let Ok(mut reader) = src.try_clone() else {
        return;
    };
    // The reader stamps each chunk as it arrives; the writer (this thread)
    // waits for its turn under the link's mode.
    let spawned = std::thread::Builder::new()
        .name("relay-read".into())
        .spawn(move || {
            let mut buf = vec![0u8; CHUNK];
            while let Ok(n) = reader.read(&mut buf) {
                if n == 0 || tx.send((Instant::now(), buf[..n].to_vec())).is_err() {
                    break;
                }
            }
        });
    if spawned.is_ok() {
        write_in_turn(shared, &rx, &mut dst, link);
    }
    close(&[src, dst]);
    shared.state().open.retain(|o| o.id != id);
}

fn write_in_turn(
    shared: &Shared,
    chunks: &Receiver<(Instant, Vec<u8>)>,
    dst: &mut TcpStream,
    link: Direction,
) {
    for (arrived, bytes) in chunks {
        if !await_turn(shared, &link, arrived) || dst.write_all(&bytes).is_err() {
            return;
        }
        shared
            .relayed
            .fetch_add(bytes.len() as u64, std::sync::atomic::Ordering::Relaxed);
    }
}

/// Waits until a chunk that arrived at `arrived` may go on `link`: false
/// when the link drops (or the relays stop) instead.
fn await_turn(shared: &Shared, link: &Direction, arrived: Instant) -> bool {
    let mut state = shared.state();
    loop {
        if shared.stopped.load(std::sync::atomic::Ordering::SeqCst) {
            return false;
        }
        state = match state.mode(link.link()) {
            LinkMode::Pass => return true,
            LinkMode::Drop => return false,
            LinkMode::Block => shared
                .changed
                .wait(state)
                .unwrap_or_else(|e| e.into_inner()),
            LinkMode::Delay(delay) => {
                let due = arrived + delay;
                let now = Instant::now();
                if now >= due {
                    return true;
                }
                shared
                    .changed
                    .wait_timeout(state, due - now)
                    .unwrap_or_else(|e| e.into_inner())
                    .0
            }
        };
    }
}
