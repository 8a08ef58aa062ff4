//! The prometheus example's logic: a system with `[metrics] enabled`,
//! whose runtime metrics a Prometheus exporter serves on `/metrics`.

use std::net::SocketAddr;
use std::time::Duration;

use metrics_exporter_prometheus::PrometheusBuilder;
use volley::{
    Actor, ActorError, ActorRef, ActorSystem, Context, HandleResult, MetricsSettings, Props,
    ReplyTo, Settings,
};

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
            sample_interval_ms: 100,
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
