//! The servers `grpc` loads, each run as `volley-bench grpc-server KIND
//! PORT` in a process of its own (pinned to its CPU by the driver): the
//! volley gateway on either dispatcher, and a bare tonic Greeter as
//! grpc_bench's `rust_tonic_mt` builds it.

use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};

use volley::{ActorSystem, DispatcherKind, DispatcherSettings, Settings};
use volley_examples::greeter_app::{gateway, HelloReply, HelloRequest};

/// The hidden subcommand's name.
pub const SERVER_COMMAND: &str = "grpc-server";

/// Serves `args[0]` (`volley-default`, `volley-app-runtime`, `tonic`) on
/// 127.0.0.1:`args[1]` until stdin closes.
pub fn serve(args: &[String]) -> crate::Result<()> {
    let [kind, port] = args else {
        return Err("usage: grpc-server KIND PORT".into());
    };
    let port: u16 = port.parse()?;
    let threads = std::thread::available_parallelism().map_or(1, |n| n.get());
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(threads)
        .enable_all()
        .build()?;
    rt.block_on(async move {
        let listener = tokio::net::TcpListener::bind(("127.0.0.1", port)).await?;
        let stop = stdin_closed();
        match kind.as_str() {
            "volley-default" => {
                let system = ActorSystem::new("grpc-bench")?;
                let (gateway, _pool) = gateway(&system, 4)?;
                println!("ready");
                volley_grpc::serve(listener, gateway, stop).await?;
            }
            "volley-app-runtime" => {
                let settings = Settings {
                    default_dispatcher: DispatcherSettings {
                        kind: DispatcherKind::AppRuntime,
                        ..DispatcherSettings::default()
                    },
                    ..Settings::default()
                };
                let system = ActorSystem::with_runtime(
                    "grpc-bench",
                    settings,
                    tokio::runtime::Handle::current(),
                )?;
                let (gateway, _pool) = gateway(&system, 4)?;
                println!("ready");
                volley_grpc::serve(listener, gateway, stop).await?;
            }
            "tonic" => {
                let incoming =
                    tonic::transport::server::TcpIncoming::from(listener).with_nodelay(Some(true));
                println!("ready");
                tonic::transport::Server::builder()
                    .add_service(TonicGreeter)
                    .serve_with_incoming_shutdown(incoming, stop)
                    .await?;
            }
            other => return Err(format!("unknown server {other:?}").into()),
        }
        Ok(())
    })
}

/// Resolves when the driver closes our stdin (or dies).
pub(crate) fn stdin_closed() -> impl Future<Output = ()> {
    let (tx, rx) = tokio::sync::oneshot::channel::<()>();
    std::thread::spawn(move || {
        let mut sink = Vec::new();
        let _ = std::io::Read::read_to_end(&mut std::io::stdin(), &mut sink);
        let _ = tx.send(());
    });
    async move {
        let _ = rx.await;
    }
}

/// tonic's Greeter, written as its code generator writes one (the bench
/// builds without protoc): echoes the request.
#[derive(Clone)]
struct TonicGreeter;

impl tonic::server::NamedService for TonicGreeter {
    const NAME: &'static str = "helloworld.Greeter";
}

struct SayHello;

impl tonic::server::UnaryService<HelloRequest> for SayHello {
    type Response = HelloReply;
    type Future = std::future::Ready<Result<tonic::Response<HelloReply>, tonic::Status>>;
    fn call(&mut self, request: tonic::Request<HelloRequest>) -> Self::Future {
        std::future::ready(Ok(tonic::Response::new(HelloReply {
            response: request.into_inner().request,
        })))
    }
}

type BoxFuture<T> = Pin<Box<dyn Future<Output = T> + Send>>;

impl<B> tower::Service<http::Request<B>> for TonicGreeter
where
    B: tonic::codegen::Body + Send + 'static,
    B::Error: Into<tonic::codegen::StdError> + Send + 'static,
{
    type Response = http::Response<tonic::body::Body>;
    type Error = std::convert::Infallible;
    type Future = BoxFuture<Result<Self::Response, Self::Error>>;

    fn poll_ready(&mut self, _cx: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, request: http::Request<B>) -> Self::Future {
        if request.uri().path() != "/helloworld.Greeter/SayHello" {
            return Box::pin(async {
                Ok(tonic::Status::unimplemented("no such method").into_http())
            });
        }
        Box::pin(async move {
            let codec = tonic_prost::ProstCodec::<HelloReply, HelloRequest>::default();
            let mut grpc = tonic::server::Grpc::new(codec);
            Ok(grpc.unary(SayHello, request).await)
        })
    }
}
