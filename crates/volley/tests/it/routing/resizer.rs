//! Cases ported from Pekko's `ResizerSpec` and `RoundRobinSpec`
//! (actor-tests, `routing`) on `AdjustPoolSize` and a pool's size limits,
//! in volley's API (`RouterRef::adjust_pool_size`):
//!
//! - ResizerSpec "clamp AdjustPoolSize growth to upperBound" →
//!   `adjusting_a_resized_pool_stops_at_the_upper_bound`;
//! - ResizerSpec "clamp AdjustPoolSize shrink to lowerBound" →
//!   `adjusting_a_resized_pool_stops_at_the_lower_bound`;
//! - a pool above its upper bound (routees added by hand) that is asked to
//!   grow or shrink → `a_change_is_cut_short_at_the_bound_never_reversed`.
//!
//! A volley bug these found, now fixed (`routing/router_actor.rs`):
//! `AdjustPoolSize` ignored the resizer's bounds, so a resized pool grew
//! past its upper bound or shrank below its lower one, although
//! docs/reference/routers.md#resizer says the size stays within them.
//!
//! Differences from Pekko:
//! - Pekko sets the size to the request clamped to the bounds, so asking a
//!   pool that is above its upper bound to grow shrinks it; volley cuts a
//!   change short at the bound and never turns it around.
//! - RoundRobinSpec "not shrink below 1 routee with AdjustPoolSize" (a
//!   pool without a resizer): volley keeps Akka's behaviour, a pool shrunk
//!   to no routee stays and grows again on request
//!   (`routers.rs::a_pool_shrunk_below_one_routee_stays_and_grows_again`;
//!   docs/reference/routers.md#routees-that-terminate).
//!
//! The resizers here never tick during a test (an interval of an hour, no
//! backoff), so the sizes seen are the requests' alone.

use crate::common;

use std::time::Duration;

use volley::{Props, Resizer, Router, RouterRef};
use volley_testkit::{actor_fn, FnActor, TestProbe};

const T: Duration = Duration::from_secs(10);

/// A routee that does nothing.
fn worker() -> Props<FnActor<()>> {
    actor_fn(|_ctx, ()| Ok(()))
}

fn still(lower: usize, upper: usize) -> Resizer {
    Resizer::new(lower, upper)
        .with_interval(Duration::from_secs(3600))
        .with_backoff(0.0, 0.0)
        .with_rampup_rate(0.0)
}

async fn size(router: &RouterRef<()>) -> usize {
    router.current_routees(T).await.unwrap().len()
}

/// ResizerSpec "clamp AdjustPoolSize growth to upperBound": lower 2,
/// upper 5, asked for ten more, the pool has five.
#[volley_testkit::each_dispatcher]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn adjusting_a_resized_pool_stops_at_the_upper_bound() {
    let system = common::system("resize-clamp-up").unwrap();
    let router = Router::pool(0, worker())
        .with_resizer(still(2, 5))
        .spawn(&system, "pool")
        .unwrap();
    assert_eq!(size(&router).await, 2);
    router.adjust_pool_size(10);
    assert_eq!(size(&router).await, 5);
    router.adjust_pool_size(1);
    assert_eq!(size(&router).await, 5);
    system.terminate().await;
}

/// ResizerSpec "clamp AdjustPoolSize shrink to lowerBound": grown by two
/// to four, then asked to lose ten, the pool keeps two; the routees it
/// gave up stop.
#[volley_testkit::each_dispatcher]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn adjusting_a_resized_pool_stops_at_the_lower_bound() {
    let system = common::system("resize-clamp-down").unwrap();
    let router = Router::pool(0, worker())
        .with_resizer(still(2, 5))
        .spawn(&system, "pool")
        .unwrap();
    assert_eq!(size(&router).await, 2);
    router.adjust_pool_size(2);
    let four = router.current_routees(T).await.unwrap();
    assert_eq!(four.len(), 4);
    router.adjust_pool_size(-10);
    let two = router.current_routees(T).await.unwrap();
    assert_eq!(two.len(), 2);
    let watcher = TestProbe::<()>::new(&system);
    for gone in four.iter().filter(|r| !two.contains(r)) {
        watcher.watch(gone);
        watcher.expect_terminated(gone);
    }
    assert!(two.iter().all(|r| !r.is_terminated()));
    assert!(!router.is_terminated());
    system.terminate().await;
}

/// A pool above its upper bound, by routees added by hand: asked to grow,
/// it stays as it is; asked to shrink by more than it may, it stops at
/// the lower bound, giving up only routees it created.
#[volley_testkit::each_dispatcher]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_change_is_cut_short_at_the_bound_never_reversed() {
    let system = common::system("resize-no-reverse").unwrap();
    let router = Router::pool(3, worker())
        .with_resizer(still(2, 3))
        .spawn(&system, "pool")
        .unwrap();
    let extra = system.spawn("extra", worker()).unwrap();
    router.add_routee(extra.clone());
    assert_eq!(size(&router).await, 4);
    router.adjust_pool_size(1);
    assert_eq!(size(&router).await, 4);
    router.adjust_pool_size(-5);
    let left = router.current_routees(T).await.unwrap();
    assert_eq!(left.len(), 2);
    assert!(
        left.contains(&extra),
        "a routee added by hand is not given up"
    );
    system.terminate().await;
}
