//! A handler that panics 100,000 times does not harm its siblings.
//! (Own test binary: it silences the global panic hook.)

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use volley::{Actor, ActorRef, ActorSystem, Context, HandleResult, Props};

enum Msg {
    Panic,
    Count,
    Get(ActorRef<u64>),
}

struct Victim {
    restarts: Arc<AtomicU64>,
    count: u64,
}

impl Actor for Victim {
    type Msg = Msg;
    fn pre_start(&mut self, _ctx: &mut Context<Self>) -> HandleResult {
        self.restarts.fetch_add(1, Ordering::Relaxed);
        Ok(())
    }
    fn handle(&mut self, _ctx: &mut Context<Self>, msg: Msg) -> HandleResult {
        match msg {
            Msg::Panic => panic!("on purpose"),
            Msg::Count => self.count += 1,
            Msg::Get(r) => r.tell(self.count),
        }
        Ok(())
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 1)]
async fn a_hundred_thousand_panics_leave_siblings_alone() {
    std::panic::set_hook(Box::new(|_| {}));
    const PANICS: u64 = 100_000;
    let system = ActorSystem::new("panics").unwrap();
    let starts = Arc::new(AtomicU64::new(0));
    let s1 = starts.clone();
    let victim = system
        .spawn(
            "victim",
            Props::new(move || Victim {
                restarts: s1.clone(),
                count: 0,
            }),
        )
        .unwrap();
    let sibling = system
        .spawn(
            "sibling",
            Props::new(|| Victim {
                restarts: Arc::new(AtomicU64::new(0)),
                count: 0,
            }),
        )
        .unwrap();
    for _ in 0..PANICS {
        victim.tell(Msg::Panic);
        sibling.tell(Msg::Count);
    }
    let count = sibling
        .ask(Msg::Get, Duration::from_secs(120))
        .await
        .unwrap();
    assert_eq!(count, PANICS, "the sibling lost messages");
    // Every panic restarted the victim (default strategy), and it still works.
    victim.tell(Msg::Count);
    let after = victim
        .ask(Msg::Get, Duration::from_secs(120))
        .await
        .unwrap();
    assert_eq!(after, 1);
    assert_eq!(starts.load(Ordering::Relaxed), PANICS + 1);
    let _ = std::panic::take_hook();
    system.terminate().await;
}
