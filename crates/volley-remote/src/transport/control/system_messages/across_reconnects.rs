//! Exactly once across reconnects, end to end: watches and unwatches
//! issued while the control connection is dropped again and again still
//! take effect once each, in order, so each watch still in place at the
//! end gets one `Terminated` and each withdrawn one none.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use volley::{Actor, ActorRef, ActorSystem, AnyRef, Context, HandleResult, Props, Terminated};

use crate::transport::{Registry, RemoteSettings, Remoting};
use crate::wire::Lane;

struct Idle;

impl Actor for Idle {
    type Msg = u32;
    fn handle(&mut self, _ctx: &mut Context<Self>, _msg: u32) -> HandleResult {
        Ok(())
    }
}

enum Order {
    Watch(AnyRef),
    Unwatch(AnyRef),
}

struct Watcher(Arc<Vec<AtomicUsize>>, Vec<AnyRef>);

impl Actor for Watcher {
    type Msg = Order;
    fn handle(&mut self, ctx: &mut Context<Self>, order: Order) -> HandleResult {
        match order {
            Order::Watch(target) => ctx.watch(&target),
            Order::Unwatch(target) => ctx.unwatch(&target),
        }
        Ok(())
    }

    fn on_terminated(&mut self, _ctx: &mut Context<Self>, t: Terminated) -> HandleResult {
        let index = self.1.iter().position(|r| *r == t.actor).expect("watched");
        self.0[index].fetch_add(1, Ordering::SeqCst);
        Ok(())
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn watches_and_unwatches_take_effect_once_each_while_connections_drop() {
    let settings = || RemoteSettings {
        reconnect_backoff: Duration::from_millis(5),
        reconnect_backoff_max: Duration::from_millis(20),
        ..RemoteSettings::default()
    };
    let a_system = ActorSystem::new("resend-a").unwrap();
    let b_system = ActorSystem::new("resend-b").unwrap();
    let a = Remoting::start_with(&a_system, Registry::default(), settings())
        .await
        .unwrap();
    let b = Remoting::start_with(&b_system, Registry::default(), settings())
        .await
        .unwrap();
    const N: usize = 8;
    let locals: Vec<ActorRef<u32>> = (0..N)
        .map(|i| {
            b_system
                .spawn(&format!("t{i}"), Props::new(|| Idle))
                .unwrap()
        })
        .collect();
    let remotes: Vec<AnyRef> = (0..N)
        .map(|i| {
            a.resolve::<u32>(&format!("{}/user/t{i}", b.address()))
                .unwrap()
                .to_any()
        })
        .collect();
    let counts = Arc::new((0..N).map(|_| AtomicUsize::new(0)).collect::<Vec<_>>());
    let (c, r) = (counts.clone(), remotes.clone());
    let watcher = a_system
        .spawn("watcher", Props::new(move || Watcher(c.clone(), r.clone())))
        .unwrap();
    let control = a
        .core
        .association(b.address())
        .unwrap()
        .lane(Lane::Control)
        .clone();
    // Even targets end watched, odd ones watched and then unwatched; the
    // control connection is dropped between the orders.
    for round in 0..3 {
        for (i, target) in remotes.iter().enumerate() {
            watcher.tell(Order::Watch(target.clone()));
            if i % 2 == 1 || round < 2 {
                watcher.tell(Order::Unwatch(target.clone()));
            }
            control.drop_connection();
            tokio::time::sleep(Duration::from_millis(3)).await;
        }
    }
    // Everything acknowledged: nothing left to resend.
    let association = a.core.association(b.address()).unwrap();
    let start = Instant::now();
    while !crate::transport::support::lock(&association.control)
        .outbox
        .unacked
        .is_empty()
    {
        assert!(start.elapsed() < Duration::from_secs(10), "never acked");
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    for local in &locals {
        local.graceful_stop();
    }
    let start = Instant::now();
    while (0..N)
        .step_by(2)
        .any(|i| counts[i].load(Ordering::SeqCst) == 0)
    {
        assert!(
            start.elapsed() < Duration::from_secs(10),
            "missing Terminated"
        );
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    tokio::time::sleep(Duration::from_millis(300)).await;
    for (i, count) in counts.iter().enumerate() {
        let expected = usize::from(i % 2 == 0);
        assert_eq!(count.load(Ordering::SeqCst), expected, "target {i}");
    }
    a_system.terminate().await;
    b_system.terminate().await;
}
