//! The receptionist (Akka Typed's `system.receptionist`): actors register
//! under typed service keys, others find them or subscribe to the listing.
//!
//! One actor per system, `/system/receptionist`, made on first use. Its
//! commands are closures typed at the call site (`register::<M>` knows
//! `M`), so the registry holds each key's services with their real type
//! and no message enum has to name every protocol. The receptionist
//! watches every service and subscriber it holds: a service that
//! terminates leaves every listing it was in (subscribers are told), a
//! subscriber that terminates is forgotten. A remote ref can be
//! registered like a local one (remote death watch removes it).
//!
//! This is the local receptionist; a cluster receptionist replicates it
//! between nodes behind the same API, through [`Receptionist::observe`]
//! (this node's changes out) and remote refs registered here (the other
//! nodes' services in).

use std::any::{Any, TypeId};
use std::collections::{HashMap, HashSet};
use std::fmt;
use std::hash::{Hash, Hasher};
use std::marker::PhantomData;
use std::sync::Arc;
use std::time::Duration;

use super::observer::{ServiceObserver, ServiceRegistration};
use crate::actor::actor_ref::{ActorRef, AnyRef};
use crate::actor::context::Context;
use crate::actor::definition::{Actor, HandleResult, Props, Terminated};
use crate::ask::AskError;
use crate::error::SpawnError;
use crate::system::actor_system::ActorSystem;
use crate::util::locks::lock;

/// A typed key services register under: an id and the protocol `M` its
/// services accept. Keys with the same id and different protocols are
/// different keys (as in Akka).
pub struct ServiceKey<M> {
    id: Arc<str>,
    protocol: PhantomData<fn(M)>,
}

impl<M: Send + 'static> ServiceKey<M> {
    /// The key `id` for services of protocol `M`.
    pub fn new(id: impl Into<Arc<str>>) -> Self {
        ServiceKey {
            id: id.into(),
            protocol: PhantomData,
        }
    }

    /// The key's id.
    pub fn id(&self) -> &str {
        &self.id
    }

    fn slot(&self) -> (TypeId, Arc<str>) {
        (TypeId::of::<M>(), self.id.clone())
    }
}

impl<M> Clone for ServiceKey<M> {
    fn clone(&self) -> Self {
        ServiceKey {
            id: self.id.clone(),
            protocol: PhantomData,
        }
    }
}

impl<M> PartialEq for ServiceKey<M> {
    fn eq(&self, other: &Self) -> bool {
        self.id == other.id
    }
}

impl<M> Eq for ServiceKey<M> {}

impl<M> Hash for ServiceKey<M> {
    fn hash<H: Hasher>(&self, state: &mut H) {
        self.id.hash(state)
    }
}

impl<M> fmt::Debug for ServiceKey<M> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "ServiceKey({:?}, {})",
            self.id,
            std::any::type_name::<M>()
        )
    }
}

/// The services registered under a key: the answer to a find, and what a
/// subscriber gets at once and after every change (Akka's `Listing`).
///
/// Without a cluster every service is reachable and the two sets are
/// equal. In a cluster, the services of a member that is unreachable stay
/// in `all_services` and leave `services` until the member is reachable
/// again or removed.
pub struct Listing<M: Send + 'static> {
    /// The key.
    pub key: ServiceKey<M>,
    /// Its services on reachable nodes, live when the listing was made
    /// (Akka's `serviceInstances`): the ones to send to.
    pub services: HashSet<ActorRef<M>>,
    /// Its services on every node, unreachable ones included (Akka's
    /// `allServiceInstances`).
    pub all_services: HashSet<ActorRef<M>>,
    /// False when a subscriber gets this listing only because a node's
    /// reachability changed (Akka's `servicesWereAddedOrRemoved`).
    pub services_were_added_or_removed: bool,
}

/// The acknowledgement of a registration.
pub struct Registered<M: Send + 'static> {
    /// The key.
    pub key: ServiceKey<M>,
    /// The service registered.
    pub service: ActorRef<M>,
}

/// The acknowledgement of a deregistration.
pub struct Deregistered<M: Send + 'static> {
    /// The key.
    pub key: ServiceKey<M>,
    /// The service deregistered.
    pub service: ActorRef<M>,
}

/// `Clone`, `PartialEq`, `Eq` and `Debug` for a struct of a key and refs,
/// whatever `M` is (derives would ask the same of `M`).
macro_rules! key_and_refs {
    ($name:ident { $($field:ident),* }) => {
        impl<M: Send + 'static> Clone for $name<M> {
            fn clone(&self) -> Self {
                $name { $($field: self.$field.clone()),* }
            }
        }
        impl<M: Send + 'static> PartialEq for $name<M> {
            fn eq(&self, other: &Self) -> bool {
                true $(&& self.$field == other.$field)*
            }
        }
        impl<M: Send + 'static> Eq for $name<M> {}
        impl<M: Send + 'static> fmt::Debug for $name<M> {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.debug_struct(stringify!($name))
                    $(.field(stringify!($field), &self.$field))*
                    .finish()
            }
        }
    };
}

key_and_refs!(Listing {
    key,
    services,
    all_services,
    services_were_added_or_removed
});
key_and_refs!(Registered { key, service });
key_and_refs!(Deregistered { key, service });

/// A handle to the system's receptionist; cheap to clone.
#[derive(Clone)]
pub struct Receptionist {
    actor: ActorRef<Command>,
}

/// What the receptionist actor runs: a closure typed where it was made.
pub(crate) struct Command(Box<Run>);

/// What a [`Command`] holds.
type Run = dyn FnOnce(&mut Registry, &mut Context<ReceptionistActor>) + Send;

impl Receptionist {
    /// Registers `service` under `key`; subscribers of `key` get the new
    /// listing. Registering it again changes nothing.
    pub fn register<M: Send + 'static>(&self, key: &ServiceKey<M>, service: &ActorRef<M>) {
        self.register_inner(key, service, None);
    }

    /// [`Receptionist::register`], acknowledged to `reply_to` once done.
    pub fn register_with_ack<M: Send + 'static>(
        &self,
        key: &ServiceKey<M>,
        service: &ActorRef<M>,
        reply_to: ActorRef<Registered<M>>,
    ) {
        self.register_inner(key, service, Some(reply_to));
    }

    fn register_inner<M: Send + 'static>(
        &self,
        key: &ServiceKey<M>,
        service: &ActorRef<M>,
        reply_to: Option<ActorRef<Registered<M>>>,
    ) {
        let (key, service) = (key.clone(), service.clone());
        self.run(move |registry, ctx| {
            if registry.entry(&key).services.insert(service.clone()) {
                ctx.watch(&service);
                registry.notify(&key);
                registry.observed(&key, &service, true);
            }
            if let Some(reply_to) = reply_to {
                reply_to.tell(Registered { key, service });
            }
        });
    }

    /// Removes `service` from `key` (its other keys keep it); subscribers
    /// of `key` get the new listing.
    pub fn deregister<M: Send + 'static>(&self, key: &ServiceKey<M>, service: &ActorRef<M>) {
        self.deregister_inner(key, service, None);
    }

    /// [`Receptionist::deregister`], acknowledged to `reply_to` once done.
    pub fn deregister_with_ack<M: Send + 'static>(
        &self,
        key: &ServiceKey<M>,
        service: &ActorRef<M>,
        reply_to: ActorRef<Deregistered<M>>,
    ) {
        self.deregister_inner(key, service, Some(reply_to));
    }

    fn deregister_inner<M: Send + 'static>(
        &self,
        key: &ServiceKey<M>,
        service: &ActorRef<M>,
        reply_to: Option<ActorRef<Deregistered<M>>>,
    ) {
        let (key, service) = (key.clone(), service.clone());
        self.run(move |registry, ctx| {
            if registry.entry(&key).services.remove(&service) {
                registry.notify(&key);
                registry.observed(&key, &service, false);
                let service = service.to_any();
                if !registry.holds(&service) {
                    ctx.unwatch(&service);
                }
            }
            registry.prune();
            if let Some(reply_to) = reply_to {
                reply_to.tell(Deregistered { key, service });
            }
        });
    }

    /// Sends the current listing of `key` to `reply_to` (empty if nothing
    /// is registered).
    pub fn find<M: Send + 'static>(&self, key: &ServiceKey<M>, reply_to: ActorRef<Listing<M>>) {
        let key = key.clone();
        self.run(move |registry, _| reply_to.tell(registry.listing(&key)));
    }

    /// The current listing of `key`, from async code (an ask).
    pub async fn lookup<M: Send + 'static>(
        &self,
        key: &ServiceKey<M>,
        timeout: Duration,
    ) -> Result<Listing<M>, AskError> {
        let key = key.clone();
        self.actor
            .ask(
                move |reply_to: ActorRef<Listing<M>>| {
                    Command(Box::new(move |registry, _| {
                        reply_to.tell(registry.listing(&key))
                    }))
                },
                timeout,
            )
            .await
    }

    /// Sends `subscriber` the listing of `key` now and after every change
    /// to it, until the subscriber terminates or unsubscribes.
    pub fn subscribe<M: Send + 'static>(
        &self,
        key: &ServiceKey<M>,
        subscriber: ActorRef<Listing<M>>,
    ) {
        let key = key.clone();
        self.run(move |registry, ctx| {
            let unreachable = registry.unreachable.clone();
            let entry = registry.entry(&key);
            if !entry.subscribers.contains(&subscriber) {
                subscriber.tell(entry.listing(&unreachable, true));
                ctx.watch(&subscriber);
                entry.subscribers.push(subscriber);
            }
        });
    }

    /// Stops sending `subscriber` the listings of `key`.
    pub fn unsubscribe<M: Send + 'static>(
        &self,
        key: &ServiceKey<M>,
        subscriber: &ActorRef<Listing<M>>,
    ) {
        let (key, subscriber) = (key.clone(), subscriber.clone());
        self.run(move |registry, ctx| {
            registry
                .entry(&key)
                .subscribers
                .retain(|s| *s != subscriber);
            registry.prune();
            let subscriber = subscriber.to_any();
            if !registry.holds(&subscriber) {
                ctx.unwatch(&subscriber);
            }
        });
    }

    /// Tells `observer` of every service registered now (as registrations)
    /// and of every change from now on: a cluster receptionist's hook. A
    /// second observer replaces the first.
    pub fn observe(&self, observer: Arc<dyn ServiceObserver>) {
        self.run(move |registry, _| {
            for ((protocol, key_id), entry) in &registry.entries {
                for service in entry.services() {
                    observer.service_changed(ServiceRegistration {
                        key_id: key_id.clone(),
                        protocol: *protocol,
                        protocol_name: entry.protocol_name(),
                        service,
                        registered: true,
                    });
                }
            }
            registry.observer = Some(observer);
        });
    }

    /// Marks the node at `authority` (`host:port`) unreachable, or
    /// reachable again: its services leave [`Listing::services`] (they stay
    /// in [`Listing::all_services`]) while it is unreachable, and the
    /// subscribers of their keys get a listing at each change. A cluster
    /// receptionist's hook, as [`Receptionist::observe`]; a node forgotten
    /// for good is to be marked reachable again, so that a later node at
    /// its address starts reachable.
    pub fn set_reachable(&self, authority: &str, reachable: bool) {
        let authority: Arc<str> = Arc::from(authority);
        self.run(move |registry, _| {
            let changed = if reachable {
                registry.unreachable.remove(&authority)
            } else {
                registry.unreachable.insert(authority.clone())
            };
            if changed {
                for entry in registry.entries.values() {
                    if entry.has_service_at(&authority) {
                        entry.notify(&registry.unreachable, false);
                    }
                }
            }
        });
    }

    fn run(&self, f: impl FnOnce(&mut Registry, &mut Context<ReceptionistActor>) + Send + 'static) {
        self.actor.tell(Command(Box::new(f)));
    }
}

impl ActorSystem {
    /// The system's receptionist, started on first use at
    /// `/system/receptionist`. An error once the system is terminating.
    pub fn receptionist(&self) -> Result<Receptionist, SpawnError> {
        let mut slot = lock(&self.shared.receptionist);
        if let Some(actor) = slot.as_ref().filter(|a| !a.is_terminated()) {
            return Ok(Receptionist {
                actor: actor.clone(),
            });
        }
        let terminating = || SpawnError::ParentTerminating {
            parent: format!("volley://{}/system", self.name()),
        };
        let guardian = crate::system::guardian::system_guardian(self).ok_or_else(terminating)?;
        let actor = guardian.spawn_child(
            Some("receptionist"),
            Props::new(|| ReceptionistActor(Registry::default())),
        )?;
        *slot = Some(actor.clone());
        Ok(Receptionist { actor })
    }
}

/// The keys and their services and subscribers.
#[derive(Default)]
pub(crate) struct Registry {
    entries: HashMap<(TypeId, Arc<str>), Box<dyn Entry>>,
    /// A cluster receptionist's hook, if one runs.
    observer: Option<Arc<dyn ServiceObserver>>,
    /// The authorities (`host:port`) of the nodes marked unreachable.
    unreachable: HashSet<Arc<str>>,
}

impl Registry {
    fn entry<M: Send + 'static>(&mut self, key: &ServiceKey<M>) -> &mut Typed<M> {
        self.entries
            .entry(key.slot())
            .or_insert_with(|| {
                Box::new(Typed {
                    key: key.clone(),
                    services: HashSet::new(),
                    subscribers: Vec::new(),
                })
            })
            .as_any()
            .downcast_mut()
            .expect("an entry's slot names its protocol")
    }

    /// The listing of `key`, without making an entry for a key nobody
    /// registered under or subscribed to (finds of ever new keys would
    /// grow the table).
    fn listing<M: Send + 'static>(&self, key: &ServiceKey<M>) -> Listing<M> {
        match self.typed(key) {
            Some(entry) => entry.listing(&self.unreachable, true),
            None => Listing {
                key: key.clone(),
                services: HashSet::new(),
                all_services: HashSet::new(),
                services_were_added_or_removed: true,
            },
        }
    }

    fn typed<M: Send + 'static>(&self, key: &ServiceKey<M>) -> Option<&Typed<M>> {
        self.entries.get(&key.slot())?.as_any_ref().downcast_ref()
    }

    /// Sends the subscribers of `key` its listing, after a service was
    /// added or removed.
    fn notify<M: Send + 'static>(&self, key: &ServiceKey<M>) {
        if let Some(entry) = self.typed(key) {
            Entry::notify(entry, &self.unreachable, true);
        }
    }

    /// Tells the observer, if any, that `service` joined or left `key`.
    fn observed<M: Send + 'static>(
        &self,
        key: &ServiceKey<M>,
        service: &ActorRef<M>,
        registered: bool,
    ) {
        if let Some(observer) = &self.observer {
            observer.service_changed(ServiceRegistration {
                key_id: key.id.clone(),
                protocol: TypeId::of::<M>(),
                protocol_name: std::any::type_name::<M>(),
                service: service.to_any(),
                registered,
            });
        }
    }

    /// Drops the entries that hold nothing any more.
    fn prune(&mut self) {
        self.entries.retain(|_, e| !e.is_empty());
    }

    /// True if `actor` is a service or a subscriber of any key.
    fn holds(&self, actor: &AnyRef) -> bool {
        self.entries.values().any(|e| e.holds(actor))
    }
}

/// One key's entry, its protocol erased.
trait Entry: Send {
    fn as_any(&mut self) -> &mut dyn Any;
    fn as_any_ref(&self) -> &dyn Any;
    /// No service and no subscriber.
    fn is_empty(&self) -> bool;
    /// Forgets `actor`, which terminated; tells the subscribers if it was a
    /// service, and returns whether it was.
    fn forget(&mut self, actor: &AnyRef, unreachable: &HashSet<Arc<str>>) -> bool;
    /// Sends the subscribers the listing.
    fn notify(&self, unreachable: &HashSet<Arc<str>>, services_changed: bool);
    /// True if a service is on the node at `authority`.
    fn has_service_at(&self, authority: &str) -> bool;
    fn holds(&self, actor: &AnyRef) -> bool;
    /// The services, their protocol erased.
    fn services(&self) -> Vec<AnyRef>;
    fn protocol_name(&self) -> &'static str;
}

struct Typed<M: Send + 'static> {
    key: ServiceKey<M>,
    services: HashSet<ActorRef<M>>,
    subscribers: Vec<ActorRef<Listing<M>>>,
}

impl<M: Send + 'static> Typed<M> {
    fn listing(&self, unreachable: &HashSet<Arc<str>>, services_changed: bool) -> Listing<M> {
        let reachable = |service: &&ActorRef<M>| {
            service
                .path()
                .authority()
                .is_none_or(|authority| !unreachable.contains(authority))
        };
        Listing {
            key: self.key.clone(),
            services: self.services.iter().filter(reachable).cloned().collect(),
            all_services: self.services.clone(),
            services_were_added_or_removed: services_changed,
        }
    }
}

impl<M: Send + 'static> Entry for Typed<M> {
    fn as_any(&mut self) -> &mut dyn Any {
        self
    }

    fn as_any_ref(&self) -> &dyn Any {
        self
    }

    fn is_empty(&self) -> bool {
        self.services.is_empty() && self.subscribers.is_empty()
    }

    fn forget(&mut self, actor: &AnyRef, unreachable: &HashSet<Arc<str>>) -> bool {
        self.subscribers.retain(|s| s != actor);
        let before = self.services.len();
        self.services.retain(|s| s != actor);
        let was_service = self.services.len() != before;
        if was_service {
            self.notify(unreachable, true);
        }
        was_service
    }

    fn notify(&self, unreachable: &HashSet<Arc<str>>, services_changed: bool) {
        for subscriber in &self.subscribers {
            subscriber.tell(self.listing(unreachable, services_changed));
        }
    }

    fn has_service_at(&self, authority: &str) -> bool {
        self.services
            .iter()
            .any(|s| s.path().authority() == Some(authority))
    }

    fn services(&self) -> Vec<AnyRef> {
        self.services.iter().map(ActorRef::to_any).collect()
    }

    fn protocol_name(&self) -> &'static str {
        std::any::type_name::<M>()
    }

    fn holds(&self, actor: &AnyRef) -> bool {
        self.services.iter().any(|s| s == actor) || self.subscribers.iter().any(|s| s == actor)
    }
}

/// `/system/receptionist`.
pub(crate) struct ReceptionistActor(Registry);

impl Actor for ReceptionistActor {
    type Msg = Command;

    fn handle(&mut self, ctx: &mut Context<Self>, Command(f): Command) -> HandleResult {
        f(&mut self.0, ctx);
        Ok(())
    }

    fn on_terminated(&mut self, _ctx: &mut Context<Self>, t: Terminated) -> HandleResult {
        let registry = &mut self.0;
        for ((protocol, key_id), entry) in registry.entries.iter_mut() {
            let was_service = entry.forget(&t.actor, &registry.unreachable);
            if let (true, Some(observer)) = (was_service, &registry.observer) {
                observer.service_changed(ServiceRegistration {
                    key_id: key_id.clone(),
                    protocol: *protocol,
                    protocol_name: entry.protocol_name(),
                    service: t.actor.clone(),
                    registered: false,
                });
            }
        }
        registry.prune();
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_and_emptied_keys_leave_no_entry_behind() {
        let mut registry = Registry::default();
        for i in 0..100 {
            let key = ServiceKey::<u32>::new(format!("never-{i}"));
            assert!(registry.listing(&key).services.is_empty());
        }
        assert!(registry.entries.is_empty(), "a find made an entry");
        let key = ServiceKey::<u32>::new("emptied");
        let _ = registry.entry(&key);
        assert_eq!(registry.entries.len(), 1);
        registry.prune();
        assert!(registry.entries.is_empty(), "an empty entry stayed");
    }
}
