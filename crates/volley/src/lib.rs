//! # volley: typed actors with Akka's semantics
//!
//! volley is the in-process half of a distributed actor runtime. An actor owns
//! its state, has a protocol type (usually an enum) and handles one message at a
//! time on a dispatcher thread; nothing else ever touches its state.
//!
//! What an Akka user relies on is here: a supervision hierarchy with
//! restart limits and backoff, death watch, timers, bounded and unbounded mailboxes,
//! dispatchers with `throughput` batching, dead letters and an event stream.
//! The guarantees are listed in `docs/semantics.md` at the repository
//! root, and stated in full in `docs/reference/`, one page per concept.
//!
//! ```
//! use volley::{Actor, ActorSystem, Context, Props, HandleResult, ActorRef};
//! use std::time::Duration;
//!
//! enum Counter { Add(u64), Get(ActorRef<u64>) }
//!
//! #[derive(Default)]
//! struct CounterActor { total: u64 }
//!
//! impl Actor for CounterActor {
//!     type Msg = Counter;
//!     fn handle(&mut self, _ctx: &mut Context<Self>, msg: Counter) -> HandleResult {
//!         match msg {
//!             Counter::Add(n) => self.total += n,
//!             Counter::Get(reply_to) => reply_to.tell(self.total),
//!         }
//!         Ok(())
//!     }
//! }
//!
//! # tokio::runtime::Runtime::new().unwrap().block_on(async {
//! let system = ActorSystem::new("doc").unwrap();
//! let counter = system.spawn("counter", Props::new(CounterActor::default)).unwrap();
//! counter.tell(Counter::Add(2));
//! counter.tell(Counter::Add(3));
//! let total = counter.ask(Counter::Get, Duration::from_secs(1)).await.unwrap();
//! assert_eq!(total, 5);
//! system.terminate().await;
//! # });
//! ```
#![deny(missing_docs)]
#![forbid(unsafe_code)]

mod actor;
mod ask;
mod circuit_breaker;
mod discovery;
mod dispatcher;
mod error;
// tokio has no `net` under `--cfg loom` (the model checks' build).
#[cfg(not(loom))]
pub mod net;
mod observability;
pub mod remote;
mod routing;
mod settings;
mod supervision;
mod system;
pub mod time;
mod util;

pub use actor::actor_ref::{ActorRef, AnyRef, TargetKey, ToAnyRef};
pub use actor::context::{Context, StashOverflow};
pub use actor::definition::{Actor, HandleResult, Props, Terminated, DEFAULT_STASH_CAPACITY};
pub use actor::mailbox::{MailboxConfig, Overflow};
pub use actor::mailbox_batch::MessageBatch;
pub use actor::path::{ActorPath, PathError};
pub use ask::{AskError, AskStatusError, ReplyTo, StatusError, StatusReply};
pub use circuit_breaker::{
    CallPermit, CircuitBreaker, CircuitBreakerError, CircuitBreakerOpen, CircuitBreakerSettings,
    CircuitBreakerSettingsError,
};
pub use discovery::observer::{mirror_fn, MirrorFn, ServiceObserver, ServiceRegistration};
pub use discovery::receptionist::{Deregistered, Listing, Receptionist, Registered, ServiceKey};
pub use discovery::topic::{Topic, TopicActor, TopicCommand, TopicInternal, TopicStats};
pub use dispatcher::batch_end;
pub use error::{
    ActorError, Failure, FailureKind, ShutdownHookError, SpawnError, SystemError, TellError,
};
pub use observability::message_spans::{TracingSettings, MESSAGE_SPAN};
pub use observability::metrics::{MetricsSettings, METRIC_NAMES};
pub use observability::trace_context::{
    Propagation, TraceParent, TraceParentError, TracePropagator,
};
pub use routing::{
    Broadcast, BroadcastRouting, ConsistentHashing, GroupRouter, Internal, KeyedGroupRouter,
    PoolRouter, RandomRouting, Resizer, RoundRobin, Routees, Router, RouterMsg, RouterRef,
    RoutingError, RoutingLogic, SelectError, Selection, SmallestMailbox, DEFAULT_VIRTUAL_NODES,
    KEYED_GROUP_STASH,
};
pub use settings::{
    DeadLetterSettings, DispatcherKind, DispatcherSettings, Settings, SettingsError,
};
pub use supervision::backoff::BackoffOptions;
pub use supervision::backoff_supervisor::{
    BackoffMsg, BackoffSupervisor, BackoffTick, BACKOFF_CHILD_NAME,
};
pub use supervision::strategy::{Directive, SupervisorStrategy};
pub use system::actor_system::{ActorIdentity, ActorSystem};
pub use system::coordinated_shutdown;
pub use system::coordinated_shutdown::{
    AddTaskError, CoordinatedShutdown, PhaseFinished, ShutdownReason, ShutdownStarted,
};
pub use system::event_stream::{
    DeadLetter, DeadLetterReason, EventStream, LifecycleEvent, LifecycleKind,
};
pub use system::termination::StopError;
pub use time::scheduler::{Cancellable, Scheduler, SchedulerError};
pub use time::timers::TimerKey;
pub use util::duration_keys::{DeprecatedDurationKey, DurationKeyError, DurationKeys};
