//! Which dispatcher kind a test runs its actors on.
//!
//! Every semantic of volley holds on both kinds of dispatcher, so a test
//! whose outcome could depend on the kind runs once per kind, in the same
//! test binary: [`each_dispatcher`](crate::each_dispatcher) expands it into
//! one copy per kind, and each copy sets the kind for its own thread before
//! the body runs. The helpers that build a test's systems read it back with
//! [`DispatcherUnderTest::get`]. A thread is used because the test harness
//! runs tests in parallel on threads of one process: a process-wide
//! setting would mix them.

use std::cell::Cell;
use std::sync::{Mutex, MutexGuard};

use volley::{DispatcherKind, Settings};

thread_local! {
    static KIND: Cell<Option<DispatcherKind>> = const { Cell::new(None) };
}

/// The dispatcher kind under test on this thread, set for the length of
/// one test by [`each_dispatcher`](crate::each_dispatcher).
///
/// ```
/// use volley::DispatcherKind;
/// use volley_testkit::DispatcherUnderTest;
///
/// let guard = DispatcherUnderTest::set(DispatcherKind::AppRuntime);
/// assert_eq!(DispatcherUnderTest::get(), DispatcherKind::AppRuntime);
/// drop(guard);
/// ```
#[must_use = "the kind is unset again when the guard is dropped"]
pub struct DispatcherUnderTest {
    previous: Option<DispatcherKind>,
    _turn: Option<MutexGuard<'static, ()>>,
}

impl DispatcherUnderTest {
    /// Sets the kind under test on this thread until the guard is dropped.
    pub fn set(kind: DispatcherKind) -> DispatcherUnderTest {
        DispatcherUnderTest {
            previous: KIND.with(|k| k.replace(Some(kind))),
            _turn: None,
        }
    }

    /// Like [`Self::set`], once `turn` is free, and holding it until the
    /// guard is dropped. [`each_dispatcher`](crate::each_dispatcher)
    /// gives the copies of one test one `turn`: they share their system
    /// names, ports and log filters, so they must not run at the same
    /// time (other tests still run beside them). A copy that panicked
    /// leaves the turn usable.
    pub fn set_taking_turns(kind: DispatcherKind, turn: &'static Mutex<()>) -> DispatcherUnderTest {
        let turn = turn.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
        DispatcherUnderTest {
            previous: KIND.with(|k| k.replace(Some(kind))),
            _turn: Some(turn),
        }
    }

    /// The kind under test on this thread: the one [`Self::set`] set;
    /// outside such a test, `VOLLEY_TEST_DISPATCHER` (`app-runtime` or
    /// `work-stealing`) when set, else the default kind.
    pub fn get() -> DispatcherKind {
        KIND.with(Cell::get).unwrap_or_else(from_env)
    }

    /// `base` tagged with the kind under test (`base-app-runtime`,
    /// `base-work-stealing`): a system name for tests that find their
    /// system's logs or metrics by its name, which the copies of one test
    /// must not share (what one copy logged is still there when the
    /// next one looks).
    pub fn name(base: &str) -> String {
        let kind = match Self::get() {
            DispatcherKind::AppRuntime => "app-runtime",
            DispatcherKind::WorkStealing => "work-stealing",
        };
        format!("{base}-{kind}")
    }

    /// `settings` with its default dispatcher moved to `app-runtime` when
    /// that is the kind under test. Settings that chose a kind themselves
    /// are left alone under `work-stealing` (the default kind), and named
    /// dispatchers keep theirs: a test that names one wants it.
    pub fn apply(mut settings: Settings) -> Settings {
        if Self::get() == DispatcherKind::AppRuntime {
            settings.default_dispatcher.kind = DispatcherKind::AppRuntime;
        }
        settings
    }
}

impl Drop for DispatcherUnderTest {
    fn drop(&mut self) {
        KIND.with(|k| k.set(self.previous));
    }
}

fn from_env() -> DispatcherKind {
    match std::env::var("VOLLEY_TEST_DISPATCHER").as_deref() {
        Ok("app-runtime") => DispatcherKind::AppRuntime,
        _ => DispatcherKind::default(),
    }
}
