//! Long or heavy runs, behind `--ignored`:
//! `cargo test --release -p volley --test soak -- --ignored --nocapture`.

use std::sync::mpsc;
use std::time::{Duration, Instant};

use volley::{
    Actor, ActorRef, ActorSystem, Context, DispatcherSettings, HandleResult, Props, Settings,
};

enum Ball {
    Start(ActorRef<Ball>),
    Hit(u64),
}

struct Player {
    peer: Option<ActorRef<Ball>>,
    left: u64,
    inflight: u64,
    done: mpsc::Sender<()>,
}

impl Actor for Player {
    type Msg = Ball;
    fn handle(&mut self, _ctx: &mut Context<Self>, msg: Ball) -> HandleResult {
        match msg {
            Ball::Start(peer) => {
                for _ in 0..self.inflight {
                    peer.tell(Ball::Hit(0));
                }
                self.peer = Some(peer);
            }
            Ball::Hit(n) => {
                self.left -= 1;
                if self.left == 0 {
                    self.done.send(()).ok();
                }
                if let Some(p) = &self.peer {
                    p.tell(Ball::Hit(n + 1));
                }
            }
        }
        Ok(())
    }
}

fn run(pairs: u64, inflight: u64, throughput: usize, per_pair: u64) -> f64 {
    let settings = Settings {
        default_dispatcher: DispatcherSettings {
            throughput,
            ..DispatcherSettings::default()
        },
        ..Settings::default()
    };
    let system = ActorSystem::with_settings("soak", settings).unwrap();
    let (tx, rx) = mpsc::channel();
    let mut pings = Vec::new();
    for p in 0..pairs {
        let (t1, t2) = (tx.clone(), tx.clone());
        // Each side counts its own share; the pong side never stops bouncing
        // until the ping side is done, so count on ping only.
        let ping = system
            .spawn(
                &format!("ping{p}"),
                Props::new(move || Player {
                    peer: None,
                    left: per_pair / 2,
                    inflight,
                    done: t1.clone(),
                }),
            )
            .unwrap();
        let pong = system
            .spawn(
                &format!("pong{p}"),
                Props::new(move || Player {
                    peer: None,
                    left: u64::MAX,
                    inflight: 0,
                    done: t2.clone(),
                }),
            )
            .unwrap();
        pong.tell(Ball::Start(ping.clone()));
        pings.push((ping, pong));
    }
    // Lets the setup settle before the clock starts: a measurement's
    // pause, not a synchronisation (each pong's Start is first in its
    // mailbox anyway).
    std::thread::sleep(Duration::from_millis(20));
    let start = Instant::now();
    for (ping, pong) in &pings {
        ping.tell(Ball::Start(pong.clone()));
    }
    for _ in 0..pairs {
        rx.recv_timeout(Duration::from_secs(120)).unwrap();
    }
    let elapsed = start.elapsed();
    let rt = tokio::runtime::Runtime::new().unwrap();
    rt.block_on(system.terminate());
    (pairs * per_pair) as f64 / elapsed.as_secs_f64()
}

#[test]
#[ignore]
fn local_pingpong_throughput() {
    // VOLLEY_SOAK=P,K,T runs one configuration (for profiling).
    let configs: Vec<(u64, u64, usize)> = match std::env::var("VOLLEY_SOAK") {
        Ok(v) => {
            let n: Vec<u64> = v.split(',').map(|x| x.trim().parse().unwrap()).collect();
            vec![(n[0], n[1], n[2] as usize)]
        }
        Err(_) => vec![(1, 1, 50), (4, 100, 50), (4, 100, 200), (16, 100, 200)],
    };
    for (pairs, inflight, tp) in configs {
        let mps = run(pairs, inflight, tp, 20_000_000 / pairs);
        println!(
            "P={pairs:<2} K={inflight:<3} T={tp:<3}: {:.1} M msgs/s",
            mps / 1e6
        );
    }
}
