//! The cross-node parent-span test: a remote ask's handler span on the
//! server node has the client's span as its parent, in OpenTelemetry's
//! terms (same trace id, parent span id = the client span's id, marked
//! remote); without propagation the server starts a trace of its own.

use opentelemetry_sdk::trace::{InMemorySpanExporter, SdkTracerProvider, SpanData};
use volley_examples::otel_app::{
    actor_of, checkout, finished_spans_with, install_tracing, spawn_stock, start_node,
};

/// Runs one checkout from a client node (propagating or not) to a server
/// node named `server`, and returns the client's `checkout` span and the
/// server's handler span.
async fn one_checkout(
    provider: &SdkTracerProvider,
    exporter: &InMemorySpanExporter,
    server: &str,
    client_propagates: bool,
) -> (SpanData, SpanData) {
    exporter.reset();
    let (server_system, server_node) = start_node(server, true).await.unwrap();
    let (client_system, client_node) = start_node(&format!("{server}-client"), client_propagates)
        .await
        .unwrap();
    spawn_stock(&server_system).unwrap();
    assert!(checkout(&client_node, &server_node, "teapot")
        .await
        .unwrap());
    let actor = format!("{server}/user/stock");
    let spans = finished_spans_with(provider, exporter, &actor).await;
    client_system.terminate().await;
    server_system.terminate().await;
    let client: Vec<_> = spans.iter().filter(|s| s.name == "checkout").collect();
    let handled: Vec<_> = spans
        .iter()
        .filter(|s| {
            s.name == volley::MESSAGE_SPAN && actor_of(s).is_some_and(|a| a.contains(&actor))
        })
        .collect();
    assert_eq!((client.len(), handled.len()), (1, 1), "{spans:#?}");
    (client[0].clone(), handled[0].clone())
}

// One test function: the subscriber is global to the binary.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_remote_asks_handler_span_is_the_child_of_the_callers_span() {
    let (provider, exporter) = install_tracing().expect("the first subscriber");

    // With propagation on both nodes: one trace, the client's span the parent.
    let (client, server) = one_checkout(&provider, &exporter, "otel-server", true).await;
    assert_eq!(
        server.span_context.trace_id(),
        client.span_context.trace_id(),
        "one trace"
    );
    assert_eq!(server.parent_span_id, client.span_context.span_id());
    assert!(server.parent_span_is_remote);

    // A client node without a propagator sends no context: the server's
    // span is the root of a trace of its own.
    let (client, server) = one_checkout(&provider, &exporter, "otel-server2", false).await;
    assert_ne!(
        server.span_context.trace_id(),
        client.span_context.trace_id()
    );
    assert_eq!(
        server.parent_span_id,
        opentelemetry::trace::SpanId::INVALID,
        "a root"
    );
}
