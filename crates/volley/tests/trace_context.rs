//! The span context travels with `tell` and `ask`: with `[tracing]
//! message_spans` on, a message's `volley.handle` span is the child of the
//! span it was sent in, across actors, from tasks, and (through the
//! `TracePropagator` seam a transport uses) from another node.
//!
//! A `tracing-subscriber` registry with a recording layer is installed once
//! for the binary (handlers run on dispatcher threads); each test finds its
//! own spans by a system name of its own.

mod common;

use std::sync::mpsc::{channel, Sender};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Duration;

use tracing::field::{Field, Visit};
use tracing::span::{Attributes, Id};
use tracing::Instrument;
use tracing_subscriber::layer::{Context as LayerContext, SubscriberExt};
use tracing_subscriber::registry::LookupSpan;
use tracing_subscriber::Layer;
use volley::{
    Actor, ActorRef, Context, HandleResult, Propagation, Props, ReplyTo, Settings, TraceParent,
    TracePropagator, TracingSettings, MESSAGE_SPAN,
};
use volley_testkit::DispatcherUnderTest;

/// A span as the registry saw it created.
#[derive(Debug, Clone)]
struct Seen {
    id: u64,
    name: String,
    actor: Option<String>,
    parent: Option<u64>,
}

#[derive(Default)]
struct Recorder {
    spans: Mutex<Vec<Seen>>,
}

struct ActorField<'a>(&'a mut Option<String>);

impl Visit for ActorField<'_> {
    fn record_debug(&mut self, field: &Field, value: &dyn std::fmt::Debug) {
        if field.name() == "actor" {
            *self.0 = Some(format!("{value:?}"));
        }
    }
}

impl<S: tracing::Subscriber + for<'a> LookupSpan<'a>> Layer<S> for &'static Recorder {
    fn on_new_span(&self, attrs: &Attributes<'_>, id: &Id, ctx: LayerContext<'_, S>) {
        let mut actor = None;
        attrs.record(&mut ActorField(&mut actor));
        // The registry resolved the parent: explicit, contextual or none.
        let parent = ctx
            .span(id)
            .and_then(|s| s.parent())
            .map(|p| p.id().into_u64());
        self.spans.lock().unwrap().push(Seen {
            id: id.into_u64(),
            name: attrs.metadata().name().to_string(),
            actor,
            parent,
        });
    }
}

fn recorder() -> &'static Recorder {
    static RECORDER: OnceLock<&'static Recorder> = OnceLock::new();
    RECORDER.get_or_init(|| {
        let recorder: &'static Recorder = Box::leak(Box::default());
        let subscriber = tracing_subscriber::registry().with(recorder);
        tracing::subscriber::set_global_default(subscriber).expect("the only subscriber here");
        recorder
    })
}

/// The handler spans of actors whose path contains `actor`.
fn handler_spans(actor: &str) -> Vec<Seen> {
    recorder()
        .spans
        .lock()
        .unwrap()
        .iter()
        .filter(|s| s.name == MESSAGE_SPAN && s.actor.as_deref().is_some_and(|a| a.contains(actor)))
        .cloned()
        .collect()
}

fn traced(propagator: Option<Propagation>) -> Settings {
    Settings {
        tracing: TracingSettings {
            message_spans: true,
            propagator,
        },
        ..Settings::default()
    }
}

enum Relay {
    /// Passes `n` on to the next actor, if there is one, else reports it.
    Pass(u32),
    /// Answers `n + 1`.
    Ask(u32, ReplyTo<u32>),
}

struct Hop {
    next: Option<ActorRef<Relay>>,
    done: Sender<u32>,
}

impl Actor for Hop {
    type Msg = Relay;
    fn handle(&mut self, _ctx: &mut Context<Self>, msg: Relay) -> HandleResult {
        match msg {
            Relay::Pass(n) => match &self.next {
                Some(next) => next.tell(Relay::Pass(n)),
                None => self.done.send(n).unwrap(),
            },
            Relay::Ask(n, reply) => reply.tell(n + 1),
        }
        Ok(())
    }
}

/// Two hops, `first` telling `second`, which reports to the channel.
fn chain(sys: &volley::ActorSystem, done: Sender<u32>) -> ActorRef<Relay> {
    let d = done.clone();
    let second = sys
        .spawn(
            "second",
            Props::new(move || Hop {
                next: None,
                done: d.clone(),
            }),
        )
        .unwrap();
    sys.spawn(
        "first",
        Props::new(move || Hop {
            next: Some(second.clone()),
            done: done.clone(),
        }),
    )
    .unwrap()
}

#[volley_testkit::each_dispatcher]
#[test]
fn a_told_message_is_handled_in_a_child_of_the_senders_span_hop_by_hop() {
    recorder();
    let name = DispatcherUnderTest::name("tc-tell");
    let sys = common::system_with(&name, traced(None)).unwrap();
    let (tx, rx) = channel();
    let first = chain(&sys, tx);
    let request = tracing::info_span!("request");
    request.in_scope(|| first.tell(Relay::Pass(7)));
    assert_eq!(rx.recv_timeout(Duration::from_secs(10)).unwrap(), 7);
    let request_id = request.id().expect("the registry enables it").into_u64();

    let first_spans = handler_spans(&format!("{name}/user/first"));
    let second_spans = handler_spans(&format!("{name}/user/second"));
    assert_eq!(first_spans.len(), 1, "{first_spans:?}");
    assert_eq!(second_spans.len(), 1, "{second_spans:?}");
    assert_eq!(
        first_spans[0].parent,
        Some(request_id),
        "first's parent is the request"
    );
    assert_eq!(
        second_spans[0].parent,
        Some(first_spans[0].id),
        "second's parent is first's handler span"
    );
}

#[volley_testkit::each_dispatcher]
#[test]
fn an_ask_from_a_task_carries_the_tasks_span() {
    recorder();
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .unwrap();
    let name = DispatcherUnderTest::name("tc-ask");
    let sys = common::system_with(&name, traced(None)).unwrap();
    let (tx, _rx) = channel();
    let first = chain(&sys, tx);
    let call = tracing::info_span!("http.request");
    let call_id = call.id().unwrap().into_u64();
    let answer = rt
        .block_on(
            async move {
                first
                    .ask(|reply| Relay::Ask(41, reply), Duration::from_secs(10))
                    .await
            }
            .instrument(call),
        )
        .unwrap();
    assert_eq!(answer, 42);
    let spans = handler_spans(&format!("{name}/user/first"));
    assert_eq!(spans.len(), 1, "{spans:?}");
    assert_eq!(spans[0].parent, Some(call_id));
}

#[volley_testkit::each_dispatcher]
#[test]
fn outside_any_span_the_handler_span_is_a_root() {
    recorder();
    let name = DispatcherUnderTest::name("tc-root");
    let sys = common::system_with(&name, traced(None)).unwrap();
    let (tx, rx) = channel();
    let first = chain(&sys, tx);
    first.tell(Relay::Pass(1));
    assert_eq!(rx.recv_timeout(Duration::from_secs(10)).unwrap(), 1);
    let spans = handler_spans(&format!("{name}/user/first"));
    assert_eq!(spans.len(), 1, "{spans:?}");
    assert_eq!(spans[0].parent, None);
}

#[volley_testkit::each_dispatcher]
#[test]
fn without_message_spans_nothing_is_carried_and_no_span_opens() {
    recorder();
    let name = DispatcherUnderTest::name("tc-off");
    let sys = common::system_with(&name, Settings::default()).unwrap();
    let (tx, rx) = channel();
    let first = chain(&sys, tx);
    tracing::info_span!("request").in_scope(|| first.tell(Relay::Pass(3)));
    assert_eq!(rx.recv_timeout(Duration::from_secs(10)).unwrap(), 3);
    assert!(handler_spans(&format!("{name}/")).is_empty());
}

/// A span id (if the span is enabled) and the context attached to it.
type Attachment = (Option<u64>, TraceParent);

/// Records what the runtime asks it to attach, and to which span.
#[derive(Default, Clone)]
struct Attaching {
    attached: Arc<Mutex<Vec<Attachment>>>,
}

impl TracePropagator for Attaching {
    fn inject(&self, _span: &tracing::Span) -> Option<TraceParent> {
        None
    }
    fn attach(&self, span: &tracing::Span, parent: &TraceParent) {
        let id = span.id().map(|id| id.into_u64());
        self.attached.lock().unwrap().push((id, *parent));
    }
}

const CONTEXT: &str = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";

#[volley_testkit::each_dispatcher]
#[test]
fn a_context_from_another_node_becomes_the_handler_spans_parent() {
    recorder();
    let attaching = Attaching::default();
    let name = DispatcherUnderTest::name("tc-remote");
    let sys =
        common::system_with(&name, traced(Some(Propagation::new(attaching.clone())))).unwrap();
    let (tx, rx) = channel();
    let first = chain(&sys, tx);
    let context: TraceParent = CONTEXT.parse().unwrap();
    // The delivering thread's own span (a transport's reader, say) is not
    // the parent: the remote context is.
    tracing::info_span!("reader")
        .in_scope(|| volley::remote::tell_with_trace_parent(&first, Relay::Pass(9), context));
    assert_eq!(rx.recv_timeout(Duration::from_secs(10)).unwrap(), 9);
    let first_spans = handler_spans(&format!("{name}/user/first"));
    assert_eq!(first_spans.len(), 1, "{first_spans:?}");
    assert_eq!(
        first_spans[0].parent, None,
        "not nested in the reader's span"
    );
    let attached = attaching.attached.lock().unwrap().clone();
    assert_eq!(attached, vec![(Some(first_spans[0].id), context)]);
    // The next hop is local again: a child of first's handler span.
    let second_spans = handler_spans(&format!("{name}/user/second"));
    assert_eq!(second_spans[0].parent, Some(first_spans[0].id));
}

#[volley_testkit::each_dispatcher]
#[test]
fn a_context_from_another_node_is_dropped_for_an_untraced_actor() {
    recorder();
    let attaching = Attaching::default();
    let settings = Settings {
        tracing: TracingSettings {
            message_spans: false,
            propagator: Some(Propagation::new(attaching.clone())),
        },
        ..Settings::default()
    };
    let name = DispatcherUnderTest::name("tc-remote-off");
    let sys = common::system_with(&name, settings).unwrap();
    let (tx, rx) = channel();
    let first = chain(&sys, tx);
    volley::remote::tell_with_trace_parent(&first, Relay::Pass(4), CONTEXT.parse().unwrap());
    assert_eq!(rx.recv_timeout(Duration::from_secs(10)).unwrap(), 4);
    assert!(attaching.attached.lock().unwrap().is_empty());
    assert!(handler_spans(&format!("{name}/")).is_empty());
}

#[volley_testkit::each_dispatcher]
#[test]
fn settings_overrides_keep_the_propagator() {
    let propagation = Propagation::new(Attaching::default());
    let settings = traced(Some(propagation.clone()))
        .with_overrides([("VOLLEY__IO_THREADS".to_string(), "2".to_string())])
        .unwrap();
    assert_eq!(settings.io_threads, 2);
    assert_eq!(settings.tracing.propagator, Some(propagation));
    assert!(settings.tracing.message_spans);
}
