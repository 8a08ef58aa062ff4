//! The ping-pong workload, shared by every framework so that each one runs
//! exactly the same protocol and only the message plumbing differs.

use std::time::Duration;

/// One measured (or warmup) round of `local-pingpong`.
#[derive(Clone, Copy, Debug)]
pub struct Plan {
    pub pairs: u64,
    pub inflight: u64,
    /// Balls each ping sends; every ball is received twice (by pong, then by
    /// ping), so a pair accounts for `2 * sends_per_pair` received messages.
    pub sends_per_pair: u64,
}

impl Plan {
    /// Splits `messages` (counted as messages *received* by actors) evenly
    /// over `pairs`. Returns `None` when a pair would get no round trip.
    pub fn new(pairs: u64, inflight: u64, messages: u64) -> Option<Self> {
        let sends_per_pair = messages / pairs / 2;
        (sends_per_pair > 0).then_some(Self {
            pairs,
            inflight,
            sends_per_pair,
        })
    }

    /// Messages the actors must have received once every pair is done.
    /// Equals `--messages` whenever it is divisible by `2 * pairs`.
    pub fn expected(&self) -> u64 {
        2 * self.sends_per_pair * self.pairs
    }
}

/// What a framework reports back after running a [`Plan`].
#[derive(Debug)]
pub struct Outcome {
    /// Messages really received, summed from the actors' own counters.
    pub received: u64,
    /// From the first `Start` until the last pair reported done.
    pub elapsed: Duration,
}

/// What a ping must do after handling a reply.
#[derive(Debug, PartialEq, Eq)]
pub enum Next {
    /// Send another ball to pong.
    Send,
    /// Other balls are still in flight; nothing to do.
    Wait,
    /// All replies are in: report to the driver.
    Done,
}

/// The ping side's bookkeeping; the pong side just counts and echoes.
#[derive(Debug)]
pub struct Pinger {
    target: u64,
    prime: u64,
    sent: u64,
    received: u64,
}

impl Pinger {
    pub fn new(plan: &Plan) -> Self {
        Self {
            target: plan.sends_per_pair,
            prime: plan.inflight.min(plan.sends_per_pair),
            sent: 0,
            received: 0,
        }
    }

    /// Number of balls to put in flight at start; they count as sent.
    pub fn prime(&mut self) -> u64 {
        self.sent = self.prime;
        self.prime
    }

    #[inline]
    pub fn on_reply(&mut self) -> Next {
        self.received += 1;
        if self.sent < self.target {
            self.sent += 1;
            Next::Send
        } else if self.received == self.target {
            Next::Done
        } else {
            Next::Wait
        }
    }

    pub fn received(&self) -> u64 {
        self.received
    }
}

/// How long the driver waits for any single pair before declaring the run
/// hung (a lost message would otherwise block the benchmark forever).
pub const PAIR_TIMEOUT: Duration = Duration::from_secs(300);

/// Waits for every pair's done report on `done` (each carries the ping's
/// received count) and returns the sum, or an error on timeout.
pub async fn await_pairs(
    done: &mut tokio::sync::mpsc::UnboundedReceiver<u64>,
    pairs: u64,
) -> Result<u64, String> {
    let mut sum = 0;
    for finished in 0..pairs {
        match tokio::time::timeout(PAIR_TIMEOUT, done.recv()).await {
            Ok(Some(n)) => sum += n,
            Ok(None) => return Err(format!("done channel closed after {finished} pairs")),
            Err(_) => return Err(format!("timed out; only {finished}/{pairs} pairs finished")),
        }
    }
    Ok(sum)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pinger_sends_exactly_target() {
        for (inflight, messages) in [(1, 10), (100, 1000), (100, 50), (7, 998)] {
            let plan = Plan::new(1, inflight, messages).unwrap();
            let mut p = Pinger::new(&plan);
            let mut in_flight = p.prime();
            let mut sent = in_flight;
            loop {
                in_flight -= 1;
                match p.on_reply() {
                    Next::Send => {
                        in_flight += 1;
                        sent += 1;
                    }
                    Next::Wait => {}
                    Next::Done => break,
                }
            }
            assert_eq!(in_flight, 0);
            assert_eq!(sent, plan.sends_per_pair);
            assert_eq!(2 * p.received(), plan.expected());
        }
    }

    #[test]
    fn splits_messages() {
        assert_eq!(Plan::new(4, 1, 1000).unwrap().expected(), 1000);
        assert_eq!(Plan::new(3, 1, 1000).unwrap().expected(), 996);
        assert!(Plan::new(4, 1, 7).is_none());
    }
}
