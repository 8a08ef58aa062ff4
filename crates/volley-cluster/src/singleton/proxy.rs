//! The singleton proxy (Akka's `ClusterSingletonProxy`), one per node,
//! `/user/<name>-proxy`: it asks the oldest member's manager where the
//! instance is, forwards to it, and buffers (bounded) while the instance
//! moves. A manager about to stop its instance tells the proxies that
//! identified it to pause and waits for their confirmation, so what a
//! proxy sent before is in the instance's mailbox before the instance
//! stops (a proxy's messages to the instance and its confirmation to the
//! manager travel in order on one lane between two nodes).

use std::any::type_name;
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::sync::Arc;

use volley::{Actor, ActorRef, Context, DeadLetterReason, HandleResult, Props};
use volley_remote::Remoting;

use super::buffer::Buffer;
use super::manager::{manager_path, INSTANCE};
use super::messages::{ManagerMsg, ProxyControl};
use super::oldest::Membership;
use super::settings::SingletonSettings;
use crate::member::{ClusterEvent, MemberRecord, UniqueAddress};
use crate::runtime::Cluster;

/// The link child's name: the proxy's address for managers.
const LINK: &str = "link";

/// The proxy's protocol: the singleton's messages and its own.
pub(crate) enum ProxyMsg<M> {
    /// A message for the singleton.
    User(M),
    /// From a manager, through the link.
    Control(ProxyControl),
    /// A membership change.
    Cluster(ClusterEvent),
    /// Time to ask again where the instance is.
    Identify,
}

/// The proxy of one singleton on one node.
pub(crate) struct Proxy<M: Send + 'static> {
    settings: SingletonSettings,
    cluster: Cluster,
    remoting: Remoting,
    members: Membership,
    target: Option<UniqueAddress>,
    instance: Option<ActorRef<M>>,
    buffer: Buffer<M>,
    link: Option<ActorRef<ProxyControl>>,
    dropped: Arc<AtomicU64>,
}

impl<M: Send + 'static> Proxy<M> {
    pub(crate) fn props(
        settings: SingletonSettings,
        cluster: Cluster,
        remoting: Remoting,
        dropped: Arc<AtomicU64>,
    ) -> Props<Self> {
        Props::new(move || Proxy {
            buffer: Buffer::new(settings.buffer_size),
            settings: settings.clone(),
            cluster: cluster.clone(),
            remoting: remoting.clone(),
            members: Membership::default(),
            target: None,
            instance: None,
            link: None,
            dropped: dropped.clone(),
        })
    }

    fn on_user(&mut self, ctx: &Context<Self>, message: M) {
        if let Some(instance) = &self.instance {
            instance.tell(message);
            return;
        }
        if self.buffer.push(message).is_some() {
            self.dropped.fetch_add(1, Relaxed);
            ctx.system().dead_letter(
                ctx.path(),
                type_name::<M>(),
                DeadLetterReason::BufferOverflow,
            );
        }
    }

    /// Follows the oldest Up member: a new one means a new instance.
    fn retarget(&mut self) {
        let oldest = self
            .members
            .oldest_up(self.settings.role.as_deref())
            .map(|r| r.unique_address());
        if oldest != self.target {
            self.target = oldest;
            self.instance = None;
            self.identify();
        }
    }

    fn on_cluster(&mut self, event: &ClusterEvent) {
        match event {
            // What is sent to an unreachable instance is likely lost (a
            // crashed node's is): buffer until it answers again or the
            // resolver downs it and another member takes over.
            ClusterEvent::UnreachableMember { member } if self.is_target(member) => {
                self.instance = None;
            }
            ClusterEvent::ReachableMember { member } if self.is_target(member) => {
                self.identify();
            }
            _ => {
                if self.members.apply(event) {
                    self.retarget();
                }
            }
        }
    }

    /// Takes in what the events do not carry (a grown up-number, see
    /// `Membership::refresh`): without it the proxy could keep asking a
    /// member that no longer takes itself for the oldest.
    fn refresh(&mut self) {
        let mut changed = false;
        for record in &self.cluster.state().members {
            changed |= self.members.refresh(record);
        }
        if changed {
            self.retarget();
        }
    }

    fn is_target(&self, member: &MemberRecord) -> bool {
        self.target.as_ref() == Some(&member.unique_address())
    }

    fn identify(&self) {
        let (Some(target), Some(link)) = (&self.target, &self.link) else {
            return;
        };
        if self.instance.is_some() {
            return;
        }
        let path = self.manager_path(target);
        if let Ok(manager) = self.remoting.resolve::<ManagerMsg>(&path) {
            manager.tell(ManagerMsg::Identify { link: link.clone() });
        }
    }

    fn manager_path(&self, member: &UniqueAddress) -> String {
        manager_path(
            self.remoting.address().system(),
            member,
            &self.settings.name,
        )
    }

    fn on_control(&mut self, control: ProxyControl) {
        match control {
            ProxyControl::Located { holder } => {
                let Some(target) = self.target.clone().filter(|t| holder.is(t)) else {
                    return;
                };
                let path = format!("{}/{INSTANCE}", self.manager_path(&target));
                let Ok(instance) = self.remoting.resolve::<M>(&path) else {
                    return;
                };
                for message in self.buffer.drain() {
                    instance.tell(message);
                }
                self.instance = Some(instance);
            }
            ProxyControl::Pause { manager } => {
                self.instance = None;
                if let Some(link) = &self.link {
                    manager.tell(ManagerMsg::Paused { link: link.clone() });
                }
            }
        }
    }
}

impl<M: Send + 'static> Actor for Proxy<M> {
    type Msg = ProxyMsg<M>;

    fn pre_start(&mut self, ctx: &mut Context<Self>) -> HandleResult {
        let parent = ctx.message_adapter(ProxyMsg::Control);
        let link = ctx.spawn(
            LINK,
            Props::new(move || Link {
                parent: parent.clone(),
            }),
        )?;
        self.link = Some(link);
        let events = ctx.message_adapter(ProxyMsg::Cluster);
        ctx.system().event_stream().subscribe(events);
        self.members = Membership::from_state(&self.cluster.state());
        ctx.schedule_once("identify", self.settings.retry_interval, ProxyMsg::Identify);
        self.retarget();
        Ok(())
    }

    fn handle(&mut self, ctx: &mut Context<Self>, msg: ProxyMsg<M>) -> HandleResult {
        match msg {
            ProxyMsg::User(message) => self.on_user(ctx, message),
            ProxyMsg::Control(control) => self.on_control(control),
            ProxyMsg::Cluster(event) => self.on_cluster(&event),
            ProxyMsg::Identify => {
                // Armed again each time: the singleton's messages need not
                // be `Clone`, as a repeating timer's would.
                ctx.schedule_once("identify", self.settings.retry_interval, ProxyMsg::Identify);
                self.refresh();
                self.identify();
            }
        }
        Ok(())
    }
}

/// The proxy's remote face: managers send [`ProxyControl`] here (the
/// proxy's own protocol holds the singleton's messages, which need not
/// be known to managers).
struct Link {
    parent: ActorRef<ProxyControl>,
}

impl Actor for Link {
    type Msg = ProxyControl;

    fn handle(&mut self, _ctx: &mut Context<Self>, msg: ProxyControl) -> HandleResult {
        self.parent.tell(msg);
        Ok(())
    }
}
