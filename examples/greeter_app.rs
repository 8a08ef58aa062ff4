//! grpc_bench's `complex_proto` Greeter (`crates/volley-grpc/proto/
//! helloworld.proto`) answered by a pool of actors behind the gRPC
//! gateway: the message types, the actor, and the server, shared by the
//! example and its test.

use volley::{Actor, ActorSystem, Context, HandleResult, Props, ReplyTo, Router, RouterRef};
use volley_grpc::{Gateway, GatewaySettings, Reply};

/// `helloworld.HelloRequest`.
#[derive(Clone, PartialEq, prost::Message)]
pub struct HelloRequest {
    /// The greeting.
    #[prost(message, optional, tag = "1")]
    pub request: Option<Hello>,
}

/// `helloworld.HelloReply`.
#[derive(Clone, PartialEq, prost::Message)]
pub struct HelloReply {
    /// The greeting, echoed.
    #[prost(message, optional, tag = "1")]
    pub response: Option<Hello>,
}

/// `helloworld.Hello`.
#[derive(Clone, PartialEq, prost::Message)]
pub struct Hello {
    /// `name = 1`.
    #[prost(string, tag = "1")]
    pub name: String,
    /// `d = 2`.
    #[prost(double, tag = "2")]
    pub d: f64,
    /// `f = 3`.
    #[prost(float, tag = "3")]
    pub f: f32,
    /// `b = 4`.
    #[prost(bool, tag = "4")]
    pub b: bool,
    /// `n = 5`.
    #[prost(int32, tag = "5")]
    pub n: i32,
    /// `l = 6`.
    #[prost(int64, tag = "6")]
    pub l: i64,
    /// `oneof choice`.
    #[prost(oneof = "Choice", tags = "7, 8")]
    pub choice: Option<Choice>,
    /// `pets = 9`.
    #[prost(message, repeated, tag = "9")]
    pub pets: Vec<Pet>,
}

/// `helloworld.Hello.choice`.
#[derive(Clone, PartialEq, prost::Oneof)]
pub enum Choice {
    /// `c1 = 7`.
    #[prost(string, tag = "7")]
    C1(String),
    /// `c2 = 8`.
    #[prost(bool, tag = "8")]
    C2(bool),
}

/// `helloworld.Pet`.
#[derive(Clone, PartialEq, prost::Message)]
pub struct Pet {
    /// `name = 1`.
    #[prost(string, tag = "1")]
    pub name: String,
    /// `color = 2`.
    #[prost(enumeration = "Color", tag = "2")]
    pub color: i32,
}

/// `helloworld.Color`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, prost::Enumeration)]
#[repr(i32)]
pub enum Color {
    /// `BLACK = 0`.
    Black = 0,
    /// `WHITE = 1`.
    White = 1,
    /// `BLUE = 2`.
    Blue = 2,
    /// `RED = 3`.
    Red = 3,
    /// `YELLOW = 4`.
    Yellow = 4,
    /// `GREEN = 5`.
    Green = 5,
}

/// The path of `Greeter.SayHello`.
pub const SAY_HELLO: &str = "/helloworld.Greeter/SayHello";

/// A greeter's message: the request and where its reply goes.
pub type SayHello = (HelloRequest, ReplyTo<Reply<HelloReply>>);

/// Echoes the greeting back, as grpc_bench's servers do.
pub struct Greeter;

impl Actor for Greeter {
    type Msg = SayHello;
    fn handle(&mut self, _ctx: &mut Context<Self>, (hello, reply_to): SayHello) -> HandleResult {
        reply_to.tell(Ok(HelloReply {
            response: hello.request,
        }));
        Ok(())
    }
}

/// A pool of `routees` greeters on `system`, behind a gateway.
pub fn gateway(
    system: &ActorSystem,
    routees: usize,
) -> Result<(Gateway, RouterRef<SayHello>), Box<dyn std::error::Error + Send + Sync>> {
    let pool = Router::pool(routees, Props::new(|| Greeter)).spawn(system, "greeters")?;
    let gateway = Gateway::builder(system, GatewaySettings::default())
        .unary(
            SAY_HELLO,
            pool.clone(),
            |request: HelloRequest, reply_to| (request, reply_to),
        )?
        .build();
    Ok((gateway, pool))
}

/// grpc_bench's request payload.
pub fn payload() -> HelloRequest {
    HelloRequest {
        request: Some(Hello {
            name: "a name".into(),
            d: 4.55332,
            f: 232.3,
            b: true,
            n: 32,
            l: 444325235223,
            choice: Some(Choice::C1("ofcouse".into())),
            pets: vec![
                Pet {
                    name: "Bof the dog".into(),
                    color: Color::Blue as i32,
                },
                Pet {
                    name: "Kim the cat".into(),
                    color: Color::Red as i32,
                },
            ],
        }),
    }
}
