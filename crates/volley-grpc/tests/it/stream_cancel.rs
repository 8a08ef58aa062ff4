//! Cancelled server-streaming calls, by tonic's client over real HTTP/2:
//! an actor pushing without end is told when its client goes away (also
//! when it arms the watch late), a call it finishes tells it nothing, a
//! stalled client bounds what the actor sends, and 1,000 cancelled calls
//! leave nothing behind.
//!
//! The client's stream window is small (16 KiB) and the responses about
//! 1 KiB, so a client that does not read stalls the actor after a known
//! amount, whatever the machine's speed: no case depends on timing.

use crate::common;
use common::wait_for;

use std::collections::{HashMap, HashSet};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use tonic::transport::Channel;
use tonic::{Request, Status};
use volley::{Actor, ActorRef, ActorSystem, Context, HandleResult, Props, ReplyTo};
use volley_grpc::{Gateway, GatewaySettings, ResponseStream, StreamSendError};

#[derive(Clone, PartialEq, prost::Message)]
struct Ping {
    #[prost(string, tag = "1")]
    text: String,
}

const WINDOW: u32 = 16 * 1024;
const PAD: usize = 1000;
const BUFFER: usize = 4;

/// A response: its number, then padding to about 1 KiB.
fn numbered(n: u64) -> Ping {
    Ping {
        text: format!("{n:08}{}", "x".repeat(PAD)),
    }
}

fn number(ping: &Ping) -> u64 {
    ping.text[..8].parse().unwrap()
}

enum Msg {
    Start(Ping, ResponseStream<Ping>),
    Ready(u64),
    /// From `notify_when_closed`.
    Cancelled(u64),
    /// From `notify_when_ready`, when the call ended instead.
    ReadyClosed(u64),
    /// Arms `notify_when_closed` on every held call.
    ArmHeld,
    /// Answers once every message before it was handled.
    Sync(ReplyTo<()>),
}

/// What the pushing actor saw, over all its calls.
#[derive(Default)]
struct Seen {
    started: u64,
    sent: u64,
    full: u64,
    /// Calls told `Cancelled`, and how many times a call was told twice.
    cancelled: HashSet<u64>,
    told_twice: u64,
    ready_closed: u64,
    send_closed: u64,
    /// Calls the actor still holds.
    live: usize,
}

impl std::fmt::Debug for Seen {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "started {}, sent {}, full {}, told cancelled {} (twice {}), \
             ready-closed {}, send-closed {}, live {}",
            self.started,
            self.sent,
            self.full,
            self.cancelled.len(),
            self.told_twice,
            self.ready_closed,
            self.send_closed,
            self.live
        )
    }
}

/// Answers by the request's text: `endless` pushes until the call ends,
/// `three` sends three and finishes, `hold` keeps the stream unarmed.
struct Pusher {
    seen: Arc<Mutex<Seen>>,
    calls: HashMap<u64, ResponseStream<Ping>>,
    next: u64,
}

impl Pusher {
    /// Sends until the buffer is full or the call is over.
    fn pump(&mut self, ctx: &mut Context<Self>, id: u64) {
        let Some(stream) = self.calls.get(&id) else {
            return;
        };
        let mut seen = self.seen.lock().unwrap();
        loop {
            match stream.try_send(&numbered(seen.sent)) {
                Ok(()) => seen.sent += 1,
                Err(StreamSendError::Full) => {
                    seen.full += 1;
                    stream.notify_when_ready(&ctx.myself(), Msg::Ready(id), Msg::ReadyClosed(id));
                    return;
                }
                Err(StreamSendError::Closed) => {
                    seen.send_closed += 1;
                    drop(seen);
                    self.forget(id);
                    return;
                }
            }
        }
    }

    fn forget(&mut self, id: u64) {
        self.calls.remove(&id);
        self.seen.lock().unwrap().live = self.calls.len();
    }
}

impl Actor for Pusher {
    type Msg = Msg;
    fn handle(&mut self, ctx: &mut Context<Self>, msg: Msg) -> HandleResult {
        match msg {
            Msg::Start(ping, stream) => {
                let id = self.next;
                self.next += 1;
                self.seen.lock().unwrap().started += 1;
                match ping.text.as_str() {
                    "three" => {
                        stream.notify_when_closed(&ctx.myself(), Msg::Cancelled(id));
                        for n in 0..3 {
                            // A client that went away already is no failure.
                            let _ = stream.try_send(&numbered(n));
                        }
                        stream.finish(Ok(()));
                    }
                    "hold" => {
                        self.calls.insert(id, stream);
                    }
                    _ => {
                        stream.notify_when_closed(&ctx.myself(), Msg::Cancelled(id));
                        self.calls.insert(id, stream);
                        self.pump(ctx, id);
                    }
                }
                self.seen.lock().unwrap().live = self.calls.len();
            }
            Msg::Ready(id) => self.pump(ctx, id),
            Msg::Cancelled(id) => {
                let mut seen = self.seen.lock().unwrap();
                if !seen.cancelled.insert(id) {
                    seen.told_twice += 1;
                }
                drop(seen);
                self.forget(id);
            }
            Msg::ReadyClosed(id) => {
                self.seen.lock().unwrap().ready_closed += 1;
                self.forget(id);
            }
            Msg::ArmHeld => {
                for (id, stream) in &self.calls {
                    stream.notify_when_closed(&ctx.myself(), Msg::Cancelled(*id));
                }
            }
            Msg::Sync(reply_to) => reply_to.tell(()),
        }
        Ok(())
    }
}

struct Server {
    _system: ActorSystem,
    gateway: Gateway,
    pusher: ActorRef<Msg>,
    channel: Channel,
    seen: Arc<Mutex<Seen>>,
    _served: common::Served,
}

impl Server {
    async fn start() -> Server {
        let system = ActorSystem::new("grpc-stream-cancel-test").unwrap();
        let seen = Arc::new(Mutex::new(Seen::default()));
        let s = seen.clone();
        let pusher = system
            .spawn(
                "pusher",
                Props::new(move || Pusher {
                    seen: s.clone(),
                    calls: HashMap::new(),
                    next: 0,
                }),
            )
            .unwrap();
        let settings = GatewaySettings {
            stream_buffer: BUFFER,
            default_timeout: Duration::from_secs(120),
            ..GatewaySettings::default()
        };
        let gateway = Gateway::builder(&system, settings)
            .server_streaming("/test.Svc/Push", pusher.clone(), |p: Ping, s| {
                Msg::Start(p, s)
            })
            .unwrap()
            .build();
        let served = common::Served::start(gateway.clone()).await;
        let channel = served
            .endpoint()
            .initial_stream_window_size(WINDOW)
            .connect()
            .await
            .unwrap();
        Server {
            _system: system,
            gateway,
            pusher,
            channel,
            seen,
            _served: served,
        }
    }

    async fn open(&self, text: &str) -> tonic::Streaming<Ping> {
        open_on(self.channel.clone(), text).await.unwrap()
    }

    /// A call the actor finishes after three responses, read to its OK.
    async fn three(&self) {
        let mut stream = self.open("three").await;
        for n in 0..3 {
            assert_eq!(number(&stream.message().await.unwrap().unwrap()), n);
        }
        assert!(stream.message().await.unwrap().is_none());
    }

    /// Waits until the actor has handled every message sent to it so far.
    async fn sync(&self) {
        self.pusher
            .ask(Msg::Sync, Duration::from_secs(30))
            .await
            .unwrap();
    }
}

async fn open_on(channel: Channel, text: &str) -> Result<tonic::Streaming<Ping>, Status> {
    let mut grpc = tonic::client::Grpc::new(channel);
    grpc.ready().await.unwrap();
    let codec = tonic_prost::ProstCodec::<Ping, Ping>::default();
    let path = http::uri::PathAndQuery::from_static("/test.Svc/Push");
    grpc.server_streaming(Request::new(Ping { text: text.into() }), path, codec)
        .await
        .map(|r| r.into_inner())
}

/// Waits for `what`; after 30 s fails the test, saying `why` and what
/// `state` describes then (which the testkit's waits cannot print).
async fn wait_for_or<S: std::fmt::Debug>(
    why: &str,
    mut what: impl FnMut() -> bool,
    state: impl Fn() -> S,
) {
    let start = Instant::now();
    while !what() {
        assert!(
            start.elapsed() < Duration::from_secs(30),
            "timed out: {why}; {:?}",
            state()
        );
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
}

fn alive_tasks() -> usize {
    tokio::runtime::Handle::current()
        .metrics()
        .num_alive_tasks()
}

/// The window's worth of responses, then what the call's buffer, hyper's
/// one chunk waiting for capacity and h2's one partly sent frame hold.
const STALL_BOUND: u64 = WINDOW as u64 / PAD as u64 + BUFFER as u64 + 2;

#[tokio::test]
async fn cancellation_reaches_the_actor() {
    let s = Server::start().await;
    let stream = s.open("endless").await;
    // Not reading: the window fills, then the buffer, and the actor waits
    // for room that never comes. The call cannot have ended by itself.
    let seen = s.seen.clone();
    wait_for("the actor stalls", || {
        let seen = seen.lock().unwrap();
        seen.full >= 1 && seen.sent >= u64::from(WINDOW) / PAD as u64
    })
    .await;
    drop(stream);
    wait_for("the actor hears of the cancel", || {
        seen.lock().unwrap().cancelled.len() == 1
    })
    .await;
    wait_for("the gateway lets the call go", || {
        s.gateway.open_streams() == 0
    })
    .await;
    s.sync().await;
    let seen = seen.lock().unwrap();
    assert_eq!(seen.told_twice, 0, "{seen:?}");
    assert_eq!(seen.live, 0, "{seen:?}");
}

#[tokio::test]
async fn a_stalled_client_bounds_what_the_actor_sends() {
    let s = Server::start().await;
    let mut stream = s.open("endless").await;
    let seen = s.seen.clone();
    wait_for("the actor stalls", || seen.lock().unwrap().full >= 1).await;
    // Time for an unbounded sender to run far past the bound.
    tokio::time::sleep(Duration::from_millis(300)).await;
    let sent = seen.lock().unwrap().sent;
    assert!(sent <= STALL_BOUND, "{sent} sent to a stalled client");
    // Reading lets it go on, in order.
    for n in 0..(3 * STALL_BOUND) {
        let ping = stream.message().await.unwrap().unwrap();
        assert_eq!(number(&ping), n);
    }
    assert!(seen.lock().unwrap().sent >= 3 * STALL_BOUND);
}

#[tokio::test]
async fn a_watch_armed_after_the_cancel_still_fires() {
    let s = Server::start().await;
    let stream = s.open("hold").await;
    drop(stream);
    wait_for("the gateway lets the call go", || {
        s.gateway.open_streams() == 0
    })
    .await;
    s.pusher.tell(Msg::ArmHeld);
    wait_for("the late watch fires", || {
        s.seen.lock().unwrap().cancelled.len() == 1
    })
    .await;
}

#[tokio::test]
async fn a_call_the_actor_finishes_tells_it_no_cancellation() {
    let s = Server::start().await;
    // The first call also sets the client's connection up.
    s.three().await;
    let before = alive_tasks();
    s.three().await;
    // The calls are let go and their closed watches have run out.
    wait_for("the calls are let go", || s.gateway.open_streams() == 0).await;
    wait_for("the watches end", || alive_tasks() <= before).await;
    s.sync().await;
    let seen = s.seen.lock().unwrap();
    assert_eq!(seen.started, 2, "{seen:?}");
    assert!(seen.cancelled.is_empty(), "{seen:?}");
}

/// 1,000 calls whose clients go away while their actor pushes: each call
/// tells the actor exactly once, and the gateway, the runtime and the
/// actor hold nothing of them afterwards.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_thousand_cancelled_streams_leave_nothing_behind() {
    // Waves of 40: an h2 client remembers its last 50 reset streams; data
    // already in flight for one it forgot is answered with a reset of its
    // own, and after 1,024 of those in a connection's life it closes the
    // connection (GOAWAY ENHANCE_YOUR_CALM). Larger waves on a loaded
    // machine reach that (docs/operations.md).
    const WAVES: usize = 25;
    const PER_WAVE: usize = 40;
    let s = Server::start().await;
    // One call first, so that the connection's own tasks are counted.
    s.three().await;
    wait_for("the first call ends", || s.gateway.open_streams() == 0).await;
    let before = alive_tasks();
    for _ in 0..WAVES {
        let mut wave = Vec::new();
        for _ in 0..PER_WAVE {
            let channel = s.channel.clone();
            wave.push(tokio::spawn(async move {
                let mut stream = open_on(channel, "endless").await.unwrap();
                // A response arrived: the actor is pushing.
                stream.message().await.unwrap().unwrap();
                stream
            }));
        }
        let mut streams = Vec::new();
        for call in wave {
            streams.push(call.await.unwrap());
        }
        assert!(s.gateway.open_streams() >= PER_WAVE);
        drop(streams);
    }
    let calls = (WAVES * PER_WAVE) as u64;
    let seen = s.seen.clone();
    let state = || {
        let seen = seen.lock().unwrap();
        format!(
            "{calls} calls, {seen:?}, open {}, tasks {} (before {before})",
            s.gateway.open_streams(),
            alive_tasks()
        )
    };
    wait_for_or(
        "every actor call hears of its cancel",
        || seen.lock().unwrap().cancelled.len() as u64 == calls,
        state,
    )
    .await;
    wait_for_or(
        "the gateway lets every call go",
        || s.gateway.open_streams() == 0,
        state,
    )
    .await;
    wait_for_or("the calls' tasks end", || alive_tasks() <= before, state).await;
    s.sync().await;
    {
        let seen = seen.lock().unwrap();
        assert_eq!(seen.started, calls + 1, "{seen:?}");
        assert_eq!(seen.told_twice, 0, "{seen:?}");
        assert_eq!(seen.live, 0, "{seen:?}");
    }
    // The connection still serves.
    s.three().await;
}
