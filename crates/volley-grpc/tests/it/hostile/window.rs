//! A client that shuts its flow-control window and never opens it: the
//! responses of a streaming call back up into the call's bounded buffer,
//! and at the deadline the actor is told the call is closed, though hyper
//! never polls the call again.

use tokio::sync::mpsc;
use volley::{Actor, ActorSystem, Context, HandleResult, Props};
use volley_grpc::{Gateway, GatewaySettings, ResponseStream, StreamSendError};

use super::frames::*;
use super::ping_message;
use crate::common;
use crate::echo_server::Ping;

const FLOOD: &str = "/test.Svc/Flood";

enum Msg {
    Start(Ping, ResponseStream<Ping>),
    Closed,
}

/// Sends until the buffer is full, then waits to hear that the call
/// closed; tells the test how many it sent and what `try_send` says then.
struct Flooder {
    stream: Option<ResponseStream<Ping>>,
    report: mpsc::UnboundedSender<(usize, Result<(), StreamSendError>)>,
    sent: usize,
}

impl Actor for Flooder {
    type Msg = Msg;
    fn handle(&mut self, ctx: &mut Context<Self>, msg: Msg) -> HandleResult {
        match msg {
            Msg::Start(ping, stream) => {
                stream.notify_when_closed(&ctx.myself(), Msg::Closed);
                while stream.try_send(&ping).is_ok() {
                    self.sent += 1;
                }
                self.stream = Some(stream);
            }
            Msg::Closed => {
                let stream = self.stream.take().expect("a call");
                let after = stream.try_send(&Ping::default());
                let _ = self.report.send((self.sent, after));
            }
        }
        Ok(())
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stream_to_a_shut_window_is_closed_to_the_actor_at_the_deadline() {
    let system = ActorSystem::new("grpc-window").unwrap();
    let (report, mut reports) = mpsc::unbounded_channel();
    let flooder = system
        .spawn(
            "flooder",
            Props::new(move || Flooder {
                stream: None,
                report: report.clone(),
                sent: 0,
            }),
        )
        .unwrap();
    let settings = GatewaySettings {
        stream_buffer: 4,
        ..GatewaySettings::default()
    };
    let gateway = Gateway::builder(&system, settings)
        .server_streaming(FLOOD, flooder, Msg::Start)
        .unwrap()
        .build();
    let served = common::Served::start(gateway.clone()).await;
    let mut raw = RawH2::handshake(served.port, &[(INITIAL_WINDOW_SIZE, 0)]).await;
    let mut headers = grpc_request(FLOOD);
    literal(&mut headers, "grpc-timeout", b"300m");
    raw.send(&frame(HEADERS, END_HEADERS, 1, &headers)).await;
    raw.send(&frame(
        DATA,
        END_STREAM,
        1,
        &ping_message(&"p".repeat(1000)),
    ))
    .await;
    let max = volley_testkit::default_timeout();
    let (sent, after) = tokio::time::timeout(max, reports.recv())
        .await
        .expect("the actor told the call closed in time")
        .unwrap();
    // The buffer, and at most the one response hyper took before it
    // found the window shut.
    assert!(sent <= 4 + 1, "{sent} responses taken");
    assert_eq!(after, Err(StreamSendError::Closed));
    assert_eq!(
        gateway.open_streams(),
        1,
        "the stream itself waits on the client"
    );
    drop(raw);
    common::wait_for("the stream let go", || gateway.open_streams() == 0).await;
}
