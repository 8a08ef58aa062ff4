//! A gateway with one unary method, `/test.Svc/Call`, answered by an echo
//! actor that counts the calls it was asked: what the limits and hostile
//! client tests attack.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use tonic::{Request, Status};
use volley::{Actor, ActorSystem, Context, HandleResult, Props, ReplyTo};
use volley_grpc::{Gateway, GatewaySettings, Reply};

use crate::common;

#[derive(Clone, PartialEq, prost::Message)]
pub struct Ping {
    #[prost(string, tag = "1")]
    pub text: String,
}

type Call = (Ping, ReplyTo<Reply<Ping>>);

/// Echoes, counting the calls it was asked.
struct CountingEcho(Arc<AtomicUsize>);

impl Actor for CountingEcho {
    type Msg = Call;
    fn handle(&mut self, _ctx: &mut Context<Self>, (ping, reply_to): Call) -> HandleResult {
        self.0.fetch_add(1, Ordering::Relaxed);
        reply_to.tell(Ok(ping));
        Ok(())
    }
}

/// The echo method's path.
pub const PATH: &str = "/test.Svc/Call";

pub struct Server {
    _system: ActorSystem,
    pub gateway: Gateway,
    pub served: common::Served,
    asked: Arc<AtomicUsize>,
}

/// The echo gateway with `settings`, served on a local port.
pub async fn server(settings: GatewaySettings) -> Server {
    let system = ActorSystem::new("grpc-echo").unwrap();
    let asked = Arc::new(AtomicUsize::new(0));
    let counter = asked.clone();
    let echo = system
        .spawn("echo", Props::new(move || CountingEcho(counter.clone())))
        .unwrap();
    let gateway = Gateway::builder(&system, settings)
        .unary(PATH, echo, |p: Ping, r| (p, r))
        .unwrap()
        .build();
    let served = common::Served::start(gateway.clone()).await;
    Server {
        _system: system,
        gateway,
        served,
        asked,
    }
}

impl Server {
    /// How many calls reached the actor.
    pub fn asked(&self) -> usize {
        self.asked.load(Ordering::Relaxed)
    }

    /// One call with `text`, by tonic's client on a new connection.
    pub async fn call(&self, text: String) -> Result<String, Status> {
        let channel = self.served.endpoint().connect().await.unwrap();
        let mut grpc = tonic::client::Grpc::new(channel);
        grpc.ready().await.unwrap();
        let codec = tonic_prost::ProstCodec::<Ping, Ping>::default();
        let path = http::uri::PathAndQuery::from_static(PATH);
        grpc.unary(Request::new(Ping { text }), path, codec)
            .await
            .map(|r| r.into_inner().text)
    }

    /// An ordinary call answers: the gateway still serves.
    pub async fn still_answers(&self) {
        assert_eq!(self.call("after".into()).await.unwrap(), "after");
    }
}
