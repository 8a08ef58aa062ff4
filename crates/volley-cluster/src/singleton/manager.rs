//! The singleton manager (Akka's `ClusterSingletonManager`): one per node,
//! `/user/<name>`. It runs the instance while its node is the oldest Up
//! member with the role, and hands it over as Akka's protocol does: the
//! old instance stops before the new one starts.
//!
//! - A new oldest whose older members left asks each `HandOverToMe` every
//!   `retry_interval` until it answers `HandOverDone` (or stops answering
//!   for `max_hand_over_retries`), then starts.
//! - A manager that no longer should run its instance (its node leaves,
//!   is downed, or asks to hand over) tells every proxy that identified
//!   it to pause, waits for their `Paused` (at most `pause_timeout`), then
//!   stops the instance gracefully (after the messages already queued)
//!   and answers `HandOverDone`. It never starts an instance again.
//! - It starts only once every reachable member has seen the table it
//!   holds (`agreement`): its view may lag an older member's move Up.
//! - After a crash the new oldest waits until the downed member is
//!   removed, and `down_removal_margin` more (Akka's): the resolver downs
//!   it, and a downed node stops its actors.

use std::collections::BTreeMap;
use std::time::Instant;

use tokio::sync::oneshot;
use volley::{Actor, ActorRef, Context, HandleResult, Props, Terminated};
use volley_remote::Remoting;

use super::agreement::may_start;
use super::duty::{duty, Duty};
use super::messages::{ManagerMsg, MemberId, ProxyControl};
use super::oldest::Membership;
use super::settings::SingletonSettings;
use crate::member::{MemberStatus, UniqueAddress};
use crate::runtime::Cluster;

/// The instance's name under its manager.
pub(crate) const INSTANCE: &str = "singleton";

/// The manager of one singleton on one node.
pub(crate) struct Manager<A: Actor> {
    settings: SingletonSettings,
    props: Props<A>,
    cluster: Cluster,
    remoting: Remoting,
    me: UniqueAddress,
    members: Membership,
    instance: Option<ActorRef<A::Msg>>,
    /// Set once this node handed over: it never runs the instance again.
    done: bool,
    stopping: Option<Stopping>,
    /// Previous holders asked to hand over, with the retries made.
    asking: BTreeMap<UniqueAddress, u32>,
    /// Downed older members removed, with the end of their margin.
    margins: BTreeMap<UniqueAddress, Instant>,
    /// Proxies that were told where the instance is.
    proxies: Vec<ActorRef<ProxyControl>>,
    /// Who waits for `HandOverDone`.
    waiting: Vec<ActorRef<ManagerMsg>>,
    shutdown: Vec<oneshot::Sender<()>>,
}

/// A hand-over under way: the proxies yet to confirm their pause.
struct Stopping {
    unconfirmed: Vec<ActorRef<ProxyControl>>,
    stop_sent: bool,
}

impl<A: Actor> Manager<A> {
    pub(crate) fn props(
        settings: SingletonSettings,
        props: Props<A>,
        cluster: Cluster,
        remoting: Remoting,
    ) -> Props<Self> {
        Props::new(move || Manager {
            settings: settings.clone(),
            props: props.clone(),
            me: cluster.self_member().clone(),
            cluster: cluster.clone(),
            remoting: remoting.clone(),
            members: Membership::default(),
            instance: None,
            done: false,
            stopping: None,
            asking: BTreeMap::new(),
            margins: BTreeMap::new(),
            proxies: Vec::new(),
            waiting: Vec::new(),
            shutdown: Vec::new(),
        })
    }

    /// Applies the duty the members give this node now.
    fn act(&mut self, ctx: &mut Context<Self>) -> HandleResult {
        let role = self.settings.role.as_deref();
        let running = self.instance.is_some();
        match duty(&self.members, &self.me, role, running) {
            Duty::Younger | Duty::Keep | Duty::AwaitUp | Duty::AwaitRemoval => Ok(()),
            Duty::HandOver => {
                self.hand_over(ctx);
                Ok(())
            }
            Duty::AwaitHandOver(previous) => {
                for member in previous {
                    if !self.asking.contains_key(&member) {
                        self.asking.insert(member.clone(), 0);
                        self.ask_to_hand_over(ctx, &member);
                    }
                }
                Ok(())
            }
            Duty::AwaitMargin(downed) => {
                let end = Instant::now() + self.settings.down_removal_margin;
                for member in downed {
                    self.margins.entry(member).or_insert(end);
                }
                Ok(())
            }
            // Checked on every retry tick too: seen tables raise no event.
            Duty::Start if !may_start(&self.cluster.state(), &self.me, role) => Ok(()),
            Duty::Start => self.start(ctx),
        }
    }

    fn start(&mut self, ctx: &mut Context<Self>) -> HandleResult {
        if self.done || self.stopping.is_some() {
            return Ok(());
        }
        let instance = ctx.spawn(INSTANCE, self.props.clone())?;
        ctx.watch(&instance);
        tracing::info!(singleton = %self.settings.name, member = %self.me, "singleton started");
        self.instance = Some(instance);
        Ok(())
    }

    fn ask_to_hand_over(&self, ctx: &Context<Self>, member: &UniqueAddress) {
        match self.manager_at(member) {
            Some(peer) => peer.tell(ManagerMsg::HandOverToMe { from: ctx.myself() }),
            None => tracing::warn!(%member, "no path to the singleton manager there"),
        }
    }

    /// The manager of this singleton on `member`.
    fn manager_at(&self, member: &UniqueAddress) -> Option<ActorRef<ManagerMsg>> {
        let path = manager_path(
            self.remoting.address().system(),
            member,
            &self.settings.name,
        );
        self.remoting.resolve::<ManagerMsg>(&path).ok()
    }

    /// Starts (or goes on with) handing over: pause the proxies, then stop
    /// the instance; with no instance, done at once.
    fn hand_over(&mut self, ctx: &mut Context<Self>) {
        self.done = true;
        if self.instance.is_none() {
            self.finish();
            return;
        }
        // Downed: the others start a new instance once this member is
        // removed and their margin passed, so stop at once (what is still
        // queued goes to dead letters, counted). A member removed after
        // leaving lets its instance drain: the next oldest waits for its
        // `HandOverDone`.
        let downed = self
            .members
            .record(&self.me)
            .is_some_and(|r| r.status >= MemberStatus::Down);
        if downed {
            if let Some(instance) = &self.instance {
                ctx.stop(instance);
            }
        }
        if self.stopping.is_some() {
            return;
        }
        let unconfirmed = if downed {
            Vec::new()
        } else {
            std::mem::take(&mut self.proxies)
        };
        for link in &unconfirmed {
            link.tell(ProxyControl::Pause {
                manager: ctx.myself(),
            });
        }
        self.stopping = Some(Stopping {
            unconfirmed,
            stop_sent: false,
        });
        ctx.schedule_once(
            "pause",
            self.settings.pause_timeout,
            ManagerMsg::PauseTimeout,
        );
        self.stop_when_paused(false);
    }

    /// Stops the instance once every proxy paused, or at the timeout.
    fn stop_when_paused(&mut self, timed_out: bool) {
        let Some(stopping) = self.stopping.as_mut() else {
            return;
        };
        if stopping.stop_sent || !(timed_out || stopping.unconfirmed.is_empty()) {
            return;
        }
        if timed_out && !stopping.unconfirmed.is_empty() {
            tracing::warn!(
                singleton = %self.settings.name,
                unconfirmed = stopping.unconfirmed.len(),
                "proxies did not confirm their pause in time; stopping the singleton anyway"
            );
        }
        stopping.stop_sent = true;
        if let Some(instance) = &self.instance {
            instance.graceful_stop();
        }
    }

    /// The instance has stopped (or never ran): answer everyone waiting.
    fn finish(&mut self) {
        self.stopping = None;
        let by = MemberId::of(&self.me);
        for peer in self.waiting.drain(..) {
            peer.tell(ManagerMsg::HandOverDone { by: by.clone() });
        }
        for waiter in self.shutdown.drain(..) {
            let _ = waiter.send(());
        }
    }

    fn on_hand_over_to_me(&mut self, ctx: &mut Context<Self>, from: ActorRef<ManagerMsg>) {
        let still_up = self
            .members
            .record(&self.me)
            .is_some_and(|r| r.status == MemberStatus::Up);
        if still_up && !self.done {
            // The asker saw this node leave before it did; it asks again.
            return;
        }
        if self.instance.is_none() {
            self.done = true;
            from.tell(ManagerMsg::HandOverDone {
                by: MemberId::of(&self.me),
            });
            return;
        }
        from.tell(ManagerMsg::HandOverInProgress {
            by: MemberId::of(&self.me),
        });
        self.waiting.push(from);
        self.hand_over(ctx);
    }

    fn on_answer(&mut self, ctx: &mut Context<Self>, by: &MemberId, done: bool) -> HandleResult {
        let Some(member) = self.asking.keys().find(|m| by.is(m)).cloned() else {
            return Ok(());
        };
        if done {
            self.release(&member);
            return self.act(ctx);
        }
        self.asking.insert(member, 0);
        Ok(())
    }

    fn release(&mut self, member: &UniqueAddress) {
        self.asking.remove(member);
        self.members.release(member);
    }

    fn on_retry(&mut self, ctx: &mut Context<Self>) -> HandleResult {
        // A one-shot timer armed again: the protocol's messages are not
        // `Clone`, as a repeating timer would need.
        ctx.schedule_once("retry", self.settings.retry_interval, ManagerMsg::Retry);
        let now = Instant::now();
        let passed: Vec<_> = self
            .margins
            .iter()
            .filter(|(_, end)| **end <= now)
            .map(|(member, _)| member.clone())
            .collect();
        for member in passed {
            self.margins.remove(&member);
            self.members.margin_passed(&member);
        }
        // Changes the events do not carry (a grown up-number, see
        // `Membership::refresh`): without them this node and an older one
        // could each take the other for the oldest, and neither run it.
        for record in &self.cluster.state().members {
            self.members.refresh(record);
        }
        let max = self.settings.max_hand_over_retries;
        let asked: Vec<_> = self.asking.keys().cloned().collect();
        for member in asked {
            let retries = self.asking.get(&member).copied().unwrap_or(0) + 1;
            if retries > max {
                tracing::warn!(%member, "no hand-over answer; taking over without it");
                self.release(&member);
            } else {
                self.asking.insert(member.clone(), retries);
                self.ask_to_hand_over(ctx, &member);
            }
        }
        self.act(ctx)
    }

    fn on_identify(&mut self, link: ActorRef<ProxyControl>) {
        if self.instance.is_none() || self.stopping.is_some() {
            return;
        }
        link.tell(ProxyControl::Located {
            holder: MemberId::of(&self.me),
        });
        if !self.proxies.contains(&link) {
            self.proxies.push(link);
        }
    }

    fn on_paused(&mut self, link: &ActorRef<ProxyControl>) {
        if let Some(stopping) = self.stopping.as_mut() {
            stopping.unconfirmed.retain(|l| l != link);
        }
        self.stop_when_paused(false);
    }
}

/// The path of the manager named `name` on `member`.
pub(crate) fn manager_path(system: &str, member: &UniqueAddress, name: &str) -> String {
    format!(
        "volley://{system}@{}:{}/user/{name}",
        member.host, member.port
    )
}

impl<A: Actor> Actor for Manager<A> {
    type Msg = ManagerMsg;

    fn pre_start(&mut self, ctx: &mut Context<Self>) -> HandleResult {
        let events = ctx.message_adapter(ManagerMsg::Cluster);
        ctx.system().event_stream().subscribe(events);
        self.members = Membership::from_state(&self.cluster.state());
        ctx.schedule_once("retry", self.settings.retry_interval, ManagerMsg::Retry);
        self.act(ctx)
    }

    fn handle(&mut self, ctx: &mut Context<Self>, msg: ManagerMsg) -> HandleResult {
        match msg {
            ManagerMsg::Cluster(event) => {
                if self.members.apply(&event) {
                    return self.act(ctx);
                }
                Ok(())
            }
            ManagerMsg::HandOverToMe { from } => {
                self.on_hand_over_to_me(ctx, from);
                Ok(())
            }
            ManagerMsg::HandOverInProgress { by } => self.on_answer(ctx, &by, false),
            ManagerMsg::HandOverDone { by } => self.on_answer(ctx, &by, true),
            ManagerMsg::Identify { link } => {
                self.on_identify(link);
                Ok(())
            }
            ManagerMsg::Paused { link } => {
                self.on_paused(&link);
                Ok(())
            }
            ManagerMsg::Retry => self.on_retry(ctx),
            ManagerMsg::PauseTimeout => {
                self.stop_when_paused(true);
                Ok(())
            }
            ManagerMsg::Shutdown(waiter) => {
                self.shutdown.push(waiter);
                self.hand_over(ctx);
                Ok(())
            }
        }
    }

    fn on_terminated(&mut self, _ctx: &mut Context<Self>, terminated: Terminated) -> HandleResult {
        let ours = self
            .instance
            .as_ref()
            .is_some_and(|i| terminated.actor == i.to_any());
        if ours {
            self.instance = None;
            tracing::info!(singleton = %self.settings.name, member = %self.me, "singleton stopped");
            if self.stopping.is_some() {
                self.finish();
            } else {
                // It stopped by itself: this node does not start another
                // (Akka's manager neither), it hands over when it leaves.
                self.done = true;
            }
        }
        Ok(())
    }
}
