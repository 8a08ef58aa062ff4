//! The prometheus example's logic: a system with `[metrics] enabled`,
//! whose runtime metrics a Prometheus exporter serves on `/metrics`, and
//! which talks to a second node over remoting so that the per-association
//! metrics show too.

use std::net::SocketAddr;
use std::time::Duration;

use metrics_exporter_prometheus::PrometheusBuilder;
use volley::{
    Actor, ActorError, ActorRef, ActorSystem, Context, HandleResult, MetricsSettings, Props,
    ReplyTo, Settings,
};
use volley_remote::{Registry, Remoting};

/// Installs the Prometheus recorder, serving `/metrics` on `addr`. Must
/// run inside a tokio runtime, before the system starts (the system
/// registers its metrics with the recorder installed then).
pub fn install_exporter(addr: SocketAddr) -> Result<(), String> {
    PrometheusBuilder::new()
        .with_http_listener(addr)
        .install()
        .map_err(|e| format!("cannot install the Prometheus exporter on {addr}: {e}"))
}

/// What the worker does with a message.
pub enum Job {
    /// Succeeds.
    Work,
    /// Fails: the supervisor restarts the worker.
    Fail,
    /// Keeps the reply handle and never answers: the ask times out.
    Stall(ReplyTo<()>),
}

/// An actor that fails now and then.
#[derive(Default)]
pub struct Worker {
    stalled: Vec<ReplyTo<()>>,
}

impl Actor for Worker {
    type Msg = Job;
    fn handle(&mut self, _ctx: &mut Context<Self>, job: Job) -> HandleResult {
        match job {
            Job::Work => Ok(()),
            Job::Fail => Err(ActorError::new("the job failed")),
            Job::Stall(reply) => {
                self.stalled.push(reply);
                Ok(())
            }
        }
    }
}

/// Starts a system with metrics on, and its worker.
pub fn start() -> Result<(ActorSystem, ActorRef<Job>), Box<dyn std::error::Error + Send + Sync>> {
    let settings = Settings {
        metrics: MetricsSettings {
            enabled: true,
            sample_interval: std::time::Duration::from_millis(100),
        },
        ..Settings::default()
    };
    let system = ActorSystem::with_settings("metrics-demo", settings)?;
    let worker = system.spawn("worker", Props::new(Worker::default))?;
    Ok((system, worker))
}

/// Gives every metric something to show: a failure and restart, an ask
/// that times out, a stop, and a dead letter.
pub async fn exercise(system: &ActorSystem, worker: &ActorRef<Job>) {
    worker.tell(Job::Work);
    worker.tell(Job::Fail);
    let _ = worker.ask(Job::Stall, Duration::from_millis(50)).await;
    let doomed = system
        .spawn_anonymous(Props::new(Worker::default))
        .expect("the system runs");
    system.stop(&doomed);
    while !doomed.is_terminated() {
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    doomed.tell(Job::Work);
}

/// Takes notes from the other node, and drops them.
struct Sink;

impl Actor for Sink {
    type Msg = String;
    fn handle(&mut self, _ctx: &mut Context<Self>, _note: String) -> HandleResult {
        Ok(())
    }
}

fn registry() -> Registry {
    let mut r = Registry::default();
    r.register::<String>(1).expect("unique id");
    r
}

/// The demo system's remoting, and the node it talks to.
pub struct Peer {
    /// The demo system's remoting.
    pub remoting: Remoting,
    /// The other node (metrics on as well).
    pub system: ActorSystem,
    peer_remoting: Remoting,
    sink: ActorRef<String>,
}

impl Peer {
    /// Starts remoting on `system` and a second node on loopback, with a
    /// sink that `system` sends notes to.
    pub async fn start(
        system: &ActorSystem,
    ) -> Result<Peer, Box<dyn std::error::Error + Send + Sync>> {
        let remoting = Remoting::start(system, registry()).await?;
        let peer = ActorSystem::with_settings("metrics-peer", system.settings().clone())?;
        let peer_remoting = Remoting::start(&peer, registry()).await?;
        peer.spawn("sink", Props::new(|| Sink))?;
        let sink = remoting.resolve::<String>(&format!("{}/user/sink", peer_remoting.address()))?;
        Ok(Peer {
            remoting,
            system: peer,
            peer_remoting,
            sink,
        })
    }

    /// Sends a few notes to the other node.
    pub fn send_notes(&self, n: usize) {
        for i in 0..n {
            self.sink.tell(format!("note {i}"));
        }
    }

    /// The other node's address, as the metrics' `remote` label shows it.
    pub fn address(&self) -> String {
        self.peer_remoting.address().to_string()
    }

    /// Stops both nodes' remoting and the other node.
    pub async fn stop(self) {
        self.remoting.shutdown();
        self.peer_remoting.shutdown();
        self.system.terminate().await;
    }
}
