//! The gateway called by tonic's client over real HTTP/2: replies, every
//! status the gateway promises, the health check, a router behind a
//! method, and that a cancelled call leaves nothing behind.

use crate::common;
use common::wait_for;

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use tonic::transport::Channel;
use tonic::{Code, Request, Status};
use volley::{
    Actor, ActorError, ActorRef, ActorSystem, Context, HandleResult, MailboxConfig, Overflow,
    Props, ReplyTo, Router,
};
use volley_grpc::health::{HealthCheckRequest, HealthCheckResponse, ServingStatus};
use volley_grpc::{Gateway, GatewaySettings, Reply};

#[derive(Clone, PartialEq, prost::Message)]
struct Ping {
    #[prost(string, tag = "1")]
    text: String,
}

type Call = (Ping, ReplyTo<Reply<Ping>>);

/// Answers by the request's text: `echo:` echoes, `fail` replies an
/// INTERNAL status, `crash` fails the handler, `hold` keeps the reply
/// handle unanswered, `block` blocks its thread until released.
struct Service {
    held: Arc<Mutex<Vec<ReplyTo<Reply<Ping>>>>>,
    gate: Gate,
}

/// Whether `block` calls may go on, and how many are blocked.
type Gate = Arc<(Mutex<(bool, usize)>, std::sync::Condvar)>;

impl Actor for Service {
    type Msg = Call;
    fn handle(&mut self, _ctx: &mut Context<Self>, (ping, reply_to): Call) -> HandleResult {
        match ping.text.as_str() {
            "fail" => reply_to.tell(Err(Status::internal("the handler says no"))),
            "crash" => return Err(ActorError::new("the handler crashed")),
            "hold" => self.held.lock().unwrap().push(reply_to),
            "block" => {
                let (state, cv) = &*self.gate;
                let mut state = state.lock().unwrap();
                state.1 += 1;
                while !state.0 {
                    state = cv.wait(state).unwrap();
                }
                reply_to.tell(Ok(ping));
            }
            _ => reply_to.tell(Ok(ping)),
        }
        Ok(())
    }
}

struct Server {
    system: ActorSystem,
    channel: Channel,
    held: Arc<Mutex<Vec<ReplyTo<Reply<Ping>>>>>,
    gate: Gate,
    service: ActorRef<Call>,
    stopped: ActorRef<Call>,
    port: u16,
    _served: common::Served,
}

async fn server(settings: GatewaySettings) -> Server {
    let system = ActorSystem::new("grpc-test").unwrap();
    let held = Arc::new(Mutex::new(Vec::new()));
    let gate: Gate = Arc::new((Mutex::new((false, 0)), std::sync::Condvar::new()));
    let (h, g) = (held.clone(), gate.clone());
    let service = system
        .spawn(
            "service",
            Props::new(move || Service {
                held: h.clone(),
                gate: g.clone(),
            })
            .with_mailbox(MailboxConfig::Bounded {
                capacity: 1,
                overflow: Overflow::DropNewest,
            }),
        )
        .unwrap();
    let (h, g) = (held.clone(), gate.clone());
    let stopped = system
        .spawn(
            "stopped",
            Props::new(move || Service {
                held: h.clone(),
                gate: g.clone(),
            }),
        )
        .unwrap();
    system.stop(&stopped);
    // Stopped before the first call: a message that reaches an actor still
    // stopping is dropped with it (INTERNAL), not refused (UNAVAILABLE).
    common::wait_for("the actor to stop", || stopped.is_terminated()).await;
    let (h, g) = (held.clone(), gate.clone());
    let pool = Router::pool(
        4,
        Props::new(move || Service {
            held: h.clone(),
            gate: g.clone(),
        }),
    )
    .spawn(&system, "pool")
    .unwrap();
    let gateway = Gateway::builder(&system, settings)
        .unary("/test.Svc/Call", service.clone(), |p: Ping, r| (p, r))
        .unwrap()
        .unary("/test.Svc/Stopped", stopped.clone(), |p: Ping, r| (p, r))
        .unwrap()
        .unary("/test.Svc/Pool", pool, |p: Ping, r| (p, r))
        .unwrap()
        .build();
    let served = common::Served::start(gateway).await;
    let channel = served.endpoint().connect().await.unwrap();
    Server {
        system,
        channel,
        held,
        gate,
        service,
        stopped,
        port: served.port,
        _served: served,
    }
}

async fn call(
    s: &Server,
    path: &'static str,
    text: &str,
    timeout: Option<Duration>,
) -> Result<String, Status> {
    let mut grpc = tonic::client::Grpc::new(s.channel.clone());
    grpc.ready().await.unwrap();
    let mut request = Request::new(Ping { text: text.into() });
    if let Some(t) = timeout {
        // The header alone: tonic's own `set_timeout` would also end the
        // call on the client's side, racing the gateway's answer.
        let value = format!("{}m", t.as_millis()).parse().unwrap();
        request.metadata_mut().insert("grpc-timeout", value);
    }
    let codec = tonic_prost::ProstCodec::<Ping, Ping>::default();
    let path = http::uri::PathAndQuery::from_static(path);
    grpc.unary(request, path, codec)
        .await
        .map(|r| r.into_inner().text)
}

/// A call by a bare HTTP/2 client with the given `grpc-timeout`; the
/// status of its Trailers-Only answer.
async fn bare_call(s: &Server, text: &str, timeout: &str) -> Status {
    use http_body_util::BodyExt;
    let mut send = common::bare_http2(s.port).await;
    let mut message = Vec::new();
    prost::Message::encode(&Ping { text: text.into() }, &mut message).unwrap();
    let mut body = vec![0u8];
    body.extend_from_slice(&(message.len() as u32).to_be_bytes());
    body.extend_from_slice(&message);
    let request = http::Request::post(format!("http://127.0.0.1:{}/test.Svc/Call", s.port))
        .header("content-type", "application/grpc")
        .header("te", "trailers")
        .header("grpc-timeout", timeout)
        .body(http_body_util::Full::new(bytes::Bytes::from(body)))
        .unwrap();
    let response = send.send_request(request).await.unwrap();
    let headers = response.headers().clone();
    let collected = response.into_body().collect().await.unwrap();
    let trailers = collected.trailers().cloned().unwrap_or_default();
    Status::from_header_map(&headers)
        .or_else(|| Status::from_header_map(&trailers))
        .expect("a grpc-status")
}

async fn raw(s: &Server, path: &'static str, body: Vec<u8>) -> Status {
    let mut grpc = tonic::client::Grpc::new(s.channel.clone());
    grpc.ready().await.unwrap();
    let path = http::uri::PathAndQuery::from_static(path);
    grpc.unary(
        Request::new(body),
        path,
        common::RawCodec::<Ping>::default(),
    )
    .await
    .unwrap_err()
}

fn quick() -> GatewaySettings {
    GatewaySettings {
        default_timeout: Duration::from_secs(5),
        max_request_bytes: 1024,
        ..GatewaySettings::default()
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_actor_answers_a_unary_call() {
    let s = server(quick()).await;
    assert_eq!(
        call(&s, "/test.Svc/Call", "echo:hi", None).await.unwrap(),
        "echo:hi"
    );
    // Through a pool of four routees, many times.
    for i in 0..50 {
        let text = format!("echo:{i}");
        assert_eq!(call(&s, "/test.Svc/Pool", &text, None).await.unwrap(), text);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_failure_has_its_status() {
    let s = server(quick()).await;
    let code = |r: Result<String, Status>| r.unwrap_err();

    let e = code(call(&s, "/test.Svc/Call", "fail", None).await);
    assert_eq!(
        (e.code(), e.message()),
        (Code::Internal, "the handler says no")
    );

    let e = code(call(&s, "/test.Svc/Call", "crash", None).await);
    assert_eq!(e.code(), Code::Internal, "{e:?}");
    assert!(e.message().contains("/user/service"), "{e:?}");

    // The client's deadline, shorter than the gateway's: the call ends at
    // it, not at the gateway's 5 s. (A bare HTTP/2 client: tonic's would
    // end the call itself at the same instant.)
    let started = Instant::now();
    let e = bare_call(&s, "hold", "200m").await;
    assert_eq!(e.code(), Code::DeadlineExceeded, "{e:?}");
    assert!(started.elapsed() < Duration::from_secs(3));
    let e = bare_call(&s, "echo:x", "soon").await;
    assert_eq!(e.code(), Code::InvalidArgument, "{e:?}");
    assert!(e.message().contains("grpc-timeout"), "{e:?}");

    let e = code(call(&s, "/test.Svc/Stopped", "echo:x", None).await);
    assert_eq!(e.code(), Code::Unavailable, "{e:?}");

    let e = raw(&s, "/test.Svc/Call", vec![0xff, 0xff, 0xff]).await;
    assert_eq!(e.code(), Code::InvalidArgument, "{e:?}");

    let e = raw(&s, "/test.Svc/Call", common::raw::with_text(4096)).await;
    assert_eq!(e.code(), Code::ResourceExhausted, "{e:?}");

    let e = code(call(&s, "/test.Svc/Nope", "echo:x", None).await);
    assert_eq!(e.code(), Code::Unimplemented, "{e:?}");

    // The gateway still answers after all that.
    assert_eq!(
        call(&s, "/test.Svc/Call", "echo:ok", None).await.unwrap(),
        "echo:ok"
    );
}

/// The gateway's own deadline, when the client sets none.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_gateway_deadline_applies_without_a_client_deadline() {
    let s = server(GatewaySettings {
        default_timeout: Duration::from_millis(200),
        ..quick()
    })
    .await;
    let e = call(&s, "/test.Svc/Call", "hold", None).await.unwrap_err();
    assert_eq!(e.code(), Code::DeadlineExceeded, "{e:?}");
}

/// An actor whose bounded mailbox is full sheds calls (UNAVAILABLE) at
/// once, instead of holding them until their deadline.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_full_mailbox_sheds_calls() {
    let s = server(quick()).await;
    // One call blocks the actor's thread, one fills its mailbox (capacity
    // 1); the next is refused.
    let first = tokio::spawn({
        let channel = s.channel.clone();
        async move { call_on(channel, "block").await }
    });
    wait_for("the first call to block the actor", || {
        s.gate.0.lock().unwrap().1 == 1
    })
    .await;
    let second = tokio::spawn({
        let channel = s.channel.clone();
        async move { call_on(channel, "echo:second").await }
    });
    // Queued behind the blocked one (the count includes the message
    // being handled).
    wait_for("the second call to queue", || s.service.mailbox_len() >= 2).await;
    let started = Instant::now();
    let e = call(&s, "/test.Svc/Call", "echo:third", None)
        .await
        .unwrap_err();
    assert_eq!(e.code(), Code::Unavailable, "{e:?}");
    assert!(e.message().contains("mailbox is full"), "{e:?}");
    assert!(started.elapsed() < Duration::from_secs(2));
    // Released, the first two are answered.
    {
        let (state, cv) = &*s.gate;
        state.lock().unwrap().0 = true;
        cv.notify_all();
    }
    assert_eq!(first.await.unwrap().unwrap(), "block");
    assert_eq!(second.await.unwrap().unwrap(), "echo:second");
}

async fn call_on(channel: Channel, text: &str) -> Result<String, Status> {
    let mut grpc = tonic::client::Grpc::new(channel);
    grpc.ready().await.unwrap();
    let path = http::uri::PathAndQuery::from_static("/test.Svc/Call");
    grpc.unary(
        Request::new(Ping { text: text.into() }),
        path,
        tonic_prost::ProstCodec::<Ping, Ping>::default(),
    )
    .await
    .map(|r| r.into_inner().text)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_health_check_answers_for_the_server_and_its_services() {
    let s = server(quick()).await;
    let check = |service: &str| {
        let channel = s.channel.clone();
        let service = service.to_string();
        async move {
            let mut grpc = tonic::client::Grpc::new(channel);
            grpc.ready().await.unwrap();
            grpc.unary(
                Request::new(HealthCheckRequest { service }),
                http::uri::PathAndQuery::from_static("/grpc.health.v1.Health/Check"),
                tonic_prost::ProstCodec::<HealthCheckRequest, HealthCheckResponse>::default(),
            )
            .await
            .map(|r| r.into_inner().status)
        }
    };
    assert_eq!(check("").await.unwrap(), ServingStatus::Serving as i32);
    assert_eq!(
        check("test.Svc").await.unwrap(),
        ServingStatus::Serving as i32
    );
    assert_eq!(check("other.Svc").await.unwrap_err().code(), Code::NotFound);
    s.system.terminate().await;
    assert_eq!(check("").await.unwrap(), ServingStatus::NotServing as i32);
}

/// `Health/Watch`: the current status at once, SERVICE_UNKNOWN (and the
/// call kept open) for a service the gateway has no method of, then
/// NOT_SERVING and UNAVAILABLE when the actor system stops.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_health_watch_streams_the_status_until_the_system_stops() {
    let s = server(quick()).await;
    let watch = |service: &str| {
        let channel = s.channel.clone();
        let service = service.to_string();
        async move {
            let mut grpc = tonic::client::Grpc::new(channel);
            grpc.ready().await.unwrap();
            grpc.server_streaming(
                Request::new(HealthCheckRequest { service }),
                http::uri::PathAndQuery::from_static("/grpc.health.v1.Health/Watch"),
                tonic_prost::ProstCodec::<HealthCheckRequest, HealthCheckResponse>::default(),
            )
            .await
            .unwrap()
            .into_inner()
        }
    };
    let status = |r: Option<HealthCheckResponse>| r.expect("a status").status;
    let mut server_watch = watch("").await;
    assert_eq!(
        status(server_watch.message().await.unwrap()),
        ServingStatus::Serving as i32
    );
    let mut unknown = watch("other.Svc").await;
    assert_eq!(
        status(unknown.message().await.unwrap()),
        ServingStatus::ServiceUnknown as i32
    );
    // Kept open: nothing more until the status changes.
    let more = tokio::time::timeout(Duration::from_millis(100), unknown.message()).await;
    assert!(more.is_err(), "the call stays open: {more:?}");
    s.system.terminate().await;
    assert_eq!(
        status(server_watch.message().await.unwrap()),
        ServingStatus::NotServing as i32
    );
    let end = server_watch.message().await.unwrap_err();
    assert_eq!(end.code(), Code::Unavailable, "{end:?}");
}

/// A call to a system that has terminated is UNAVAILABLE, at once.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_terminated_system_is_unavailable() {
    let s = server(quick()).await;
    s.system.terminate().await;
    for path in ["/test.Svc/Call", "/test.Svc/Pool"] {
        let e = call(&s, path, "echo:x", None).await.unwrap_err();
        assert_eq!(e.code(), Code::Unavailable, "{path}: {e:?}");
    }
}

/// 1,000 calls whose clients give up (drop the call: tonic resets the
/// stream) while the actor holds them: the gateway keeps nothing of them
/// (every ask is abandoned, every task of theirs ends), and a late reply
/// to any of them is refused.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cancelled_calls_leave_nothing_behind() {
    let s = server(GatewaySettings {
        default_timeout: Duration::from_secs(60),
        ..quick()
    })
    .await;
    // The connection's own tasks, counted after a first call.
    call(&s, "/test.Svc/Call", "echo:first", None)
        .await
        .unwrap();
    let tasks = || {
        tokio::runtime::Handle::current()
            .metrics()
            .num_alive_tasks()
    };
    let before = tasks();
    // Waves of 100, within HTTP/2's concurrent-stream limit, so that each
    // call is sent before its client gives up.
    for _ in 0..10 {
        let mut calls = Vec::new();
        for _ in 0..100 {
            let channel = s.channel.clone();
            calls.push(tokio::spawn(async move {
                let mut grpc = tonic::client::Grpc::new(channel);
                grpc.ready().await.unwrap();
                let answer = grpc.unary(
                    Request::new(Ping {
                        text: "hold".into(),
                    }),
                    http::uri::PathAndQuery::from_static("/test.Svc/Pool"),
                    tonic_prost::ProstCodec::<Ping, Ping>::default(),
                );
                // The outcome, if the call ended before its client gave up.
                tokio::time::timeout(Duration::from_millis(300), answer)
                    .await
                    .ok()
                    .map(|answer| answer.map(|r| r.into_inner().text))
            }));
        }
        for c in calls {
            let answered = c.await.unwrap();
            assert!(answered.is_none(), "a held call was answered: {answered:?}");
        }
    }
    let held: Vec<_> = std::mem::take(&mut *s.held.lock().unwrap());
    // Nearly all reached a routee before their client gave up (on a loaded
    // machine a few may not have left the client in time).
    assert!(
        held.len() > 900,
        "only {} calls reached a routee",
        held.len()
    );
    // Each ask ended with its call: its reply handle is terminated, and a
    // late reply goes to dead letters.
    wait_for("every reply handle to end", || {
        held.iter().all(|r| r.is_terminated())
    })
    .await;
    // hyper's task for each call's stream has ended with it.
    wait_for("hyper's stream tasks to end", || tasks() <= before).await;
    let before = s.system.dead_letter_count();
    for r in &held {
        r.tell(Ok(Ping {
            text: "late".into(),
        }));
    }
    assert_eq!(s.system.dead_letter_count() - before, held.len() as u64);
    drop(held);
    // And the gateway answers as before.
    assert_eq!(
        call(&s, "/test.Svc/Call", "echo:after", None)
            .await
            .unwrap(),
        "echo:after"
    );
    let _ = &s.stopped;
}
