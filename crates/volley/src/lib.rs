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
mod actor_ref;
mod adapter;
mod ask;
mod backoff;
mod backoff_supervisor;
pub mod batch_end;
mod cell;
mod children;
mod circuit_breaker;
mod context;
pub mod coordinated_shutdown;
mod dispatcher;
mod error;
mod event_stream;
mod guardian;
mod locks;
mod mailbox;
mod message_spans;
mod metrics;
mod path;
mod receive_timeout;
mod receptionist;
pub mod remote;
mod routing;
mod scheduler;
mod settings;
mod supervision;
mod sync;
mod system;
mod system_msg;
mod termination;
pub mod time;
mod timers;
mod topic;
mod trace_context;

pub use actor::{Actor, HandleResult, Props, Terminated, DEFAULT_STASH_CAPACITY};
pub use actor_ref::{ActorRef, AnyRef, TargetKey, ToAnyRef};
pub use ask::{AskError, AskStatusError, ReplyTo, StatusError, StatusReply};
pub use backoff::BackoffOptions;
pub use backoff_supervisor::{BackoffMsg, BackoffSupervisor, BackoffTick, BACKOFF_CHILD_NAME};
pub use circuit_breaker::{
    CallPermit, CircuitBreaker, CircuitBreakerError, CircuitBreakerOpen, CircuitBreakerSettings,
    CircuitBreakerSettingsError,
};
pub use context::{Context, StashOverflow};
pub use coordinated_shutdown::{
    AddTaskError, CoordinatedShutdown, PhaseFinished, ShutdownReason, ShutdownStarted,
};
pub use error::{
    ActorError, Failure, FailureKind, ShutdownHookError, SpawnError, SystemError, TellError,
};
pub use event_stream::{DeadLetter, DeadLetterReason, EventStream, LifecycleEvent, LifecycleKind};
pub use mailbox::{MailboxConfig, Overflow};
pub use message_spans::{TracingSettings, MESSAGE_SPAN};
pub use metrics::{MetricsSettings, METRIC_NAMES};
pub use path::{ActorPath, PathError};
pub use receptionist::{Deregistered, Listing, Receptionist, Registered, ServiceKey};
pub use routing::{
    Broadcast, BroadcastRouting, ConsistentHashing, GroupRouter, Internal, KeyedGroupRouter,
    PoolRouter, RandomRouting, Resizer, RoundRobin, Routees, Router, RouterMsg, RouterRef,
    RoutingError, RoutingLogic, SelectError, Selection, SmallestMailbox, DEFAULT_VIRTUAL_NODES,
    KEYED_GROUP_STASH,
};
pub use scheduler::{Cancellable, Scheduler, SchedulerError};
pub use settings::{
    DeadLetterSettings, DispatcherKind, DispatcherSettings, Settings, SettingsError,
};
pub use supervision::{Directive, SupervisorStrategy};
pub use system::{ActorIdentity, ActorSystem};
pub use termination::StopError;
pub use timers::TimerKey;
pub use topic::{Topic, TopicActor, TopicCommand, TopicInternal, TopicStats};
pub use trace_context::{Propagation, TraceParent, TraceParentError, TracePropagator};
