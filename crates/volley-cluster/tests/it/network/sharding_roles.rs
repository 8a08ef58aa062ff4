//! Sharding with a role and proxies (Pekko's `role` and `startProxy`):
//! only members with the entity type's role host shards; a member
//! without it, and one started as a proxy, route messages to them.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde::{Deserialize, Serialize};
use volley::{Actor, Context, HandleResult, Props};
use volley_cluster::sharding::{
    ClusterSharding, CurrentShardRegionState, Entity, EntityTypeKey, HashShards, Sharding,
    ShardingSettings,
};
use volley_cluster::Cluster;
use volley_testkit::await_cond_within;
use volley_testkit::remote::Node;

use super::{all_up, deadline, quick, sharding_nodes, start_nodes};

/// The message of the entities here and in `sharding_versions`.
#[derive(Debug, Serialize, Deserialize)]
pub(super) struct Hit(pub(super) u32);

/// Entity id to the ports it started on and the numbers it got.
pub(super) type Record = Arc<Mutex<BTreeMap<String, (Vec<u16>, Vec<u32>)>>>;

/// An entity that records where it started and what it got.
pub(super) struct Target {
    pub(super) id: String,
    pub(super) port: u16,
    pub(super) record: Record,
}

impl Actor for Target {
    type Msg = Hit;

    fn pre_start(&mut self, _ctx: &mut Context<Self>) -> HandleResult {
        let mut record = self.record.lock().expect("record");
        record.entry(self.id.clone()).or_default().0.push(self.port);
        Ok(())
    }

    fn handle(&mut self, _ctx: &mut Context<Self>, Hit(n): Hit) -> HandleResult {
        let mut record = self.record.lock().expect("record");
        record.entry(self.id.clone()).or_default().1.push(n);
        Ok(())
    }
}

fn entity(node: &Node, record: &Record) -> Entity<Target> {
    let (record, port) = (record.clone(), node.remoting.address().port());
    let settings = ShardingSettings {
        retry_interval: Duration::from_millis(200),
        role: Some("backend".to_owned()),
        ..ShardingSettings::default()
    };
    Entity::new(EntityTypeKey::new("roled"), move |id| {
        let (id, record) = (id.to_owned(), record.clone());
        Props::new(move || Target {
            id: id.clone(),
            port,
            record: record.clone(),
        })
    })
    .with_extractor(HashShards::new(10).expect("shards"), 10)
    .with_settings(settings)
}

/// Three members: 0 and 1 have the role `backend`, 2 has none. The entity
/// type has role `backend`; member 1 starts it as a proxy all the same.
/// Every entity starts on member 0 alone, and every message sent from the
/// two proxies arrives there exactly once; the regions' states
/// (`shard_region_state`) say the same.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn only_members_with_the_role_host_and_proxies_reach_them() {
    let mut nodes = sharding_nodes::<Hit>();
    let members = start_nodes(&mut nodes, 3).await;
    let seeds: Vec<&Node> = members.iter().collect();
    let clusters: Vec<Cluster> = members
        .iter()
        .enumerate()
        .map(|(at, node)| {
            let mut settings = quick("test", &seeds);
            if at < 2 {
                settings.roles = vec!["backend".to_owned()];
            }
            Cluster::start(&node.system, &node.remoting, settings).expect("a cluster starts")
        })
        .collect();
    all_up(&clusters);
    assert_eq!(clusters[0].self_roles(), ["backend"]);
    // Akka's role leader: the first backend member by address.
    let backends = [clusters[0].self_member(), clusters[1].self_member()];
    let leader = backends.into_iter().min().cloned();
    await_cond_within(deadline(), "every node names the backend leader", || {
        clusters
            .iter()
            .all(|c| c.state().role_leaders.get("backend") == Some(&leader))
    });
    let record = Record::default();
    let start = |at: usize| {
        let node = &members[at];
        ClusterSharding::init_on_cluster(&node.system, &node.remoting, entity(node, &record))
            .expect("sharding starts")
    };
    let host = start(0);
    let named_proxy = ClusterSharding::init_proxy_on_cluster(
        &members[1].system,
        &members[1].remoting,
        entity(&members[1], &record),
    )
    .expect("a proxy starts");
    let role_proxy = start(2);
    let count = 20;
    let proxies: [&Sharding<Hit>; 2] = [&named_proxy, &role_proxy];
    for n in 0..count {
        let sender = proxies[n % 2];
        let id = format!("e-{n}");
        sender.entity_ref(&id).expect("an id").tell(Hit(n as u32));
    }
    await_cond_within(deadline(), "every entity got its message", || {
        let record = record.lock().expect("record");
        record.len() == count && record.values().all(|(_, got)| !got.is_empty())
    });
    let host_port = members[0].remoting.address().port();
    for (id, (ports, got)) in record.lock().expect("record").iter() {
        assert_eq!(ports, &[host_port], "{id} started only on the host");
        assert_eq!(got.len(), 1, "{id} got its message once");
    }
    let hosted = host.shard_region_state().await.expect("the region runs");
    assert!(hosted.failed.is_empty());
    assert_eq!(
        hosted.entity_ids().count(),
        count,
        "every entity, on the host"
    );
    for proxy in proxies {
        let state = proxy.shard_region_state().await.expect("the proxy runs");
        assert_eq!(
            state,
            CurrentShardRegionState::default(),
            "a proxy hosts nothing"
        );
    }
    nodes.stop_all().await;
}
