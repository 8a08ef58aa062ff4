//! actix: `Actor` + `Handler<M>` with `#[derive(Message)]`, fire-and-forget via
//! `Addr::do_send` (which, unlike `send`, does not wait on the bounded mailbox)
//! and request/reply via `Addr::send(..).await`.
//!
//! Actix arbiters are single-threaded event loops. Ping-pong pairs are spread
//! round-robin over two extra arbiters (one per core) with both actors of a
//! pair on the same arbiter. Spawn and ask use plain `Actor::start()`, i.e.
//! the system arbiter on the main thread, which also runs the driver.

use super::{Harness, SpawnOutcome};
use crate::plan::{await_pairs, Next, Outcome, Pinger, Plan};
use crate::report::{record, rss_bytes};
use actix::prelude::*;
use hdrhistogram::Histogram;
use std::time::Instant;
use tokio::sync::mpsc::{unbounded_channel, UnboundedReceiver, UnboundedSender};

pub struct ActixHarness {
    // Declared first so the arbiters are stopped before the system goes.
    arbiters: Vec<Arbiter>,
    sys: SystemRunner,
}

impl ActixHarness {
    pub fn new() -> Self {
        let sys = System::new();
        // `Arbiter::new` needs the current system, which `System::new` set.
        let arbiters = (0..2).map(|_| Arbiter::new()).collect();
        Self { arbiters, sys }
    }
}

impl Drop for ActixHarness {
    fn drop(&mut self) {
        for a in self.arbiters.drain(..) {
            a.stop();
            let _ = a.join();
        }
    }
}

// ---- ping-pong ----

/// Sent by the driver once every pair exists; carries the peer.
#[derive(Message)]
#[rtype(result = "()")]
struct Start(Addr<Pong>);

#[derive(Message)]
#[rtype(result = "()")]
struct Ball(u64);

/// Returns an actor's received count; also proves the actor is running.
#[derive(Message)]
#[rtype(result = "u64")]
struct GetCount;

#[derive(Message)]
#[rtype(result = "()")]
struct Stop;

struct Ping {
    pinger: Pinger,
    pong: Option<Addr<Pong>>,
    done: UnboundedSender<u64>,
}

impl Actor for Ping {
    type Context = Context<Self>;
}

impl Handler<Start> for Ping {
    type Result = ();

    fn handle(&mut self, Start(pong): Start, _: &mut Context<Self>) {
        for n in 0..self.pinger.prime() {
            pong.do_send(Ball(n));
        }
        self.pong = Some(pong);
    }
}

impl Handler<Ball> for Ping {
    type Result = ();

    fn handle(&mut self, Ball(n): Ball, _: &mut Context<Self>) {
        match self.pinger.on_reply() {
            Next::Send => self.pong.as_ref().expect("started").do_send(Ball(n + 1)),
            Next::Wait => {}
            Next::Done => {
                let _ = self.done.send(self.pinger.received());
            }
        }
    }
}

impl Handler<GetCount> for Ping {
    type Result = u64;

    fn handle(&mut self, _: GetCount, _: &mut Context<Self>) -> u64 {
        self.pinger.received()
    }
}

struct Pong {
    ping: Addr<Ping>,
    count: u64,
}

impl Actor for Pong {
    type Context = Context<Self>;
}

impl Handler<Ball> for Pong {
    type Result = ();

    fn handle(&mut self, Ball(n): Ball, _: &mut Context<Self>) {
        self.count += 1;
        self.ping.do_send(Ball(n));
    }
}

impl Handler<GetCount> for Pong {
    type Result = u64;

    fn handle(&mut self, _: GetCount, _: &mut Context<Self>) -> u64 {
        self.count
    }
}

/// Ping and pong reference each other, so dropping addresses never stops
/// them; an explicit message does.
impl Handler<Stop> for Ping {
    type Result = ();

    fn handle(&mut self, _: Stop, ctx: &mut Context<Self>) {
        ctx.stop();
    }
}

impl Handler<Stop> for Pong {
    type Result = ();

    fn handle(&mut self, _: Stop, ctx: &mut Context<Self>) {
        ctx.stop();
    }
}

fn err(e: impl std::fmt::Display) -> String {
    e.to_string()
}

async fn pingpong(arbiters: Vec<ArbiterHandle>, plan: Plan) -> Result<Outcome, String> {
    let (done_tx, mut done_rx) = unbounded_channel();
    let mut pairs = Vec::new();
    for i in 0..plan.pairs as usize {
        let arbiter = &arbiters[i % arbiters.len()];
        let (pinger, done) = (Pinger::new(&plan), done_tx.clone());
        let ping = Ping::start_in_arbiter(arbiter, move |_| Ping {
            pinger,
            pong: None,
            done,
        });
        let peer = ping.clone();
        let pong = Pong::start_in_arbiter(arbiter, move |_| Pong {
            ping: peer,
            count: 0,
        });
        pairs.push((ping, pong));
    }
    // `start_in_arbiter` creates the actor asynchronously on its arbiter; a
    // round trip to each one guarantees all exist before the clock starts.
    for (ping, pong) in &pairs {
        ping.send(GetCount).await.map_err(err)?;
        pong.send(GetCount).await.map_err(err)?;
    }

    let start = Instant::now();
    for (ping, pong) in &pairs {
        ping.do_send(Start(pong.clone()));
    }
    let ping_received = await_pairs(&mut done_rx, plan.pairs).await?;
    let elapsed = start.elapsed();

    let mut pong_received = 0;
    for (ping, pong) in &pairs {
        pong_received += pong.send(GetCount).await.map_err(err)?;
        ping.do_send(Stop);
        pong.do_send(Stop);
    }
    Ok(Outcome {
        received: ping_received + pong_received,
        elapsed,
    })
}

// ---- spawn ----

/// An idle actor that reports its lifecycle hooks to the driver.
struct Idle {
    events: UnboundedSender<()>,
}

impl Actor for Idle {
    type Context = Context<Self>;

    fn started(&mut self, _: &mut Context<Self>) {
        let _ = self.events.send(());
    }

    fn stopped(&mut self, _: &mut Context<Self>) {
        let _ = self.events.send(());
    }
}

impl Handler<Stop> for Idle {
    type Result = ();

    fn handle(&mut self, _: Stop, ctx: &mut Context<Self>) {
        ctx.stop();
    }
}

async fn wait_for(lifecycle: &mut UnboundedReceiver<()>, events: u64) -> Result<(), String> {
    for _ in 0..events {
        lifecycle.recv().await.ok_or("lifecycle channel closed")?;
    }
    Ok(())
}

async fn spawn(actors: u64) -> Result<SpawnOutcome, String> {
    let (events, mut lifecycle) = unbounded_channel();
    let rss_before = rss_bytes();
    let start = Instant::now();
    let alive: Vec<Addr<Idle>> = (0..actors)
        .map(|_| {
            Idle {
                events: events.clone(),
            }
            .start()
        })
        .collect();
    wait_for(&mut lifecycle, actors).await?; // every `started` hook ran
    let spawn = start.elapsed();
    let rss_growth = rss_bytes() - rss_before;

    let start = Instant::now();
    for a in &alive {
        a.do_send(Stop);
    }
    wait_for(&mut lifecycle, actors).await?; // every `stopped` hook ran
    Ok(SpawnOutcome {
        spawn,
        stop: start.elapsed(),
        rss_growth,
    })
}

// ---- ask ----

struct Responder;

impl Actor for Responder {
    type Context = Context<Self>;
}

#[derive(Message)]
#[rtype(result = "u64")]
struct Req(u64);

impl Handler<Req> for Responder {
    type Result = u64;

    fn handle(&mut self, Req(n): Req, _: &mut Context<Self>) -> u64 {
        n + 1
    }
}

async fn ask(warmup: u64, requests: u64, hist: &mut Histogram<u64>) -> Result<(), String> {
    let responder = Responder.start();
    for i in 0..warmup + requests {
        let t = Instant::now();
        let answer = responder.send(Req(i)).await.map_err(err)?;
        if i >= warmup {
            record(hist, t.elapsed());
        }
        if answer != i + 1 {
            return Err(format!("wrong reply {answer} to request {i}"));
        }
    }
    Ok(())
}

impl Harness for ActixHarness {
    fn pingpong(&mut self, plan: &Plan) -> Result<Outcome, String> {
        let handles = self.arbiters.iter().map(|a| a.handle()).collect();
        self.sys.block_on(pingpong(handles, *plan))
    }

    fn spawn(&mut self, actors: u64) -> Result<SpawnOutcome, String> {
        self.sys.block_on(spawn(actors))
    }

    fn ask(&mut self, warmup: u64, requests: u64, hist: &mut Histogram<u64>) -> Result<(), String> {
        self.sys.block_on(ask(warmup, requests, hist))
    }
}
