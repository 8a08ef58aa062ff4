//! A remote watcher gets every message the watched actor sent it before
//! it stopped, and only then `Terminated`, as in Akka (Artery flushes the
//! user lanes before it sends a death watch notification; volley does the
//! same, `transport/control/flush.rs`). The messages travel on the ordinary and
//! the large lane, the death notice on the control lane: without the
//! flush, the notice overtakes a large message that is still on its way.

use crate::common;

use std::time::Duration;

use common::{node, T};
use tokio::sync::mpsc::{unbounded_channel, UnboundedSender};
use volley::{Actor, ActorRef, AnyRef, Context, HandleResult, Props, Terminated, ToAnyRef};
use volley_remote::RemoteSettings;

/// What the watcher saw, in order.
#[derive(Debug, PartialEq)]
enum Seen {
    Message(usize),
    /// The name of the actor that terminated.
    Terminated(String),
}

/// Watches `targets` from its start; reports each message's length and
/// each `Terminated`.
struct Watcher {
    targets: Vec<AnyRef>,
    seen: UnboundedSender<Seen>,
}

impl Actor for Watcher {
    type Msg = Vec<u64>;
    fn pre_start(&mut self, ctx: &mut Context<Self>) -> HandleResult {
        for target in &self.targets {
            ctx.watch(target);
        }
        Ok(())
    }
    fn handle(&mut self, _ctx: &mut Context<Self>, msg: Vec<u64>) -> HandleResult {
        let _ = self.seen.send(Seen::Message(msg.len()));
        Ok(())
    }
    fn on_terminated(&mut self, _ctx: &mut Context<Self>, t: Terminated) -> HandleResult {
        let name = t.actor.path().name().to_string();
        let _ = self.seen.send(Seen::Terminated(name));
        Ok(())
    }
}

/// Small messages, then one of `big` elements (the large lane), then it
/// stops itself.
struct LastWords {
    to: ActorRef<Vec<u64>>,
    small: usize,
    big: usize,
}

impl Actor for LastWords {
    type Msg = u32;
    fn handle(&mut self, ctx: &mut Context<Self>, _go: u32) -> HandleResult {
        for _ in 0..self.small {
            self.to.tell(vec![1]);
        }
        self.to.tell(vec![7; self.big]);
        ctx.stop_self();
        Ok(())
    }
}

/// Speakers on one node, `(name, small, big)`, watched by an actor on
/// another; each says its last words and stops, all at once. Returns what
/// the watcher saw, until every `Terminated` and half a second more.
async fn last_words(speakers: &[(&str, usize, usize)], flush_timeout_ms: u64) -> Vec<Seen> {
    let settings = RemoteSettings {
        death_watch_notification_flush_timeout: Duration::from_millis(flush_timeout_ms),
        ..RemoteSettings::default()
    };
    let a = node("order-a", settings.clone()).await;
    let b = node("order-b", settings).await;
    let (tx, mut rx) = unbounded_channel();
    let watcher_path = format!("{}/user/watcher", a.remoting.address());
    let to_watcher = b.remoting.resolve::<Vec<u64>>(&watcher_path).unwrap();
    let mut spoken = Vec::new();
    let mut targets = Vec::new();
    for &(name, small, big) in speakers {
        let to = to_watcher.clone();
        let props = Props::new(move || LastWords {
            to: to.clone(),
            small,
            big,
        });
        spoken.push(b.system.spawn(name, props).unwrap());
        targets.push(common::remote_ref(&a, &b, name).to_any_ref());
    }
    a.system
        .spawn(
            "watcher",
            Props::new(move || Watcher {
                targets: targets.clone(),
                seen: tx.clone(),
            }),
        )
        .unwrap();
    // The watches are in place once the speakers' node has them.
    common::await_incoming_watches(&b, &a, speakers.len());
    for speaker in &spoken {
        speaker.tell(1);
    }
    let mut seen = Vec::new();
    let ended = |seen: &[Seen]| {
        seen.iter()
            .filter(|s| matches!(s, Seen::Terminated(_)))
            .count()
    };
    while ended(&seen) < speakers.len() {
        match tokio::time::timeout(T, rx.recv()).await {
            Ok(Some(s)) => seen.push(s),
            _ => panic!("not every Terminated; saw {} events: {seen:?}", seen.len()),
        }
    }
    // Anything that comes after the last Terminated is a message it overtook.
    while let Ok(Some(s)) = tokio::time::timeout(Duration::from_millis(500), rx.recv()).await {
        seen.push(s);
    }
    a.system.terminate().await;
    b.system.terminate().await;
    seen
}

#[volley_testkit::each_dispatcher]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_remote_watcher_gets_the_last_messages_before_terminated() {
    let seen = last_words(&[("speaker", 200, 512 * 1024)], 3000).await;
    let terminated = Seen::Terminated("speaker".into());
    let terminated_at = seen.iter().position(|s| s == &terminated).unwrap();
    assert_eq!(terminated_at, 201, "every message first, then Terminated");
    assert_eq!(seen[200], Seen::Message(512 * 1024), "the large one last");
    assert_eq!(
        seen.len(),
        202,
        "nothing after Terminated: {:?}",
        &seen[201..]
    );
}

/// Many watched actors stopping at once: each one's last message, told
/// apart by its length, comes before its `Terminated`, and every
/// `Terminated` comes. (A volley bug, fixed: a watch resent at the start
/// of a new control connection named a ref whose declaration was still in
/// the queue behind it, so the watched node dropped it as undeclared, and
/// a few of the 100 `Terminated` never came, in about one run in five.)
#[volley_testkit::each_dispatcher]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn many_watched_actors_stopping_at_once_are_each_reported_after_their_messages() {
    let names: Vec<String> = (0..100).map(|i| format!("speaker{i}")).collect();
    let speakers: Vec<(&str, usize, usize)> = names
        .iter()
        .enumerate()
        .map(|(i, name)| (name.as_str(), 0, 1000 + i))
        .collect();
    let seen = last_words(&speakers, 3000).await;
    for (i, name) in names.iter().enumerate() {
        let said = seen.iter().position(|s| s == &Seen::Message(1000 + i));
        let ended = seen
            .iter()
            .position(|s| s == &Seen::Terminated(name.clone()));
        let (Some(said), Some(ended)) = (said, ended) else {
            panic!("{name}: said {said:?}, ended {ended:?}");
        };
        assert!(said < ended, "{name}: Terminated before its message");
    }
    assert_eq!(seen.len(), 200);
}
