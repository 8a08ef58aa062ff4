//! The seam between the runtime and a transport (`volley::remote`), tested
//! with a route that records what the runtime hands it: user messages,
//! system messages in both directions, and what the runtime asks of it.

use crate::common;

use std::any::Any;
use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use common::eventually;
use volley::remote::{self, MessageType, RemoteRef, RemoteRoute, RemoteSendError, RemoteSystemMsg};
use volley::{
    Actor, ActorPath, ActorRef, ActorSystem, AnyRef, Context, HandleResult, Props, TellError,
    Terminated,
};
use volley_testkit::{actor_fn, TestProbe};

/// What the runtime handed the route, as text.
struct Recorder {
    log: Mutex<Vec<String>>,
    /// Answer `QueueFull` instead of taking messages.
    full: AtomicBool,
    /// What `is_terminated` answers.
    terminated: AtomicBool,
    /// Answer a `Watch` with a death notice, as a transport does when the
    /// connection is lost.
    answer_watch: bool,
}

impl Recorder {
    fn new(answer_watch: bool) -> Arc<Self> {
        Arc::new(Recorder {
            log: Mutex::new(Vec::new()),
            full: AtomicBool::new(false),
            terminated: AtomicBool::new(false),
            answer_watch,
        })
    }

    fn log(&self) -> Vec<String> {
        self.log.lock().unwrap().clone()
    }
}

impl RemoteRoute for Recorder {
    fn send(
        &self,
        target: &RemoteRef,
        msg: &(dyn Any + Send),
        ty: &MessageType,
    ) -> Result<(), Box<RemoteSendError>> {
        if self.full.load(Ordering::SeqCst) {
            return Err(Box::new(RemoteSendError::QueueFull("test".into())));
        }
        let text = match msg.downcast_ref::<u32>() {
            Some(n) => format!("send {n} to {}", target.path().name()),
            None => format!("send {} to {}", ty.name, target.path().name()),
        };
        self.log.lock().unwrap().push(text);
        Ok(())
    }

    fn send_system(&self, target: &RemoteRef, msg: RemoteSystemMsg) {
        let text = match &msg {
            RemoteSystemMsg::Watch { watcher } => format!("watch by {}", watcher.path().name()),
            RemoteSystemMsg::Unwatch { watcher } => format!("unwatch by {}", watcher.path().name()),
            RemoteSystemMsg::Terminate => "terminate".to_string(),
            RemoteSystemMsg::GracefulStop => "graceful stop".to_string(),
            RemoteSystemMsg::DeathNotice { uid } => format!("death notice {uid}"),
        };
        self.log.lock().unwrap().push(text);
        if let (true, RemoteSystemMsg::Watch { watcher }) = (self.answer_watch, msg) {
            remote::deliver_system(&watcher, RemoteSystemMsg::DeathNotice { uid: target.uid() });
        }
    }

    fn room(&self, _target: &RemoteRef) -> Pin<Box<dyn Future<Output = ()> + Send>> {
        self.full.store(false, Ordering::SeqCst);
        Box::pin(async {})
    }

    fn is_terminated(&self, _target: &RemoteRef) -> bool {
        self.terminated.load(Ordering::SeqCst)
    }

    fn as_any(&self) -> &dyn Any {
        self
    }
}

fn remote_ref(system: &ActorSystem, name: &str, uid: u64, route: Arc<Recorder>) -> Arc<RemoteRef> {
    let path = ActorPath::parse(&format!("volley://peer@127.0.0.1:9/user/{name}")).unwrap();
    RemoteRef::new(path, uid, system.clone(), route)
}

/// Watches a target given at spawn and reports its `Terminated`.
struct Watcher {
    target: AnyRef,
    events: ActorRef<String>,
}

impl Actor for Watcher {
    type Msg = ();

    fn pre_start(&mut self, ctx: &mut Context<Self>) -> HandleResult {
        ctx.watch(&self.target);
        Ok(())
    }

    /// Any message: stop watching.
    fn handle(&mut self, ctx: &mut Context<Self>, _msg: ()) -> HandleResult {
        ctx.unwatch(&self.target);
        self.events.tell("unwatched".into());
        Ok(())
    }

    fn on_terminated(&mut self, _ctx: &mut Context<Self>, t: Terminated) -> HandleResult {
        self.events.tell(format!("terminated {}", t.actor.uid()));
        Ok(())
    }
}

#[volley_testkit::each_dispatcher]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn user_messages_go_through_the_route_and_its_refusals_reach_the_sender() {
    let system = common::system("seam-user").unwrap();
    let route = Recorder::new(false);
    let target = remote_ref(&system, "echo", 7, route.clone());
    let typed: ActorRef<u32> = target.typed();
    typed.tell(1);
    typed.try_tell(2).unwrap();
    route.full.store(true, Ordering::SeqCst);
    assert!(matches!(typed.try_tell(3), Err(TellError::Full(3))));
    // `send().await` waits for the route's room, then the message goes.
    typed.send(4).await.unwrap();
    assert_eq!(
        route.log(),
        ["send 1 to echo", "send 2 to echo", "send 4 to echo"]
    );
    // Any protocol is accepted at the seam; the route judges the type.
    let other: ActorRef<String> = target.to_any().downcast().unwrap();
    other.tell("hi".into());
    assert!(route.log()[3].starts_with("send alloc::string::String"));
    system.terminate().await;
}

#[volley_testkit::each_dispatcher]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_watch_of_a_remote_actor_goes_to_the_route_and_its_death_notice_comes_back() {
    let system = common::system("seam-watch").unwrap();
    let route = Recorder::new(true);
    let target = remote_ref(&system, "watched", 41, route.clone());
    let seen = TestProbe::<String>::new(&system);
    let events = seen.actor_ref();
    let target_any = target.to_any();
    let watcher = system
        .spawn(
            "watcher",
            Props::new(move || Watcher {
                target: target_any.clone(),
                events: events.clone(),
            }),
        )
        .unwrap();
    seen.expect_msg("terminated 41".to_string());
    assert_eq!(route.log(), ["watch by watcher"]);
    assert!(
        !watcher.is_terminated(),
        "the watcher handled its Terminated"
    );
    system.terminate().await;
}

#[volley_testkit::each_dispatcher]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_remote_watcher_of_a_local_actor_gets_a_death_notice_through_its_route() {
    let system = common::system("seam-inbound").unwrap();
    let route = Recorder::new(false);
    let remote_watcher = remote_ref(&system, "far-watcher", 5, route.clone()).to_any();
    let local = system.spawn("local", actor_fn(|_, _: u32| Ok(()))).unwrap();
    // What a transport does with a Watch it read for a local actor.
    remote::deliver_system(
        &local.to_any(),
        RemoteSystemMsg::Watch {
            watcher: remote_watcher,
        },
    );
    local.tell(1);
    assert!(system.stop(&local));
    let expected = format!("death notice {}", local.to_any().uid());
    eventually("the death notice", || route.log().contains(&expected));
    system.terminate().await;
}

#[volley_testkit::each_dispatcher]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn inbound_stop_messages_stop_the_local_actor() {
    let system = common::system("seam-stop").unwrap();
    for msg in [RemoteSystemMsg::Terminate, RemoteSystemMsg::GracefulStop] {
        let local = system
            .spawn_anonymous(actor_fn(|_, _: u32| Ok(())))
            .unwrap();
        remote::deliver_system(&local.to_any(), msg);
        eventually("the stop", || local.is_terminated());
    }
    system.terminate().await;
}

#[volley_testkit::each_dispatcher]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn graceful_stop_and_liveness_of_a_remote_ref_are_the_routes_to_answer() {
    let system = common::system("seam-misc").unwrap();
    let route = Recorder::new(false);
    let target = remote_ref(&system, "far", 9, route.clone());
    let typed: ActorRef<u32> = target.typed();
    typed.graceful_stop();
    assert!(!typed.is_terminated());
    route.terminated.store(true, Ordering::SeqCst);
    assert!(typed.is_terminated(), "liveness comes from the route");
    assert_eq!(route.log(), ["graceful stop"]);
    assert!(!target.to_any().is_reply_handle());
    let node = ActorPath::parse("volley://peer@127.0.0.1:9/").unwrap();
    let handle = RemoteRef::reply_handle(&node, 77, system.clone(), route);
    assert!(handle.to_any().is_reply_handle());
    assert_eq!(handle.correlation(), Some(77));
    system.terminate().await;
}

#[volley_testkit::each_dispatcher]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_unwatch_of_a_remote_actor_goes_to_the_route() {
    let system = common::system("seam-unwatch").unwrap();
    let route = Recorder::new(false);
    let target = remote_ref(&system, "watched", 42, route.clone()).to_any();
    let seen = TestProbe::<String>::new(&system);
    let events = seen.actor_ref();
    let watcher = system
        .spawn(
            "watcher",
            Props::new(move || Watcher {
                target: target.clone(),
                events: events.clone(),
            }),
        )
        .unwrap();
    watcher.tell(());
    seen.expect_msg("unwatched".to_string());
    seen.expect_no_msg(Duration::from_millis(50));
    assert_eq!(route.log(), ["watch by watcher", "unwatch by watcher"]);
    system.terminate().await;
}
