//! One request's trace across two nodes, exported with OpenTelemetry: a
//! `checkout` span on the client node asks a stock keeper on the server
//! node, and the keeper's `volley.handle` span comes out as its child,
//! through the W3C trace context volley carries in the user-message frame.
//!
//! Both nodes run in this process to keep the example short; they talk
//! over TCP as two processes would. Spans go to an in-memory exporter and
//! are printed at the end; swap in an OTLP exporter to see them in Jaeger
//! or Tempo.
//!
//! `cargo run --example otel`

use volley_examples::otel_app::{
    actor_of, checkout, finished_spans_with, install_tracing, spawn_stock, start_node,
};

#[tokio::main]
async fn main() -> Result<(), String> {
    let (provider, exporter) = install_tracing().ok_or("a subscriber was already set")?;
    let (server_system, server) = start_node("server", true).await?;
    let (client_system, client) = start_node("client", true).await?;
    spawn_stock(&server_system)?;
    let reserved = checkout(&client, &server, "teapot").await?;
    println!("reserved a teapot: {reserved}");

    let spans = finished_spans_with(&provider, &exporter, "/user/stock").await;
    println!(
        "{:<16} {:<34} {:<18} {:<18} actor",
        "span", "trace", "id", "parent"
    );
    for s in &spans {
        println!(
            "{:<16} {:<34} {:<18} {:<18} {}",
            s.name,
            s.span_context.trace_id(),
            s.span_context.span_id(),
            s.parent_span_id,
            actor_of(s).unwrap_or_default()
        );
    }
    client_system.terminate().await;
    server_system.terminate().await;
    Ok(())
}
