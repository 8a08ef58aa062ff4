//! The cross-node parent-span test: a remote ask's handler span on the
//! server node has the client's span as its parent, in OpenTelemetry's
//! terms (same trace id, parent span id = the client span's id, marked
//! remote); without propagation the server starts a trace of its own.

use opentelemetry_sdk::trace::SpanData;
use volley_examples::otel_app::{
    actor_of, checkout, finished_spans_with, install_tracing, spawn_stock, start_node,
};

fn named<'a>(spans: &'a [SpanData], name: &str) -> Vec<&'a SpanData> {
    spans.iter().filter(|s| s.name == name).collect()
}

fn handled_by<'a>(spans: &'a [SpanData], actor: &str) -> Vec<&'a SpanData> {
    spans
        .iter()
        .filter(|s| {
            s.name == volley::MESSAGE_SPAN && actor_of(s).is_some_and(|a| a.contains(actor))
        })
        .collect()
}

// One test function: the subscriber is global to the binary.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_remote_asks_handler_span_is_the_child_of_the_callers_span() {
    let (provider, exporter) = install_tracing().expect("the first subscriber");

    // With propagation on both nodes.
    let (server_system, server) = start_node("otel-server", true).await.unwrap();
    let (client_system, client) = start_node("otel-client", true).await.unwrap();
    spawn_stock(&server_system).unwrap();
    assert!(checkout(&client, &server, "teapot").await.unwrap());
    let spans = finished_spans_with(&provider, &exporter, "otel-server/user/stock").await;
    let client_span = named(&spans, "checkout");
    let server_span = handled_by(&spans, "otel-server/user/stock");
    assert_eq!(client_span.len(), 1, "{spans:#?}");
    assert_eq!(server_span.len(), 1, "{spans:#?}");
    let (client_span, server_span) = (client_span[0], server_span[0]);
    assert_eq!(
        server_span.span_context.trace_id(),
        client_span.span_context.trace_id(),
        "one trace"
    );
    assert_eq!(
        server_span.parent_span_id,
        client_span.span_context.span_id()
    );
    assert!(server_span.parent_span_is_remote);
    client_system.terminate().await;
    server_system.terminate().await;
    exporter.reset();

    // A client node without a propagator sends no context: the server's
    // span is the root of a trace of its own.
    let (server_system, server) = start_node("otel-server2", true).await.unwrap();
    let (client_system, client) = start_node("otel-client2", false).await.unwrap();
    spawn_stock(&server_system).unwrap();
    assert!(checkout(&client, &server, "kettle").await.unwrap());
    let spans = finished_spans_with(&provider, &exporter, "otel-server2/user/stock").await;
    let client_span = named(&spans, "checkout");
    let server_span = handled_by(&spans, "otel-server2/user/stock");
    assert_eq!((client_span.len(), server_span.len()), (1, 1), "{spans:#?}");
    assert_ne!(
        server_span[0].span_context.trace_id(),
        client_span[0].span_context.trace_id()
    );
    assert!(
        !server_span[0]
            .parent_span_id
            .to_bytes()
            .iter()
            .any(|b| *b != 0),
        "a root"
    );
    client_system.terminate().await;
    server_system.terminate().await;
}
