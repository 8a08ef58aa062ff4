//! Nodes on loopback for remote tests (Pekko's `ArteryMultiNodeSpec`): a
//! system with remoting started on a free port, the dispatcher kind under
//! test, and one call to stop them all at the end.
//!
//! ```
//! use volley::ActorRef;
//! use volley_remote::Registry;
//! use volley_testkit::remote::Nodes;
//! use volley_testkit::actor_fn;
//!
//! # #[tokio::main(flavor = "multi_thread", worker_threads = 2)]
//! # async fn main() {
//! let mut nodes = Nodes::new(|| {
//!     let mut registry = Registry::default();
//!     registry.register::<(u32, ActorRef<u32>)>(1).unwrap();
//!     registry.register::<u32>(2).unwrap();
//!     registry
//! });
//! let a = nodes.start("a").await;
//! let b = nodes.start("b").await;
//! b.system
//!     .spawn("echo", actor_fn(|_ctx, (n, to): (u32, ActorRef<u32>)| {
//!         to.tell(n);
//!         Ok(())
//!     }))
//!     .unwrap();
//! let echo = a.remote_ref::<(u32, ActorRef<u32>)>(&b, "echo");
//! let (probe, reply_to) = a.probe::<u32>();
//! echo.tell((7, reply_to));
//! probe.expect_msg(7);
//! nodes.stop_all().await;
//! # }
//! ```

use std::sync::Arc;

use volley::{ActorRef, ActorSystem, Settings};
use volley_remote::{Registry, RemoteSettings, Remoting};

use crate::{actor_fn, DispatcherUnderTest, TestProbe};

/// One node: its system and its remoting.
#[derive(Clone)]
pub struct Node {
    /// The node's actor system.
    pub system: ActorSystem,
    /// The node's remoting, listening on loopback.
    pub remoting: Remoting,
}

impl Node {
    /// The path of the actor `name` under `/user` on this node.
    pub fn path(&self, name: &str) -> String {
        format!("{}/user/{name}", self.remoting.address())
    }

    /// This node's ref to the actor `name` under `/user` on `to`.
    ///
    /// # Panics
    /// If `M` is not registered, which is a mistake in the test.
    #[track_caller]
    pub fn remote_ref<M: Send + 'static>(&self, to: &Node, name: &str) -> ActorRef<M> {
        self.remoting
            .resolve::<M>(&to.path(name))
            .unwrap_or_else(|e| panic!("resolving {}: {e}", to.path(name)))
    }

    /// A probe on this node, and a ref other nodes can reach it by: the
    /// probe's own ref is an adapter, which has no path to send, so the
    /// ref handed out is an actor that forwards to the probe.
    ///
    /// # Panics
    /// If the system is terminating.
    #[track_caller]
    pub fn probe<M: Send + std::fmt::Debug + 'static>(&self) -> (TestProbe<M>, ActorRef<M>) {
        let probe = TestProbe::new(&self.system);
        let to = probe.actor_ref();
        let forward = actor_fn(move |_ctx, msg: M| {
            to.tell(msg);
            Ok(())
        });
        let reachable = self
            .system
            .spawn_anonymous(forward)
            .unwrap_or_else(|e| panic!("spawning a probe's forwarder: {e}"));
        (probe, reachable)
    }

    /// Stops remoting (with its goodbye to every peer), then the system.
    pub async fn stop(&self) {
        self.remoting.shutdown();
        self.system.terminate().await;
    }
}

/// Makes nodes that share one registry, and stops them together.
pub struct Nodes {
    registry: Arc<dyn Fn() -> Registry + Send + Sync>,
    started: Vec<Node>,
}

impl Nodes {
    /// Nodes whose remoting knows what `registry` registers (called once
    /// per node: a registry belongs to one node).
    pub fn new(registry: impl Fn() -> Registry + Send + Sync + 'static) -> Self {
        Nodes {
            registry: Arc::new(registry),
            started: Vec::new(),
        }
    }

    /// A node named `name` on loopback, on a free port, with default
    /// remote settings and the dispatcher kind under test.
    ///
    /// # Panics
    /// If the system or its remoting cannot start.
    pub async fn start(&mut self, name: &str) -> Node {
        self.start_with(name, Settings::default(), RemoteSettings::default())
            .await
    }

    /// [`Nodes::start`] with settings of the test's own; the dispatcher
    /// kind under test replaces `settings`' default dispatcher kind.
    ///
    /// # Panics
    /// If the system or its remoting cannot start.
    pub async fn start_with(
        &mut self,
        name: &str,
        settings: Settings,
        remote: RemoteSettings,
    ) -> Node {
        let system = ActorSystem::with_settings(name, DispatcherUnderTest::apply(settings))
            .unwrap_or_else(|e| panic!("starting system {name}: {e}"));
        let remoting = Remoting::start_with(&system, (self.registry)(), remote)
            .await
            .unwrap_or_else(|e| panic!("starting remoting of {name}: {e}"));
        let node = Node { system, remoting };
        self.started.push(node.clone());
        node
    }

    /// Stops every node started, in the order they started.
    pub async fn stop_all(&mut self) {
        for node in self.started.drain(..) {
            node.stop().await;
        }
    }
}
