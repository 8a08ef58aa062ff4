//! A handler that panics 100,000 times does not harm its siblings.
//! (Own test binary: it silences the global panic hook.)

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use volley::{ActorRef, ActorSystem, Props};
use volley_testkit::{actor_fn_with, FnActor};

enum Msg {
    Panic,
    Count,
    Get(ActorRef<u64>),
}

/// Counts its starts in `starts` and the `Count`s its incarnation got.
fn counting(starts: Arc<AtomicU64>) -> Props<FnActor<Msg, u64>> {
    actor_fn_with(0, |count, _ctx, msg: Msg| {
        match msg {
            Msg::Panic => panic!("on purpose"),
            Msg::Count => *count += 1,
            Msg::Get(r) => r.tell(*count),
        }
        Ok(())
    })
    .on_start(move |_, _ctx| {
        starts.fetch_add(1, Ordering::Relaxed);
        Ok(())
    })
    .props()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 1)]
async fn a_hundred_thousand_panics_leave_siblings_alone() {
    std::panic::set_hook(Box::new(|_| {}));
    const PANICS: u64 = 100_000;
    let system = ActorSystem::new("panics").unwrap();
    let starts = Arc::new(AtomicU64::new(0));
    let s1 = starts.clone();
    let victim = system.spawn("victim", counting(s1)).unwrap();
    let sibling = system.spawn("sibling", counting(Arc::default())).unwrap();
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
