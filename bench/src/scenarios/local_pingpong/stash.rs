//! The stash's row under local-pingpong: unstashing 1,000 messages into an
//! empty mailbox against telling the same 1,000 (issue 16's target: the
//! unstash costs less per message than a tell).
//!
//! Both sides are timed inside one actor from the message that starts
//! them to the last of the 1,000 handled, so both include the same
//! handling and differ only in how the messages came back: a tell each
//! to `myself()`, or one `unstash_all`.

use std::sync::mpsc::{channel, Sender};
use std::time::{Duration, Instant};

use volley::{Actor, ActorSystem, Context, HandleResult, Props};

use crate::report::verdict;

const MESSAGES: u32 = 1000;

enum Msg {
    Work,
    /// Stash work from now on.
    Close,
    /// Times `unstash_all` and the handling of what it hands back.
    Open,
    /// Times 1,000 tells to itself and their handling.
    Burst,
}

struct Timed {
    open: bool,
    left: u32,
    started: Instant,
    done: Sender<Duration>,
}

impl Actor for Timed {
    type Msg = Msg;
    fn handle(&mut self, ctx: &mut Context<Self>, msg: Msg) -> HandleResult {
        match msg {
            Msg::Close => self.open = false,
            Msg::Work if !self.open => ctx.stash(Msg::Work)?,
            Msg::Work => {
                self.left -= 1;
                if self.left == 0 {
                    let _ = self.done.send(self.started.elapsed());
                }
            }
            Msg::Open => {
                self.open = true;
                self.left = MESSAGES;
                self.started = Instant::now();
                ctx.unstash_all();
            }
            Msg::Burst => {
                self.left = MESSAGES;
                self.started = Instant::now();
                let me = ctx.myself();
                for _ in 0..MESSAGES {
                    me.tell(Msg::Work);
                }
            }
        }
        Ok(())
    }
}

fn median_ns_per_message(mut runs: Vec<Duration>) -> f64 {
    runs.sort();
    runs[runs.len() / 2].as_nanos() as f64 / f64::from(MESSAGES)
}

/// The note: median ns per message of each way, over `rounds` rounds.
pub(super) fn note(rounds: usize) -> crate::Result<String> {
    let system = ActorSystem::new("stash-bench")?;
    let (done, finished) = channel();
    let actor = system.spawn(
        "timed",
        Props::new(move || Timed {
            open: true,
            left: 0,
            started: Instant::now(),
            done: done.clone(),
        })
        .with_stash_capacity(MESSAGES as usize),
    )?;
    let wait = || finished.recv_timeout(Duration::from_secs(30));
    let (mut unstash, mut tell) = (Vec::new(), Vec::new());
    for _ in 0..rounds {
        actor.tell(Msg::Close);
        for _ in 0..MESSAGES {
            actor.tell(Msg::Work);
        }
        actor.tell(Msg::Open);
        unstash.push(wait().map_err(|_| "the stash round did not finish")?);
        actor.tell(Msg::Burst);
        tell.push(wait().map_err(|_| "the tell round did not finish")?);
    }
    let (unstash, tell) = (median_ns_per_message(unstash), median_ns_per_message(tell));
    Ok(format!(
        "stash: unstash_all of {MESSAGES} into an empty mailbox {unstash:.1} ns/msg vs {MESSAGES} tells {tell:.1} ns/msg (handling included in both) — target: less than a tell: {}",
        verdict(unstash < tell)
    ))
}
