//! Cases ported from Pekko Typed's `LocalPubSubSpec`, against
//! `Topic::props(name)`.
//!
//! Ported: "publish to all local subscriber actors of a topic", "publish to
//! all subscriber actors across several instances of the same topic",
//! "doesn't publish across topics", "doesn't publish after unsubscribe".
//! Added: a subscriber that terminates leaves the topic (Pekko's topic
//! watches its subscribers too), and a message published with no
//! subscriber anywhere is a dead letter (Pekko publishes `Dropped`).

use crate::common;

use std::time::Duration;

use volley::{
    ActorRef, ActorSystem, DeadLetter, DeadLetterReason, Props, Topic, TopicCommand, TopicStats,
};
use volley_testkit::{eventually_async, TestProbe};

/// A subscriber that reads and forgets.
struct Reader;

impl volley::Actor for Reader {
    type Msg = String;
    fn handle(&mut self, _: &mut volley::Context<Self>, _: String) -> volley::HandleResult {
        Ok(())
    }
}

fn topic(system: &ActorSystem, name: &str, actor: &str) -> ActorRef<TopicCommand<String>> {
    system.spawn(actor, Topic::props::<String>(name)).unwrap()
}

/// Waits until `topic`'s stats satisfy `want`.
async fn stats_become(topic: &ActorRef<TopicCommand<String>>, want: impl Fn(TopicStats) -> bool) {
    eventually_async("the topic's stats to match", async || {
        let stats = topic
            .ask(TopicCommand::GetTopicStats, Duration::from_secs(1))
            .await
            .unwrap();
        want(stats)
    })
    .await;
}

#[volley_testkit::each_dispatcher]
#[tokio::test]
async fn publishes_to_every_local_subscriber() {
    let system = common::system("topic-local").unwrap();
    let fruit = topic(&system, "fruit1", "fruit");
    let probes: Vec<TestProbe<String>> = (0..3).map(|_| TestProbe::new(&system)).collect();
    for p in &probes {
        fruit.tell(TopicCommand::Subscribe(p.actor_ref()));
    }
    stats_become(&fruit, |s| {
        s.local_subscriber_count == 3 && s.topic_instance_count == 1
    })
    .await;
    fruit.tell(TopicCommand::Publish("banana".into()));
    for p in &probes {
        p.expect_msg("banana".to_string());
    }
    system.terminate().await;
}

#[volley_testkit::each_dispatcher]
#[tokio::test]
async fn publishes_across_instances_of_one_topic() {
    let system = common::system("topic-instances").unwrap();
    let first = topic(&system, "fruit2", "first");
    let second = topic(&system, "fruit2", "second");
    let probes: Vec<TestProbe<String>> = (0..3).map(|_| TestProbe::new(&system)).collect();
    for p in &probes {
        second.tell(TopicCommand::Subscribe(p.actor_ref()));
    }
    stats_become(&second, |s| s.local_subscriber_count == 3).await;
    // The other instance knows about it.
    stats_become(&first, |s| s.topic_instance_count == 1).await;
    first.tell(TopicCommand::Publish("apple".into()));
    for p in &probes {
        p.expect_msg("apple".to_string());
        p.expect_no_msg(Duration::from_millis(50));
    }
    system.terminate().await;
}

#[volley_testkit::each_dispatcher]
#[tokio::test]
async fn does_not_publish_across_topics_or_after_unsubscribe() {
    let system = common::system("topic-apart").unwrap();
    let fruit = topic(&system, "fruit3", "fruit");
    let veggies = topic(&system, "veggies", "veggies");
    let probe = TestProbe::new(&system);
    fruit.tell(TopicCommand::Subscribe(probe.actor_ref()));
    stats_become(&fruit, |s| s.local_subscriber_count == 1).await;
    stats_become(&veggies, |s| s.topic_instance_count == 0).await;
    veggies.tell(TopicCommand::Publish("carrot".into()));
    probe.expect_no_msg(Duration::from_millis(200));
    fruit.tell(TopicCommand::Unsubscribe(probe.actor_ref()));
    stats_become(&fruit, |s| {
        s.local_subscriber_count == 0 && s.topic_instance_count == 0
    })
    .await;
    fruit.tell(TopicCommand::Publish("orange".into()));
    probe.expect_no_msg(Duration::from_millis(200));
    system.terminate().await;
}

#[volley_testkit::each_dispatcher]
#[tokio::test]
async fn a_terminated_subscriber_leaves_and_no_subscriber_means_a_dead_letter() {
    let system = common::system("topic-ends").unwrap();
    let dead = TestProbe::<DeadLetter>::on_event_stream(&system);
    let news = topic(&system, "news", "news");
    let reader = system.spawn("reader", Props::new(|| Reader)).unwrap();
    news.tell(TopicCommand::Subscribe(reader.clone()));
    stats_become(&news, |s| s.local_subscriber_count == 1).await;
    system.stop(&reader);
    stats_become(&news, |s| {
        s.local_subscriber_count == 0 && s.topic_instance_count == 0
    })
    .await;
    news.tell(TopicCommand::Publish("unread".into()));
    let letter = dead.receive_msg();
    assert_eq!(letter.reason, DeadLetterReason::NoRoutee);
    assert_eq!(letter.message_type, std::any::type_name::<String>());
    system.terminate().await;
}
