//! SupervisorProbe: failures with their directives, then restarts and stops,
//! in the order they happened.

use std::time::Duration;

use volley::{Actor, ActorSystem, Context, Directive, HandleResult, Props};
use volley_testkit::{FailureSort, SupervisionEvent, SupervisorProbe, TestProbe};

enum Msg {
    Fail,
    Panic,
    Count,
}

/// Counts `Count`s and reports the count: a restart starts it over.
struct Worker {
    count: u32,
    to: volley::ActorRef<u32>,
    fail_start: bool,
}

impl Actor for Worker {
    type Msg = Msg;
    fn pre_start(&mut self, _ctx: &mut Context<Self>) -> HandleResult {
        if self.fail_start {
            return Err("cannot start".into());
        }
        Ok(())
    }
    fn handle(&mut self, _ctx: &mut Context<Self>, msg: Msg) -> HandleResult {
        match msg {
            Msg::Fail => return Err("failing on purpose".into()),
            Msg::Panic => panic!("panicking on purpose"),
            Msg::Count => {
                self.count += 1;
                self.to.tell(self.count);
            }
        }
        Ok(())
    }
}

fn worker(probe: &TestProbe<u32>, fail_start: bool) -> Props<Worker> {
    let to = probe.actor_ref();
    Props::new(move || Worker {
        count: 0,
        to: to.clone(),
        fail_start,
    })
}

#[test]
fn a_failure_is_recorded_with_its_directive_then_the_restart() {
    let system = ActorSystem::new("sup-restart").unwrap();
    let counts = TestProbe::new(&system);
    let sup = SupervisorProbe::new(&system);
    let w = sup.spawn("w", worker(&counts, false));
    w.tell(Msg::Count);
    counts.expect_msg(1);
    w.tell(Msg::Fail);
    let failure = sup.expect_failure();
    assert_eq!(failure.sort, FailureSort::Error);
    assert_eq!(failure.directive, Directive::Restart);
    assert_eq!(failure.actor, w.path().to_string());
    assert!(
        failure.message.contains("failing on purpose"),
        "{failure:?}"
    );
    sup.expect_restart(&w);
    w.tell(Msg::Count);
    counts.expect_msg(1);
    sup.expect_no_event(Duration::from_millis(50));
}

#[test]
fn the_decider_and_the_restart_limit_apply() {
    let system = ActorSystem::new("sup-limit").unwrap();
    let counts = TestProbe::new(&system);
    let sup = SupervisorProbe::new(&system)
        .with_decider(|f| {
            if f.is_panic() {
                Directive::Restart
            } else {
                Directive::Resume
            }
        })
        .with_max_restarts_total(1);
    let w = sup.spawn("w", worker(&counts, false));
    w.tell(Msg::Count);
    w.tell(Msg::Fail);
    w.tell(Msg::Count);
    counts.expect_msg(1);
    assert_eq!(sup.expect_failure().directive, Directive::Resume);
    counts.expect_msg(2);
    w.tell(Msg::Panic);
    let failure = sup.expect_failure();
    assert_eq!(failure.sort, FailureSort::Panic);
    sup.expect_restart(&w);
    w.tell(Msg::Panic);
    assert_eq!(sup.expect_failure().directive, Directive::Restart);
    sup.expect_stop(&w);
    counts.expect_terminated(&w);
}

#[test]
fn a_start_failure_is_the_first_event() {
    let system = ActorSystem::new("sup-start").unwrap();
    let counts = TestProbe::new(&system);
    let sup = SupervisorProbe::new(&system);
    let w = sup.spawn("w", worker(&counts, true));
    let failure = sup.expect_failure();
    assert_eq!(failure.sort, FailureSort::Initialization);
    assert_eq!(failure.directive, Directive::Stop);
    sup.expect(SupervisionEvent::Stopped(w.path().to_string()));
}

#[test]
fn an_unexpected_event_fails_the_expectation() {
    let system = ActorSystem::new("sup-wrong").unwrap();
    let counts = TestProbe::new(&system);
    let sup = SupervisorProbe::new(&system);
    let w = sup.spawn("w", worker(&counts, false));
    w.tell(Msg::Fail);
    let err = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| sup.expect_restart(&w)))
        .expect_err("a failure came first");
    let text = err.downcast_ref::<String>().cloned().unwrap_or_default();
    assert!(text.contains("got Failed("), "{text}");
}
