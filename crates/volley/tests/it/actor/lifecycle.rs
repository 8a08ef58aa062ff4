//! Hierarchy, paths, lookup, stop order, graceful stop, death watch and
//! system shutdown.

use crate::common;

use std::time::Duration;

use common::eventually;
use volley::{
    Actor, ActorRef, ActorSystem, AnyRef, Context, HandleResult, PathError, Props, SpawnError,
    Terminated,
};
use volley_testkit::{actor_fn, actor_fn_with, TestProbe};

/// A node of a tree: spawns `depth` levels of one child each, reports its
/// post_stop.
struct Node {
    depth: u32,
    events: ActorRef<String>,
}

enum NodeMsg {
    StopSelf,
    Children(ActorRef<Vec<String>>),
    Parent(ActorRef<Option<String>>),
}

impl Actor for Node {
    type Msg = NodeMsg;

    fn pre_start(&mut self, ctx: &mut Context<Self>) -> HandleResult {
        if self.depth > 0 {
            let events = self.events.clone();
            let depth = self.depth - 1;
            ctx.spawn(
                "child",
                Props::new(move || Node {
                    depth,
                    events: events.clone(),
                }),
            )?;
        }
        Ok(())
    }

    fn handle(&mut self, ctx: &mut Context<Self>, msg: NodeMsg) -> HandleResult {
        match msg {
            NodeMsg::StopSelf => ctx.stop_self(),
            NodeMsg::Children(reply) => reply.tell(
                ctx.children()
                    .iter()
                    .map(|c| c.path().elements().to_string())
                    .collect(),
            ),
            NodeMsg::Parent(reply) => {
                reply.tell(ctx.parent().map(|p| p.path().elements().to_string()))
            }
        }
        Ok(())
    }

    fn post_stop(&mut self, ctx: &mut Context<Self>) {
        self.events.tell(format!("stop {}", ctx.path().elements()));
    }
}

fn node(depth: u32, events: &ActorRef<String>) -> Props<Node> {
    let events = events.clone();
    Props::new(move || Node {
        depth,
        events: events.clone(),
    })
}

#[volley_testkit::each_dispatcher]
#[tokio::test]
async fn children_stop_before_their_parent() {
    let system = common::system("order").unwrap();
    let events = TestProbe::<String>::new(&system);
    let tx = events.actor_ref();
    let top = system.spawn("top", node(3, &tx)).unwrap();
    let kids = top
        .ask(NodeMsg::Children, Duration::from_secs(5))
        .await
        .unwrap();
    assert_eq!(kids, vec!["/user/top/child"]);
    top.tell(NodeMsg::StopSelf);
    assert_eq!(
        events.receive_n(4),
        vec![
            "stop /user/top/child/child/child",
            "stop /user/top/child/child",
            "stop /user/top/child",
            "stop /user/top",
        ]
    );
    system.terminate().await;
}

#[volley_testkit::each_dispatcher]
#[tokio::test]
async fn terminate_stops_everything_and_resolves_after_post_stop() {
    let system = common::system("shutdown").unwrap();
    // The probe lives in a system of its own: it must hear the post_stop
    // hooks that run while this one terminates.
    let probes = common::system("shutdown-probes").unwrap();
    let events = TestProbe::<String>::new(&probes);
    let tx = events.actor_ref();
    system.spawn("a", node(1, &tx)).unwrap();
    system.spawn("b", node(0, &tx)).unwrap();
    system.terminate().await;
    assert!(system.is_terminated());
    let mut got = events.receive_n(3);
    events.expect_no_msg(Duration::from_millis(50));
    got.sort();
    assert_eq!(
        got,
        vec!["stop /user/a", "stop /user/a/child", "stop /user/b"]
    );
    // A second terminate and when_terminated resolve at once.
    system.terminate().await;
    system.when_terminated().await;
    assert!(matches!(
        system.spawn("late", node(0, &tx)),
        Err(SpawnError::ParentTerminating { .. })
    ));
}

#[volley_testkit::each_dispatcher]
#[tokio::test]
async fn duplicate_and_invalid_names_are_errors() {
    let system = common::system("names").unwrap();
    let _events = TestProbe::<String>::new(&system);
    let tx = _events.actor_ref();
    system.spawn("a", node(0, &tx)).unwrap();
    let err = system.spawn("a", node(0, &tx)).unwrap_err();
    assert_eq!(
        err,
        SpawnError::DuplicateName {
            parent: "volley://names/user".into(),
            name: "a".into()
        }
    );
    assert!(err.to_string().contains("already exists"));
    for bad in ["", "$x", "a/b", "with space"] {
        assert!(
            matches!(
                system.spawn(bad, node(0, &tx)),
                Err(SpawnError::InvalidName { .. })
            ),
            "{bad:?} accepted"
        );
    }
    assert!(matches!(
        system.spawn("d", node(0, &tx).with_dispatcher("nope")),
        Err(SpawnError::UnknownDispatcher(_))
    ));
    let anon = system.spawn_anonymous(node(0, &tx)).unwrap();
    assert!(anon.path().name().starts_with('$'));
    system.terminate().await;
}

/// A name is taken from the spawn until its actor has terminated, and free
/// again after, across enough children to make the name table grow and
/// shrink; every live child is found by its name.
#[volley_testkit::each_dispatcher]
#[tokio::test]
async fn names_are_free_again_once_their_actors_terminated() {
    let system = common::system("name-reuse").unwrap();
    let _events = TestProbe::<String>::new(&system);
    let tx = _events.actor_ref();
    let names: Vec<String> = (0..300).map(|i| format!("n{i}")).collect();
    let refs: Vec<_> = names
        .iter()
        .map(|n| system.spawn(n, node(0, &tx)).unwrap())
        .collect();
    let anonymous: Vec<_> = (0..300)
        .map(|_| system.spawn_anonymous(node(0, &tx)).unwrap())
        .collect();
    let distinct: std::collections::HashSet<_> = anonymous
        .iter()
        .map(|a| a.path().name().to_string())
        .collect();
    assert_eq!(distinct.len(), 300, "two anonymous children share a name");
    for (name, r) in names.iter().zip(&refs).step_by(2) {
        assert!(system.stop(r), "{name} was not stopped");
    }
    for r in refs.iter().step_by(2) {
        eventually("a stopped actor's termination", || r.is_terminated());
    }
    for (i, name) in names.iter().enumerate() {
        let again = system.spawn(name, node(0, &tx));
        if i % 2 == 0 {
            // A stopped actor's name is freed when its parent handles the
            // termination, a moment after the actor is marked terminated.
            let again = match again {
                Ok(again) => again,
                Err(_) => {
                    let what = format!("the name {name} to be free again");
                    volley_testkit::eventually(&what, || system.spawn(name, node(0, &tx)).ok())
                        .await
                }
            };
            assert_eq!(again.path().name(), name);
        } else {
            assert!(
                matches!(again, Err(SpawnError::DuplicateName { .. })),
                "{name} is still alive, yet its name was given again"
            );
            let found = system.identify(&format!("/user/{name}")).await.unwrap();
            assert_eq!(found.actor.unwrap(), refs[i]);
        }
    }
    system.terminate().await;
}

#[volley_testkit::each_dispatcher]
#[tokio::test]
async fn lookup_by_path_identifies_actors() {
    let system = common::system("lookup").unwrap();
    let _events = TestProbe::<String>::new(&system);
    let tx = _events.actor_ref();
    let top = system.spawn("top", node(1, &tx)).unwrap();
    // Wait until pre_start has spawned the child.
    let _ = top.ask(NodeMsg::Children, Duration::from_secs(5)).await;
    let id = system.identify("/user/top/child").await.unwrap();
    let child = id.actor.expect("child found");
    assert_eq!(child.path().to_string(), "volley://lookup/user/top/child");
    let typed = child.downcast::<NodeMsg>().unwrap();
    let parent = typed
        .ask(NodeMsg::Parent, Duration::from_secs(5))
        .await
        .unwrap();
    assert_eq!(parent.as_deref(), Some("/user/top"));
    let full = system.identify("volley://lookup/user/top").await.unwrap();
    assert_eq!(full.actor.unwrap(), top);
    assert!(system
        .identify("/user/nobody")
        .await
        .unwrap()
        .actor
        .is_none());
    assert!(matches!(
        system.identify("user/top").await,
        Err(PathError::Invalid { .. })
    ));
    assert!(matches!(
        system.identify("volley://elsewhere/user/top").await,
        Err(PathError::OtherSystem { .. })
    ));
    system.terminate().await;
}

enum Slow {
    Work(u32),
}

#[volley_testkit::each_dispatcher]
#[tokio::test]
async fn graceful_stop_runs_after_queued_messages() {
    let system = common::system("graceful").unwrap();
    let events = TestProbe::<String>::new(&system);
    let tx = events.actor_ref();
    let collector = actor_fn_with(tx, |to, _ctx, Slow::Work(n)| {
        to.tell(format!("work {n}"));
        Ok(())
    })
    .on_stop(|to, _ctx| to.tell("stopped".into()));
    let c = system.spawn("c", collector.props()).unwrap();
    for n in 0..5 {
        c.tell(Slow::Work(n));
    }
    c.graceful_stop();
    c.tell(Slow::Work(99));
    assert_eq!(
        events.receive_n(6),
        vec!["work 0", "work 1", "work 2", "work 3", "work 4", "stopped"]
    );
    eventually("terminated", || c.is_terminated());
    events.expect_no_msg(Duration::from_millis(50));
    system.terminate().await;
}

/// Watches whatever it is told to and reports `Terminated`.
struct Watcher {
    events: ActorRef<String>,
}

enum WatchMsg {
    Watch(AnyRef),
    WatchWith(AnyRef),
    Unwatch(AnyRef),
    Custom(String),
    Ping(ActorRef<()>),
}

impl Actor for Watcher {
    type Msg = WatchMsg;
    fn handle(&mut self, ctx: &mut Context<Self>, msg: WatchMsg) -> HandleResult {
        match msg {
            WatchMsg::Watch(a) => ctx.watch(&a),
            WatchMsg::WatchWith(a) => {
                let text = format!("custom {}", a.path().name());
                ctx.watch_with(&a, WatchMsg::Custom(text))
            }
            WatchMsg::Unwatch(a) => ctx.unwatch(&a),
            WatchMsg::Custom(s) => {
                self.events.tell(s);
            }
            WatchMsg::Ping(r) => r.tell(()),
        }
        Ok(())
    }
    fn on_terminated(&mut self, _ctx: &mut Context<Self>, t: Terminated) -> HandleResult {
        self.events
            .tell(format!("terminated {}", t.actor.path().name()));
        Ok(())
    }
}

fn spawn_watcher(system: &ActorSystem, events: &ActorRef<String>) -> ActorRef<WatchMsg> {
    let events = events.clone();
    system
        .spawn(
            "watcher",
            Props::new(move || Watcher {
                events: events.clone(),
            }),
        )
        .unwrap()
}

#[volley_testkit::each_dispatcher]
#[tokio::test]
async fn watch_delivers_terminated_exactly_once() {
    let system = common::system("watch").unwrap();
    let events = TestProbe::<String>::new(&system);
    let tx = events.actor_ref();
    let _nodes = TestProbe::<String>::new(&system);
    let ntx = _nodes.actor_ref();
    let watcher = spawn_watcher(&system, &tx);
    let target = system.spawn("target", node(0, &ntx)).unwrap();
    // Watching twice is the same as once.
    watcher.tell(WatchMsg::Watch(target.to_any()));
    watcher.tell(WatchMsg::Watch(target.to_any()));
    watcher
        .ask(WatchMsg::Ping, Duration::from_secs(5))
        .await
        .unwrap();
    target.tell(NodeMsg::StopSelf);
    events.expect_msg("terminated target".to_string());
    // Watching a dead actor still delivers Terminated, once.
    watcher.tell(WatchMsg::Watch(target.to_any()));
    events.expect_msg("terminated target".to_string());
    events.expect_no_msg(Duration::from_millis(100));
    system.terminate().await;
}

#[volley_testkit::each_dispatcher]
#[tokio::test]
async fn unwatch_and_watch_with() {
    let system = common::system("unwatch").unwrap();
    let events = TestProbe::<String>::new(&system);
    let tx = events.actor_ref();
    let _nodes = TestProbe::<String>::new(&system);
    let ntx = _nodes.actor_ref();
    let watcher = spawn_watcher(&system, &tx);
    let a = system.spawn("a", node(0, &ntx)).unwrap();
    let b = system.spawn("b", node(0, &ntx)).unwrap();
    watcher.tell(WatchMsg::Watch(a.to_any()));
    watcher.tell(WatchMsg::Unwatch(a.to_any()));
    watcher.tell(WatchMsg::WatchWith(b.to_any()));
    watcher
        .ask(WatchMsg::Ping, Duration::from_secs(5))
        .await
        .unwrap();
    a.tell(NodeMsg::StopSelf);
    b.tell(NodeMsg::StopSelf);
    events.expect_msg("custom b".to_string());
    events.expect_no_msg(Duration::from_millis(100));
    system.terminate().await;
}

#[volley_testkit::each_dispatcher]
#[tokio::test]
async fn an_unhandled_terminated_is_a_death_pact() {
    let system = common::system("pact").unwrap();
    let _nodes = TestProbe::<String>::new(&system);
    let ntx = _nodes.actor_ref();
    let pact = actor_fn(|ctx, target: AnyRef| {
        ctx.watch(&target);
        Ok(())
    });
    let pact = system.spawn("pact", pact).unwrap();
    let target = system.spawn("target", node(0, &ntx)).unwrap();
    pact.tell(target.to_any());
    target.tell(NodeMsg::StopSelf);
    // The default decider stops an actor that broke its death pact.
    eventually("pact stopped", || pact.is_terminated());
    system.terminate().await;
}

/// Holds the watcher's thread so that everything queues up before it runs.
enum Hold {
    Block(std::sync::mpsc::Receiver<()>),
}

#[volley_testkit::each_dispatcher]
#[tokio::test]
async fn terminated_comes_after_the_dead_actors_last_messages() {
    let settings = volley::Settings {
        default_dispatcher: volley::DispatcherSettings {
            threads: 1,
            ..Default::default()
        },
        ..Default::default()
    };
    let system = common::system_with("last-words", settings).unwrap();
    let events = TestProbe::<String>::new(&system);
    let tx = events.actor_ref();
    let watcher = spawn_watcher(&system, &tx);
    let to = watcher.clone();
    // Sends its last words, then stops.
    let last_words = actor_fn(move |ctx, ()| {
        for n in 0..100 {
            to.tell(WatchMsg::Custom(format!("word {n}")));
        }
        ctx.stop_self();
        Ok(())
    });
    let talker = system.spawn("talker", last_words).unwrap();
    watcher.tell(WatchMsg::Watch(talker.to_any()));
    watcher
        .ask(WatchMsg::Ping, Duration::from_secs(5))
        .await
        .unwrap();
    // Block the only worker inside a third actor, queue the talker's words
    // and death behind it, then let everything run.
    let blocker = actor_fn(|_, Hold::Block(rx)| {
        rx.recv_timeout(Duration::from_secs(10)).ok();
        Ok(())
    });
    let blocker = system.spawn("blocker", blocker).unwrap();
    let (release, gate) = std::sync::mpsc::channel();
    blocker.tell(Hold::Block(gate));
    talker.tell(());
    release.send(()).unwrap();
    let got = events.receive_n(101);
    assert_eq!(got[0], "word 0");
    assert_eq!(got[99], "word 99");
    assert_eq!(got[100], "terminated talker");
    system.terminate().await;
}

/// Pekko's specs stop actors anywhere in the tree with `system.stop`: a
/// grandchild stops, its watcher hears of it, and its parent frees the
/// name.
#[volley_testkit::each_dispatcher]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn system_stop_stops_an_actor_anywhere_in_the_tree() {
    use volley::{ActorRef, ReplyTo};

    enum Cmd {
        Spawn(ReplyTo<Option<ActorRef<()>>>),
    }

    let system = common::system("system-stop").unwrap();
    let branch = actor_fn(|ctx, Cmd::Spawn(r)| {
        r.tell(ctx.spawn("leaf", actor_fn(|_, ()| Ok(()))).ok());
        Ok(())
    });
    let branch = system.spawn("branch", branch).unwrap();
    let t = std::time::Duration::from_secs(5);
    let leaf = branch.ask(Cmd::Spawn, t).await.unwrap().expect("a leaf");
    let watcher = TestProbe::<()>::new(&system);
    watcher.watch(&leaf);
    assert!(system.stop(&leaf));
    watcher.expect_terminated(&leaf);
    assert!(!system.stop(&leaf), "already terminated");
    // The name is free again once the parent heard of the end.
    volley_testkit::eventually_async("the leaf's name to be free", async || {
        branch.ask(Cmd::Spawn, t).await.unwrap()
    })
    .await;
    system.terminate().await;
}
