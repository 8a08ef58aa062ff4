//! The TCP transport, split the way Artery is: one concept per module.
//!
//! | module | owns |
//! |---|---|
//! | [`remoting`](Remoting) | the public facade: start, resolve, remote spawn, shutdown |
//! | `core` | `RemotingCore`, the state every other part shares |
//! | `association` | one association per remote node, its lanes indexed by `Lane` |
//! | `route` | `RouteHint`, the transport's object behind each `RemoteRef` |
//! | `lane` | an outbound lane: the coalescing buffer senders encode into; `lane::token`, the write token (model-checked with loom) |
//! | `writer` | connecting, the handshake's sending side, writing a lane's bytes |
//! | `backoff` | when a lane reconnects after a failure, and how loudly it says so |
//! | `admission` | the checks of an inbound handshake; who is associated and dialed back |
//! | `inbound` | the listener, the handshake's accepting side, the read loop |
//! | `events` | `RemotingEvent`, what the event stream learns about other nodes |
//! | `heartbeat` | the heartbeats every association sends on its control lane |
//! | `reachability` | per remote node, a `failure_detector` fed by arriving heartbeats; the monitor that reports unreachable nodes |
//! | `incarnations` | which incarnation of each node this node talks to; nodes going down, quarantine |
//! | `system_messages` | watch, unwatch, death notices and stops between nodes, exactly once and in order |
//! | `remote_watch` | who watches whom across nodes; `Terminated` when a node is given up |
//! | `delivery` | handing decoded messages to mailboxes in runs |
//! | `handshake` | the handshake's frames |
//! | `auth` | the handshake's challenge-response over the shared secret |
//! | `ref_tables` | per-connection export/import tables for refs inside messages |
//! | `reply_handles` | this node's asks waiting for a remote reply |
//! | `remote_spawn` | the spawn protocol |
//! | `limits` | `[remote.limits]`: what a peer cannot grow this node past |
//! | `probe` | checking the address a node that dials in claims before dialing it back, at most once per `host:port` per window |
//! | `proof` | associations started on a peer's word, let go of when their address never answers |
//! | `protocol_error` | the Disassociate a peer that broke the protocol gets before the close |
//! | `tls` | `[remote.tls]`: certificates, keys, and rustls' configuration both ways |
//! | `trust` | what peers may make this node do: dialing back, refs on third nodes, untrusted mode |
//! | `registry`, `settings`, `errors` | registrations, the `[remote]` section, the API's errors |
//!
//! `docs/architecture.md` follows one remote tell through these modules.

mod admission;
mod association;
mod auth;
mod backoff;
mod core;
mod delivery;
mod errors;
mod events;
mod failure_detector;
mod flush;
mod handshake;
mod heartbeat;
mod id_slots;
mod idle;
mod inbound;
mod inbound_end;
mod inbound_guard;
mod incarnations;
mod lane;
mod limits;
mod metrics;
mod probe;
mod proof;
mod protocol_error;
mod reachability;
mod ref_tables;
mod registry;
mod remote_spawn;
mod remote_watch;
mod remoting;
mod reply_handles;
mod route;
mod rtt;
mod settings;
mod settings_warnings;
mod support;
mod system_messages;
mod tls;
mod trust;
mod writer;

pub use errors::{RemoteSpawnError, ResolveError, StartError};
pub use events::{DisassociationReason, RemotingEvent};
pub use limits::LimitSettings;
pub use metrics::REMOTE_METRIC_NAMES;
pub use registry::{Registry, RegistryError};
pub use remoting::{AssociationState, Remoting};
pub use settings::{
    register_settings, BatchingSettings, FailureDetectorSettings, RemoteSettings,
    RemoteSettingsError,
};
pub use settings_warnings::RemoteSettingsWarning;
pub use tls::{TlsError, TlsSettings};
pub use trust::{ConnectBack, TrustSettings};
