//! The "just use channels" baseline: every actor is a plain tokio task that
//! owns the receiving half of an `unbounded_channel`.

use super::{multi_thread_runtime, run_on_workers, Harness, SpawnOutcome};
use crate::plan::{await_pairs, Next, Outcome, Pinger, Plan};
use crate::report::{record, rss_bytes};
use hdrhistogram::Histogram;
use std::time::Instant;
use tokio::sync::{mpsc, oneshot};

pub struct TokioHarness {
    rt: tokio::runtime::Runtime,
}

impl TokioHarness {
    pub fn new() -> Self {
        Self {
            rt: multi_thread_runtime(),
        }
    }
}

enum PingMsg {
    Start,
    Ball(u64),
}

async fn pingpong(plan: Plan) -> Result<Outcome, String> {
    let (done_tx, mut done_rx) = mpsc::unbounded_channel();
    let mut starters = Vec::new();
    let mut pongs = Vec::new();
    for _ in 0..plan.pairs {
        let (ping_tx, mut ping_rx) = mpsc::unbounded_channel::<PingMsg>();
        let (pong_tx, mut pong_rx) = mpsc::unbounded_channel::<u64>();

        let reply_to = ping_tx.clone();
        // Pong ends (returning its count) once ping drops `pong_tx`.
        pongs.push(tokio::spawn(async move {
            let mut count = 0u64;
            while let Some(n) = pong_rx.recv().await {
                count += 1;
                let _ = reply_to.send(PingMsg::Ball(n));
            }
            count
        }));

        let mut pinger = Pinger::new(&plan);
        let done = done_tx.clone();
        tokio::spawn(async move {
            while let Some(msg) = ping_rx.recv().await {
                match msg {
                    PingMsg::Start => {
                        for n in 0..pinger.prime() {
                            let _ = pong_tx.send(n);
                        }
                    }
                    PingMsg::Ball(n) => match pinger.on_reply() {
                        Next::Send => {
                            let _ = pong_tx.send(n + 1);
                        }
                        Next::Wait => {}
                        Next::Done => break,
                    },
                }
            }
            let _ = done.send(pinger.received());
        });
        starters.push(ping_tx);
    }

    let start = Instant::now();
    for s in &starters {
        let _ = s.send(PingMsg::Start);
    }
    let ping_received = await_pairs(&mut done_rx, plan.pairs).await?;
    let elapsed = start.elapsed();

    drop(starters);
    let mut pong_received = 0;
    for p in pongs {
        pong_received += p.await.map_err(|e| e.to_string())?;
    }
    Ok(Outcome {
        received: ping_received + pong_received,
        elapsed,
    })
}

/// An idle "actor": a task parked on its mailbox until the mailbox closes.
async fn spawn(actors: u64) -> SpawnOutcome {
    let rss_before = rss_bytes();
    let start = Instant::now();
    let mut mailboxes = Vec::with_capacity(actors as usize);
    let mut handles = Vec::with_capacity(actors as usize);
    for _ in 0..actors {
        let (tx, mut rx) = mpsc::unbounded_channel::<u64>();
        handles.push(tokio::spawn(
            async move { while rx.recv().await.is_some() {} },
        ));
        mailboxes.push(tx);
    }
    // Tokio has no "started" notification; a spawned task is alive (its
    // state allocated and scheduled) as soon as `spawn` returns.
    let spawn = start.elapsed();
    let rss_growth = rss_bytes() - rss_before;

    let start = Instant::now();
    drop(mailboxes);
    for h in handles {
        let _ = h.await;
    }
    SpawnOutcome {
        spawn,
        stop: start.elapsed(),
        rss_growth,
    }
}

/// The request carries a oneshot for the reply, the usual tokio idiom.
type Request = (u64, oneshot::Sender<u64>);

async fn ask(warmup: u64, requests: u64, mut hist: Histogram<u64>) -> Histogram<u64> {
    let (tx, mut rx) = mpsc::unbounded_channel::<Request>();
    let responder = tokio::spawn(async move {
        while let Some((n, reply)) = rx.recv().await {
            let _ = reply.send(n + 1);
        }
    });
    for i in 0..warmup + requests {
        let t = Instant::now();
        let (reply_tx, reply_rx) = oneshot::channel();
        tx.send((i, reply_tx)).expect("responder alive");
        let answer = reply_rx.await.expect("responder replied");
        if i >= warmup {
            record(&mut hist, t.elapsed());
        }
        assert_eq!(answer, i + 1);
    }
    drop(tx);
    let _ = responder.await;
    hist
}

impl Harness for TokioHarness {
    fn pingpong(&mut self, plan: &Plan) -> Result<Outcome, String> {
        run_on_workers(&self.rt, pingpong(*plan))
    }

    fn spawn(&mut self, actors: u64) -> Result<SpawnOutcome, String> {
        Ok(run_on_workers(&self.rt, spawn(actors)))
    }

    fn ask(&mut self, warmup: u64, requests: u64, hist: &mut Histogram<u64>) -> Result<(), String> {
        let h = std::mem::replace(hist, crate::report::new_histogram());
        *hist = run_on_workers(&self.rt, ask(warmup, requests, h));
        Ok(())
    }
}
