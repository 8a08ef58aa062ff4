//! The shard actor on one node (`volley_cluster::sharding::Shard`): cases
//! after Pekko's `EntityPassivationSpec`, `IdleSpec` and
//! `LeastRecentlyUsedSpec`, and the hand-off's answer.

use std::time::Duration;

use volley::{ActorRef, ActorSystem};
use volley_cluster::sharding::{
    HandedOff, PassivationSettings, Shard, ShardId, ShardMsg, ShardSettings,
};
use volley_testkit::TestProbe;

use super::{got, recorders, sorted, started, stopped, Event, Rec};

fn shard(
    system: &ActorSystem,
    settings: ShardSettings,
) -> (ActorRef<ShardMsg<Rec>>, TestProbe<Event>) {
    let (factory, events) = recorders(system);
    let shard = system
        .spawn_anonymous(Shard::props(ShardId(7), factory, settings))
        .unwrap();
    (shard, events)
}

/// Passivation by these rules, checked every 20 ms.
fn passivating(idle_timeout: Option<Duration>, max_active: Option<usize>) -> ShardSettings {
    ShardSettings {
        passivation: PassivationSettings {
            idle_timeout,
            max_active,
        },
        passivation_check_interval: Duration::from_millis(20),
        ..ShardSettings::default()
    }
}

fn deliver(shard: &ActorRef<ShardMsg<Rec>>, id: &str, n: u32) {
    shard.tell(message(id, n));
}

fn message(id: &str, n: u32) -> ShardMsg<Rec> {
    ShardMsg::Deliver {
        entity_id: id.into(),
        msg: Rec::Num(n),
    }
}

#[volley_testkit::each_dispatcher]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_entity_starts_on_its_first_message_and_keeps_taking_them() {
    let system = ActorSystem::new("shard-start").unwrap();
    let (shard, events) = shard(&system, ShardSettings::default());
    deliver(&shard, "a/b c", 1);
    events.expect_msg(started("a/b c"));
    events.expect_msg(got("a/b c", 1));
    deliver(&shard, "a/b c", 2);
    events.expect_msg(got("a/b c", 2));
    events.expect_no_msg(Duration::from_millis(100));
    system.terminate().await;
}

#[volley_testkit::each_dispatcher]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_idle_entity_is_passivated_and_its_next_message_starts_it_again() {
    let system = ActorSystem::new("shard-idle").unwrap();
    let idle = Some(Duration::from_millis(200));
    let (shard, events) = shard(&system, passivating(idle, None));
    deliver(&shard, "e", 1);
    events.expect_msg(started("e"));
    events.expect_msg(got("e", 1));
    events.expect_msg(stopped("e"));
    deliver(&shard, "e", 2);
    events.expect_msg(started("e"));
    events.expect_msg(got("e", 2));
    system.terminate().await;
}

#[volley_testkit::each_dispatcher]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn past_max_active_the_least_recently_used_entity_is_passivated() {
    let system = ActorSystem::new("shard-lru").unwrap();
    let (shard, events) = shard(&system, passivating(None, Some(2)));
    for (n, id) in ["a", "b", "a", "c"].iter().enumerate() {
        deliver(&shard, id, n as u32);
    }
    // "b" was used least recently once "c" came: it alone goes. (Events
    // of different entities come in any order.)
    let expected = vec![
        started("a"),
        got("a", 0),
        started("b"),
        got("b", 1),
        got("a", 2),
        started("c"),
        got("c", 3),
        stopped("b"),
    ];
    assert_eq!(sorted(events.receive_n(8)), sorted(expected));
    events.expect_no_msg(Duration::from_millis(200));
    system.terminate().await;
}

#[volley_testkit::each_dispatcher]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn messages_sent_while_an_entity_stops_reach_it_again_in_order() {
    let system = ActorSystem::new("shard-passivate").unwrap();
    let (shard, events) = shard(&system, ShardSettings::default());
    deliver(&shard, "e", 0);
    shard.tell(ShardMsg::Passivate("e".into()));
    for n in 1..=100 {
        deliver(&shard, "e", n);
    }
    // The entity handles what it was sent before its passivation, and the
    // rest waits in the shard for its next incarnation.
    events.expect_msg(started("e"));
    events.expect_msg(got("e", 0));
    events.expect_msg(stopped("e"));
    events.expect_msg(started("e"));
    for n in 1..=100 {
        events.expect_msg(got("e", n));
    }
    system.terminate().await;
}

/// A shard with default settings, its entities' events, and a probe for
/// its hand-off's answer.
fn handing_off(
    system: &ActorSystem,
) -> (
    ActorRef<ShardMsg<Rec>>,
    TestProbe<Event>,
    TestProbe<HandedOff<Rec>>,
) {
    let (shard, events) = shard(system, ShardSettings::default());
    (shard, events, TestProbe::new(system))
}

/// The numbered messages of a hand-off's answer, as (id, n).
fn numbered(undelivered: Vec<(std::sync::Arc<str>, Rec)>) -> Vec<(String, u32)> {
    let number = |(id, msg): (std::sync::Arc<str>, Rec)| match msg {
        Rec::Num(n) => (id.to_string(), n),
        other => panic!("{other:?}"),
    };
    undelivered.into_iter().map(number).collect()
}

#[volley_testkit::each_dispatcher]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_hand_off_stops_every_entity_and_returns_what_waited() {
    let system = ActorSystem::new("shard-hand-off").unwrap();
    let (shard, events, answers) = handing_off(&system);
    answers.watch(&shard);
    deliver(&shard, "free", 1);
    // In one run of the shard's mailbox, so that "stopping" stops only
    // after the hand-off has begun: 2 and 3 wait for it when it comes.
    shard.tell_all(&mut vec![
        message("stopping", 0),
        ShardMsg::Passivate("stopping".into()),
        message("stopping", 2),
        message("stopping", 3),
        ShardMsg::HandOff(answers.actor_ref()),
    ]);
    let answer = answers.receive_msg();
    assert_eq!(answer.shard, ShardId(7));
    let waited = numbered(answer.undelivered);
    assert_eq!(waited, [("stopping".into(), 2), ("stopping".into(), 3)]);
    let expected = vec![
        started("free"),
        got("free", 1),
        stopped("free"),
        started("stopping"),
        got("stopping", 0),
        stopped("stopping"),
    ];
    assert_eq!(sorted(events.receive_n(6)), sorted(expected));
    answers.expect_terminated(&shard);
    system.terminate().await;
}

#[volley_testkit::each_dispatcher]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_message_for_a_stopped_entity_during_a_hand_off_goes_with_the_answer() {
    let system = ActorSystem::new("shard-hand-off-late").unwrap();
    let (shard, events, answers) = handing_off(&system);
    // In one run of the shard's mailbox: "e" is still stopping when the
    // messages behind the hand-off come (its stop is announced behind
    // them), and "late" has no entity. Neither may be lost: both follow
    // the shard to its next home, each in its order.
    shard.tell_all(&mut vec![
        message("e", 0),
        ShardMsg::HandOff(answers.actor_ref()),
        message("late", 1),
        message("e", 2),
        message("late", 3),
    ]);
    let answer = answers.receive_msg();
    let mut waited = numbered(answer.undelivered);
    waited.sort_by_key(|(id, _)| id.clone()); // the order per entity is kept
    let expected = [("e", 2), ("late", 1), ("late", 3)].map(|(id, n)| (id.to_string(), n));
    assert_eq!(waited, expected);
    let ran = vec![started("e"), got("e", 0), stopped("e")];
    assert_eq!(sorted(events.receive_n(3)), sorted(ran));
    events.expect_no_msg(Duration::from_millis(100));
    assert_eq!(system.dead_letter_count(), 0);
    system.terminate().await;
}

#[volley_testkit::each_dispatcher]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn what_cannot_wait_or_start_is_a_counted_dead_letter() {
    let system = ActorSystem::new("shard-dead-letters").unwrap();
    let settings = ShardSettings {
        buffer_limit: 2,
        ..ShardSettings::default()
    };
    let (shard, events) = shard(&system, settings);
    // An id whose encoding is longer than an actor name may be.
    deliver(&shard, &"/".repeat(100), 0);
    // In one run: the entity stops only after all of them were handled,
    // so 1 and 2 wait and 3 is over the limit.
    shard.tell_all(&mut vec![
        message("e", 0),
        ShardMsg::Passivate("e".into()),
        message("e", 1),
        message("e", 2),
        message("e", 3),
    ]);
    for event in [started("e"), got("e", 0), stopped("e"), started("e")] {
        events.expect_msg(event);
    }
    events.expect_msg(got("e", 1));
    events.expect_msg(got("e", 2));
    events.expect_no_msg(Duration::from_millis(100));
    assert_eq!(system.dead_letter_count(), 2);
    system.terminate().await;
}
