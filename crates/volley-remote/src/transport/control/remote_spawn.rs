//! Remote spawn: asking another node to start an actor of a kind it
//! registered as spawnable, and answering such requests.
//!
//! Requests and responses travel as system messages (`control/system_messages.rs`),
//! so each is delivered exactly once across reconnects, matched by a
//! request id. A node refuses unless `remote.remote_spawn` is on.

use std::collections::hash_map::RandomState;
use std::collections::HashMap;
use std::hash::BuildHasher;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde::de::DeserializeOwned;
use serde::Serialize;
use tokio::sync::oneshot;
use volley::ActorPath;

use crate::serialization::{BincodeSerializer, Serializer, SerializerId};
use crate::transport::control::system_messages::SystemMessages;
use crate::transport::control::ControlContext;
use crate::transport::errors::RemoteSpawnError;
use crate::transport::outbound::association::system_buffers::SystemKind;
use crate::transport::support::lock;
use crate::wire::{Address, Pdu, SpawnRequest, SpawnResponse, SpawnResult};

/// What a spawn answers: the new actor's path and uid, or why not.
type Outcome = Result<(String, u64), String>;

/// This node's spawn requests that wait for an answer, by request id,
/// with the node each went to: only that node may answer it. Ids are a
/// keyed hash of a counter, so a peer cannot guess another's.
pub(crate) struct SpawnRequests {
    waiting: Mutex<HashMap<u64, (Address, oneshot::Sender<Outcome>)>>,
    next: AtomicU64,
    keys: RandomState,
}

impl Default for SpawnRequests {
    fn default() -> Self {
        SpawnRequests {
            waiting: Mutex::new(HashMap::new()),
            next: AtomicU64::new(1),
            keys: RandomState::new(),
        }
    }
}

impl SpawnRequests {
    fn next_id(&self) -> u64 {
        let n = self.next.fetch_add(1, Ordering::Relaxed);
        self.keys.hash_one(n)
    }
}

/// Asks `node` to spawn an actor of `kind` with `args`, and waits for the
/// answer at most `timeout`; returns the new actor's path and uid.
pub(crate) async fn spawn_on<P: Serialize + DeserializeOwned>(
    core: &Arc<impl ControlContext>,
    node: &Address,
    kind: &str,
    name: Option<&str>,
    args: &P,
    timeout: Duration,
) -> Result<(ActorPath, u64), RemoteSpawnError> {
    let mut props = bytes::BytesMut::new();
    BincodeSerializer
        .encode(args, &mut props)
        .map_err(|e| RemoteSpawnError::Send(e.to_string()))?;
    let requests = core.spawns();
    let request_id = requests.next_id();
    let (tx, rx) = oneshot::channel();
    lock(&requests.waiting).insert(request_id, (node.clone(), tx));
    let request = Pdu::SpawnRequest(SpawnRequest {
        request_id,
        serializer: SerializerId::BINCODE,
        kind,
        name: name.unwrap_or(""),
        props: &props,
    });
    let sent = core.send_spawn_message(node, SystemKind::Spawn, &request);
    if let Err(e) = sent {
        lock(&requests.waiting).remove(&request_id);
        return Err(RemoteSpawnError::Send(e));
    }
    // The timer runs on the system's runtime: the caller may be on any.
    let waited = core
        .system()
        .runtime_handle()
        .spawn(async move { tokio::time::timeout(timeout, rx).await })
        .await;
    let outcome = match waited {
        Ok(Ok(Ok(outcome))) => outcome,
        Ok(Ok(Err(_))) | Err(_) => Err("remoting shut down".to_string()),
        Ok(Err(_)) => {
            lock(&requests.waiting).remove(&request_id);
            return Err(RemoteSpawnError::Timeout(timeout));
        }
    };
    let (path, uid) = outcome.map_err(RemoteSpawnError::Refused)?;
    let path = ActorPath::parse(&path).map_err(|e| RemoteSpawnError::Refused(e.to_string()))?;
    Ok((path, uid))
}

/// Answers a peer's spawn request.
pub(crate) fn spawn_here(core: &Arc<impl ControlContext>, peer: &Address, r: SpawnRequest<'_>) {
    let outcome: Outcome = if core.trust().untrusted_mode {
        core.trust().refused(
            &**core,
            peer,
            &format!("a remote spawn of {:?} (untrusted mode)", r.kind),
        );
        Err("remote spawn is refused in untrusted mode (remote.trust.untrusted_mode)".into())
    } else if !core.settings().remote_spawn {
        Err("remote spawn is disabled on this node (remote.remote_spawn = false)".into())
    } else if r.serializer != SerializerId::BINCODE {
        Err(format!(
            "unsupported serializer {} for spawn arguments",
            r.serializer
        ))
    } else {
        match core.registry().kinds.get(r.kind) {
            None => Err(format!(
                "no spawnable kind {:?} is registered on this node",
                r.kind
            )),
            Some(make) => {
                let name = (!r.name.is_empty()).then_some(r.name);
                make(core.system(), r.props, name)
                    .map(|actor| (core.export_path(&actor), actor.uid()))
            }
        }
    };
    let result = match &outcome {
        Ok((path, uid)) => SpawnResult::Spawned { path, uid: *uid },
        Err(error) => SpawnResult::Failed { error },
    };
    let response = Pdu::SpawnResponse(SpawnResponse {
        request_id: r.request_id,
        result,
    });
    let sent = core.send_spawn_message(peer, SystemKind::Spawned, &response);
    if let Err(e) = sent {
        crate::transport::support::log_limited!(warn, %peer, "cannot answer spawn request: {e}");
    }
}

/// Hands `peer`'s answer to the request waiting for it, if the request
/// went to `peer`.
pub(crate) fn complete(core: &impl ControlContext, peer: &Address, r: SpawnResponse<'_>) {
    let outcome = match r.result {
        SpawnResult::Spawned { path, uid } => Ok((path.to_string(), uid)),
        SpawnResult::Failed { error } => Err(error.to_string()),
    };
    let mut waiting = lock(&core.spawns().waiting);
    match waiting.get(&r.request_id) {
        Some((node, _)) if node == peer => {
            let (_, waiter) = waiting.remove(&r.request_id).expect("found above");
            drop(waiting);
            let _ = waiter.send(outcome);
        }
        Some(_) => {
            drop(waiting);
            let what = "an answer to a spawn request that went to another node";
            core.trust().refused(core, peer, what);
        }
        None => {
            drop(waiting);
            core.count_dead_letter(peer, volley::DeadLetterReason::AskCompleted);
        }
    }
}
