//! `#[each_dispatcher]` and `DispatcherUnderTest`: one body, one copy per
//! kind, each seeing its kind; the kind is the thread's own and is unset
//! when the copy ends.

use std::time::Duration;

use volley::{ActorSystem, DispatcherKind, Settings};
use volley_testkit::{each_dispatcher, DispatcherUnderTest, TestProbe};

/// Not a test itself: the attribute works on any function, so the tests
/// below call each copy and compare what it saw.
#[each_dispatcher]
fn kind_seen() -> DispatcherKind {
    DispatcherUnderTest::get()
}

#[test]
fn each_copy_runs_with_its_own_kind_and_leaves_the_thread_as_it_was() {
    let before = DispatcherUnderTest::get();
    assert_eq!(kind_seen::work_stealing(), DispatcherKind::WorkStealing);
    assert_eq!(DispatcherUnderTest::get(), before);
    assert_eq!(kind_seen::app_runtime(), DispatcherKind::AppRuntime);
    assert_eq!(DispatcherUnderTest::get(), before);
}

#[test]
fn the_kind_is_per_thread() {
    let _kind = DispatcherUnderTest::set(DispatcherKind::AppRuntime);
    let elsewhere = std::thread::spawn(|| {
        let _kind = DispatcherUnderTest::set(DispatcherKind::WorkStealing);
        DispatcherUnderTest::get()
    })
    .join()
    .unwrap();
    assert_eq!(elsewhere, DispatcherKind::WorkStealing);
    assert_eq!(DispatcherUnderTest::get(), DispatcherKind::AppRuntime);
}

#[test]
fn apply_moves_the_default_dispatcher_only_to_app_runtime() {
    let mut chosen = Settings::default();
    chosen.default_dispatcher.kind = DispatcherKind::AppRuntime;
    {
        let _kind = DispatcherUnderTest::set(DispatcherKind::WorkStealing);
        // A test that chose app-runtime itself keeps it.
        let kept = DispatcherUnderTest::apply(chosen.clone());
        assert_eq!(kept.default_dispatcher.kind, DispatcherKind::AppRuntime);
    }
    let _kind = DispatcherUnderTest::set(DispatcherKind::AppRuntime);
    let moved = DispatcherUnderTest::apply(Settings::default());
    assert_eq!(moved.default_dispatcher.kind, DispatcherKind::AppRuntime);
}

/// An async test body: the copy sets the kind inside the runtime's
/// `block_on`, and a system built from it runs its actors on that kind.
#[each_dispatcher]
#[tokio::test]
async fn an_async_copy_builds_systems_of_its_kind() {
    let settings = DispatcherUnderTest::apply(Settings::default());
    let expected = DispatcherUnderTest::get();
    assert_eq!(settings.default_dispatcher.kind, expected);
    let system = ActorSystem::with_settings("each-kind", settings).unwrap();
    let probe = TestProbe::<u32>::new(&system);
    probe.actor_ref().tell(7);
    probe.expect_msg_within(Duration::from_secs(10), 7);
    system.terminate().await;
}

/// The copies of one test take turns: each finds the shared count at zero
/// when it starts.
#[each_dispatcher]
#[test]
fn the_copies_of_one_test_take_turns() {
    use std::sync::atomic::{AtomicU32, Ordering};
    static RUNNING: AtomicU32 = AtomicU32::new(0);
    assert_eq!(RUNNING.fetch_add(1, Ordering::SeqCst), 0);
    // Long enough for the other copy, started at the same moment on the
    // harness's other thread, to have tried to begin.
    std::thread::sleep(Duration::from_millis(50));
    assert_eq!(RUNNING.fetch_sub(1, Ordering::SeqCst), 1);
}
