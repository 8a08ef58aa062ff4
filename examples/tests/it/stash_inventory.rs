//! The stash example: queries sent before the stock has loaded are
//! answered after it, in the order sent; one past the stash's capacity
//! fails the inventory instead of being lost silently.

use std::sync::Arc;
use std::time::Duration;

use tokio::sync::oneshot;
use volley::ActorSystem;
use volley_examples::stash_inventory_app::{start, InventoryMsg, Loader, Stock};
use volley_testkit::TestProbe;

/// A loader that finishes when the test says so.
fn gated() -> (Loader, oneshot::Sender<Stock>) {
    let (tx, rx) = oneshot::channel::<Stock>();
    let rx = Arc::new(std::sync::Mutex::new(Some(rx)));
    let load: Loader = Arc::new(move || {
        let rx = rx.lock().unwrap().take();
        Box::pin(async move {
            match rx {
                Some(rx) => rx.await.unwrap_or_default(),
                None => Stock::new(),
            }
        })
    });
    (load, tx)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn queries_wait_for_the_stock_and_keep_their_order() {
    let system = ActorSystem::new("stash-inventory-order").unwrap();
    let (load, loaded) = gated();
    let inventory = start(&system, load, 100).unwrap();
    let probe = TestProbe::<Option<u32>>::new(&system);
    let items = ["a", "b", "a", "missing", "b"];
    for item in items {
        inventory.tell(InventoryMsg::Count {
            item: item.to_string(),
            reply_to: probe.actor_ref(),
        });
    }
    probe.expect_no_msg(Duration::from_millis(200));
    loaded
        .send(Stock::from([("a".to_string(), 1), ("b".to_string(), 2)]))
        .unwrap();
    for expected in [Some(1), Some(2), Some(1), None, Some(2)] {
        probe.expect_msg(expected);
    }
    // Loaded: a new query is answered straight away.
    inventory.tell(InventoryMsg::Count {
        item: "b".to_string(),
        reply_to: probe.actor_ref(),
    });
    probe.expect_msg(Some(2));
    system.terminate().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_query_past_the_stash_capacity_fails_the_inventory() {
    let system = ActorSystem::new("stash-inventory-full").unwrap();
    let (load, _loaded) = gated();
    let inventory = start(&system, load, 3).unwrap();
    let probe = TestProbe::<Option<u32>>::new(&system);
    let before = system.dead_letter_count();
    for _ in 0..4 {
        inventory.tell(InventoryMsg::Count {
            item: "a".to_string(),
            reply_to: probe.actor_ref(),
        });
    }
    // The fourth goes to dead letters and fails the actor; its supervisor
    // (the user guardian) restarts it, and the three stashed queries go to
    // the new instance (Akka Typed's unstash on restart). Its load (the
    // gate is used up) comes back empty at once, so they are answered.
    for _ in 0..3 {
        probe.expect_msg(None);
    }
    probe.expect_no_msg(Duration::from_millis(100));
    assert_eq!(system.dead_letter_count(), before + 1);
    system.terminate().await;
}
