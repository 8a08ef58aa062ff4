//! The actors of `local-pingpong` and one measured run of them.

use std::sync::mpsc::{channel, Receiver, RecvTimeoutError, Sender};
use std::time::{Duration, Instant};

use volley::{Actor, ActorRef, ActorSystem, Context, HandleResult, Props};

use crate::measure::Throughput;

/// The ball that starts a ping (never a real ball number).
const START: u64 = u64::MAX;

enum Event {
    Ready,
    Done(u64),
    Stopped(u64),
}

struct Ping {
    balls: u64,
    inflight: u64,
    sent: u64,
    received: u64,
    pong: Option<ActorRef<u64>>,
    events: Sender<Event>,
}

impl Actor for Ping {
    type Msg = u64;

    fn pre_start(&mut self, ctx: &mut Context<Self>) -> HandleResult {
        let ping = ctx.myself();
        let events = self.events.clone();
        self.pong = Some(ctx.spawn_anonymous(Props::new(move || Pong {
            ping: ping.clone(),
            count: 0,
            events: events.clone(),
        }))?);
        let _ = self.events.send(Event::Ready);
        Ok(())
    }

    fn handle(&mut self, _ctx: &mut Context<Self>, ball: u64) -> HandleResult {
        let pong = self.pong.as_ref().expect("spawned in pre_start");
        if ball == START {
            let first = self.inflight.min(self.balls);
            for i in 0..first {
                pong.tell(i);
            }
            self.sent = first;
            if self.balls == 0 {
                let _ = self.events.send(Event::Done(0));
            }
            return Ok(());
        }
        self.received += 1;
        if self.sent < self.balls {
            pong.tell(self.sent);
            self.sent += 1;
        }
        if self.received == self.balls {
            let _ = self.events.send(Event::Done(self.received));
        }
        Ok(())
    }

    fn post_stop(&mut self, _ctx: &mut Context<Self>) {
        let _ = self.events.send(Event::Stopped(self.received));
    }
}

struct Pong {
    ping: ActorRef<u64>,
    count: u64,
    events: Sender<Event>,
}

impl Actor for Pong {
    type Msg = u64;

    fn pre_start(&mut self, _ctx: &mut Context<Self>) -> HandleResult {
        let _ = self.events.send(Event::Ready);
        Ok(())
    }

    fn handle(&mut self, _ctx: &mut Context<Self>, ball: u64) -> HandleResult {
        self.count += 1;
        self.ping.tell(ball);
        Ok(())
    }

    fn post_stop(&mut self, _ctx: &mut Context<Self>) {
        let _ = self.events.send(Event::Stopped(self.count));
    }
}

fn recv(rx: &Receiver<Event>, deadline: Instant, what: &str) -> crate::Result<Event> {
    let left = deadline.saturating_duration_since(Instant::now());
    rx.recv_timeout(left).map_err(|e| match e {
        RecvTimeoutError::Timeout => format!("timed out waiting for {what}").into(),
        RecvTimeoutError::Disconnected => format!("actors gone while waiting for {what}").into(),
    })
}

/// One measured run: P fresh pairs, M messages in total (rounded down to a
/// multiple of 2P). Every message is counted by the actor receiving it and
/// the total is checked. Returns the messages and the time from the first
/// Start to the last pair's report.
pub fn pingpong_once(
    system: &ActorSystem,
    p: usize,
    k: usize,
    messages: u64,
) -> crate::Result<Throughput> {
    let balls = messages / p as u64 / 2;
    let expected = 2 * p as u64 * balls;
    let dead_before = system.dead_letter_count();
    let (tx, rx) = channel();
    let mut pings = Vec::with_capacity(p);
    for _ in 0..p {
        let events = tx.clone();
        pings.push(system.spawn_anonymous(Props::new(move || Ping {
            balls,
            inflight: k as u64,
            sent: 0,
            received: 0,
            pong: None,
            events: events.clone(),
        }))?);
    }
    drop(tx);
    let deadline = Instant::now() + Duration::from_secs(30);
    for _ in 0..2 * p {
        match recv(&rx, deadline, "the pairs to start")? {
            Event::Ready => {}
            _ => return Err("an actor reported before Start".into()),
        }
    }
    let start = Instant::now();
    for ping in &pings {
        ping.tell(START);
    }
    let deadline = start + Duration::from_secs(300);
    let mut received = 0;
    for i in 0..p {
        match recv(&rx, deadline, &format!("pair reports ({i} of {p} in)"))? {
            Event::Done(n) => received += n,
            _ => return Err("unexpected event during the run".into()),
        }
    }
    let elapsed = start.elapsed();
    for ping in &pings {
        system.stop(ping);
    }
    let deadline = Instant::now() + Duration::from_secs(30);
    let mut counted = 0;
    for _ in 0..2 * p {
        match recv(&rx, deadline, "the pairs to stop")? {
            Event::Stopped(n) => counted += n,
            _ => return Err("unexpected event while stopping".into()),
        }
    }
    let dead = system.dead_letter_count() - dead_before;
    if received != p as u64 * balls || counted != expected || dead != 0 {
        return Err(format!(
            "message count mismatch at P={p} K={k}: expected {expected} messages \
             ({} replies to pings), actors counted {counted} ({received} replies), \
             {dead} dead letters",
            p as u64 * balls
        )
        .into());
    }
    Ok(Throughput::new(expected, elapsed))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_small_run_counts_every_message() {
        let system = ActorSystem::new("pingpong-test").unwrap();
        let run = pingpong_once(&system, 2, 10, 4_000).unwrap();
        assert_eq!(run.count, 4_000);
        assert!(run.elapsed > Duration::ZERO);
        assert_eq!(pingpong_once(&system, 3, 1, 100).unwrap().count, 96);
        tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap()
            .block_on(system.terminate());
    }
}
