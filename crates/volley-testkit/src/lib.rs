//! # volley-testkit: testing volley actors
//!
//! Akka's TestKit for volley:
//!
//! - [`TestProbe`]: a real `ActorRef<M>` to hand to the actors under test,
//!   with expectations on what it receives (`expect_msg`,
//!   `expect_msg_matching`, `expect_msg_all_of`, `expect_msg_any_of`,
//!   `expect_msg_pf`, `expect_no_msg`, `receive_n`, `receive_one`,
//!   `receive_while`, `fish_for`, `expect_terminated`), an auto-pilot and a
//!   message filter run on its actor, [`within`] (with [`remaining`]) to
//!   bound a whole block, and [`await_cond`] / [`await_assert`] for state
//!   no probe hears about.
//! - [`ManualTime`]: a clock the test advances, driving the actors' timers
//!   and receive timeouts without a single sleep.
//! - [`SupervisorProbe`]: a supervising parent that records each child's
//!   failures, restarts and stops.
//! - [`relay::Relays`]: a TCP relay in front of each member of a
//!   multi-process test, with a mode per directed link: pass, drop, delay
//!   or a one-way block.
//! - [`log_capture`]: a process-wide `tracing` subscriber that keeps the
//!   events, for tests that check what was logged.
//!
//! A failed expectation panics with what arrived instead (or that nothing
//! did), so it fails the test like an `assert!`.
//!
//! ```
//! use std::time::Duration;
//! use volley::{Actor, ActorRef, ActorSystem, Context, HandleResult, Props};
//! use volley_testkit::{ManualTime, TestProbe};
//!
//! /// Greets `to` once, an hour after it starts.
//! struct Reminder {
//!     to: ActorRef<String>,
//! }
//!
//! impl Actor for Reminder {
//!     type Msg = ();
//!     fn pre_start(&mut self, ctx: &mut Context<Self>) -> HandleResult {
//!         ctx.schedule_once("remind", Duration::from_secs(3600), ());
//!         Ok(())
//!     }
//!     fn handle(&mut self, _ctx: &mut Context<Self>, _: ()) -> HandleResult {
//!         self.to.tell("time's up".to_string());
//!         Ok(())
//!     }
//! }
//!
//! let time = ManualTime::new();
//! let system = ActorSystem::with_settings("doc", time.settings(Default::default())).unwrap();
//! let probe = TestProbe::<String>::new(&system);
//! let to = probe.actor_ref();
//! let reminder = system.spawn("reminder", Props::new(move || Reminder { to: to.clone() })).unwrap();
//!
//! time.wait_for_timers(1); // pre_start has armed the timer
//! time.advance(Duration::from_secs(3599));
//! probe.expect_no_msg(Duration::from_millis(20));
//! time.advance(Duration::from_secs(1));
//! probe.expect_msg("time's up".to_string());
//!
//! system.stop(&reminder);
//! probe.expect_terminated(&reminder);
//! # tokio::runtime::Runtime::new().unwrap().block_on(system.terminate());
//! ```
#![deny(missing_docs)]
#![forbid(unsafe_code)]

mod actor_fn;
mod actor_fn_builder;
mod dispatcher;
pub mod log_capture;
mod metrics;
mod pilot;
mod probe;
pub mod relay;
#[cfg(feature = "remote")]
pub mod remote;
mod socket;
mod supervision;
mod time;
mod wait;

pub use actor_fn::{actor_fn, actor_fn_with, FnActor};
pub use actor_fn_builder::FnActorBuilder;
pub use dispatcher::DispatcherUnderTest;
pub use metrics::RecordedMetrics;
pub use pilot::AutoPilot;
pub use probe::{FishingOutcome, TestProbe};
pub use socket::{closed_by_peer, closed_by_peer_within};
pub use supervision::{CaughtFailure, FailureSort, SupervisionEvent, SupervisorProbe};
pub use time::ManualTime;
/// Runs a test once per dispatcher kind, in the same test binary (tokio's
/// `rt_test!` idea, as an attribute): `#[each_dispatcher]` above
/// `#[test]` or `#[tokio::test]` turns `fn name` into a module `name`
/// holding the tests `work_stealing` and `app_runtime`. Each sets
/// [`DispatcherUnderTest`] for its thread before the body runs, so helpers
/// that build the test's systems through [`DispatcherUnderTest::apply`]
/// give them that kind of default dispatcher.
///
/// ```
/// use volley::{DispatcherKind, Settings};
/// use volley_testkit::{each_dispatcher, DispatcherUnderTest};
///
/// // In a test file, `#[test]` or `#[tokio::test]` goes below it, and
/// // `cargo test` lists `runs_on_both_kinds::work_stealing` and
/// // `runs_on_both_kinds::app_runtime`.
/// #[each_dispatcher]
/// fn runs_on_both_kinds() -> DispatcherKind {
///     let settings = DispatcherUnderTest::apply(Settings::default());
///     settings.default_dispatcher.kind
/// }
///
/// fn main() {
///     assert_eq!(runs_on_both_kinds::work_stealing(), DispatcherKind::WorkStealing);
///     assert_eq!(runs_on_both_kinds::app_runtime(), DispatcherKind::AppRuntime);
/// }
/// ```
pub use volley_testkit_macros::each_dispatcher;
pub use wait::{
    await_assert, await_assert_within, await_cond, await_cond_within, default_timeout, dilated,
    eventually, eventually_async, eventually_async_within, eventually_within, remaining,
    remaining_or_default, within, Condition,
};
