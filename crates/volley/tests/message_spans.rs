//! `[tracing] message_spans`: a handled message runs inside a
//! `volley.handle` span naming the actor and the message type; a system
//! without the setting opens none. A subscriber of the test's own records
//! the spans (installed globally: handlers run on dispatcher threads).

mod common;

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, OnceLock};

use common::{eventually, system_with};
use tracing::field::{Field, Visit};
use tracing::span::{Attributes, Id, Record};
use tracing::{Event, Metadata, Subscriber};
use volley::{Actor, Context, HandleResult, Props, Settings, TracingSettings, MESSAGE_SPAN};

/// A span seen: its name and fields.
#[derive(Debug, Clone, Default)]
struct Seen {
    name: String,
    fields: Vec<(String, String)>,
}

#[derive(Default)]
struct Recorder {
    spans: Mutex<Vec<Seen>>,
    /// Each event's message and the name of the span it fired in.
    events_in: Mutex<Vec<(String, Option<String>)>>,
}

struct Fields<'a>(&'a mut Vec<(String, String)>);

impl Visit for Fields<'_> {
    fn record_debug(&mut self, field: &Field, value: &dyn std::fmt::Debug) {
        self.0
            .push((field.name().to_string(), format!("{value:?}")));
    }
    fn record_str(&mut self, field: &Field, value: &str) {
        self.0.push((field.name().to_string(), value.to_string()));
    }
}

impl Subscriber for &'static Recorder {
    fn enabled(&self, _: &Metadata<'_>) -> bool {
        true
    }
    fn new_span(&self, span: &Attributes<'_>) -> Id {
        let mut seen = Seen {
            name: span.metadata().name().to_string(),
            ..Seen::default()
        };
        span.record(&mut Fields(&mut seen.fields));
        let mut spans = self.spans.lock().unwrap();
        spans.push(seen);
        Id::from_u64(spans.len() as u64)
    }
    fn record(&self, _: &Id, _: &Record<'_>) {}
    fn record_follows_from(&self, _: &Id, _: &Id) {}
    fn event(&self, event: &Event<'_>) {
        let mut fields = Vec::new();
        event.record(&mut Fields(&mut fields));
        let message = fields
            .into_iter()
            .find(|(k, _)| k == "message")
            .map_or(String::new(), |(_, v)| v);
        let inside = CURRENT.with(|c| *c.lock().unwrap());
        let span = inside.and_then(|id| {
            let spans = self.spans.lock().unwrap();
            spans.get(id as usize - 1).map(|s| s.name.clone())
        });
        self.events_in.lock().unwrap().push((message, span));
    }
    fn enter(&self, span: &Id) {
        CURRENT.with(|c| *c.lock().unwrap() = Some(span.into_u64()));
    }
    fn exit(&self, _: &Id) {
        CURRENT.with(|c| *c.lock().unwrap() = None);
    }
}

thread_local! {
    static CURRENT: Mutex<Option<u64>> = const { Mutex::new(None) };
}

fn recorder() -> &'static Recorder {
    static RECORDER: OnceLock<&'static Recorder> = OnceLock::new();
    RECORDER.get_or_init(|| {
        let recorder: &'static Recorder = Box::leak(Box::default());
        tracing::subscriber::set_global_default(recorder).expect("the only subscriber here");
        recorder
    })
}

struct Greeter;

impl Actor for Greeter {
    type Msg = String;
    fn handle(&mut self, _ctx: &mut Context<Self>, name: String) -> HandleResult {
        tracing::info!("greeting {name}");
        Ok(())
    }
}

fn spans_for(recorder: &Recorder, actor: &str) -> Vec<Seen> {
    recorder
        .spans
        .lock()
        .unwrap()
        .iter()
        .filter(|s| {
            s.fields
                .iter()
                .any(|(k, v)| k == "actor" && v.contains(actor))
        })
        .cloned()
        .collect()
}

#[volley_testkit::each_dispatcher]
#[test]
fn each_handled_message_runs_in_a_span_naming_actor_and_type() {
    let recorder = recorder();
    let settings = Settings {
        tracing: TracingSettings {
            message_spans: true,
            ..Default::default()
        },
        ..Settings::default()
    };
    let sys = system_with("traced", settings).unwrap();
    let greeter = sys.spawn("greeter", Props::new(|| Greeter)).unwrap();
    greeter.tell("ada".to_string());
    greeter.tell("grace".to_string());
    eventually("two spans", || {
        spans_for(recorder, "/user/greeter").len() == 2
    });
    for span in spans_for(recorder, "/user/greeter") {
        assert_eq!(span.name, MESSAGE_SPAN);
        assert!(
            span.fields
                .iter()
                .any(|(k, v)| k == "message" && v.contains("String")),
            "{span:?}"
        );
    }
    let events = recorder.events_in.lock().unwrap().clone();
    for name in ["ada", "grace"] {
        let inside = events
            .iter()
            .find(|(m, _)| *m == format!("greeting {name}"))
            .and_then(|(_, span)| span.clone());
        assert_eq!(inside.as_deref(), Some(MESSAGE_SPAN), "{events:?}");
    }
}

#[volley_testkit::each_dispatcher]
#[test]
fn no_span_without_the_setting() {
    let recorder = recorder();
    let sys = system_with("untraced", Settings::default()).unwrap();
    let greeter = sys.spawn("greeter", Props::new(|| Greeter)).unwrap();
    let done = Arc::new(AtomicU64::new(0));
    greeter.tell("linus".to_string());
    eventually("the greeting logged", || {
        let events = recorder.events_in.lock().unwrap();
        let seen = events.iter().find(|(m, _)| m == "greeting linus").cloned();
        if let Some((_, span)) = seen {
            assert_eq!(span, None, "handled outside any span");
            done.store(1, Ordering::SeqCst);
        }
        done.load(Ordering::SeqCst) == 1
    });
    assert!(spans_for(recorder, "untraced/user/greeter").is_empty());
}
