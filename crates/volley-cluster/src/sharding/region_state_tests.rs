use std::collections::BTreeSet;
use std::time::Duration;

use tokio::sync::oneshot;
use volley::ActorSystem;
use volley_testkit::TestProbe;

use super::{collect, CurrentShardRegionState, ShardState};
use crate::sharding::allocation::ShardId;
use crate::sharding::shard::ShardMsg;

/// A shard that answers is listed with its entities, in shard order; one
/// that stays silent past the timeout is listed as failed, and the
/// answer comes all the same.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn answering_shards_are_listed_and_a_silent_one_is_failed() {
    let system = ActorSystem::new("region-state").unwrap();
    let answering = TestProbe::<ShardMsg<u32>>::new(&system);
    let silent = TestProbe::<ShardMsg<u32>>::new(&system);
    let shards = vec![
        (ShardId(9), answering.actor_ref()),
        (ShardId(2), silent.actor_ref()),
    ];
    let (reply, state) = oneshot::channel();
    let runtime = system.runtime_handle();
    collect(&runtime, shards, Duration::from_millis(100), move |state| {
        let _ = reply.send(state);
    });
    let asked = answering.expect_msg_pf(|msg| match msg {
        ShardMsg::GetState(reply) => Some(reply),
        _ => None,
    });
    let ids: BTreeSet<String> = ["a", "b"].map(str::to_owned).into();
    let answer = ShardState {
        shard: ShardId(9),
        entity_ids: ids,
    };
    asked.send(answer.clone()).expect("the collector waits");
    let state = state.await.expect("an answer");
    assert_eq!(
        state,
        CurrentShardRegionState {
            shards: vec![answer],
            failed: [ShardId(2)].into(),
        }
    );
    assert_eq!(state.entity_ids().collect::<Vec<_>>(), ["a", "b"]);
    system.terminate().await;
}
