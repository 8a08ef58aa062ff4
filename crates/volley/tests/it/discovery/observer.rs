//! `Receptionist::observe`, the cluster receptionist's hook: the observer
//! is told of the services already registered, then of every
//! registration, deregistration and service that terminates.

use crate::common;

use std::sync::Arc;

use volley::{ActorRef, Registered, ServiceKey, ServiceObserver, ServiceRegistration};
use volley_testkit::{actor_fn, TestProbe};

/// (key id, registered, service uid) per change.
type Seen = (String, bool, u64);

struct Forward(ActorRef<Seen>);

impl ServiceObserver for Forward {
    fn service_changed(&self, change: ServiceRegistration) {
        self.0.tell((
            change.key_id.to_string(),
            change.registered,
            change.service.uid(),
        ));
    }
}

#[volley_testkit::each_dispatcher]
#[test]
fn the_observer_sees_existing_services_then_every_change() {
    let system = common::system("receptionist-observer").unwrap();
    let receptionist = system.receptionist().unwrap();
    let acks = TestProbe::<Registered<u32>>::new(&system);
    let key = ServiceKey::<u32>::new("observed");
    let stoppable = || {
        actor_fn(|ctx, _n: u32| {
            ctx.stop_self();
            Ok(())
        })
    };
    let a = system.spawn_anonymous(stoppable()).unwrap();
    let b = system.spawn_anonymous(stoppable()).unwrap();
    receptionist.register_with_ack(&key, &a, acks.actor_ref());
    acks.receive_msg();

    let seen = TestProbe::<Seen>::new(&system);
    receptionist.observe(Arc::new(Forward(seen.actor_ref())));
    seen.expect_msg(("observed".into(), true, a.to_any().uid()));
    receptionist.register(&key, &b);
    seen.expect_msg(("observed".into(), true, b.to_any().uid()));
    receptionist.deregister(&key, &b);
    seen.expect_msg(("observed".into(), false, b.to_any().uid()));
    a.tell(1);
    seen.expect_msg(("observed".into(), false, a.to_any().uid()));
}
