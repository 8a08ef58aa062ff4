//! The actor system: guardians, dispatchers, the I/O runtime, dead letters,
//! the event stream, lookup and shutdown.

use std::collections::HashMap;
use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, OnceLock, Weak};
use std::time::Duration;

use crate::actor::actor_ref::{ActorRef, AnyRef, ToAnyRef};
use crate::actor::cell::ActorCell;
use crate::actor::definition::{Actor, Props};
use crate::actor::path::{parse_elements, validate_system_name, ActorPath, PathError};
use crate::actor::system_msg::SystemMsg;
use crate::ask::deadlines::AskDeadlines;
use crate::dispatcher::Dispatcher;
use crate::error::{ShutdownHookError, SpawnError, SystemError};
use crate::settings::Settings;
use crate::system::coordinated_shutdown::{CoordinatedShutdown, ShutdownReason, ShutdownState};
use crate::system::event_stream::{DeadLetter, DeadLetterReason, EventStream};
use crate::system::guardian::Guardian;
use crate::time::clock::TimerDriver;
use crate::util::locks::lock;
use crate::util::log_limiter::LogLimiter;

/// A hook as stored: its name and the call that makes its future.
type ShutdownHook = (
    std::borrow::Cow<'static, str>,
    Box<dyn FnOnce() -> Pin<Box<dyn Future<Output = ()> + Send>> + Send>,
);

/// The answer to a lookup by path (Akka's ActorIdentity).
#[derive(Debug, Clone)]
pub struct ActorIdentity {
    /// The path that was looked up.
    pub path: String,
    /// The actor living there, if any.
    pub actor: Option<AnyRef>,
}

/// A handle to an actor system; cheap to clone.
#[derive(Clone)]
pub struct ActorSystem {
    pub(crate) shared: Arc<SystemCore>,
}

pub(crate) struct SystemCore {
    name: Arc<str>,
    settings: Settings,
    default_dispatcher: Dispatcher,
    dispatchers: HashMap<String, Dispatcher>,
    runtime: Mutex<Option<tokio::runtime::Runtime>>,
    handle: tokio::runtime::Handle,
    dead_letters: AtomicU64,
    dead_letter_log: LogLimiter,
    /// Warnings about messages a transport refused: per system, so one
    /// system's full queue does not silence another's in the same process.
    undeliverable_log: LogLimiter,
    event_stream: EventStream,
    pub(crate) root: Mutex<Option<Arc<ActorCell<Guardian>>>>,
    /// The root guardian's uid, for `stop` to tell it apart cheaply.
    root_uid: OnceLock<u64>,
    /// Weak: the root guardian owns `/user`; spawning upgrades (one atomic)
    /// instead of locking and cloning, and a terminated system has none.
    user: OnceLock<Weak<ActorCell<Guardian>>>,
    /// `/system` and `/system/receptionist`, made on first use
    /// (`guardian.rs`, `discovery/receptionist.rs`).
    pub(crate) system_guardian: Mutex<Weak<ActorCell<Guardian>>>,
    pub(crate) receptionist: Mutex<Option<ActorRef<crate::discovery::receptionist::Command>>>,
    terminating: AtomicBool,
    /// Locked together with reading `terminating`, so a hook is either
    /// refused or taken by `root_terminated`, never left behind.
    shutdown_hooks: Mutex<Vec<ShutdownHook>>,
    terminated: tokio::sync::watch::Sender<bool>,
    /// `[metrics] enabled`: the registered handles (`observability/metrics.rs`).
    metrics: Option<crate::observability::metrics::SystemMetrics>,
    shutdown: ShutdownState,
    /// The deadlines of waiting asks, and their sweeper (`ask/deadlines.rs`).
    ask_deadlines: Arc<AskDeadlines>,
    /// `host:port` its transport advertises (`remote::set_local_authority`).
    pub(crate) local_authority: Mutex<Option<Arc<str>>>,
    /// Other crates' per-system values (`system/extensions.rs`).
    pub(crate) extensions: crate::system::extensions::Extensions,
}

/// A system held without keeping it alive (the metrics sampler's, the
/// SIGTERM watcher's).
pub(crate) struct WeakSystem(Weak<SystemCore>);

impl WeakSystem {
    pub(crate) fn upgrade(&self) -> Option<ActorSystem> {
        self.0.upgrade().map(|shared| ActorSystem { shared })
    }
}

impl ActorSystem {
    /// Starts a system with default settings.
    pub fn new(name: &str) -> Result<Self, SystemError> {
        Self::with_settings(name, Settings::default())
    }

    /// Starts a system with the given settings, and a tokio runtime of its
    /// own (`io_threads` threads) for timers, futures and I/O.
    pub fn with_settings(name: &str, settings: Settings) -> Result<Self, SystemError> {
        Self::start(name, settings, None)
    }

    /// Starts a system on the application's tokio runtime: its timers,
    /// futures and I/O run there, and so do the actors of every dispatcher
    /// of kind `app-runtime` (see `DispatcherSettings::kind`). `io_threads`
    /// does not apply. The runtime must have its timer and I/O drivers
    /// enabled (`enable_all`). Terminating the system leaves the runtime
    /// running: it is the application's.
    pub fn with_runtime(
        name: &str,
        settings: Settings,
        runtime: tokio::runtime::Handle,
    ) -> Result<Self, SystemError> {
        Self::start(name, settings, Some(runtime))
    }

    fn start(
        name: &str,
        settings: Settings,
        app_runtime: Option<tokio::runtime::Handle>,
    ) -> Result<Self, SystemError> {
        validate_system_name(name).map_err(|reason| SystemError::InvalidName {
            name: name.to_string(),
            reason,
        })?;
        settings.validate()?;
        let (runtime, handle) = match app_runtime {
            Some(handle) => (None, handle),
            None => {
                let runtime = tokio::runtime::Builder::new_multi_thread()
                    .worker_threads(settings.io_threads)
                    .thread_name(format!("volley-{name}-io"))
                    .enable_all()
                    .build()?;
                let handle = runtime.handle().clone();
                (Some(runtime), handle)
            }
        };
        let rt = Some(handle.clone());
        let metered = settings.metrics.enabled.then_some(name);
        let default_dispatcher =
            Dispatcher::start("default", &settings.default_dispatcher, rt.clone(), metered)?;
        let mut dispatchers = HashMap::new();
        for (dname, dsettings) in &settings.dispatchers {
            dispatchers.insert(
                dname.clone(),
                Dispatcher::start(dname, dsettings, rt.clone(), metered)?,
            );
        }
        let metrics = settings
            .metrics
            .enabled
            .then(|| crate::observability::metrics::SystemMetrics::register(name));
        let system = ActorSystem {
            shared: Arc::new(SystemCore {
                metrics,
                name: name.into(),
                handle,
                runtime: Mutex::new(runtime),
                dead_letter_log: LogLimiter::new(settings.dead_letters.log_per_second),
                undeliverable_log: LogLimiter::new(
                    crate::remote::UNDELIVERABLE_WARNINGS_PER_SECOND,
                ),
                settings,
                default_dispatcher,
                dispatchers,
                dead_letters: AtomicU64::new(0),
                event_stream: EventStream::default(),
                root: Mutex::new(None),
                root_uid: OnceLock::new(),
                user: OnceLock::new(),
                system_guardian: Mutex::new(Weak::new()),
                receptionist: Mutex::new(None),
                terminating: AtomicBool::new(false),
                shutdown_hooks: Mutex::new(Vec::new()),
                terminated: tokio::sync::watch::channel(false).0,
                shutdown: ShutdownState::default(),
                ask_deadlines: Arc::default(),
                local_authority: Mutex::new(None),
                extensions: Default::default(),
            }),
        };
        let root = ActorCell::create(
            crate::actor::cell::name::ActorName::Given("".into()),
            None,
            system.clone(),
            system.shared.default_dispatcher.clone(),
            Props::new(|| Guardian),
        );
        root.schedule_start();
        let user = root
            .spawn_child_cell(Some("user"), Props::new(|| Guardian))
            .expect("a new root guardian accepts /user");
        let _ = system.shared.root_uid.set(root.any_ref().uid());
        *lock(&system.shared.root) = Some(root);
        let _ = system.shared.user.set(Arc::downgrade(&user));
        if system.shared.metrics.is_some() {
            let interval = system.shared.settings.metrics.sample_interval;
            crate::observability::metrics::start_sampler(&system, interval);
        }
        if system.shared.settings.shutdown_on_sigterm {
            crate::system::coordinated_shutdown::watch_sigterm(&system);
        }
        Ok(system)
    }

    pub(crate) fn downgrade(&self) -> WeakSystem {
        WeakSystem(Arc::downgrade(&self.shared))
    }

    /// The metrics handles, when `[metrics] enabled`.
    #[inline]
    pub(crate) fn metrics(&self) -> Option<&crate::observability::metrics::SystemMetrics> {
        self.shared.metrics.as_ref()
    }

    /// Each pool dispatcher's parked workers and counts, by name.
    pub(crate) fn dispatcher_samples(&self) -> Vec<(String, usize, crate::dispatcher::Counts)> {
        std::iter::once(&self.shared.default_dispatcher)
            .chain(self.shared.dispatchers.values())
            .filter_map(|d| Some((d.name().to_string(), d.parked_workers()?, d.counts()?)))
            .collect()
    }

    /// The system's name.
    pub fn name(&self) -> &str {
        &self.shared.name
    }

    /// The settings it runs with.
    pub fn settings(&self) -> &Settings {
        &self.shared.settings
    }

    /// Spawns a top-level actor under `/user`.
    pub fn spawn<A: Actor>(
        &self,
        name: &str,
        props: Props<A>,
    ) -> Result<ActorRef<A::Msg>, SpawnError> {
        self.user_guardian()?.spawn_child(Some(name), props)
    }

    /// Spawns a top-level actor with a generated name.
    pub fn spawn_anonymous<A: Actor>(
        &self,
        props: Props<A>,
    ) -> Result<ActorRef<A::Msg>, SpawnError> {
        self.user_guardian()?.spawn_child(None, props)
    }

    fn user_guardian(&self) -> Result<Arc<ActorCell<Guardian>>, SpawnError> {
        self.shared
            .user
            .get()
            .and_then(Weak::upgrade)
            .ok_or_else(|| SpawnError::ParentTerminating {
                parent: format!("volley://{}/user", self.shared.name),
            })
    }

    /// Stops `actor` (any actor, as Akka's `system.stop`): it handles no
    /// further message, its children stop first, then its `post_stop`
    /// runs and its watchers get `Terminated`. A top-level actor's name is
    /// reserved until then; a child's parent frees the name when it hears
    /// of the end. False if the actor had already terminated.
    pub fn stop(&self, actor: &impl ToAnyRef) -> bool {
        // `Stop` goes to the actor itself, whatever its parent: the parent
        // hears of the end as `ChildTerminated` and frees the name then,
        // and needs no notice before (its own stop or restart sends `Stop`
        // again, which a stopping actor ignores). Marking a top-level actor
        // stopping in `/user`'s table first would cost every stop a lock of
        // that table, which the guardian updates on another thread, and a
        // random lookup in it: a cache miss per actor.
        let actor = actor.to_any_ref();
        if actor.is_terminated() {
            return false;
        }
        // The root guardian ends the system the coordinated way, as the
        // user guardian does (`guardian.rs`), not by skipping the phases.
        if self.is_root(&actor) {
            let system = self.clone();
            let reason = ShutdownReason::GuardianStopped;
            self.shared.handle.spawn(async move {
                system.coordinated_shutdown().run(reason).await;
            });
            return true;
        }
        actor.send_system(crate::actor::system_msg::SystemMsg::Stop);
        true
    }

    /// True for this system's root guardian, told by its uid: a lookup of
    /// `/` would parse a path on every stop.
    fn is_root(&self, actor: &AnyRef) -> bool {
        self.shared.root_uid.get() == Some(&actor.uid()) && actor.target.local().is_some()
    }

    /// Looks an actor up by path (`/user/a/b` or `volley://name/user/a/b`),
    /// Akka's Identify. A malformed path is an error; a well-formed path with
    /// nobody there is an identity without an actor.
    pub async fn identify(&self, path: &str) -> Result<ActorIdentity, PathError> {
        Ok(ActorIdentity {
            path: path.to_string(),
            actor: self.lookup(path)?,
        })
    }

    /// The live local actor at `path`, looked up synchronously (what
    /// [`ActorSystem::identify`] answers with).
    pub fn lookup(&self, path: &str) -> Result<Option<AnyRef>, PathError> {
        let elements = parse_elements(path, &self.shared.name)?;
        let mut current = lock(&self.shared.root).as_ref().map(|r| r.any_ref());
        for element in elements {
            current = current.and_then(|c| c.lookup_child(element));
        }
        Ok(current.filter(|a| !a.is_terminated()))
    }

    /// Runs coordinated shutdown with reason `Terminate`: its phases, then
    /// stops every actor, top-down, and resolves once every `post_stop` and
    /// shutdown hook has run. Idempotent.
    pub async fn terminate(&self) {
        self.coordinated_shutdown()
            .run(ShutdownReason::Terminate)
            .await;
    }

    /// The system's coordinated shutdown: phases and their tasks.
    pub fn coordinated_shutdown(&self) -> CoordinatedShutdown<'_> {
        CoordinatedShutdown { system: self }
    }

    pub(crate) fn shutdown_state(&self) -> &ShutdownState {
        &self.shared.shutdown
    }

    pub(crate) fn terminated_receiver(&self) -> tokio::sync::watch::Receiver<bool> {
        self.shared.terminated.subscribe()
    }

    /// The `actor-system-terminate` phase: stops the root guardian, at
    /// once or, with `drain`, after what is queued (see
    /// `coordinated_shutdown::stop_actors`).
    pub(crate) fn stop_all(&self, drain: bool) {
        if !self.shared.terminating.swap(true, Ordering::SeqCst) {
            let root = lock(&self.shared.root).clone();
            match root {
                Some(root) if drain => root.any_ref().graceful_stop(),
                Some(root) => root.any_ref().send_system(SystemMsg::Stop),
                None => self.root_terminated(),
            }
        }
    }

    /// The drain's deadline: stops whatever is left of the tree at once.
    /// False if the root had already stopped.
    pub(crate) fn force_stop(&self) -> bool {
        let root = lock(&self.shared.root).clone();
        root.map(|root| root.any_ref().send_system(SystemMsg::Stop))
            .is_some()
    }

    /// Adds an async hook that runs while the system terminates, in the
    /// coordinated-shutdown phase `actor-system-terminate`: after every
    /// actor has stopped (every `post_stop` has run and the death notices it
    /// caused are sent), before the dispatchers and the tokio runtime shut
    /// down. An extension uses it to flush what it still holds, e.g. a
    /// transport's queued remote messages.
    ///
    /// Hooks run once, one after another in the order they were added, each
    /// as a task on the system's runtime, so they can sleep, spawn and do
    /// I/O; `name` is for the logs. [`ActorSystem::terminate`] and
    /// [`ActorSystem::when_terminated`] resolve once the last hook is done. A
    /// hook that panics is logged as an error and the next one runs. All
    /// hooks together get at most
    /// [`Settings::shutdown_hooks_timeout`]: a hook still running then is
    /// abandoned and the ones after it are skipped, with a warning each, so
    /// a hook should keep its own, shorter deadline. A hook must not wait
    /// for the system's termination (it would wait for itself until that
    /// cap) nor block its thread.
    ///
    /// Fails with [`ShutdownHookError::Terminating`] once termination has
    /// begun: the hook is not added and will not run.
    pub fn add_shutdown_hook<F, Fut>(
        &self,
        name: &'static str,
        hook: F,
    ) -> Result<(), ShutdownHookError>
    where
        F: FnOnce() -> Fut + Send + 'static,
        Fut: Future<Output = ()> + Send + 'static,
    {
        self.push_shutdown_hook(name.into(), hook)
            .map_err(|()| ShutdownHookError::Terminating {
                hook: name,
                system: self.shared.name.to_string(),
            })
    }

    /// Queues a hook unless termination has begun.
    pub(crate) fn push_shutdown_hook<F, Fut>(
        &self,
        name: std::borrow::Cow<'static, str>,
        hook: F,
    ) -> Result<(), ()>
    where
        F: FnOnce() -> Fut + Send + 'static,
        Fut: Future<Output = ()> + Send + 'static,
    {
        let mut hooks = lock(&self.shared.shutdown_hooks);
        if self.shared.terminating.load(Ordering::SeqCst) {
            return Err(());
        }
        hooks.push((name, Box::new(move || Box::pin(hook()))));
        Ok(())
    }

    /// Resolves once the system has terminated.
    pub async fn when_terminated(&self) {
        let mut rx = self.shared.terminated.subscribe();
        let _ = rx.wait_for(|done| *done).await;
    }

    /// True once the system has terminated.
    pub fn is_terminated(&self) -> bool {
        *self.shared.terminated.borrow()
    }

    /// How many messages went to dead letters so far.
    pub fn dead_letter_count(&self) -> u64 {
        self.shared.dead_letters.load(Ordering::Relaxed)
    }

    /// The system's event stream.
    pub fn event_stream(&self) -> &EventStream {
        &self.shared.event_stream
    }

    /// A handle to the system's tokio runtime (timers, futures, I/O).
    pub fn runtime_handle(&self) -> tokio::runtime::Handle {
        self.shared.handle.clone()
    }

    /// Where this system's delays run: the manual clock of its settings if
    /// it has one, else tokio's timer on its runtime (see `crate::time`).
    pub(crate) fn timer_driver(&self) -> TimerDriver {
        match &self.settings().manual_clock {
            Some(clock) => TimerDriver::Manual(clock.clone()),
            None => TimerDriver::Tokio(self.runtime_handle()),
        }
    }

    pub(crate) fn dispatcher_for(&self, name: Option<&str>) -> Result<Dispatcher, SpawnError> {
        match name {
            None => Ok(self.shared.default_dispatcher.clone()),
            Some(n) if n == self.shared.default_dispatcher.name() => {
                Ok(self.shared.default_dispatcher.clone())
            }
            Some(n) => self
                .shared
                .dispatchers
                .get(n)
                .cloned()
                .ok_or_else(|| SpawnError::UnknownDispatcher(n.to_string())),
        }
    }

    pub(crate) fn root_path(&self) -> ActorPath {
        ActorPath::root(self.shared.name.clone())
    }

    /// A sleep on the system's timer, usable from any executor; `None` once
    /// the system is shut down.
    pub(crate) fn sleep(&self, d: Duration) -> Option<tokio::time::Sleep> {
        if self.is_terminated() {
            return None;
        }
        let _enter = self.shared.handle.enter();
        Some(tokio::time::sleep(d))
    }

    /// The deadlines of the system's waiting asks (`ask/deadlines.rs`).
    pub(crate) fn ask_deadlines(&self) -> &Arc<AskDeadlines> {
        &self.shared.ask_deadlines
    }

    /// Whether a warning about a message a transport refused may be logged
    /// now (within this system's rate limit).
    pub(crate) fn allow_undeliverable_warning(&self) -> bool {
        self.shared.undeliverable_log.allow()
    }

    /// Counts, logs (rate-limited, debug level) and publishes a dead letter.
    /// Public for transports, which find undeliverable messages too.
    pub fn dead_letter(
        &self,
        recipient: &ActorPath,
        message_type: &'static str,
        reason: DeadLetterReason,
    ) {
        self.shared.dead_letters.fetch_add(1, Ordering::Relaxed);
        if let Some(metrics) = &self.shared.metrics {
            metrics.dead_letter(reason);
        }
        if self.shared.settings.dead_letters.log && self.shared.dead_letter_log.allow() {
            tracing::debug!(%recipient, message_type, ?reason, "dead letter");
        }
        let stream = &self.shared.event_stream;
        if stream.has_subscribers::<DeadLetter>() {
            stream.publish(DeadLetter {
                recipient: recipient.to_string(),
                message_type,
                reason,
            });
        }
    }

    /// The root guardian has stopped: everything has. Called on a dispatcher
    /// thread, so the hooks run in a task of their own rather than here.
    pub(crate) fn root_terminated(&self) {
        self.shared.terminating.store(true, Ordering::SeqCst);
        lock(&self.shared.root).take();
        lock(&self.shared.receptionist).take(); // it holds the system too
        let hooks = std::mem::take(&mut *lock(&self.shared.shutdown_hooks));
        if hooks.is_empty() {
            self.shut_down();
            return;
        }
        let finish = ShutDownOnDrop(self.clone());
        self.shared.handle.spawn(async move {
            run_shutdown_hooks(&finish.0, hooks).await;
            drop(finish);
        });
    }

    /// Stops the dispatchers and the runtime, then reports termination.
    /// Idempotent. Safe inside a task of the system's own runtime:
    /// `shutdown_background` neither blocks nor drops the runtime in a way
    /// that panics there.
    fn shut_down(&self) {
        self.shared.default_dispatcher.shutdown();
        for d in self.shared.dispatchers.values() {
            d.shutdown();
        }
        if let Some(rt) = lock(&self.shared.runtime).take() {
            rt.shutdown_background();
        }
        self.shared.terminated.send_replace(true);
    }
}

/// Shuts the system down when dropped, so termination completes even if the
/// hooks' task is dropped unfinished or its runner panics.
struct ShutDownOnDrop(ActorSystem);

impl Drop for ShutDownOnDrop {
    fn drop(&mut self) {
        self.0.shut_down();
    }
}

/// Runs the hooks in order under one deadline for all of them.
async fn run_shutdown_hooks(system: &ActorSystem, hooks: Vec<ShutdownHook>) {
    let cap = system.shared.settings.shutdown_hooks_timeout;
    let deadline = tokio::time::Instant::now() + cap;
    let mut hooks = hooks.into_iter();
    for (name, hook) in hooks.by_ref() {
        // A task of its own, so a panic in the hook (or in the call that makes
        // its future) comes back as a JoinError instead of unwinding here.
        let mut task = system.shared.handle.spawn(async move { hook().await });
        match tokio::time::timeout_at(deadline, &mut task).await {
            Ok(Ok(())) => {}
            Ok(Err(e)) if e.is_panic() => {
                let panic = crate::util::panic::panic_text(e.into_panic().as_ref());
                tracing::error!(
                    system = %system.shared.name,
                    hook = &*name,
                    panic,
                    "shutdown hook panicked; termination goes on"
                );
            }
            Ok(Err(e)) => tracing::error!(
                system = %system.shared.name,
                hook = &*name,
                error = %e,
                "shutdown hook did not finish; termination goes on"
            ),
            Err(_) => {
                task.abort();
                tracing::warn!(
                    system = %system.shared.name,
                    hook = &*name,
                    timeout = ?cap,
                    "shutdown hook abandoned: still running at shutdown_hooks_timeout"
                );
                break;
            }
        }
    }
    for (name, _) in hooks {
        tracing::warn!(
            system = %system.shared.name,
            hook = &*name,
            timeout = ?cap,
            "shutdown hook skipped: shutdown_hooks_timeout was reached before it could run"
        );
    }
}

impl Drop for SystemCore {
    fn drop(&mut self) {
        // Dropping a runtime inside async code panics; this never blocks.
        if let Some(rt) = self.runtime.get_mut().ok().and_then(Option::take) {
            rt.shutdown_background();
        }
        self.default_dispatcher.shutdown();
        for d in self.dispatchers.values() {
            d.shutdown();
        }
    }
}

impl std::fmt::Debug for ActorSystem {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "ActorSystem({})", self.shared.name)
    }
}
