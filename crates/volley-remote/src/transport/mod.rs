//! The TCP transport, in layers the way Artery is: each folder is one
//! stage of the path a message takes, and one concept per module in it.
//!
//! | folder or module | owns |
//! |---|---|
//! | [`remoting`](Remoting) | the public facade: start, resolve, remote spawn, shutdown |
//! | `core/` | `RemotingCore`, the state the stages share; `monitor`, the task that drives every layer on its tick |
//! | `idle` | stopping idle associations, starting them again on demand |
//! | `outbound/` | sending: `association` (one per remote node: its lanes indexed by `Lane`, incarnations, system-message buffers, task state), `route` (behind each `RemoteRef`), `lane` (the coalescing buffer senders encode into; `lane::token`, the write token, model-checked with loom), `writer` (connecting, writing), `backoff` |
//! | `inbound/` | receiving: `reader` (accept, the handshake's accepting side, the read loop), `delivery` (to mailboxes in runs), `guard`, `ends`, `protocol_error` |
//! | `handshake/` | who a connection is with: `setup` (the handshake's frames), `auth`, `tls`, `admission`, `trust`, `probe` and `recheck` (the address check), `proof` |
//! | `liveness/` | whether a node is there: `heartbeat`, `rtt`, `failure_detector`, `reachability`, `incarnations` (which incarnation this node talks to; quarantine) |
//! | `control/` | besides user messages: `system_messages` (exactly once, in order), `remote_watch`, `flush`, `remote_spawn`, `reply_handles` |
//! | `cluster/` | cluster traffic: the hook a cluster installs (`ClusterInbound`), what a reader does with a cluster frame, the datagram send; `remoting_cluster`, their methods on `Remoting`; `remoting_services`, the cluster receptionist's (wire type ids of protocols, mirrored remote services) |
//! | `refs/` | refs inside messages: `tables` (per-connection export/import tables), `id_slots` |
//! | `events` | `RemotingEvent`, what the event stream learns about other nodes |
//! | `settings/` | the `[remote]` section and its subsections: `limits` (what a peer cannot grow this node past), `tls`, `trust`; `duration_keys` (durations with units, and the deprecated keys they replaced); `reconnect`; `warnings` |
//! | `registry`, `errors`, `metrics`, `support` | registrations, the API's errors, metrics, shared helpers (locks, hashing, the peer-log limiter) |
//! | `incarnation`, `gone_uids` | an incarnation as a handshake tells it (uid and start stamp) and their order; the bounded memory of uids gone: leaves the handshake, the sending side and liveness all name |
//!
//! `docs/architecture.md` follows one remote tell through these modules.

mod admission;
mod cluster;
mod control;
mod core;
mod errors;
mod events;
#[cfg(test)]
mod fake;
mod gone_uids;
mod handshake;
mod idle;
mod inbound;
mod incarnation;
mod liveness;
mod metrics;
mod node;
mod outbound;
pub(crate) mod refs;
mod registry;
mod remoting;
mod remoting_cluster;
mod remoting_services;
mod settings;
mod support;

pub use cluster::counts::ClusterFrameCounts;
pub use cluster::hook::{ClusterHookError, ClusterInbound};
pub use cluster::send_error::ClusterSendError;
pub use errors::{RemoteSpawnError, ResolveError, StartError};
pub use events::{DisassociationReason, RemotingEvent};
pub use liveness::authority::{AuthorityAlreadySet, MemberReport, MembershipAuthority};
pub use metrics::REMOTE_METRIC_NAMES;
pub use registry::{Registry, RegistryError};
pub use remoting::{AssociationState, Remoting};
pub use remoting_services::{MirrorServiceError, MirroredService};
pub use settings::RemoteSettingsWarning;
pub use settings::{
    register_settings, BatchingSettings, ClusterTransportSettings, ConnectBack,
    FailureDetectorSettings, LimitSettings, RemoteSettings, RemoteSettingsError, TlsError,
    TlsSettings, TrustSettings,
};
