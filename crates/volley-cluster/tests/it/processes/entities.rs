//! The node program's sharded entity type (`NodeConfig::sharding`): each
//! entity prints `ENTITY start|stop <µs> <entity id> <port>` (the wall
//! clock every process of the machine shares, as the singleton's
//! `SINGLETON` lines), so a test can check from the lines alone that no id
//! was alive on two nodes at once. Messages are round numbers; an entity
//! prints `RECEIVED <round> <entity id>` for each but the background
//! traffic's, so a test can wait until a round sent after a failure
//! reached every entity, once.

use std::time::Duration;

use volley::{Actor, ActorSystem, Context, HandleResult, Props};
use volley_cluster::sharding::{
    ClusterSharding, Entity, EntityTypeKey, HashShards, Sharding, ShardingSettings,
};
use volley_remote::Remoting;

use super::node::say;
use super::singleton::now_us;

/// The shards the ids hash over: several per node, so a failure moves
/// many shards at once.
const SHARDS: u32 = 50;

/// The round the background traffic sends; not recorded.
const TRAFFIC_ROUND: u64 = 0;

/// One entity: reports its start and stop, and the rounds it gets.
struct Tracked {
    id: String,
    port: u16,
}

impl Actor for Tracked {
    type Msg = u64;

    fn pre_start(&mut self, _ctx: &mut Context<Self>) -> HandleResult {
        say(&format!(
            "ENTITY start {} {} {}",
            now_us(),
            self.id,
            self.port
        ));
        Ok(())
    }

    fn handle(&mut self, _ctx: &mut Context<Self>, round: u64) -> HandleResult {
        if round != TRAFFIC_ROUND {
            say(&format!("RECEIVED {round} {}", self.id));
        }
        Ok(())
    }

    fn post_stop(&mut self, _ctx: &mut Context<Self>) {
        say(&format!(
            "ENTITY stop {} {} {}",
            now_us(),
            self.id,
            self.port
        ));
    }
}

/// What the sharding commands of a node act on.
pub struct ShardedNode {
    sharding: Sharding<u64>,
}

/// The sharding commands (`shard-...`), parsed by the node program.
#[derive(Debug)]
pub enum ShardCommand {
    /// `shard-traffic <n> <period ms>`: from now on, every period, tells
    /// each of the entities `e-0` .. `e-<n-1>` one message (not recorded).
    Traffic(u32, u64),
    /// `shard-send <n> <round>`: tells each of those entities `round`.
    Send(u32, u64),
}

impl ShardCommand {
    pub fn parse(words: &[&str]) -> Option<ShardCommand> {
        Some(match words {
            ["shard-traffic", n, ms] => ShardCommand::Traffic(n.parse().ok()?, ms.parse().ok()?),
            ["shard-send", n, round] => ShardCommand::Send(n.parse().ok()?, round.parse().ok()?),
            _ => return None,
        })
    }
}

/// Quick rounds and retries; `margin` after a removal before a removed
/// member's shards move (also the coordinator singleton's).
fn settings(margin: Duration) -> ShardingSettings {
    ShardingSettings {
        retry_interval: Duration::from_millis(200),
        rebalance_interval: Duration::from_secs(1),
        handoff_timeout: Duration::from_secs(10),
        down_removal_margin: margin,
        coordinator_state_wait: Duration::from_secs(5),
        ..ShardingSettings::default()
    }
}

impl ShardedNode {
    /// Starts the entity type `tracked` on this node's cluster.
    pub fn start(
        system: &ActorSystem,
        remoting: &Remoting,
        port: u16,
        margin: Duration,
    ) -> ShardedNode {
        let entity = Entity::new(EntityTypeKey::new("tracked"), move |id| {
            let id = id.to_owned();
            Props::new(move || Tracked {
                id: id.clone(),
                port,
            })
        })
        .with_extractor(HashShards::new(SHARDS).expect("shards"), SHARDS)
        .with_settings(settings(margin));
        let sharding =
            ClusterSharding::init_on_cluster(system, remoting, entity).expect("sharding starts");
        ShardedNode { sharding }
    }

    pub fn obey(&self, command: ShardCommand) -> Result<(), String> {
        match command {
            ShardCommand::Traffic(n, period_ms) => {
                let sharding = self.sharding.clone();
                let period = Duration::from_millis(period_ms);
                tokio::spawn(async move {
                    let mut every = tokio::time::interval(period);
                    loop {
                        every.tick().await;
                        if send(&sharding, n, TRAFFIC_ROUND).is_err() {
                            return;
                        }
                    }
                });
                Ok(())
            }
            ShardCommand::Send(n, round) => send(&self.sharding, n, round),
        }
    }
}

fn send(sharding: &Sharding<u64>, n: u32, round: u64) -> Result<(), String> {
    for k in 0..n {
        let entity = sharding
            .entity_ref(&format!("e-{k}"))
            .map_err(|e| e.to_string())?;
        entity.tell(round);
    }
    Ok(())
}
