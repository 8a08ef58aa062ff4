//! The driver task: the one owner of a node's `ClusterCore`. It feeds the
//! core the frames the inbound hook queued, the due timers (tokio time),
//! the API's requests and the transport's reports, and carries out what
//! the core asks: packets to send, timers to arm, events to publish,
//! removed members to end on the transport.

use std::sync::atomic::Ordering::Relaxed;
use std::sync::Arc;
use std::time::{Duration, Instant};

use foca::Codec;
use tokio::sync::mpsc;
use volley::remote::LogLimiter;
use volley::{ActorRef, ActorSystem};
use volley_remote::transport::MemberReport;
use volley_remote::wire::Address;
use volley_remote::Remoting;

use crate::codec::ClusterCodec;
use crate::core::{ClusterCore, Input, Outputs, RefusedBy};
use crate::formation;
use crate::member::{
    state_as_events, wire, ClusterEvent, InitialState, MemberStatus, UniqueAddress,
};
use crate::node_id::{Addr, NodeId};
use crate::outbox::Channel;
use crate::receptionist::mirror::ServiceMirror;
use crate::receptionist::ServiceEntry;
use crate::runtime::by_address;
use crate::runtime::inbound::Received;
use crate::runtime::member_callbacks::{MemberCallback, MemberCallbacks};
use crate::runtime::metrics::ClusterMetrics;
use crate::runtime::outgoing::{Outgoing, RETRY_HELD_EVERY};
use crate::runtime::phases::{shut_down_downed, shut_down_join_unsuccessful, shut_down_leaving};
use crate::runtime::shared::Shared;
use crate::runtime::timers::Timers;

/// What the API and the transport ask of the driver.
pub(crate) enum Command {
    /// Join through the node at this address.
    Join(Address),
    /// Join through these seed nodes.
    JoinSeedNodes(Vec<Address>),
    /// Leave gracefully.
    Leave,
    /// Down this member.
    Down(UniqueAddress),
    /// Make this member (another) leave.
    LeaveMember(UniqueAddress),
    /// Down the member(s) at this address, whatever their incarnation.
    DownAddress(Address),
    /// Make the member at this address leave (this node's: leave).
    LeaveAddress(Address),
    /// This node finished its exiting tasks: confirm its exit.
    ConfirmExiting,
    /// The transport's verdict on a member (the membership authority).
    Report {
        address: Address,
        uid: u64,
        report: MemberReport,
    },
    /// The last cluster phase of coordinated shutdown: leave the SWIM
    /// group, then stop.
    Shutdown,
    /// One of this node's services was registered or left (the cluster
    /// receptionist).
    Service {
        entry: ServiceEntry,
        registered: bool,
    },
    /// Run this when this node is Up (at once if it is).
    OnMemberUp(MemberCallback),
    /// Run this when this node is removed, or the driver stops.
    OnMemberRemoved(MemberCallback),
    /// Tell this listener the current state (as events or as a snapshot),
    /// then every event after (`Cluster::subscribe`).
    Subscribe(ActorRef<ClusterEvent>, InitialState),
    /// The system terminates: stop.
    Stop,
}

/// When a node runs coordinated shutdown, from its `[cluster]` settings.
pub(crate) struct ShutdownRules {
    /// When it sees itself downed.
    pub(crate) when_down: bool,
    /// When `Cluster::leave` is called.
    pub(crate) when_leaving: bool,
    /// When it has not joined through its seed nodes this long after
    /// `JoinSeedNodes`.
    pub(crate) join_unsuccessful_after: Option<Duration>,
}

/// The driver's state.
pub(crate) struct Driver {
    core: ClusterCore,
    timers: Timers,
    outgoing: Outgoing,
    remoting: Remoting,
    system: ActorSystem,
    shared: Arc<Shared>,
    started: Instant,
    /// When this node runs coordinated shutdown.
    shutdown: ShutdownRules,
    /// When this node gives up joining through its seed nodes (set by
    /// `JoinSeedNodes` with `shutdown_after_unsuccessful_join_seed_nodes`).
    join_deadline: Option<Instant>,
    /// Whether that shutdown has begun.
    downed: bool,
    /// The `volley_cluster_*` metrics, when the system records metrics.
    metrics: Option<ClusterMetrics>,
    services: ServiceMirror,
    callbacks: MemberCallbacks,
    /// Refused inputs logged: a peer can send bad input by the million,
    /// so at most a few lines a second are (each is counted). The node's
    /// own limit: one node's flood does not hide another's refusals.
    refusal_log: LogLimiter,
}

impl Driver {
    pub(crate) fn new(
        core: ClusterCore,
        outgoing: Outgoing,
        remoting: Remoting,
        system: ActorSystem,
        shared: Arc<Shared>,
        shutdown: ShutdownRules,
    ) -> Self {
        let metrics = ClusterMetrics::when_enabled(&system, remoting.address().to_string());
        Driver {
            metrics,
            services: ServiceMirror::new(&remoting, &system),
            core,
            timers: Timers::default(),
            outgoing,
            remoting,
            system,
            shared,
            started: Instant::now(),
            shutdown,
            join_deadline: None,
            downed: false,
            callbacks: MemberCallbacks::default(),
            refusal_log: LogLimiter::new(REFUSALS_LOGGED_PER_SECOND),
        }
    }

    /// The core's clock: time since the driver started.
    fn now(&self) -> Duration {
        self.started.elapsed()
    }

    /// Runs until the system terminates.
    pub(crate) async fn run(
        mut self,
        mut inbound: mpsc::Receiver<Received>,
        mut commands: mpsc::UnboundedReceiver<Command>,
    ) {
        self.publish_state();
        loop {
            let wake = tokio::time::Instant::from_std(self.next_wake());
            tokio::select! {
                frame = inbound.recv() => match frame {
                    Some(frame) => self.received(frame),
                    None => break,
                },
                command = commands.recv() => match command {
                    Some(Command::Stop) | None => break,
                    Some(Command::Shutdown) => {
                        self.handle(Input::Shutdown);
                        break;
                    }
                    Some(command) => self.command(command),
                },
                () = tokio::time::sleep_until(wake) => self.wake_up(),
            }
        }
        self.callbacks.stopped();
        self.shared.mark_stopped();
        tracing::debug!(node = %self.core.unique_address(), "cluster driver stopped");
    }

    /// When the next timer is due, or held packets are to be retried.
    fn next_wake(&self) -> Instant {
        let idle = self.started + self.now() + Duration::from_secs(3600);
        let timer = self.timers.next_due().map(|at| self.started + at);
        let retry = self
            .outgoing
            .holds_any()
            .then(|| Instant::now() + RETRY_HELD_EVERY);
        [timer, retry, self.join_deadline]
            .into_iter()
            .flatten()
            .min()
            .unwrap_or(idle)
    }

    /// Gives up at the join deadline: a node that is not a member by then
    /// runs coordinated shutdown (Akka's
    /// `shutdown-after-unsuccessful-join-seed-nodes`).
    fn check_join_deadline(&mut self) {
        let Some(deadline) = self.join_deadline else {
            return;
        };
        if self.core.state().self_member.is_some() {
            self.join_deadline = None;
        } else if Instant::now() >= deadline {
            self.join_deadline = None;
            tracing::warn!(node = %self.core.unique_address(), "joining through the seed nodes was unsuccessful: coordinated shutdown (shutdown_after_unsuccessful_join_seed_nodes)");
            shut_down_join_unsuccessful(&self.system);
        }
    }

    fn wake_up(&mut self) {
        self.check_join_deadline();
        if self.outgoing.holds_any() {
            self.outgoing.retry_held();
        }
        let now = self.now();
        while let Some(timer) = self.timers.pop_due(now) {
            self.handle(Input::Timer(timer));
        }
        // Seen sets and the like change without an event; a timer's
        // pace (a few a second) keeps the published state fresh.
        self.publish_state();
    }

    /// Publishes the core's state for the handles and the metrics.
    fn publish_state(&self) {
        let state = self.core.state();
        if let Some(metrics) = &self.metrics {
            metrics.record(&state, &self.shared);
        }
        self.shared.publish(state);
    }

    fn received(&mut self, frame: Received) {
        Shared::add(&self.shared.gossip_bytes_in, frame.payload.len());
        if !claims_its_connection(&frame) {
            // A member claiming another's address (design §2.2).
            Shared::count(&self.shared.refused_inputs);
            if self.refusal_log.allow() {
                tracing::warn!(from = %frame.from, channel = ?frame.channel, "cluster input refused: a cluster frame whose sender is not its connection's node");
            }
            return;
        }
        self.handle(Input::received(frame.channel, &frame.payload));
    }

    fn command(&mut self, command: Command) {
        match command {
            Command::Join(address) if self.is_this_node(&address) => {
                // Akka's `join(selfAddress)`: a cluster of this node alone,
                // formed at once (as by itself as the only seed).
                self.handle(Input::JoinSeedNodes(vec![addr_of(&address)]));
            }
            Command::Join(address) => {
                let via = NodeId::new(address.host(), address.port(), 0, 0);
                self.handle(Input::Join(via));
            }
            Command::JoinSeedNodes(seeds) => {
                if let Some(after) = self.shutdown.join_unsuccessful_after {
                    self.join_deadline.get_or_insert(Instant::now() + after);
                }
                let seeds = seeds.iter().map(addr_of).collect();
                self.handle(Input::JoinSeedNodes(seeds));
            }
            Command::Leave => self.leave(),
            Command::Down(member) => self.handle(Input::Down(member)),
            Command::LeaveMember(member) if member == *self.core.unique_address() => self.leave(),
            Command::LeaveMember(member) => self.handle(Input::LeaveMember(member)),
            Command::DownAddress(address) => {
                for member in self.members_at(&address, "down") {
                    self.handle(Input::Down(member));
                }
            }
            Command::LeaveAddress(address) if self.is_this_node(&address) => self.leave(),
            Command::LeaveAddress(address) => {
                for member in self.members_at(&address, "leave") {
                    self.handle(Input::LeaveMember(member));
                }
            }
            Command::ConfirmExiting => self.handle(Input::ConfirmExiting),
            Command::Report {
                address,
                uid,
                report,
            } => self.reported(&address, uid, report),
            Command::Service { entry, registered } => {
                self.handle(Input::Service { entry, registered })
            }
            Command::OnMemberUp(callback) => {
                let status = self.core.state().self_member.map(|m| m.status);
                self.callbacks.on_up(callback, status);
            }
            Command::OnMemberRemoved(callback) => self.callbacks.on_removed(callback),
            Command::Subscribe(listener, initial) => self.subscribe(listener, initial),
            Command::Shutdown | Command::Stop => {}
        }
    }

    /// Subscribes `listener` to the event stream and tells it the current
    /// state first, as `initial` says. Only the driver publishes cluster
    /// events, and it does both here between two of its inputs: the
    /// listener misses no event and gets none twice. Already subscribed,
    /// it gets nothing more.
    fn subscribe(&self, listener: ActorRef<ClusterEvent>, initial: InitialState) {
        if !self.system.event_stream().subscribe(listener.clone()) {
            return;
        }
        let state = self.core.state();
        match initial {
            InitialState::AsEvents => {
                for event in state_as_events(&state) {
                    listener.tell(event);
                }
            }
            InitialState::AsSnapshot => listener.tell(ClusterEvent::CurrentClusterState {
                state: Box::new(state),
            }),
        }
    }

    /// The members this node knows at `address`; none is logged, as the
    /// core logs a `down` or `leave_member` of an unknown member.
    fn members_at(&self, address: &Address, what: &str) -> Vec<UniqueAddress> {
        let found = by_address::members_at(&self.core.state(), address);
        if found.is_empty() {
            tracing::warn!(%address, "cluster {what} of an address with no member: ignored");
        }
        found
    }

    /// Whether `address` names this node (host and port as it advertises
    /// them).
    fn is_this_node(&self, address: &Address) -> bool {
        let me = self.core.unique_address();
        *me.host == *address.host() && me.port == address.port()
    }

    /// The transport's verdicts (design §3.8): reachability is foca's to
    /// judge (and the split-brain resolver's, once wired), so it is only
    /// logged; a member that does not take its system messages or its
    /// control frames is downed at once; a member that quarantined this
    /// node makes it down itself.
    fn reported(&mut self, address: &Address, uid: u64, report: MemberReport) {
        let member = UniqueAddress {
            host: Arc::from(address.host()),
            port: address.port(),
            uid,
        };
        match report {
            MemberReport::Unreachable | MemberReport::Reachable => {
                tracing::debug!(%member, %report, "transport verdict on a member");
            }
            MemberReport::ConnectionLost => self.handle(Input::ConnectionLost(member)),
            MemberReport::QuarantinedThisNode => {
                tracing::warn!(%member, "a member quarantined this node: downing this node");
                let me = self.core.unique_address().clone();
                self.handle(Input::Down(me));
            }
            _ => {
                tracing::warn!(%member, %report, "downing a member the transport gave up");
                self.handle(Input::Down(member));
            }
        }
    }

    fn handle(&mut self, input: Input<'_>) {
        let now = self.now();
        let outputs = self.core.handle(now, input);
        self.carry_out(outputs);
    }

    fn carry_out(&mut self, outputs: Outputs) {
        let Outputs {
            packets,
            timers,
            cluster_events,
            service_changes,
            refused,
            downings,
            ..
        } = outputs;
        for downing in &downings {
            Shared::count(&self.shared.sbr_decisions);
            if let Some(metrics) = &self.metrics {
                metrics.decided(downing);
            }
        }
        self.services.apply(service_changes);
        self.shared.note_formation(&self.core);
        if let Some(refused) = refused {
            Shared::count(&self.shared.refused_inputs);
            // The core logs a formation refusal once per peer itself.
            let formation = matches!(refused.source, RefusedBy::Formation(_));
            if !formation && self.refusal_log.allow() {
                tracing::warn!(%refused, "cluster input refused");
            }
        }
        self.outgoing.send(packets);
        self.timers.add(timers);
        self.shared
            .exiting_timeouts
            .store(self.core.exiting_timeouts(), Relaxed);
        self.note_table_full();
        if cluster_events.is_empty() {
            return;
        }
        self.publish_state();
        for event in cluster_events {
            self.confirm_if_nothing_to_do(&event);
            self.callbacks.event(&event, self.core.unique_address());
            self.end_removed(&event);
            self.services.reachability(&event);
            self.shut_down_if_downed(&event);
            self.leave_if_told(&event);
            self.system.event_stream().publish(event);
        }
    }

    /// Publishes the gossip the full table refused, with a warning when
    /// that count grew (at most a few a minute).
    fn note_table_full(&self) {
        let refused = self.core.refused_table_full();
        let before = self.shared.refused_table_full.swap(refused, Relaxed);
        if refused > before && self.refusal_log.allow() {
            tracing::warn!(
                refused = refused - before,
                "cluster gossip refused: the member table holds max_members already"
            );
        }
    }

    /// `Cluster::leave`: runs coordinated shutdown (whose `cluster-leave`
    /// phase leaves, `Command::Leave` again) unless the settings say not
    /// or it runs already.
    fn leave(&mut self) {
        if self.shutdown.when_leaving && self.system.coordinated_shutdown().reason().is_none() {
            tracing::info!(node = %self.core.unique_address(), "leaving: coordinated shutdown");
            shut_down_leaving(&self.system);
        } else {
            self.handle(Input::Leave);
        }
    }

    /// This node made Leaving by another member (`Cluster::leave_member`
    /// there) leaves as if it had asked: coordinated shutdown with reason
    /// `ClusterLeaving`, as an Akka node does, unless the settings say not
    /// or a shutdown runs already.
    fn leave_if_told(&mut self, event: &ClusterEvent) {
        let ClusterEvent::MemberLeft { member } = event else {
            return;
        };
        let me = member.unique_address() == *self.core.unique_address();
        if me && self.shutdown.when_leaving && self.system.coordinated_shutdown().reason().is_none()
        {
            tracing::info!(node = %self.core.unique_address(), "made Leaving by another member: coordinated shutdown");
            shut_down_leaving(&self.system);
        }
    }

    /// This node, Exiting, confirms its exit at once when no coordinated
    /// shutdown runs (`run_coordinated_shutdown_when_leaving = false`):
    /// there are no exiting phases to wait for. Otherwise the
    /// `cluster-exiting-done` phase confirms.
    fn confirm_if_nothing_to_do(&mut self, event: &ClusterEvent) {
        let ClusterEvent::MemberExited { member } = event else {
            return;
        };
        let me = member.unique_address() == *self.core.unique_address();
        if me && self.system.coordinated_shutdown().reason().is_none() {
            self.handle(Input::ConfirmExiting);
        }
    }

    /// This node downed (or removed without having left) runs the
    /// system's coordinated shutdown, once, unless the settings say not.
    fn shut_down_if_downed(&mut self, event: &ClusterEvent) {
        let downed = match event {
            ClusterEvent::MemberDowned { member } => {
                member.unique_address() == *self.core.unique_address()
            }
            ClusterEvent::MemberRemoved {
                member,
                previous_status,
            } => {
                member.unique_address() == *self.core.unique_address()
                    && *previous_status < MemberStatus::Leaving
            }
            _ => false,
        };
        if downed && !self.downed {
            self.downed = true;
            if self.shutdown.when_down {
                tracing::warn!(node = %self.core.unique_address(), "this node was downed: coordinated shutdown");
                shut_down_downed(&self.system);
            } else {
                tracing::warn!(node = %self.core.unique_address(), "this node was downed; it keeps running (run_coordinated_shutdown_when_down = false)");
            }
        }
    }

    /// A removed member's watches end, and its incarnation is quarantined
    /// (at once if it was Down), by the transport.
    fn end_removed(&self, event: &ClusterEvent) {
        let ClusterEvent::MemberRemoved {
            member,
            previous_status,
        } = event
        else {
            return;
        };
        if member.unique_address() == *self.core.unique_address() {
            return;
        }
        if let Some(address) = self.outgoing.address_of(&member.node) {
            let was_down = *previous_status == MemberStatus::Down;
            self.remoting
                .member_removed(&address, member.node.uid(), was_down);
        }
    }
}

/// The core's address of a node.
fn addr_of(address: &Address) -> Addr {
    (Arc::from(address.host()), address.port())
}

/// Refused inputs logged by a node, at most this many a second.
const REFUSALS_LOGGED_PER_SECOND: u32 = 5;

/// Whether a cluster frame's sender (a SWIM packet's header, an
/// anti-entropy message's leading node id) is the node and incarnation
/// its connection shook hands with; an unreadable envelope or an
/// undecodable sender is the core's to refuse.
fn claims_its_connection(frame: &Received) -> bool {
    let Ok(opened) = formation::open(&frame.payload) else {
        return true;
    };
    let sender = match frame.channel {
        Channel::Swim => ClusterCodec
            .decode_header(opened.body)
            .map(|header| header.src),
        Channel::SyncDigest | Channel::SyncData => wire::decode_sync_sender(opened.body),
    };
    match sender {
        Ok(src) => {
            src.host() == frame.from.host()
                && src.port() == frame.from.port()
                && src.uid() == frame.uid
        }
        Err(_) => true,
    }
}

#[cfg(test)]
#[path = "driver_tests.rs"]
mod tests;
