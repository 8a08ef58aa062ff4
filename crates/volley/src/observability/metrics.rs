//! Runtime metrics through the `metrics` crate's facade, so the application
//! picks the exporter (Prometheus, StatsD, OpenTelemetry...).
//!
//! Off by default (`[metrics] enabled`). When on, the system registers its
//! handles with the installed recorder once, at start, labelled with the
//! system's name: install the recorder before creating the system. Nothing
//! goes through the facade per message: the counters sit where the runtime
//! already does something rare (a failure, a restart, a stop, a dead
//! letter, an ask's timeout), behind one `Option` check that is all they
//! cost when off; a pool's workers count messages, activations and steals
//! in slots of their own (`dispatcher/stats.rs`), and a task samples those
//! and the gauges every `sample_interval`.

use std::time::Duration;

use metrics::{Counter, Gauge};
use serde::{Deserialize, Serialize};

use crate::system::actor_system::ActorSystem;
use crate::system::event_stream::{DeadLetterReason, LifecycleKind};

/// `[metrics]`: what the runtime reports through the `metrics` facade.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct MetricsSettings {
    /// Registers and records the metrics. Default false.
    pub enabled: bool,
    /// How often the gauges and the dispatchers' counts are sampled. At
    /// least 10 ms. Default 1 s (`"1s"`).
    #[serde(with = "humantime_serde")]
    pub sample_interval: Duration,
}

impl Default for MetricsSettings {
    fn default() -> Self {
        MetricsSettings {
            enabled: false,
            sample_interval: Duration::from_secs(1),
        }
    }
}

/// Every metric's name, for documentation and for tests that look for them.
pub const METRIC_NAMES: &[&str] = &[
    "volley_actor_starts_total",
    "volley_actor_restarts_total",
    "volley_actor_stops_total",
    "volley_actor_failures_total",
    "volley_dead_letters_total",
    "volley_ask_timeouts_total",
    "volley_dispatcher_parked_workers",
    "volley_dispatcher_spinning_workers",
    "volley_dispatcher_messages_total",
    "volley_dispatcher_activations_total",
    "volley_dispatcher_steals_total",
    "volley_mailbox_depth",
];

const REASONS: [(DeadLetterReason, &str); 8] = [
    (
        DeadLetterReason::RecipientTerminated,
        "recipient_terminated",
    ),
    (DeadLetterReason::MailboxOverflow, "mailbox_overflow"),
    (DeadLetterReason::AskCompleted, "ask_completed"),
    (DeadLetterReason::Undeliverable, "undeliverable"),
    (DeadLetterReason::NoRoutee, "no_routee"),
    (DeadLetterReason::StashOverflow, "stash_overflow"),
    (DeadLetterReason::BackoffOverflow, "backoff_overflow"),
    (DeadLetterReason::BufferOverflow, "buffer_overflow"),
];

/// The system's registered handles.
pub(crate) struct SystemMetrics {
    starts: Counter,
    restarts: Counter,
    stops: Counter,
    failures_panic: Counter,
    failures_error: Counter,
    dead_letters: [Counter; REASONS.len()],
    ask_timeouts: Counter,
}

impl SystemMetrics {
    /// Registers the handles with the recorder installed now.
    pub(crate) fn register(system: &str) -> Self {
        let label = || ("system", system.to_string());
        let counter = |name: &'static str| metrics::counter!(name, &[label()]);
        let failures = |kind: &'static str| {
            metrics::counter!(
                "volley_actor_failures_total",
                &[label(), ("kind", kind.to_string())]
            )
        };
        SystemMetrics {
            starts: counter("volley_actor_starts_total"),
            restarts: counter("volley_actor_restarts_total"),
            stops: counter("volley_actor_stops_total"),
            failures_panic: failures("panic"),
            failures_error: failures("error"),
            dead_letters: REASONS.map(|(_, reason)| {
                metrics::counter!(
                    "volley_dead_letters_total",
                    &[label(), ("reason", reason.to_string())]
                )
            }),
            ask_timeouts: counter("volley_ask_timeouts_total"),
        }
    }

    pub(crate) fn lifecycle(&self, kind: LifecycleKind) {
        match kind {
            LifecycleKind::Started => self.starts.increment(1),
            LifecycleKind::Restarted => self.restarts.increment(1),
            LifecycleKind::Stopped => self.stops.increment(1),
        }
    }

    pub(crate) fn failure(&self, panicked: bool) {
        if panicked {
            self.failures_panic.increment(1);
        } else {
            self.failures_error.increment(1);
        }
    }

    pub(crate) fn dead_letter(&self, reason: DeadLetterReason) {
        if let Some(i) = REASONS.iter().position(|(r, _)| *r == reason) {
            self.dead_letters[i].increment(1);
        }
    }

    pub(crate) fn ask_timeout(&self) {
        self.ask_timeouts.increment(1);
    }
}

/// One pool dispatcher's handles.
struct DispatcherHandles {
    name: String,
    parked: Gauge,
    spinning: Gauge,
    messages: Counter,
    activations: Counter,
    steals: Counter,
}

impl DispatcherHandles {
    fn register(system: &str, dispatcher: &str) -> Self {
        let labels = [
            ("system", system.to_string()),
            ("dispatcher", dispatcher.to_string()),
        ];
        DispatcherHandles {
            name: dispatcher.to_string(),
            parked: metrics::gauge!("volley_dispatcher_parked_workers", &labels),
            spinning: metrics::gauge!("volley_dispatcher_spinning_workers", &labels),
            messages: metrics::counter!("volley_dispatcher_messages_total", &labels),
            activations: metrics::counter!("volley_dispatcher_activations_total", &labels),
            steals: metrics::counter!("volley_dispatcher_steals_total", &labels),
        }
    }
}

/// Samples the dispatchers every `interval` until the system terminates.
pub(crate) fn start_sampler(system: &ActorSystem, interval: Duration) {
    let weak = system.downgrade();
    let name = system.name().to_string();
    system.runtime_handle().spawn(async move {
        let mut handles: Vec<DispatcherHandles> = Vec::new();
        let mut ticks = tokio::time::interval(interval);
        ticks.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Skip);
        loop {
            ticks.tick().await;
            let Some(system) = weak.upgrade() else { return };
            if system.is_terminated() {
                return;
            }
            for (dispatcher, parked, counts) in system.dispatcher_samples() {
                let h = match handles.iter().position(|h| h.name == dispatcher) {
                    Some(i) => &handles[i],
                    None => {
                        handles.push(DispatcherHandles::register(&name, &dispatcher));
                        handles.last().expect("just pushed")
                    }
                };
                h.parked.set(parked as f64);
                h.spinning.set(counts.spinning as f64);
                h.messages.absolute(counts.messages);
                h.activations.absolute(counts.activations);
                h.steals.absolute(counts.steals);
            }
        }
    });
}
