//! ractor: actors implement `ractor::Actor` and are spawned unsupervised with
//! `Actor::spawn`, on a 2-worker tokio runtime. Ractor mailboxes are unbounded.

use super::{multi_thread_runtime, run_on_workers, Harness, SpawnOutcome};
use crate::plan::{await_pairs, Next, Outcome, Pinger, Plan};
use crate::report::{record, rss_bytes};
use hdrhistogram::Histogram;
use ractor::{call, Actor, ActorProcessingErr, ActorRef, RpcReplyPort};
use std::time::Instant;
use tokio::sync::mpsc::UnboundedSender;

pub struct RactorHarness {
    rt: tokio::runtime::Runtime,
}

impl RactorHarness {
    pub fn new() -> Self {
        Self {
            rt: multi_thread_runtime(),
        }
    }
}

// ---- ping-pong ----

enum PingMsg {
    /// Sent by the driver once every pair exists; carries the peer.
    Start(ActorRef<PongMsg>),
    Ball(u64),
}

enum PongMsg {
    Ball(u64),
    Count(RpcReplyPort<u64>),
}

// With ractor's `cluster` feature (the ractor_cluster build, see
// Cargo.toml) ractor has no blanket `Message` impl: local-only message types
// implement it with the default, non-serializable, methods. The plain build
// needs (and allows) none of this.
#[cfg(feature = "cluster")]
impl ractor::Message for PingMsg {}
#[cfg(feature = "cluster")]
impl ractor::Message for PongMsg {}
#[cfg(feature = "cluster")]
impl ractor::Message for Req {}

struct Ping;

struct PingState {
    pinger: Pinger,
    pong: Option<ActorRef<PongMsg>>,
    done: UnboundedSender<u64>,
}

impl Actor for Ping {
    type Msg = PingMsg;
    type State = PingState;
    type Arguments = (Pinger, UnboundedSender<u64>);

    async fn pre_start(
        &self,
        _myself: ActorRef<PingMsg>,
        (pinger, done): Self::Arguments,
    ) -> Result<PingState, ActorProcessingErr> {
        Ok(PingState {
            pinger,
            pong: None,
            done,
        })
    }

    async fn handle(
        &self,
        _myself: ActorRef<PingMsg>,
        msg: PingMsg,
        st: &mut PingState,
    ) -> Result<(), ActorProcessingErr> {
        match msg {
            PingMsg::Start(pong) => {
                for n in 0..st.pinger.prime() {
                    pong.cast(PongMsg::Ball(n))?;
                }
                st.pong = Some(pong);
            }
            PingMsg::Ball(n) => match st.pinger.on_reply() {
                Next::Send => st
                    .pong
                    .as_ref()
                    .expect("started")
                    .cast(PongMsg::Ball(n + 1))?,
                Next::Wait => {}
                Next::Done => {
                    let _ = st.done.send(st.pinger.received());
                }
            },
        }
        Ok(())
    }
}

struct Pong;

impl Actor for Pong {
    type Msg = PongMsg;
    /// (ping, balls received)
    type State = (ActorRef<PingMsg>, u64);
    type Arguments = ActorRef<PingMsg>;

    async fn pre_start(
        &self,
        _myself: ActorRef<PongMsg>,
        ping: ActorRef<PingMsg>,
    ) -> Result<Self::State, ActorProcessingErr> {
        Ok((ping, 0))
    }

    async fn handle(
        &self,
        _myself: ActorRef<PongMsg>,
        msg: PongMsg,
        (ping, count): &mut Self::State,
    ) -> Result<(), ActorProcessingErr> {
        match msg {
            PongMsg::Ball(n) => {
                *count += 1;
                ping.cast(PingMsg::Ball(n))?;
            }
            PongMsg::Count(reply) => {
                let _ = reply.send(*count);
            }
        }
        Ok(())
    }
}

fn err(e: impl std::fmt::Display) -> String {
    e.to_string()
}

async fn pingpong(plan: Plan) -> Result<Outcome, String> {
    let (done_tx, mut done_rx) = tokio::sync::mpsc::unbounded_channel();
    let mut pairs = Vec::new();
    let mut joins = Vec::new();
    for _ in 0..plan.pairs {
        // `spawn` returns once `pre_start` ran: the actor is up.
        let (ping, j1) = Actor::spawn(None, Ping, (Pinger::new(&plan), done_tx.clone()))
            .await
            .map_err(err)?;
        let (pong, j2) = Actor::spawn(None, Pong, ping.clone()).await.map_err(err)?;
        pairs.push((ping, pong));
        joins.extend([j1, j2]);
    }

    let start = Instant::now();
    for (ping, pong) in &pairs {
        ping.cast(PingMsg::Start(pong.clone())).map_err(err)?;
    }
    let ping_received = await_pairs(&mut done_rx, plan.pairs).await?;
    let elapsed = start.elapsed();

    let mut pong_received = 0;
    for (ping, pong) in &pairs {
        pong_received += call!(pong, PongMsg::Count).map_err(err)?;
        ping.stop(None);
        pong.stop(None);
    }
    for j in joins {
        j.await.map_err(err)?;
    }
    Ok(Outcome {
        received: ping_received + pong_received,
        elapsed,
    })
}

// ---- spawn ----

struct Idle;

impl Actor for Idle {
    type Msg = ();
    type State = ();
    type Arguments = ();

    async fn pre_start(&self, _: ActorRef<()>, _: ()) -> Result<(), ActorProcessingErr> {
        Ok(())
    }
}

async fn spawn(actors: u64) -> Result<SpawnOutcome, String> {
    let rss_before = rss_bytes();
    let start = Instant::now();
    let mut alive = Vec::with_capacity(actors as usize);
    for _ in 0..actors {
        // Awaiting `spawn` waits for `pre_start`, i.e. until started.
        alive.push(Actor::spawn(None, Idle, ()).await.map_err(err)?);
    }
    let spawn = start.elapsed();
    let rss_growth = rss_bytes() - rss_before;

    let start = Instant::now();
    for (actor, _) in &alive {
        actor.stop(None);
    }
    for (_, join) in alive {
        join.await.map_err(err)?;
    }
    Ok(SpawnOutcome {
        spawn,
        stop: start.elapsed(),
        rss_growth,
    })
}

// ---- ask ----

enum Req {
    Ask(u64, RpcReplyPort<u64>),
}

struct Responder;

impl Actor for Responder {
    type Msg = Req;
    type State = ();
    type Arguments = ();

    async fn pre_start(&self, _: ActorRef<Req>, _: ()) -> Result<(), ActorProcessingErr> {
        Ok(())
    }

    async fn handle(
        &self,
        _: ActorRef<Req>,
        msg: Req,
        _: &mut (),
    ) -> Result<(), ActorProcessingErr> {
        let Req::Ask(n, reply) = msg;
        let _ = reply.send(n + 1);
        Ok(())
    }
}

async fn ask(
    warmup: u64,
    requests: u64,
    mut hist: Histogram<u64>,
) -> Result<Histogram<u64>, String> {
    let (responder, join) = Actor::spawn(None, Responder, ()).await.map_err(err)?;
    for i in 0..warmup + requests {
        let t = Instant::now();
        let answer = call!(responder, Req::Ask, i).map_err(err)?;
        if i >= warmup {
            record(&mut hist, t.elapsed());
        }
        if answer != i + 1 {
            return Err(format!("wrong reply {answer} to request {i}"));
        }
    }
    responder.stop(None);
    join.await.map_err(err)?;
    Ok(hist)
}

impl Harness for RactorHarness {
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
