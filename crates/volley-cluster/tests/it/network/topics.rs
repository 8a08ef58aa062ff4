//! Topics across the cluster: a topic's instances on other members are
//! listed by the cluster receptionist, so a message published on one
//! member reaches the subscribers of every member, once each.

use std::time::Duration;

use volley::{ActorSystem, Listing, ServiceKey, Topic, TopicCommand, TopicStats};
use volley_remote::Registry;
use volley_testkit::remote::Nodes;
use volley_testkit::{await_cond_within, FishingOutcome, TestProbe};

use super::{deadline, formed};

type News = TopicCommand<String>;

/// Nodes whose registry carries the topic's commands.
fn topic_nodes() -> Nodes {
    Nodes::new(|| {
        let mut registry = Registry::default();
        registry.register::<u32>(1).expect("a fresh registry");
        registry
            .register_topic::<String>(2)
            .expect("a fresh registry");
        registry
    })
}

/// A probe of the listings of the topic's instances on `system`.
fn instances(system: &ActorSystem) -> TestProbe<Listing<News>> {
    let probe = TestProbe::new(system);
    let key = ServiceKey::<News>::new("volley-topic:news");
    system
        .receptionist()
        .expect("a receptionist")
        .subscribe(&key, probe.actor_ref());
    probe
}

/// A subscriber on each of three members; published on the first, the
/// message reaches each subscriber exactly once.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_message_published_on_one_member_reaches_every_members_subscribers_once() {
    let mut nodes = topic_nodes();
    let (members, _clusters, _probes) = formed(&mut nodes, 3).await;
    let listed = instances(&members[0].system);
    let mut topics = Vec::new();
    let mut subscribers = Vec::new();
    for node in &members {
        let topic = node
            .system
            .spawn("news", Topic::props::<String>("news"))
            .expect("spawned");
        let subscriber = TestProbe::<String>::new(&node.system);
        topic.tell(TopicCommand::Subscribe(subscriber.actor_ref()));
        topics.push(topic);
        subscribers.push(subscriber);
    }
    listed.fish_for_within(deadline(), |listing| {
        if listing.services.len() == 3 {
            FishingOutcome::Complete
        } else {
            FishingOutcome::Continue
        }
    });
    // The first instance has its own subscription to the listings: ask it
    // until it holds all three instances.
    let stats = TestProbe::<TopicStats>::new(&members[0].system);
    await_cond_within(deadline(), "the first instance knows all three", || {
        topics[0].tell(TopicCommand::GetTopicStats(stats.actor_ref()));
        stats.receive_msg_within(deadline()).topic_instance_count == 3
    });
    topics[0].tell(TopicCommand::Publish("hello".to_owned()));
    for subscriber in &subscribers {
        subscriber.expect_msg_within(deadline(), "hello".to_owned());
    }
    for subscriber in &subscribers {
        subscriber.expect_no_msg(Duration::from_millis(300));
    }
    nodes.stop_all().await;
}
