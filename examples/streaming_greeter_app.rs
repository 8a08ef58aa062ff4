//! A server-streaming greeter: `helloworld.Greeter/SayHellos` answers one
//! request with `request.n` replies, each echoing the request with `n` set
//! to its index. The actor pushes until the call's buffer is full and
//! carries on when the gateway tells it there is room again, so a slow
//! client slows it down without blocking its thread.

use volley::{Actor, ActorSystem, Context, HandleResult, Props};
use volley_grpc::{Gateway, GatewaySettings, ResponseStream, StreamSendError};

use crate::greeter_app::{HelloReply, HelloRequest};

/// The streaming method's path.
pub const SAY_HELLOS: &str = "/helloworld.Greeter/SayHellos";

/// The greeter's messages.
pub enum Msg {
    /// A call: the request and its response stream.
    Start(HelloRequest, ResponseStream<HelloReply>),
    /// The call's buffer has room again.
    Ready,
    /// The call ended before the greeter finished it.
    Closed,
}

/// Streams one call at a time; a call that arrives meanwhile is refused.
#[derive(Default)]
pub struct StreamingGreeter {
    call: Option<(HelloRequest, i32, ResponseStream<HelloReply>)>,
}

impl StreamingGreeter {
    fn pump(&mut self, ctx: &mut Context<Self>) {
        let Some((request, mut next, stream)) = self.call.take() else {
            return;
        };
        let total = request.request.as_ref().map_or(0, |h| h.n.max(0));
        while next < total {
            let mut hello = request.request.clone().unwrap_or_default();
            hello.n = next;
            match stream.try_send(&HelloReply {
                response: Some(hello),
            }) {
                Ok(()) => next += 1,
                Err(StreamSendError::Full) => {
                    stream.notify_when_ready(&ctx.myself(), Msg::Ready, Msg::Closed);
                    self.call = Some((request, next, stream));
                    return;
                }
                // The client went away: nothing more to do for it.
                Err(StreamSendError::Closed) => return,
            }
        }
        stream.finish(Ok(()));
    }
}

impl Actor for StreamingGreeter {
    type Msg = Msg;
    fn handle(&mut self, ctx: &mut Context<Self>, msg: Msg) -> HandleResult {
        match msg {
            Msg::Start(request, stream) => {
                if self.call.is_some() {
                    stream.finish(Err(tonic::Status::unavailable("busy with another call")));
                } else {
                    self.call = Some((request, 0, stream));
                    self.pump(ctx);
                }
            }
            Msg::Ready => self.pump(ctx),
            Msg::Closed => self.call = None,
        }
        Ok(())
    }
}

/// A gateway serving [`SAY_HELLOS`] from one streaming greeter.
pub fn gateway(system: &ActorSystem) -> Result<Gateway, Box<dyn std::error::Error + Send + Sync>> {
    let greeter = system.spawn("streaming-greeter", Props::new(StreamingGreeter::default))?;
    Ok(Gateway::builder(system, GatewaySettings::default())
        .server_streaming(SAY_HELLOS, greeter, |r: HelloRequest, s| Msg::Start(r, s))?
        .build())
}
