//! Long runs, behind `--ignored`: `cargo test --release -p volley-remote
//! --test soak -- --ignored --nocapture`.

use crate::common;

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use common::{node, Ping};
use volley::{Actor, ActorRef, Context, HandleResult, Props};
use volley_remote::RemoteSettings;

struct Echo;
impl Actor for Echo {
    type Msg = Ping;
    fn handle(&mut self, _ctx: &mut Context<Self>, msg: Ping) -> HandleResult {
        msg.reply_to.tell(msg.n);
        Ok(())
    }
}

struct Client {
    echo: ActorRef<Ping>,
    left: u32,
    done: Arc<AtomicU64>,
}
impl Actor for Client {
    type Msg = u32;
    fn handle(&mut self, ctx: &mut Context<Self>, n: u32) -> HandleResult {
        self.left -= 1;
        if self.left == 0 {
            self.done.fetch_add(1, Ordering::SeqCst);
        } else if n == u32::MAX {
            // priming message
            self.echo.tell(Ping {
                n: 0,
                reply_to: ctx.myself(),
            });
        } else {
            self.echo.tell(Ping {
                n,
                reply_to: ctx.myself(),
            });
        }
        Ok(())
    }
}

#[volley_testkit::each_dispatcher]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore]
async fn remote_pingpong_soak() {
    let a = node("alpha", RemoteSettings::default()).await;
    let b = node("beta", RemoteSettings::default()).await;
    // VOLLEY_SOAK_CLIENTS=10 and VOLLEY_SOAK_REPEAT=10000 shrink the run
    // (for callgrind).
    let env = |name: &str| std::env::var(name).ok().and_then(|v| v.parse::<u32>().ok());
    let client_counts = env("VOLLEY_SOAK_CLIENTS").map_or(vec![1u32, 10, 30], |c| vec![c]);
    let repeat = env("VOLLEY_SOAK_REPEAT").unwrap_or(100_000);
    for clients in client_counts {
        let done = Arc::new(AtomicU64::new(0));
        let mut refs = Vec::new();
        for c in 0..clients {
            b.system
                .spawn(&format!("echo{clients}-{c}"), Props::new(|| Echo))
                .unwrap();
            let echo = a
                .remoting
                .resolve::<Ping>(&format!("{}/user/echo{clients}-{c}", b.remoting.address()))
                .unwrap();
            let d = done.clone();
            let client = a
                .system
                .spawn_anonymous(Props::new(move || Client {
                    echo: echo.clone(),
                    left: repeat + 50,
                    done: d.clone(),
                }))
                .unwrap();
            refs.push(client);
        }
        let start = Instant::now();
        for client in &refs {
            for _ in 0..50 {
                client.tell(u32::MAX);
            }
        }
        while done.load(Ordering::SeqCst) < clients as u64 {
            assert!(start.elapsed() < Duration::from_secs(120));
            tokio::time::sleep(Duration::from_millis(1)).await;
        }
        let elapsed = start.elapsed();
        let total = clients as u64 * repeat as u64 * 2;
        println!(
            "clients {clients:>2}: {total} msgs in {:.0} ms = {:.0} msgs/s",
            elapsed.as_secs_f64() * 1e3,
            total as f64 / elapsed.as_secs_f64()
        );
    }
    a.system.terminate().await;
    b.system.terminate().await;
}
