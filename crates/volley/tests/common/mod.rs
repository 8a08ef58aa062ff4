//! Helpers shared by the integration tests. What actors report to a test
//! goes to a `volley_testkit::TestProbe`; these are the few helpers the
//! testkit does not cover (the dispatcher kind under test, log capture,
//! shared actors of the Pekko ports).
#![allow(dead_code)]

pub mod backoff;
pub mod breaker;
pub mod log_capture;
pub mod pekko;
pub mod typed_target;

use std::sync::Once;
use std::time::Duration;

/// Waits until `cond` holds, failing after 10 s (the testkit's
/// `await_cond`, with this suite's limit).
#[track_caller]
pub fn eventually(what: &str, cond: impl FnMut() -> bool) {
    volley_testkit::await_cond_within(Duration::from_secs(10), what, cond)
}

/// Panics raised on purpose (their text says "on purpose") would clutter the
/// test output; any other panic is still printed.
pub fn quiet_deliberate_panics() {
    static ONCE: Once = Once::new();
    ONCE.call_once(|| {
        let default = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            let payload = info.payload();
            let text = payload
                .downcast_ref::<&str>()
                .copied()
                .or_else(|| payload.downcast_ref::<String>().map(String::as_str))
                .unwrap_or("");
            if !text.contains("on purpose") {
                default(info);
            }
        }));
    });
}

/// `settings` on the dispatcher kind under test
/// ([`volley_testkit::DispatcherUnderTest`]): each test marked
/// `#[each_dispatcher]` runs once per kind. Named dispatchers keep theirs:
/// a test that names one wants a pool.
fn with_test_dispatcher(settings: volley::Settings) -> volley::Settings {
    volley_testkit::DispatcherUnderTest::apply(settings)
}

/// A system with default settings, on the dispatcher kind under test.
pub fn system(name: &str) -> Result<volley::ActorSystem, volley::SystemError> {
    system_with(name, volley::Settings::default())
}

/// A system with `settings`, on the dispatcher kind under test.
pub fn system_with(
    name: &str,
    settings: volley::Settings,
) -> Result<volley::ActorSystem, volley::SystemError> {
    volley::ActorSystem::with_settings(name, with_test_dispatcher(settings))
}

/// What happened, in order, across actors, hooks and tasks.
#[derive(Clone, Default)]
pub struct Log(std::sync::Arc<std::sync::Mutex<Vec<String>>>);

impl Log {
    /// An idle actor that pushes "post_stop" here when it stops, so a
    /// test sees when (and after what) the actors stop.
    pub fn stopper(&self) -> volley::Props<volley_testkit::FnActor<(), Log>> {
        volley_testkit::actor_fn_with(self.clone(), |_, _ctx, ()| Ok(()))
            .on_stop(|log, _ctx| log.push("post_stop"))
            .props()
    }

    pub fn push(&self, event: impl Into<String>) {
        self.0.lock().unwrap().push(event.into());
    }

    pub fn events(&self) -> Vec<String> {
        self.0.lock().unwrap().clone()
    }
}
