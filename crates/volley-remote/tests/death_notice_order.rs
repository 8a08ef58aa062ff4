//! A remote watcher gets every message the watched actor sent it before
//! it stopped, and only then `Terminated`, as in Akka (Artery flushes the
//! user lanes before it sends a death watch notification; volley does the
//! same, `transport/flush.rs`). The messages travel on the ordinary and
//! the large lane, the death notice on the control lane: without the
//! flush, the notice overtakes a large message that is still on its way.

mod common;

use std::time::Duration;

use common::{node, T};
use tokio::sync::mpsc::{unbounded_channel, UnboundedSender};
use volley::{Actor, ActorRef, AnyRef, Context, HandleResult, Props, Terminated, ToAnyRef};
use volley_remote::RemoteSettings;

/// What the watcher saw, in order.
#[derive(Debug, PartialEq)]
enum Seen {
    Message(usize),
    Terminated,
}

/// Watches `target` from its start; reports each message's length and the
/// `Terminated`.
struct Watcher {
    target: AnyRef,
    seen: UnboundedSender<Seen>,
}

impl Actor for Watcher {
    type Msg = Vec<u64>;
    fn pre_start(&mut self, ctx: &mut Context<Self>) -> HandleResult {
        ctx.watch(&self.target);
        Ok(())
    }
    fn handle(&mut self, _ctx: &mut Context<Self>, msg: Vec<u64>) -> HandleResult {
        let _ = self.seen.send(Seen::Message(msg.len()));
        Ok(())
    }
    fn on_terminated(&mut self, _ctx: &mut Context<Self>, _t: Terminated) -> HandleResult {
        let _ = self.seen.send(Seen::Terminated);
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

async fn last_messages_arrive_before_terminated(flush_timeout_ms: u64) -> Vec<Seen> {
    let settings = RemoteSettings {
        death_watch_notification_flush_timeout_ms: flush_timeout_ms,
        ..RemoteSettings::default()
    };
    let a = node("order-a", settings.clone()).await;
    let b = node("order-b", settings).await;
    let (tx, mut rx) = unbounded_channel();
    let watcher_path = format!("{}/user/watcher", a.remoting.address());
    let to_watcher = b.remoting.resolve::<Vec<u64>>(&watcher_path).unwrap();
    // Connections both ways first, so the watch and the messages do not
    // wait for handshakes.
    let speaker = b
        .system
        .spawn(
            "speaker",
            Props::new(move || LastWords {
                to: to_watcher.clone(),
                small: 200,
                big: 512 * 1024,
            }),
        )
        .unwrap();
    let target = common::remote_ref(&a, &b, "speaker").to_any_ref();
    a.system
        .spawn(
            "watcher",
            Props::new(move || Watcher {
                target: target.clone(),
                seen: tx.clone(),
            }),
        )
        .unwrap();
    // The watch is in place once the speaker's node has it; a message
    // through the same lanes warms them up meanwhile.
    tokio::time::sleep(Duration::from_millis(300)).await;
    speaker.tell(1);
    let mut seen = Vec::new();
    while seen.last() != Some(&Seen::Terminated) {
        match tokio::time::timeout(T, rx.recv()).await {
            Ok(Some(s)) => seen.push(s),
            _ => panic!("no Terminated; saw {} events", seen.len()),
        }
    }
    // Anything that comes after the Terminated is a message it overtook.
    while let Ok(Some(s)) = tokio::time::timeout(Duration::from_millis(500), rx.recv()).await {
        seen.push(s);
    }
    a.system.terminate().await;
    b.system.terminate().await;
    seen
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_remote_watcher_gets_the_last_messages_before_terminated() {
    let seen = last_messages_arrive_before_terminated(3000).await;
    let terminated_at = seen.iter().position(|s| s == &Seen::Terminated).unwrap();
    assert_eq!(terminated_at, 201, "every message first, then Terminated");
    assert_eq!(seen[200], Seen::Message(512 * 1024), "the large one last");
    assert_eq!(
        seen.len(),
        202,
        "nothing after Terminated: {:?}",
        &seen[201..]
    );
}
