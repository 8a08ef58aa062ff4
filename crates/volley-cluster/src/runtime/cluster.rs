//! `Cluster`: a node's handle on its cluster membership.

use std::sync::atomic::Ordering::Relaxed;
use std::sync::Arc;

use tokio::sync::mpsc;
use volley::{ActorRef, ActorSystem};
use volley_remote::wire::Address;
use volley_remote::Remoting;

use crate::core::ClusterCore;
use crate::formation::Formation;
use crate::member::{ClusterEvent, ClusterState, InitialState, UniqueAddress};
use crate::node_id::NodeId;
use crate::receptionist::mirror::LocalServices;
use crate::runtime::authority::Authority;
use crate::runtime::driver::{Command, Driver, ShutdownRules};
use crate::runtime::error::ClusterError;
use crate::runtime::inbound::InboundHook;
use crate::runtime::member_callbacks;
use crate::runtime::outgoing::Outgoing;
use crate::runtime::phases::add_cluster_phases;
use crate::runtime::settings::ClusterSettings;
use crate::runtime::shared::Shared;

/// One node's membership in a cluster, running on its remoting: a driver
/// task owns the membership core, carries its packets as cluster frames
/// and publishes its [`ClusterEvent`](crate::ClusterEvent)s on the
/// system's event stream. Cheap to clone; every clone is the same
/// membership.
#[derive(Clone)]
pub struct Cluster {
    commands: mpsc::UnboundedSender<Command>,
    shared: Arc<Shared>,
    self_member: UniqueAddress,
    self_roles: Arc<[String]>,
    system: String,
}

impl Cluster {
    /// Starts the cluster of this node with the `[cluster]` section of the
    /// system's settings, and joins through its seed nodes if it names
    /// any.
    pub fn start_from_settings(
        system: &ActorSystem,
        remoting: &Remoting,
    ) -> Result<Cluster, ClusterError> {
        let settings = ClusterSettings::from_system_settings(system.settings())?;
        Self::start(system, remoting, settings)
    }

    /// Starts the cluster of this node with `settings`: installs the
    /// cluster hook and the membership authority on `remoting` (so a node
    /// is in one cluster at most), starts the driver task on the system's
    /// runtime, and joins through the seed nodes if `settings` names any.
    pub fn start(
        system: &ActorSystem,
        remoting: &Remoting,
        settings: ClusterSettings,
    ) -> Result<Cluster, ClusterError> {
        settings.validate()?;
        if system.is_terminated() {
            return Err(ClusterError::SystemTerminated);
        }
        if Cluster::get(system).is_some() {
            return Err(ClusterError::AlreadyStarted(format!(
                "actor system {:?} has a cluster",
                system.name()
            )));
        }
        let seeds = parse_seeds(system.name(), &settings.seed_nodes)?;
        let identity = identity_of(remoting);
        let self_member = UniqueAddress::of(&identity);
        let core = ClusterCore::with_membership(
            identity,
            settings.swim(),
            settings.membership(),
            remoting.uid(),
        );
        let shared = Arc::new(Shared::default());
        let (frames_in, frames) = mpsc::channel(settings.inbound_queue);
        // Unbounded: the API's requests and the transport's reports
        // (once per incarnation, or per reachability change) are few.
        let (commands, requests) = mpsc::unbounded_channel();
        let hook = InboundHook::new(
            settings.name.clone(),
            frames_in,
            shared.inbound_dropped.clone(),
        );
        remoting.install_cluster_hook(Arc::new(hook))?;
        remoting.set_membership_authority(Arc::new(Authority {
            shared: shared.clone(),
            commands: commands.clone(),
        }))?;
        let outgoing = Outgoing::new(remoting.clone(), system.name().to_owned(), shared.clone());
        let driver = Driver::new(
            core,
            outgoing,
            remoting.clone(),
            system.clone(),
            shared.clone(),
            ShutdownRules {
                when_down: settings.run_coordinated_shutdown_when_down,
                when_leaving: settings.run_coordinated_shutdown_when_leaving,
                join_unsuccessful_after: settings.shutdown_after_unsuccessful_join_seed_nodes,
            },
        );
        system.runtime_handle().spawn(driver.run(frames, requests));
        add_cluster_phases(system, remoting, commands.clone(), shared.clone())?;
        LocalServices::observe(system, remoting, commands.clone())
            .map_err(|_| ClusterError::SystemTerminated)?;
        let stop = commands.clone();
        system
            .add_shutdown_hook("volley-cluster", move || async move {
                let _stopped = stop.send(Command::Stop);
            })
            .map_err(|_| ClusterError::SystemTerminated)?;
        let cluster = Cluster {
            commands,
            shared,
            self_member,
            self_roles: settings.roles.iter().cloned().collect(),
            system: system.name().to_owned(),
        };
        // The first cluster of the system stays its cluster; a second one
        // was refused above, so this keeps the one just started.
        let _kept = system.register_extension(cluster.clone());
        if !seeds.is_empty() {
            cluster.request(Command::JoinSeedNodes(seeds))?;
        }
        Ok(cluster)
    }

    /// The cluster started earlier on this system (Akka's
    /// `Cluster(system)`), or `None` if none was. After the system
    /// terminated it is still returned; its requests then fail with
    /// [`ClusterError::Stopped`].
    pub fn get(system: &ActorSystem) -> Option<Cluster> {
        system.extension::<Cluster>()
    }

    /// Joins the cluster through the node at `address` (Akka's
    /// `Cluster.join`), retrying every `retry_unsuccessful_join_after`
    /// until this node is a member. Joining this node's own address forms
    /// a cluster of this node alone, at once (Akka's
    /// `join(selfAddress)`), which others then join.
    pub fn join(&self, address: &Address) -> Result<(), ClusterError> {
        self.check_system(address)?;
        self.request(Command::Join(address.clone()))
    }

    /// Joins through seed nodes (Akka's `joinSeedNodes`): the first forms
    /// the cluster alone after `seed_node_timeout` if it is this node.
    pub fn join_seed_nodes(&self, seeds: &[Address]) -> Result<(), ClusterError> {
        for seed in seeds {
            self.check_system(seed)?;
        }
        self.request(Command::JoinSeedNodes(seeds.to_vec()))
    }

    /// Leaves gracefully (Akka's `Cluster.leave` of this node). With
    /// `run_coordinated_shutdown_when_leaving` (the default), this runs
    /// the system's coordinated shutdown with reason `ClusterLeaving`, as
    /// an Akka node that leaves does: the sharding regions hand their
    /// shards off (`cluster-sharding-shutdown-region`), the node becomes
    /// Leaving and waits for Exiting (`cluster-leave`), the singletons
    /// hand over (`cluster-exiting`), the node confirms its exit
    /// (`cluster-exiting-done`) so the leader removes it, and the system
    /// terminates. Returns at once; await `ActorSystem::when_terminated`
    /// or watch the event stream for its `MemberRemoved`. Without that
    /// setting the node only becomes Leaving, confirms its exit once
    /// Exiting, and keeps running once Removed.
    pub fn leave(&self) -> Result<(), ClusterError> {
        self.request(Command::Leave)
    }

    /// Makes `member` leave gracefully (Akka's `Cluster.leave` with another
    /// member's address): its status goes to Leaving here and spreads;
    /// the member, seeing it, leaves as [`leave`](Self::leave) does on
    /// it (coordinated shutdown with reason `ClusterLeaving`, unless its
    /// settings say not). This node's own address is `leave()`. A member
    /// this node does not know is refused by the driver (logged).
    pub fn leave_member(&self, member: UniqueAddress) -> Result<(), ClusterError> {
        self.request(Command::LeaveMember(member))
    }

    /// Makes the member at `address` leave (Akka's `Cluster.leave(address)`):
    /// as [`leave_member`](Self::leave_member) for each incarnation this
    /// node knows there (the old one's leave is a no-op once it is Down);
    /// this node's own address is [`leave`](Self::leave). An address with
    /// no member is ignored, with a warning. `Err(OtherSystem)` for an
    /// address of another actor system.
    pub fn leave_address(&self, address: &Address) -> Result<(), ClusterError> {
        self.check_system(address)?;
        self.request(Command::LeaveAddress(address.clone()))
    }

    /// Runs `callback` once when this node is Up (Akka's
    /// `registerOnMemberUp`): at once, on tokio's blocking pool, if it is
    /// Up already; never if the node is removed, or the cluster stops,
    /// first. A panic in it is logged. `Err(Stopped)` if the cluster has
    /// stopped.
    pub fn register_on_member_up(
        &self,
        callback: impl FnOnce() + Send + 'static,
    ) -> Result<(), ClusterError> {
        self.request(Command::OnMemberUp(Box::new(callback)))
    }

    /// Runs `callback` once when this node is removed from the cluster,
    /// or when the cluster stops (the system terminates) before that
    /// (Akka's `registerOnMemberRemoved`); on this thread, now, if the
    /// cluster has stopped already. A panic in it is logged.
    pub fn register_on_member_removed(&self, callback: impl FnOnce() + Send + 'static) {
        if let Err(refused) = self
            .commands
            .send(Command::OnMemberRemoved(Box::new(callback)))
        {
            if let Command::OnMemberRemoved(callback) = refused.0 {
                member_callbacks::run(callback);
            }
        }
    }

    /// Subscribes `listener` to this node's cluster events, starting with
    /// the current state as events (Akka's `subscribe` with
    /// `InitialStateAsEvents`): each member's status event, the
    /// unreachable members, the leader and the role leaders, then every
    /// change, with none missed or told twice in between (subscribing to
    /// the event stream and reading `state()` apart leaves a gap).
    /// Unsubscribe through the event stream (`unsubscribe`), or stop the
    /// listener. `Err(Stopped)` if the cluster has stopped.
    pub fn subscribe(&self, listener: ActorRef<ClusterEvent>) -> Result<(), ClusterError> {
        self.subscribe_with(listener, InitialState::AsEvents)
    }

    /// [`subscribe`](Self::subscribe), with the current state told as
    /// `initial` says: as events, or as one
    /// [`ClusterEvent::CurrentClusterState`] (Akka's
    /// `InitialStateAsSnapshot`, the default of Akka's `subscribe`), then
    /// every change, with none missed or told twice.
    pub fn subscribe_with(
        &self,
        listener: ActorRef<ClusterEvent>,
        initial: InitialState,
    ) -> Result<(), ClusterError> {
        self.request(Command::Subscribe(listener, initial))
    }

    /// This node's roles (Akka's `selfRoles`), as its settings name them.
    pub fn self_roles(&self) -> &[String] {
        &self.self_roles
    }

    /// Exiting members this node, as leader, removed without their
    /// confirmation because `exiting_confirm_timeout` passed.
    pub fn exiting_timeouts(&self) -> u64 {
        self.shared.exiting_timeouts.load(Relaxed)
    }

    /// Records, tombstones and seen entries in other members' gossip that
    /// this node refused because its member table held `max_members`
    /// members (or tombstones) already: a peer naming members that do
    /// not exist, or a cluster larger than the setting.
    pub fn refused_table_full(&self) -> u64 {
        self.shared.refused_table_full.load(Relaxed)
    }

    /// Downs a member (what an operator or a split-brain resolver asks);
    /// the leader then removes it.
    pub fn down(&self, member: UniqueAddress) -> Result<(), ClusterError> {
        self.request(Command::Down(member))
    }

    /// Downs the member at `address` (Akka's `Cluster.down(address)`),
    /// whatever its incarnation: every incarnation this node knows there
    /// goes Down, as [`down`](Self::down) does one. An address with no
    /// member is ignored, with a warning. `Err(OtherSystem)` for an
    /// address of another actor system.
    pub fn down_address(&self, address: &Address) -> Result<(), ClusterError> {
        self.check_system(address)?;
        self.request(Command::DownAddress(address.clone()))
    }

    /// The membership as this node sees it (Akka's `CurrentClusterState`),
    /// as the driver last published it.
    pub fn state(&self) -> ClusterState {
        self.shared.state()
    }

    /// This node as a member.
    pub fn self_member(&self) -> &UniqueAddress {
        &self.self_member
    }

    /// Cluster frames dropped because the driver's inbound queue
    /// (`inbound_queue`) was full.
    pub fn inbound_dropped(&self) -> u64 {
        self.shared.inbound_dropped.load(Relaxed)
    }

    /// Inputs the membership core refused, and SWIM packets whose sender
    /// was not their connection's node.
    pub fn refused_inputs(&self) -> u64 {
        self.shared.refused_inputs.load(Relaxed)
    }

    /// This node's cluster formation: the one it formed (the first seed,
    /// alone) or adopted from the cluster that answered it first; `None`
    /// before either. Every member of one cluster has the same.
    pub fn formation(&self) -> Option<Formation> {
        Formation::from_wire(self.shared.formation.load(Relaxed))
    }

    /// Cluster packets refused because they came from another formation
    /// of this cluster (two clusters of one name formed apart; they stay
    /// apart). Counted in [`Cluster::refused_inputs`] too.
    pub fn refused_other_formation(&self) -> u64 {
        self.shared.refused_other_formation.load(Relaxed)
    }

    /// Cluster packets refused because their formation envelope is
    /// missing (a peer of an older build) or unreadable. Counted in
    /// [`Cluster::refused_inputs`] too.
    pub fn refused_bad_envelope(&self) -> u64 {
        self.shared.refused_bad_envelope.load(Relaxed)
    }

    /// Packets the transport did not send (each counted by reason in
    /// `Remoting::cluster_frame_counts` too).
    pub fn send_drops(&self) -> u64 {
        self.shared.send_drops.load(Relaxed)
    }

    /// Bytes of cluster packets (SWIM and anti-entropy) the transport
    /// took to send (`volley_cluster_gossip_bytes_out_total`).
    pub fn gossip_bytes_sent(&self) -> u64 {
        self.shared.gossip_bytes_out.load(Relaxed)
    }

    /// Bytes of cluster packets the driver received
    /// (`volley_cluster_gossip_bytes_in_total`).
    pub fn gossip_bytes_received(&self) -> u64 {
        self.shared.gossip_bytes_in.load(Relaxed)
    }

    /// Decisions of the split-brain resolver this node carried out
    /// (`volley_cluster_sbr_decisions_total`).
    pub fn sbr_decisions(&self) -> u64 {
        self.shared.sbr_decisions.load(Relaxed)
    }

    fn request(&self, command: Command) -> Result<(), ClusterError> {
        self.commands
            .send(command)
            .map_err(|_| ClusterError::Stopped)
    }

    fn check_system(&self, address: &Address) -> Result<(), ClusterError> {
        if address.system() == self.system {
            Ok(())
        } else {
            Err(ClusterError::OtherSystem {
                address: address.to_string(),
                system: self.system.clone(),
            })
        }
    }
}

/// This node's first identity: its canonical address, its incarnation
/// uid and its start time (which orders restarts at one address). The
/// start is the one remoting's handshakes tell, in milliseconds, so that
/// the membership and the transport order two incarnations of an address
/// from one reading of the clock.
fn identity_of(remoting: &Remoting) -> NodeId {
    let address = remoting.address();
    let born_ms = remoting.incarnation_stamp() / 1000;
    NodeId::new(address.host(), address.port(), remoting.uid(), born_ms)
}

/// The seed nodes as addresses of this system.
fn parse_seeds(system: &str, seeds: &[String]) -> Result<Vec<Address>, ClusterError> {
    seeds
        .iter()
        .map(|seed| {
            let address: Address = seed.parse().map_err(|source| ClusterError::BadSeedNode {
                seed: seed.clone(),
                source,
            })?;
            if address.system() != system {
                return Err(ClusterError::OtherSystem {
                    address: seed.clone(),
                    system: system.to_owned(),
                });
            }
            Ok(address)
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::parse_seeds;
    use crate::runtime::error::ClusterError;

    #[test]
    fn seed_nodes_must_be_addresses_of_this_system() {
        let seeds = ["volley://sys@127.0.0.1:2552".to_owned()];
        assert_eq!(parse_seeds("sys", &seeds).unwrap().len(), 1);
        assert!(matches!(
            parse_seeds("other", &seeds),
            Err(ClusterError::OtherSystem { .. })
        ));
        assert!(matches!(
            parse_seeds("sys", &["127.0.0.1:2552".to_owned()]),
            Err(ClusterError::BadSeedNode { .. })
        ));
    }
}
