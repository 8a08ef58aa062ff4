//! The sender's span context crosses the wire (TracedUserMessage, kind
//! 0x14) and becomes the parent of the receiver's handler span; messages
//! sent outside any span go as plain user messages; traced and plain
//! messages to one actor keep their order.
//!
//! The propagators here stand in for OpenTelemetry's (`examples/otel.rs`
//! has the real one): the sender's turns its span id into the context's
//! parent id, the receiver's records what it is asked to attach.

mod common;
mod raw_peer;

use std::sync::{Arc, Mutex, OnceLock};

use bytes::BytesMut;
use common::{node_settings, node_with, remote_ref, spawn_calculator, Calc, CALC_ID, T};
use tokio::io::AsyncWriteExt;
use tracing::Instrument;
use tracing_subscriber::layer::SubscriberExt;
use volley::{Propagation, Settings, TraceParent, TracePropagator, TracingSettings};
use volley_remote::serialization::{BincodeSerializer, Serializer, SerializerId};
use volley_remote::wire::{Encoder, Lane, MessageHeader, Pdu, RefDeclaration, RefId};
use volley_remote::RemoteSettings;

const TRACE_ID: [u8; 16] = *b"volley-trace-id!";

/// Injects the span's own id as the parent id.
struct SpanIdInjector;

impl TracePropagator for SpanIdInjector {
    fn inject(&self, span: &tracing::Span) -> Option<TraceParent> {
        Some(TraceParent {
            trace_id: TRACE_ID,
            parent_id: span.id()?.into_u64().to_be_bytes(),
            flags: 1,
        })
    }
    fn attach(&self, _span: &tracing::Span, _parent: &TraceParent) {}
}

/// Records each context it is asked to attach.
#[derive(Clone, Default)]
struct Attached(Arc<Mutex<Vec<TraceParent>>>);

impl TracePropagator for Attached {
    fn inject(&self, _span: &tracing::Span) -> Option<TraceParent> {
        None
    }
    fn attach(&self, _span: &tracing::Span, parent: &TraceParent) {
        self.0.lock().unwrap().push(*parent);
    }
}

fn subscriber() {
    static ONCE: OnceLock<()> = OnceLock::new();
    ONCE.get_or_init(|| {
        tracing::subscriber::set_global_default(
            tracing_subscriber::registry().with(tracing_subscriber::filter::LevelFilter::INFO),
        )
        .expect("the only subscriber here");
    });
}

fn with_tracing(propagator: impl TracePropagator, message_spans: bool) -> Settings {
    Settings {
        tracing: TracingSettings {
            message_spans,
            propagator: Some(Propagation::new(propagator)),
        },
        ..node_settings()
    }
}

/// A sender node with `injector` and a receiver node (handler spans on)
/// that records what it attaches, with a calculator `calc` on the
/// receiver: the sender's ref to it.
async fn pair(
    name: &str,
    injector: impl TracePropagator,
) -> (common::Node, common::Node, Attached, volley::ActorRef<Calc>) {
    subscriber();
    let attached = Attached::default();
    let alpha = node_with(
        &format!("{name}-a"),
        with_tracing(injector, false),
        RemoteSettings::default(),
    )
    .await;
    let beta = node_with(
        &format!("{name}-b"),
        with_tracing(attached.clone(), true),
        RemoteSettings::default(),
    )
    .await;
    spawn_calculator(&beta, "calc");
    let calc = remote_ref(&alpha, &beta, "calc");
    (alpha, beta, attached, calc)
}

fn span_parent_id(span: &tracing::Span) -> [u8; 8] {
    span.id().unwrap().into_u64().to_be_bytes()
}

#[volley_testkit::each_dispatcher]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_remote_asks_handler_span_has_the_callers_span_as_parent() {
    let (alpha, beta, attached, calc) = pair("tc-alpha", SpanIdInjector).await;

    let call = tracing::info_span!("client.call");
    let expected = span_parent_id(&call);
    let sum = calc
        .ask(
            |reply_to| Calc::Add {
                a: 1,
                b: 2,
                reply_to,
            },
            T,
        )
        .instrument(call)
        .await
        .unwrap();
    assert_eq!(sum, 3);
    let seen = attached.0.lock().unwrap().clone();
    assert_eq!(
        seen,
        vec![TraceParent {
            trace_id: TRACE_ID,
            parent_id: expected,
            flags: 1,
        }]
    );

    // Outside any span nothing is carried: the frame is a plain one.
    assert_eq!(common::add(&calc, 2, 3).await, 5);
    assert_eq!(attached.0.lock().unwrap().len(), 1);
    alpha.system.terminate().await;
    beta.system.terminate().await;
}

#[volley_testkit::each_dispatcher]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn traced_and_plain_messages_to_one_actor_keep_their_order() {
    let (alpha, beta, attached, calc) = pair("tc-order-a", SpanIdInjector).await;
    let span = tracing::info_span!("batch");
    // Runs of plain messages broken by traced ones, in one burst.
    for n in 0..300u64 {
        let seq = Calc::Seq { from: 0, n };
        if n % 7 == 3 {
            span.in_scope(|| calc.tell(seq));
        } else {
            calc.tell(seq);
        }
    }
    let report = calc.ask(Calc::Report, T).await.unwrap();
    assert_eq!(report, vec![300, 0], "[received, out of order]");
    let traced = (0..300u64).filter(|n| n % 7 == 3).count();
    assert_eq!(attached.0.lock().unwrap().len(), traced);
    alpha.system.terminate().await;
    beta.system.terminate().await;
}

#[volley_testkit::each_dispatcher]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_sender_never_puts_zero_ids_on_the_wire() {
    struct ZeroInjector;
    impl TracePropagator for ZeroInjector {
        fn inject(&self, _span: &tracing::Span) -> Option<TraceParent> {
            Some(TraceParent {
                trace_id: [0; 16],
                parent_id: [0; 8],
                flags: 0,
            })
        }
        fn attach(&self, _span: &tracing::Span, _parent: &TraceParent) {}
    }
    let (alpha, beta, attached, calc) = pair("tc-zero", ZeroInjector).await;
    let sum = calc
        .ask(
            |reply_to| Calc::Add {
                a: 4,
                b: 4,
                reply_to,
            },
            T,
        )
        .instrument(tracing::info_span!("call"))
        .await
        .unwrap();
    assert_eq!(sum, 8);
    assert!(attached.0.lock().unwrap().is_empty());
    alpha.system.terminate().await;
    beta.system.terminate().await;
}

#[volley_testkit::each_dispatcher]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_receiver_ignores_invalid_contexts_and_reports_undeliverable_ones() {
    subscriber();
    let attached = Attached::default();
    let beta = node_with(
        "tc-raw-b",
        with_tracing(attached.clone(), true),
        RemoteSettings::default(),
    )
    .await;
    let calc = spawn_calculator(&beta, "calc");
    let addr = beta.remoting.address().clone();
    let enc = Encoder::for_lane(Lane::Ordinary);
    let mut out = BytesMut::new();
    let path = format!("{addr}/user/calc");
    enc.encode(
        &Pdu::RefDeclaration(RefDeclaration {
            id: RefId::new(1).unwrap(),
            uid: 0,
            path: &path,
        }),
        &mut out,
    )
    .unwrap();
    let valid: TraceParent = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
        .parse()
        .unwrap();
    let zero = TraceParent {
        trace_id: [0; 16],
        parent_id: [0; 8],
        flags: 1,
    };
    let header = |type_id| MessageHeader {
        recipient: RefId::new(1).unwrap(),
        sender: None,
        serializer: SerializerId::BINCODE,
        type_id,
    };
    // Zero ids: delivered without a parent. A valid one: attached. An
    // unregistered type: a dead letter, the connection stays.
    for (n, context, type_id) in [(0, zero, CALC_ID), (1, valid, CALC_ID), (2, valid, 9_999)] {
        enc.traced_user_message_with(&mut out, &header(type_id), &context, |b| {
            BincodeSerializer.encode(&Calc::Seq { from: 0, n }, b)
        })
        .unwrap();
    }
    let dead_before = beta.system.dead_letter_count();
    let mut s = raw_peer::handshaken(&addr).await;
    s.write_all(&out).await.unwrap();
    raw_peer::hostile::wait_for("two delivered", || attached.0.lock().unwrap().len() == 1).await;
    let deadline = std::time::Instant::now() + T;
    loop {
        let report: Vec<u64> = calc.ask(Calc::Report, T).await.unwrap();
        if report[0] == 2 {
            assert_eq!(report[1], 0, "out of order");
            break;
        }
        assert!(std::time::Instant::now() < deadline, "got {report:?}");
        tokio::time::sleep(std::time::Duration::from_millis(10)).await;
    }
    assert_eq!(attached.0.lock().unwrap().clone(), vec![valid]);
    raw_peer::hostile::wait_for("the unknown type's dead letter", || {
        beta.system.dead_letter_count() == dead_before + 1
    })
    .await;
    assert!(
        !raw_peer::closed_within(&mut s, std::time::Duration::from_millis(200)).await,
        "an undeliverable message does not close the connection"
    );
    beta.system.terminate().await;
}
