//! The coordinator's side of the cluster: the membership its regions run
//! on, when a stopped region's shards are free, and a new coordinator's
//! wait for the regions to report their shards (design §3).

use std::collections::{HashMap, HashSet};

use volley::{ActorRef, Context};
use volley_remote::Remoting;

use super::ShardCoordinator;
use crate::member::{ClusterEvent, MemberStatus};
use crate::runtime::Cluster;
use crate::sharding::allocation::{RebalanceGate, ShardId};
use crate::sharding::protocol::{CoordinatorMsg, RegionControl};
use crate::sharding::region::CONTROL;
use crate::sharding::region_members::{authority_of, with_role, RegionMembers, WhenFree};

const ASK_TIMER: &str = "ask-registrations";

/// What a coordinator on a cluster knows besides its map.
pub(super) struct OnCluster {
    pub(super) remoting: Remoting,
    /// The regions' actor name, under `/user`.
    pub(super) region_name: String,
    pub(super) cluster: Option<Cluster>,
    pub(super) self_authority: String,
    pub(super) members: RegionMembers,
    /// Regions that stopped, whose shards wait for their member's
    /// removal or margin; by `host:port`.
    pub(super) terminating: HashMap<String, Vec<ActorRef<RegionControl>>>,
    /// While the coordinator is new: members whose region has not
    /// registered, and who asked for homes meanwhile.
    pub(super) startup: Option<Startup>,
}

pub(super) struct Startup {
    pub(super) unregistered: HashSet<String>,
    pub(super) askers: Vec<(ShardId, ActorRef<RegionControl>)>,
}

impl ShardCoordinator {
    /// A region stopped: its shards are free now, at its member's
    /// removal, or after the margin.
    pub(super) fn region_terminated(
        &mut self,
        ctx: &mut Context<Self>,
        region: ActorRef<RegionControl>,
    ) {
        let at = self.authority(&region);
        let margin = self.settings.down_removal_margin;
        let Some(on_cluster) = self.on_cluster.as_mut() else {
            return self.free_region(ctx, &region);
        };
        if let Some(cluster) = &on_cluster.cluster {
            // The latest view: a removal may be published after the watch.
            on_cluster.members = RegionMembers::from_state(&cluster.state());
        }
        let when = on_cluster.members.when_free(&at);
        tracing::info!(%region, ?when, "a region stopped");
        match when {
            WhenFree::Now => return self.free_region(ctx, &region),
            WhenFree::AtRemoval => {}
            WhenFree::AfterMargin => {
                let timer = format!("free-{region}");
                ctx.schedule_once(timer, margin, CoordinatorMsg::FreeRegion(region.clone()));
            }
        }
        on_cluster.terminating.entry(at).or_default().push(region);
    }

    /// A member was removed: its stopped regions' shards are free after
    /// the margin.
    pub(super) fn member_removed(&mut self, ctx: &mut Context<Self>, at: &str) {
        let margin = self.settings.down_removal_margin;
        let Some(on_cluster) = self.on_cluster.as_mut() else {
            return;
        };
        for region in on_cluster.terminating.get(at).into_iter().flatten() {
            let timer = format!("free-{region}");
            ctx.schedule_once(timer, margin, CoordinatorMsg::FreeRegion(region.clone()));
        }
        if let Some(startup) = on_cluster.startup.as_mut() {
            startup.unregistered.remove(at);
            if startup.unregistered.is_empty() {
                self.end_startup(ctx);
            }
        }
    }

    /// Whether a rebalance round may move shards now, by the cluster's
    /// state (always on one node).
    pub(super) fn rebalance_gate(&self) -> RebalanceGate {
        let cluster = self.on_cluster.as_ref().and_then(|c| c.cluster.as_ref());
        cluster.map_or_else(RebalanceGate::default, |cluster| {
            let mut gate = RebalanceGate::of_cluster(&cluster.state());
            // A region of a member downed or removed cannot acknowledge a
            // hand-off: no round until its shards are freed and it is gone
            // from the map (its member's removal comes before its
            // `Terminated`).
            gate.unreachable |= self.state.has_region_of_a_gone_member();
            gate
        })
    }

    /// Whether `region` stopped and its shards wait to be freed.
    pub(super) fn is_terminating(&self, region: &ActorRef<RegionControl>) -> bool {
        let Some(on_cluster) = &self.on_cluster else {
            return false;
        };
        let at = self.authority(region);
        on_cluster
            .terminating
            .get(&at)
            .is_some_and(|regions| regions.contains(region))
    }

    /// The `host:port` of a region's member (this node's for a local one).
    pub(super) fn authority(&self, region: &ActorRef<RegionControl>) -> String {
        match (region.path().authority(), &self.on_cluster) {
            (Some(at), _) => at.to_owned(),
            (None, Some(on_cluster)) => on_cluster.self_authority.clone(),
            (None, None) => String::new(),
        }
    }
    /// Subscribes to the membership and asks every member's region to
    /// register; allocation waits for them (design §3).
    pub(super) fn start_on_cluster(&mut self, ctx: &mut Context<Self>) {
        let Some(on_cluster) = self.on_cluster.as_mut() else {
            return;
        };
        let Some(cluster) = Cluster::get(ctx.system()) else {
            return; // no membership to wait for: as on one node
        };
        let events = ctx.message_adapter(CoordinatorMsg::Member);
        ctx.system().event_stream().subscribe(events);
        on_cluster.self_authority = authority_of(cluster.self_member());
        let state = cluster.state();
        on_cluster.members = RegionMembers::from_state(&state);
        // Proxies register too, but allocation need not wait for them.
        let hosts = with_role(&state, self.settings.role.as_deref());
        let unregistered = on_cluster
            .members
            .hosting()
            .filter(|at| hosts.contains(*at))
            .cloned()
            .collect();
        on_cluster.cluster = Some(cluster);
        on_cluster.startup = Some(Startup {
            unregistered,
            askers: Vec::new(),
        });
        let wait = self.settings.coordinator_state_wait;
        ctx.schedule_once("state-wait", wait, CoordinatorMsg::StateWaitOver);
        self.ask_registrations(ctx);
        if self
            .on_cluster
            .as_ref()
            .and_then(|c| c.startup.as_ref())
            .is_some_and(|s| s.unregistered.is_empty())
        {
            self.end_startup(ctx);
        }
    }

    /// Asks the regions that have not registered yet, again every
    /// `retry_interval` while the coordinator is new.
    pub(super) fn ask_registrations(&mut self, ctx: &mut Context<Self>) {
        let Some(on_cluster) = &self.on_cluster else {
            return;
        };
        let Some(startup) = &on_cluster.startup else {
            return;
        };
        let system = on_cluster.remoting.address().system().to_owned();
        for at in &startup.unregistered {
            let path = format!(
                "volley://{system}@{at}/user/{}/{CONTROL}",
                on_cluster.region_name
            );
            match on_cluster.remoting.resolve::<RegionControl>(&path) {
                Ok(region) => region.tell(RegionControl::RegisterAgain),
                Err(error) => tracing::warn!(%path, %error, "a region cannot be resolved"),
            }
        }
        let every = self.settings.retry_interval;
        ctx.schedule_once(ASK_TIMER, every, CoordinatorMsg::AskRegistrations);
    }

    /// Every region registered, or the wait is over: allocate what was
    /// asked meanwhile.
    pub(super) fn end_startup(&mut self, ctx: &mut Context<Self>) {
        let Some(startup) = self.on_cluster.as_mut().and_then(|c| c.startup.take()) else {
            return;
        };
        ctx.cancel_timer(ASK_TIMER);
        if !startup.unregistered.is_empty() {
            let missing: Vec<_> = startup.unregistered.into_iter().collect();
            tracing::warn!(?missing, "members whose region did not register in time");
        }
        // Remembered shards first, where their ids are; then the askers.
        self.settle_all_reported();
        self.restore_shards(ctx);
        for (shard, asker) in startup.askers {
            self.get_shard_home(ctx, shard, asker);
        }
        self.run_pending_round(ctx);
    }

    pub(super) fn on_member_event(&mut self, ctx: &mut Context<Self>, event: &ClusterEvent) {
        let removed = self
            .on_cluster
            .as_mut()
            .and_then(|c| c.members.apply(event));
        if let Some(at) = removed {
            self.member_removed(ctx, &at);
        }
        self.refresh_region_members();
        // A round held back by a joining or unreachable member may run now.
        self.run_pending_round(ctx);
    }

    /// Gives the map each region's member status and application version,
    /// for the strategy (a rolling update's newest version first).
    pub(super) fn refresh_region_members(&mut self) {
        let Some(on_cluster) = self.on_cluster.as_ref() else {
            return;
        };
        if on_cluster.cluster.is_none() {
            return;
        }
        let members = &on_cluster.members;
        let own = &on_cluster.self_authority;
        // A region whose member the coordinator does not know is taken as
        // removed: it gets no new shard, and no round starts, until a
        // member event names it (a joiner's region that registered before
        // its member's event came is named at that event).
        self.state.set_members(|region| {
            let at = region.path().authority().unwrap_or(own);
            let member = members.member(at);
            let (status, version) = member.unwrap_or((MemberStatus::Removed, ""));
            Some((status, version.to_owned()))
        });
    }

    pub(super) fn margin_over(
        &mut self,
        ctx: &mut Context<Self>,
        region: &ActorRef<RegionControl>,
    ) {
        if self.is_terminating(region) {
            self.free_region(ctx, region);
        }
    }
}
