//! kameo: `#[derive(Actor)]` structs with `Message<T>` impls, spawned with
//! `Spawn::spawn` on a 2-worker tokio runtime.
//!
//! Ping-pong actors get *unbounded* mailboxes: with kameo's default bounded
//! mailbox (64) two actors that `tell` each other more than 64 balls in flight
//! deadlock, both awaiting space in the other's full mailbox. Spawn and ask
//! use the default mailbox. Sends use `.send().await` (the same request the
//! plain `.await` performs, minus the boxing done by its `IntoFuture`).

use super::{multi_thread_runtime, run_on_workers, Harness, SpawnOutcome};
use crate::plan::{await_pairs, Next, Outcome, Pinger, Plan};
use crate::report::{record, rss_bytes};
use hdrhistogram::Histogram;
use kameo::actor::{ActorRef, Spawn};
use kameo::mailbox;
use kameo::message::{Context, Message};
use kameo::Actor;
use std::time::Instant;
use tokio::sync::mpsc::UnboundedSender;

pub struct KameoHarness {
    rt: tokio::runtime::Runtime,
}

impl KameoHarness {
    pub fn new() -> Self {
        Self {
            rt: multi_thread_runtime(),
        }
    }
}

// ---- ping-pong ----

/// Sent by the driver once every pair exists; carries the peer.
struct Start(ActorRef<Pong>);
struct Ball(u64);
struct GetCount;

#[derive(Actor)]
struct Ping {
    pinger: Pinger,
    pong: Option<ActorRef<Pong>>,
    done: UnboundedSender<u64>,
}

impl Message<Start> for Ping {
    type Reply = ();

    async fn handle(&mut self, Start(pong): Start, _: &mut Context<Self, ()>) {
        for n in 0..self.pinger.prime() {
            let _ = pong.tell(Ball(n)).send().await;
        }
        self.pong = Some(pong);
    }
}

impl Message<Ball> for Ping {
    type Reply = ();

    async fn handle(&mut self, Ball(n): Ball, _: &mut Context<Self, ()>) {
        match self.pinger.on_reply() {
            Next::Send => {
                let pong = self.pong.as_ref().expect("started");
                let _ = pong.tell(Ball(n + 1)).send().await;
            }
            Next::Wait => {}
            Next::Done => {
                let _ = self.done.send(self.pinger.received());
            }
        }
    }
}

#[derive(Actor)]
struct Pong {
    ping: ActorRef<Ping>,
    count: u64,
}

impl Message<Ball> for Pong {
    type Reply = ();

    async fn handle(&mut self, Ball(n): Ball, _: &mut Context<Self, ()>) {
        self.count += 1;
        let _ = self.ping.tell(Ball(n)).send().await;
    }
}

impl Message<GetCount> for Pong {
    type Reply = u64;

    async fn handle(&mut self, _: GetCount, _: &mut Context<Self, u64>) -> u64 {
        self.count
    }
}

fn err(e: impl std::fmt::Display) -> String {
    e.to_string()
}

async fn pingpong(plan: Plan) -> Result<Outcome, String> {
    let (done_tx, mut done_rx) = tokio::sync::mpsc::unbounded_channel();
    let mut pairs = Vec::new();
    for _ in 0..plan.pairs {
        let ping = Ping::spawn_with_mailbox(
            Ping {
                pinger: Pinger::new(&plan),
                pong: None,
                done: done_tx.clone(),
            },
            mailbox::unbounded(),
        );
        let pong = Pong::spawn_with_mailbox(
            Pong {
                ping: ping.clone(),
                count: 0,
            },
            mailbox::unbounded(),
        );
        pairs.push((ping, pong));
    }
    for (ping, pong) in &pairs {
        ping.wait_for_startup().await;
        pong.wait_for_startup().await;
    }

    let start = Instant::now();
    for (ping, pong) in &pairs {
        ping.tell(Start(pong.clone())).send().await.map_err(err)?;
    }
    let ping_received = await_pairs(&mut done_rx, plan.pairs).await?;
    let elapsed = start.elapsed();

    let mut pong_received = 0;
    for (ping, pong) in &pairs {
        pong_received += pong.ask(GetCount).send().await.map_err(err)?;
        ping.stop_gracefully().await.map_err(err)?;
        pong.stop_gracefully().await.map_err(err)?;
    }
    for (ping, pong) in &pairs {
        ping.wait_for_shutdown().await;
        pong.wait_for_shutdown().await;
    }
    Ok(Outcome {
        received: ping_received + pong_received,
        elapsed,
    })
}

// ---- spawn ----

#[derive(Actor)]
struct Idle;

impl Message<()> for Idle {
    type Reply = ();

    async fn handle(&mut self, _: (), _: &mut Context<Self, ()>) {}
}

async fn spawn(actors: u64) -> Result<SpawnOutcome, String> {
    let rss_before = rss_bytes();
    let start = Instant::now();
    let alive: Vec<ActorRef<Idle>> = (0..actors).map(|_| Idle::spawn(Idle)).collect();
    for a in &alive {
        a.wait_for_startup().await;
    }
    let spawn = start.elapsed();
    let rss_growth = rss_bytes() - rss_before;

    let start = Instant::now();
    for a in &alive {
        a.stop_gracefully().await.map_err(err)?;
    }
    for a in &alive {
        a.wait_for_shutdown().await;
    }
    Ok(SpawnOutcome {
        spawn,
        stop: start.elapsed(),
        rss_growth,
    })
}

// ---- ask ----

#[derive(Actor)]
struct Responder;

struct Req(u64);

impl Message<Req> for Responder {
    type Reply = u64;

    async fn handle(&mut self, Req(n): Req, _: &mut Context<Self, u64>) -> u64 {
        n + 1
    }
}

async fn ask(
    warmup: u64,
    requests: u64,
    mut hist: Histogram<u64>,
) -> Result<Histogram<u64>, String> {
    let responder = Responder::spawn(Responder);
    responder.wait_for_startup().await;
    for i in 0..warmup + requests {
        let t = Instant::now();
        let answer = responder.ask(Req(i)).send().await.map_err(err)?;
        if i >= warmup {
            record(&mut hist, t.elapsed());
        }
        if answer != i + 1 {
            return Err(format!("wrong reply {answer} to request {i}"));
        }
    }
    responder.stop_gracefully().await.map_err(err)?;
    responder.wait_for_shutdown().await;
    Ok(hist)
}

impl Harness for KameoHarness {
    fn pingpong(&mut self, plan: &Plan) -> Result<Outcome, String> {
        run_on_workers(&self.rt, pingpong(*plan))
    }

    fn spawn(&mut self, actors: u64) -> Result<SpawnOutcome, String> {
        run_on_workers(&self.rt, spawn(actors))
    }

    fn ask(&mut self, warmup: u64, requests: u64, hist: &mut Histogram<u64>) -> Result<(), String> {
        let h = std::mem::replace(hist, crate::report::new_histogram());
        *hist = run_on_workers(&self.rt, ask(warmup, requests, h))?;
        Ok(())
    }
}
