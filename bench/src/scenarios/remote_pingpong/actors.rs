//! The client actors of `remote-pingpong` and one measured run of them.

use std::sync::mpsc::{channel, RecvTimeoutError, Sender};
use std::time::{Duration, Instant};

use volley::{Actor, ActorRef, Context, HandleResult, Props};

use crate::measure::Throughput;
use crate::scenarios::remote_common::{Nodes, Ping};

/// The message that primes a client (never a real ball).
const START: u32 = u32::MAX;

struct Client {
    echo: ActorRef<Ping>,
    me: Option<ActorRef<u32>>,
    repeat: u64,
    inflight: u64,
    sent: u64,
    received: u64,
    done: Sender<u64>,
}

impl Client {
    fn ping(&mut self, n: u32) {
        let reply_to = self.me.clone().expect("set in pre_start");
        self.echo.tell(Ping { n, reply_to });
        self.sent += 1;
    }
}

impl Actor for Client {
    type Msg = u32;

    fn pre_start(&mut self, ctx: &mut Context<Self>) -> HandleResult {
        self.me = Some(ctx.myself());
        Ok(())
    }

    fn handle(&mut self, _ctx: &mut Context<Self>, n: u32) -> HandleResult {
        if n == START {
            for i in 0..self.inflight.min(self.repeat) {
                self.ping(i as u32);
            }
            return Ok(());
        }
        self.received += 1;
        if self.sent < self.repeat {
            self.ping(n);
        }
        if self.received == self.repeat {
            let _ = self.done.send(self.received);
        }
        Ok(())
    }
}

/// One measured run: a fresh client on A per echo, R round trips each.
/// Returns Total = clients × R × 2 and the time from priming to the last
/// client's last reply.
pub fn pingpong_once(
    nodes: &Nodes,
    echoes: &[ActorRef<Ping>],
    repeat: u64,
    inflight: usize,
) -> crate::Result<Throughput> {
    let (tx, rx) = channel();
    let mut clients = Vec::with_capacity(echoes.len());
    for echo in echoes {
        let (echo, done) = (echo.clone(), tx.clone());
        clients.push(nodes.a.system.spawn_anonymous(Props::new(move || Client {
            echo: echo.clone(),
            me: None,
            repeat,
            inflight: inflight as u64,
            sent: 0,
            received: 0,
            done: done.clone(),
        }))?);
    }
    drop(tx);
    let dead_before = nodes.dead_letters();
    let start = Instant::now();
    for c in &clients {
        c.tell(START);
    }
    let deadline = start + Duration::from_secs(300);
    let mut received = 0;
    for i in 0..clients.len() {
        let left = deadline.saturating_duration_since(Instant::now());
        match rx.recv_timeout(left) {
            Ok(n) => received += n,
            Err(RecvTimeoutError::Timeout) => {
                return Err(format!(
                    "remote-pingpong timed out: {i} of {} clients done",
                    clients.len()
                )
                .into())
            }
            Err(RecvTimeoutError::Disconnected) => return Err("clients gone".into()),
        }
    }
    let elapsed = start.elapsed();
    for c in &clients {
        nodes.a.system.stop(c);
    }
    let expected = clients.len() as u64 * repeat;
    let dead = nodes.dead_letters() - dead_before;
    if received != expected || dead != 0 {
        return Err(format!(
            "remote-pingpong count mismatch: expected {expected} replies, counted {received}, \
             {dead} dead letters"
        )
        .into());
    }
    Ok(Throughput::new(2 * expected, elapsed))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::scenarios::remote_common::Layout;

    /// In one process, plaintext and over TLS (the rows' two setups).
    #[test]
    fn a_small_run_in_one_process_counts_every_reply() {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        let tls = crate::scenarios::remote_tls::bench_tls().unwrap();
        for tls in [None, Some(&tls)] {
            let layout = Layout {
                dispatcher: 1,
                io: 1,
                idle_spin_us: None,
                metrics: false,
            };
            let nodes = Nodes::start_with(&rt, layout, true, false, tls).unwrap();
            let echoes: Vec<ActorRef<Ping>> = (0..2)
                .map(|_| nodes.spawn_on_b(&rt, "echo").unwrap())
                .collect();
            let run = pingpong_once(&nodes, &echoes, 500, 50).unwrap();
            assert_eq!(run.count, 2 * 2 * 500, "tls: {}", tls.is_some());
            assert!(run.elapsed > Duration::ZERO);
            nodes.stop(&rt);
        }
    }
}
