//! Cases ported from Pekko's classic `ActorRefSpec` and
//! `LocalActorRefProviderSpec` (actor-tests), in volley's API: how actors
//! are created, what their refs are, and how names are handed out.
//!
//! From `ActorRefSpec`: "support nested actorOfs", "support advanced
//! nested actorOfs", "support reply via sender", "stop when sent a poison
//! pill" (plus what a ref to the stopped actor does afterwards), "insert
//! its path in a ActorInitializationException", and ref equality and
//! hashing across a restart. From `LocalActorRefProviderSpec`: "not retain
//! its original Props when terminated", "only create one instance of an
//! actor with a specific address in a concurrent environment", "only
//! create one instance of an actor from within the same message
//! invocation", "throw suitable exceptions for malformed actor names".
//! Reusing a name once its owner has stopped is in `pekko_typed_stop.rs`.
//!
//! Ported elsewhere: "be able to check for existence of children", "be
//! serializable using Java Serialization on local node" and "return
//! EmptyLocalActorRef on deserialize ..." are in `pekko_paths.rs`, and so is
//! "find child actor with URL encoded name" (as a top-level name); "restart
//! when Kill:ed" is `pekko_lifecycle.rs`'s
//! `restart_hooks_run_on_the_right_generation`.
//!
//! Skipped, with the reason:
//! - "not allow Actors to be created outside of an actorOf": a volley actor
//!   is a plain value; building one outside `spawn` is harmless, because
//!   it has no context until the runtime gives it one in a callback.
//! - "support actorOfs where the class of the actor isn't public": Rust
//!   visibility does not reach the runtime; every test here uses private
//!   actor types.
//! - "throw an exception on deserialize if no system in scope": there is
//!   no Java serialization of refs.
//! - The root, user and system guardians "not handle messages other than
//!   those it will act upon": refs are typed, so nobody can send a guardian
//!   a message of a protocol it does not have (a downcast of the guardian's
//!   `AnyRef` fails), and there is no `/system` guardian.

use crate::common;

use std::collections::HashSet;
use std::sync::{Arc, Barrier};
use std::time::Duration;

use common::pekko::{root_text, supervisor, T};
use volley::{
    Actor, ActorError, ActorRef, AnyRef, AskError, Context, Directive, FailureKind, HandleResult,
    Props, ReplyTo, SpawnError, SupervisorStrategy,
};
use volley_testkit::{actor_fn, actor_fn_with, FnActor, TestProbe};

/// Answers with what it is sent, or with its own ref.
struct Inner;

enum InnerMsg {
    Echo(String, ReplyTo<String>),
    Myself(ReplyTo<AnyRef>),
}

impl Actor for Inner {
    type Msg = InnerMsg;
    fn handle(&mut self, ctx: &mut Context<Self>, msg: InnerMsg) -> HandleResult {
        match msg {
            InnerMsg::Echo(text, reply) => reply.tell(text),
            InnerMsg::Myself(reply) => reply.tell(ctx.myself().to_any()),
        }
        Ok(())
    }
}

/// Holds a ref made before it (or, by its factory, while it was built);
/// answers with its own ref and forwards the rest to that actor.
struct Outer {
    inner: ActorRef<InnerMsg>,
}

enum OuterMsg {
    Myself(ReplyTo<AnyRef>),
    /// Answers with the ref it was given (the spec's `a ? a`).
    Back(AnyRef, ReplyTo<AnyRef>),
    ToInner(InnerMsg),
}

impl Actor for Outer {
    type Msg = OuterMsg;
    fn handle(&mut self, ctx: &mut Context<Self>, msg: OuterMsg) -> HandleResult {
        match msg {
            OuterMsg::Myself(reply) => reply.tell(ctx.myself().to_any()),
            OuterMsg::Back(r, reply) => reply.tell(r),
            OuterMsg::ToInner(m) => self.inner.tell(m),
        }
        Ok(())
    }
}

/// ActorRefSpec, "support nested actorOfs": the factory of one actor
/// spawns another top-level actor while the first is being built. The
/// factory runs on the dispatcher as the actor starts, holding no lock of
/// `/user`, so the nested spawn neither deadlocks nor is refused.
#[volley_testkit::each_dispatcher]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_factory_may_spawn_another_actor() {
    let system = common::system("nested-spawn").unwrap();
    let sys = system.clone();
    let outer = system
        .spawn(
            "outer",
            Props::new(move || Outer {
                inner: sys.spawn_anonymous(Props::new(|| Inner)).unwrap(),
            }),
        )
        .unwrap();
    let nested = outer
        .ask(|r| OuterMsg::ToInner(InnerMsg::Myself(r)), T)
        .await
        .unwrap();
    assert_ne!(nested, outer.to_any());
    assert_eq!(
        nested.path().elements().rsplit_once('/').unwrap().0,
        "/user"
    );
    assert!(!nested.is_terminated());
    assert_eq!(
        system.lookup(nested.path().elements()).unwrap().unwrap(),
        nested
    );
    system.terminate().await;
}

/// ActorRefSpec, "support advanced nested actorOfs": an actor made with a
/// ref to another answers with its own ref, hands a ref back unchanged,
/// and forwards to the other, whose ref is not its own.
#[volley_testkit::each_dispatcher]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_actor_holding_another_ref_keeps_the_two_apart() {
    let system = common::system("advanced-nested").unwrap();
    let inner = system.spawn_anonymous(Props::new(|| Inner)).unwrap();
    let held = inner.clone();
    let a = system
        .spawn_anonymous(Props::new(move || Outer {
            inner: held.clone(),
        }))
        .unwrap();
    let through = a.ask(|r| OuterMsg::ToInner(InnerMsg::Myself(r)), T);
    let inner_self = through.await.unwrap();
    assert_eq!(inner_self, inner);
    let me = a.to_any();
    assert_eq!(a.ask(|r| OuterMsg::Back(me, r), T).await.unwrap(), a);
    assert_eq!(a.ask(OuterMsg::Myself, T).await.unwrap(), a);
    assert_ne!(inner_self, a.to_any());
    let echo = a.ask(|r| OuterMsg::ToInner(InnerMsg::Echo("msg".into(), r)), T);
    assert_eq!(echo.await.unwrap(), "msg");
    system.terminate().await;
}

enum ServerMsg {
    Simple(ReplyTo<&'static str>),
    /// Remembered here; a worker reports back, then the answer goes out.
    Complex(ReplyTo<&'static str>),
    /// Handed to a worker, which answers itself.
    Complex2(ReplyTo<&'static str>),
    WorkDone,
}

enum WorkerMsg {
    /// Work, report to the server, stop.
    Work(ActorRef<ServerMsg>),
    /// Work and answer the client directly.
    ReplyTo(ReplyTo<&'static str>),
}

fn worker() -> Props<FnActor<WorkerMsg>> {
    actor_fn(|ctx, msg: WorkerMsg| {
        match msg {
            WorkerMsg::Work(server) => {
                server.tell(ServerMsg::WorkDone);
                ctx.stop_self();
            }
            WorkerMsg::ReplyTo(client) => client.tell("complexReply"),
        }
        Ok(())
    })
}

/// The spec's `ReplyActor`: answers simple requests at once; a complex
/// one goes through a worker child.
fn server() -> Props<FnActor<ServerMsg, Option<ReplyTo<&'static str>>>> {
    actor_fn_with(None, |waiting, ctx, msg: ServerMsg| {
        match msg {
            ServerMsg::Simple(client) => client.tell("simpleReply"),
            ServerMsg::Complex(client) => {
                *waiting = Some(client);
                let worker = ctx.spawn_anonymous(worker())?;
                worker.tell(WorkerMsg::Work(ctx.myself()));
            }
            ServerMsg::Complex2(client) => {
                let worker = ctx.spawn_anonymous(worker())?;
                worker.tell(WorkerMsg::ReplyTo(client));
            }
            ServerMsg::WorkDone => {
                if let Some(client) = waiting.take() {
                    client.tell("complexReply");
                }
            }
        }
        Ok(())
    })
    .props()
}

enum ClientMsg {
    Send(&'static str),
    Answer(&'static str),
}

/// ActorRefSpec, "support reply via sender": volley has no implicit
/// sender; the request carries the ref to answer, which the server may
/// keep, or hand to a child, and answer later from there.
#[volley_testkit::each_dispatcher]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn replies_go_to_the_ref_the_request_carried() {
    let system = common::system("reply-via").unwrap();
    let answers = TestProbe::<&'static str>::new(&system);
    let server = system.spawn_anonymous(server()).unwrap();
    let (s, report) = (server.clone(), answers.actor_ref());
    // The spec's `SenderActor`: sends requests naming itself as the one to
    // answer, and reports each answer.
    let client = actor_fn(move |ctx, msg: ClientMsg| {
        match msg {
            ClientMsg::Send(kind) => {
                let me = ctx.message_adapter(ClientMsg::Answer);
                s.tell(match kind {
                    "complex" => ServerMsg::Complex(me),
                    "complex2" => ServerMsg::Complex2(me),
                    _ => ServerMsg::Simple(me),
                });
            }
            ClientMsg::Answer(a) => report.tell(a),
        }
        Ok(())
    });
    let client = system.spawn_anonymous(client).unwrap();
    for first in ["complex", "complex2"] {
        for kind in [first, "simple", "simple", "simple"] {
            client.tell(ClientMsg::Send(kind));
        }
        let mut got = answers.receive_n(4);
        got.sort_unstable();
        assert_eq!(
            got,
            ["complexReply", "simpleReply", "simpleReply", "simpleReply"]
        );
        answers.expect_no_msg(Duration::from_millis(100));
    }
    assert!(system.stop(&client));
    assert!(system.stop(&server));
    system.terminate().await;
}

/// ActorRefSpec, "stop when sent a poison pill": requests queued before
/// the graceful stop are answered, then the actor terminates. Afterwards
/// its ref says so: an ask fails at once with `RecipientTerminated`,
/// `try_tell` hands the message back, and a `tell` is a dead letter.
#[volley_testkit::each_dispatcher]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_graceful_stop_answers_what_was_queued_then_terminates() {
    let system = common::system("poison").unwrap();
    let watcher = TestProbe::<()>::new(&system);
    let answers = TestProbe::<&'static str>::new(&system);
    // Answers 5 with "five" and 0 with "null", as the spec's actor does.
    let numbers = actor_fn(|_, (n, reply): (u32, ReplyTo<&'static str>)| {
        reply.tell(if n == 5 { "five" } else { "null" });
        Ok(())
    });
    let r = system.spawn_anonymous(numbers).unwrap();
    watcher.watch(&r);
    r.tell((5, answers.actor_ref()));
    r.tell((0, answers.actor_ref()));
    r.graceful_stop();
    answers.expect_msg("five");
    answers.expect_msg("null");
    watcher.expect_terminated(&r);
    assert!(r.is_terminated());
    match r.ask(|reply| (5, reply), T).await {
        Err(AskError::RecipientTerminated(path)) => assert_eq!(path, r.path().to_string()),
        other => panic!("an ask of a stopped actor answered {other:?}"),
    }
    assert!(r.try_tell((5, answers.actor_ref())).is_err());
    let before = system.dead_letter_count();
    r.tell((0, answers.actor_ref()));
    common::eventually("a dead letter", || system.dead_letter_count() > before);
    answers.expect_no_msg(Duration::from_millis(100));
    system.terminate().await;
}

/// ActorRefSpec, "insert its path in a ActorInitializationException": a
/// factory that panics is an initialization failure of the actor, naming
/// its path and the panic, and the default decider stops it.
#[volley_testkit::each_dispatcher]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_panicking_factory_is_an_initialization_failure_naming_the_path() {
    common::quiet_deliberate_panics();
    let system = common::system("init-path").unwrap();
    let failures = TestProbe::<String>::new(&system);
    let report = failures.actor_ref();
    let sup = supervisor(
        &system,
        SupervisorStrategy::one_for_one().with_decider(move |f| {
            let initialization = matches!(f.kind, FailureKind::Initialization(_));
            report.tell(format!("{initialization} {} {}", f.actor, root_text(f)));
            Directive::Stop
        }),
    );
    let spawned = TestProbe::<AnyRef>::new(&system);
    let tx = spawned.actor_ref();
    sup.tell(common::pekko::SupMsg::Run(Box::new(move |ctx| {
        let props = Props::new(|| -> Inner { panic!("broken state, on purpose") });
        tx.tell(ctx.spawn("failingActor", props).unwrap().to_any());
    })));
    let failing = spawned.receive_msg();
    let text = failures.receive_msg();
    let path = failing.path().to_string();
    assert!(path.ends_with("/failingActor"), "{path}");
    assert_eq!(text, format!("true {path} broken state, on purpose"));
    spawned.watch(&failing);
    spawned.expect_terminated(&failing);
    system.terminate().await;
}

/// Fails on request (the spec's `Kill`); answers with its own ref.
struct Fragile;

enum FragileMsg {
    Fail,
    Myself(ReplyTo<AnyRef>),
}

impl Actor for Fragile {
    type Msg = FragileMsg;
    fn handle(&mut self, ctx: &mut Context<Self>, msg: FragileMsg) -> HandleResult {
        match msg {
            FragileMsg::Fail => return Err(ActorError::new("failing on request")),
            FragileMsg::Myself(r) => r.tell(ctx.myself().to_any()),
        }
        Ok(())
    }
}

fn hash_of(value: &impl std::hash::Hash) -> u64 {
    use std::hash::BuildHasher;
    std::hash::BuildHasherDefault::<std::hash::DefaultHasher>::default().hash_one(value)
}

/// ActorRefSpec's equality of refs (with ActorSelectionSpec's
/// incarnations, ported in `pekko_paths.rs`): a restarted actor keeps its
/// ref, equal and with the same hash as before, typed or not; a set of
/// refs sees one actor once.
#[volley_testkit::each_dispatcher]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_restarted_actor_keeps_an_equal_ref_with_the_same_hash() {
    let system = common::system("ref-equality").unwrap();
    let sup = supervisor(
        &system,
        SupervisorStrategy::one_for_one().with_decider(|_| Directive::Restart),
    );
    let r = common::pekko::child(&sup, Props::new(|| Fragile)).await;
    let before = r.ask(FragileMsg::Myself, T).await.unwrap();
    r.tell(FragileMsg::Fail);
    let after = r.ask(FragileMsg::Myself, T).await.unwrap();
    assert_eq!(before, after);
    assert_eq!(after, r);
    assert_eq!(r, after);
    assert_eq!(hash_of(&before), hash_of(&after));
    assert_eq!(hash_of(&r), hash_of(&after));
    assert_eq!(before.to_string(), after.to_string());
    let set: HashSet<AnyRef> = [before, after, r.to_any()].into_iter().collect();
    assert_eq!(set.len(), 1);
    let other = common::pekko::child(&sup, Props::new(|| Fragile)).await;
    assert_ne!(other.to_any(), r.to_any());
    system.terminate().await;
}

/// Holds a token, so the test can see when the instance is dropped.
struct Holder {
    _token: Arc<()>,
}

impl Actor for Holder {
    type Msg = ();
    fn handle(&mut self, _ctx: &mut Context<Self>, _msg: ()) -> HandleResult {
        Ok(())
    }
}

/// LocalActorRefProviderSpec, "not retain its original Props when
/// terminated": a ref that outlives its actor holds neither the props
/// (nor what their factory captured) nor the last instance.
#[volley_testkit::each_dispatcher]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_terminated_actor_lets_go_of_its_props_and_state() {
    let system = common::system("props-release").unwrap();
    let in_factory = Arc::new(());
    let in_state = Arc::new(());
    let (f, s) = (in_factory.clone(), in_state.clone());
    let r = system
        .spawn_anonymous(Props::new(move || {
            let _captured = &f;
            Holder { _token: s.clone() }
        }))
        .unwrap();
    let probe = TestProbe::<()>::new(&system);
    probe.watch(&r);
    // Ours, the factory's, and the instance's.
    common::eventually("the instance", || Arc::strong_count(&in_state) == 3);
    assert_eq!(Arc::strong_count(&in_factory), 2);
    system.stop(&r);
    probe.expect_terminated(&r);
    common::eventually("the instance and props to be dropped", || {
        Arc::strong_count(&in_state) == 1 && Arc::strong_count(&in_factory) == 1
    });
    assert!(r.is_terminated());
    system.terminate().await;
}

/// LocalActorRefProviderSpec, "only create one instance of an actor with
/// a specific address in a concurrent environment": four threads spawn
/// each name at once; one wins, the others get `DuplicateName`.
#[volley_testkit::each_dispatcher]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn concurrent_spawns_of_one_name_make_one_actor() {
    let system = common::system("concurrent-names").unwrap();
    for i in 0..100 {
        let name = format!("new-actor{i}");
        let barrier = Arc::new(Barrier::new(4));
        let threads: Vec<_> = (0..4)
            .map(|_| {
                let (system, name, barrier) = (system.clone(), name.clone(), barrier.clone());
                std::thread::spawn(move || {
                    barrier.wait();
                    system.spawn(&name, Props::new(|| Inner))
                })
            })
            .collect();
        let results: Vec<_> = threads.into_iter().map(|t| t.join().unwrap()).collect();
        let made: Vec<_> = results.iter().filter_map(|r| r.as_ref().ok()).collect();
        assert_eq!(made.len(), 1, "{name}: {results:?}");
        for r in &results {
            if let Err(e) = r {
                assert!(matches!(e, SpawnError::DuplicateName { .. }), "{e:?}");
            }
        }
        let found = system.lookup(&format!("/user/{name}")).unwrap().unwrap();
        assert_eq!(found, *made[0]);
    }
    system.terminate().await;
}

/// LocalActorRefProviderSpec, "only create one instance of an actor from
/// within the same message invocation": the second spawn of the name is
/// `DuplicateName`, which (returned with `?`) fails the actor.
#[volley_testkit::each_dispatcher]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_second_spawn_of_a_name_in_one_handler_fails() {
    let system = common::system("same-invocation").unwrap();
    let failures = TestProbe::<String>::new(&system);
    let report = failures.actor_ref();
    let sup = supervisor(
        &system,
        SupervisorStrategy::one_for_one().with_decider(move |f| {
            let dup = matches!(
                f.downcast_ref::<SpawnError>(),
                Some(SpawnError::DuplicateName { .. })
            );
            report.tell(format!("duplicate={dup}"));
            Directive::Resume
        }),
    );
    // Spawns "duplicate" twice in one handler, failing with the second
    // spawn's error.
    let spawner = actor_fn(|ctx, ()| {
        ctx.spawn("duplicate", Props::new(|| Inner))?;
        ctx.spawn("duplicate", Props::new(|| Inner))?;
        Ok(())
    });
    let s = common::pekko::child(&sup, spawner).await;
    s.tell(());
    failures.expect_msg("duplicate=true".into());
    failures.expect_no_msg(Duration::from_millis(100));
    system.terminate().await;
}

/// LocalActorRefProviderSpec, "throw suitable exceptions for malformed
/// actor names", with Pekko's list of names. Difference: Pekko's message
/// names the offending character and its position; volley's names the
/// rule (docs/reference/actors-and-lifecycle.md#hierarchy).
#[volley_testkit::each_dispatcher]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn malformed_names_are_refused_with_the_rule_they_break() {
    let system = common::system("bad-names").unwrap();
    let cases = [
        ("", "must not be empty"),
        ("$hallo", "starting with '$'"),
        ("a%", "two hex digits"),
        ("%3", "two hex digits"),
        ("%xx", "two hex digits"),
        ("%0G", "two hex digits"),
        ("%gg", "two hex digits"),
        ("%", "two hex digits"),
        ("%1t", "two hex digits"),
        ("a?", "only ASCII"),
        ("üß", "only ASCII"),
        ("he\"llo", "only ASCII"),
        ("hell>o", "only ASCII"),
    ];
    for (name, why) in cases {
        match system.spawn(name, Props::new(|| Inner)) {
            Err(e @ SpawnError::InvalidName { .. }) => {
                let text = e.to_string();
                assert!(text.contains(why), "{name:?}: {text}");
                assert!(text.contains(&format!("{name:?}")), "{name:?}: {text}");
            }
            other => panic!("{name:?} gave {other:?}"),
        }
    }
    system.terminate().await;
}
