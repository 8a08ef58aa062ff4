//! The parts of `examples/otel.rs`: OpenTelemetry as the tracing backend,
//! and the [`TracePropagator`] that lets a request's trace cross nodes.
//!
//! volley carries span context itself (locally as the `tracing` span, on
//! the wire as a W3C trace context); the application decides how spans get
//! W3C ids and where they are exported. Here `tracing-opentelemetry` gives
//! them ids and an in-memory exporter keeps them, so the example can print
//! the tree and the test can check it; a service would install an OTLP
//! exporter instead.

use std::time::Duration;

use opentelemetry::trace::{
    SpanContext, SpanId, TraceContextExt, TraceFlags, TraceId, TraceState, TracerProvider as _,
};
use opentelemetry::Context as OtelContext;
use opentelemetry_sdk::trace::{InMemorySpanExporter, SdkTracerProvider, SpanData};
use serde::{Deserialize, Serialize};
use tracing::Instrument;
use tracing_opentelemetry::OpenTelemetrySpanExt;
use tracing_subscriber::layer::SubscriberExt;
use volley::{
    Actor, ActorRef, ActorSystem, Context, HandleResult, Propagation, Props, Settings, TraceParent,
    TracePropagator, TracingSettings,
};
use volley_remote::{Registry, RemoteSettings, Remoting};

/// Converts between `tracing` spans (with OpenTelemetry ids, through
/// `tracing-opentelemetry`) and the W3C context volley puts on the wire.
pub struct OtelPropagator;

impl TracePropagator for OtelPropagator {
    fn inject(&self, span: &tracing::Span) -> Option<TraceParent> {
        let context = span.context();
        let otel_span = context.span();
        let sc = otel_span.span_context();
        sc.is_valid().then(|| TraceParent {
            trace_id: sc.trace_id().to_bytes(),
            parent_id: sc.span_id().to_bytes(),
            flags: sc.trace_flags().to_u8(),
        })
    }

    fn attach(&self, span: &tracing::Span, parent: &TraceParent) {
        let remote = SpanContext::new(
            TraceId::from_bytes(parent.trace_id),
            SpanId::from_bytes(parent.parent_id),
            TraceFlags::new(parent.flags),
            true,
            TraceState::default(),
        );
        if let Err(e) = span.set_parent(OtelContext::new().with_remote_span_context(remote)) {
            tracing::debug!("cannot set the remote parent: {e}");
        }
    }
}

/// Installs the global subscriber: a registry with the OpenTelemetry
/// layer, exporting into memory. Returns the provider (flush it before
/// reading) and the exporter, or `None` if a subscriber was already set.
pub fn install_tracing() -> Option<(SdkTracerProvider, InMemorySpanExporter)> {
    let exporter = InMemorySpanExporter::default();
    let provider = SdkTracerProvider::builder()
        .with_simple_exporter(exporter.clone())
        .build();
    let tracer = provider.tracer("volley-example");
    let subscriber =
        tracing_subscriber::registry().with(tracing_opentelemetry::layer().with_tracer(tracer));
    tracing::subscriber::set_global_default(subscriber).ok()?;
    Some((provider, exporter))
}

/// The stock keeper's protocol.
#[derive(Debug, Serialize, Deserialize)]
pub enum Stock {
    /// Reserves one `item`; answers whether there was one.
    Reserve {
        /// What to reserve.
        item: String,
        /// Where the answer goes.
        reply_to: ActorRef<bool>,
    },
}

/// Keeps a count of one item.
pub struct StockKeeper {
    left: u32,
}

impl Actor for StockKeeper {
    type Msg = Stock;
    fn handle(&mut self, _ctx: &mut Context<Self>, msg: Stock) -> HandleResult {
        let Stock::Reserve { item, reply_to } = msg;
        // Runs inside this message's `volley.handle` span, whose parent is
        // the caller's span on the other node.
        let ok = self.left > 0;
        self.left = self.left.saturating_sub(1);
        tracing::info!(item, ok, "reservation");
        reply_to.tell(ok);
        Ok(())
    }
}

fn registry() -> Registry {
    let mut r = Registry::default();
    r.register::<Stock>(1).expect("unique id");
    r.register::<bool>(2).expect("unique id");
    r
}

/// A node with handler spans on; `propagate` carries span context over
/// the wire (both sides need it: the sender to write, the receiver to
/// attach).
pub async fn start_node(name: &str, propagate: bool) -> Result<(ActorSystem, Remoting), String> {
    let settings = Settings {
        tracing: TracingSettings {
            message_spans: true,
            propagator: propagate.then(|| Propagation::new(OtelPropagator)),
        },
        ..Settings::default()
    };
    let system = ActorSystem::with_settings(name, settings).map_err(|e| e.to_string())?;
    let remoting = Remoting::start_with(&system, registry(), RemoteSettings::default())
        .await
        .map_err(|e| e.to_string())?;
    Ok((system, remoting))
}

/// Spawns the stock keeper `stock` on `system`.
pub fn spawn_stock(system: &ActorSystem) -> Result<ActorRef<Stock>, String> {
    system
        .spawn("stock", Props::new(|| StockKeeper { left: 2 }))
        .map_err(|e| e.to_string())
}

/// Asks the stock keeper on `server` (from `client`) inside a span named
/// `checkout`, as an HTTP handler would.
pub async fn checkout(client: &Remoting, server: &Remoting, item: &str) -> Result<bool, String> {
    let stock = client
        .resolve::<Stock>(&format!("{}/user/stock", server.address()))
        .map_err(|e| e.to_string())?;
    let item = item.to_string();
    async move {
        stock
            .ask(
                |reply_to| Stock::Reserve { item, reply_to },
                Duration::from_secs(10),
            )
            .await
            .map_err(|e| e.to_string())
    }
    .instrument(tracing::info_span!("checkout"))
    .await
}

/// The finished spans, once one named `name` whose `actor` attribute
/// contains `actor` is among them (a handler span ends just after the
/// reply leaves, so it may trail the answer a little).
pub async fn finished_spans_with(
    provider: &SdkTracerProvider,
    exporter: &InMemorySpanExporter,
    actor: &str,
) -> Vec<SpanData> {
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    loop {
        let _ = provider.force_flush();
        let spans = exporter.get_finished_spans().unwrap_or_default();
        if spans
            .iter()
            .any(|s| actor_of(s).is_some_and(|a| a.contains(actor)))
            || std::time::Instant::now() > deadline
        {
            return spans;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

/// The `actor` attribute of a `volley.handle` span.
pub fn actor_of(span: &SpanData) -> Option<String> {
    span.attributes
        .iter()
        .find(|kv| kv.key.as_str() == "actor")
        .map(|kv| kv.value.to_string())
}
