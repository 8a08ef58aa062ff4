//! The gateway: tables of unary and server-streaming methods by path,
//! served as one HTTP/2 service.
//!
//! Each call is handled inside the connection's own future: the body is
//! read whole within the call's deadline (bounded by `max_request_bytes`,
//! and with every other body being read by `max_buffered_request_bytes`,
//! `request_body.rs`), the one message decoded in
//! place, the actor asked, the reply encoded once into the single data
//! frame of the response. That is Akka gRPC's "strict" unary path: no
//! stream machinery per call beyond HTTP/2's own.

use std::collections::HashMap;
use std::convert::Infallible;
use std::future::Future;
use std::marker::PhantomData;
use std::pin::Pin;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

use http::header::{HeaderValue, CONTENT_TYPE};
use http::{HeaderMap, Request, Response, StatusCode};
use http_body::Body;
use tonic::Status;
use volley::net::{ConnectionGate, ConnectionLimits};
use volley::{ActorRef, ActorSystem, ReplyTo};

use crate::body::UnaryBody;
use crate::frame::{self, PREFIX_LEN};
use crate::health::HealthCheck;
use crate::http2_limits::Http2Limits;
use crate::metadata::{Call, TypedWithMetadata, WithMetadata};
use crate::request_body::{read_whole, RequestBudget};
use crate::streaming::{request_only, ResponseStream, StreamBody, StreamingMethod, TypedStream};
use crate::unary::{AskTarget, Reply, Typed, UnaryMethod, UnaryReply};

const GRPC: HeaderValue = HeaderValue::from_static("application/grpc");

/// How the gateway treats calls.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GatewaySettings {
    /// How long an actor has to answer when the client sets no deadline
    /// (`grpc-timeout`); a client's shorter deadline wins. Default 10 s.
    pub default_timeout: Duration,
    /// Largest request message taken; a larger one is answered
    /// RESOURCE_EXHAUSTED without being read further. Default 4 MiB,
    /// gRPC's own default.
    pub max_request_bytes: usize,
    /// How many encoded responses a server-streaming call holds before
    /// its actor's `try_send` answers `Full`. Default 16.
    pub stream_buffer: usize,
    /// Request bytes held at once by every call being read, together: a
    /// call whose body finds them spent is answered RESOURCE_EXHAUSTED.
    /// Default 64 MiB.
    pub max_buffered_request_bytes: usize,
    /// What [`crate::serve`]'s listener keeps open: connections in all and
    /// per IP (default 4,096 each), and how long a new connection has to
    /// send HTTP/2's 24-byte preface (default 10 s).
    pub connections: ConnectionLimits,
    /// What one HTTP/2 connection may open, send and leave unread:
    /// concurrent streams, header list size, keep-alive, reset streams
    /// (see [`Http2Limits`] for each and its default).
    pub http2: Http2Limits,
}

/// The length of HTTP/2's connection preface.
const H2_PREFACE_LEN: usize = 24;

impl Default for GatewaySettings {
    fn default() -> Self {
        GatewaySettings {
            default_timeout: Duration::from_secs(10),
            max_request_bytes: 4 * 1024 * 1024,
            stream_buffer: 16,
            max_buffered_request_bytes: 64 * 1024 * 1024,
            connections: ConnectionLimits {
                max_connections: 4096,
                max_connections_per_ip: 4096,
                handshake_timeout: Duration::from_secs(10),
                first_bytes: H2_PREFACE_LEN,
            },
            http2: Http2Limits::default(),
        }
    }
}

/// A method could not be added.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum GatewayError {
    /// The path is not `/package.Service/Method`.
    #[error("{0:?} is not a gRPC method path (/package.Service/Method)")]
    BadPath(String),
    /// The path was added before.
    #[error("the method {0} is added twice")]
    Duplicate(String),
    /// The file descriptor sets given for reflection cannot be read.
    #[error("the file descriptor sets for reflection cannot be read: {0}")]
    BadDescriptors(String),
}

/// Builds a [`Gateway`]: one call of [`GatewayBuilder::unary`] or
/// [`GatewayBuilder::server_streaming`] per method.
pub struct GatewayBuilder {
    system: ActorSystem,
    settings: GatewaySettings,
    methods: HashMap<String, Box<dyn UnaryMethod>>,
    streams: HashMap<String, Box<dyn StreamingMethod>>,
    open_streams: Arc<AtomicUsize>,
    #[cfg(feature = "reflection")]
    reflection: Option<crate::reflection::Reflection>,
}

impl GatewayBuilder {
    /// Serves gRPC server reflection (`grpc.reflection.v1` and
    /// `v1alpha`, for grpcurl and the like) over the encoded
    /// `FileDescriptorSet`s given: those of the services behind the
    /// gateway, as `tonic_prost_build`'s `file_descriptor_set_path` or
    /// `protoc --descriptor_set_out` write them. Opt-in, with the
    /// `reflection` feature; without it no reflection method exists.
    #[cfg(feature = "reflection")]
    pub fn reflection(
        mut self,
        file_descriptor_sets: &[&'static [u8]],
    ) -> Result<Self, GatewayError> {
        let reflection = crate::reflection::Reflection::new(file_descriptor_sets)
            .map_err(|e| GatewayError::BadDescriptors(e.to_string()))?;
        self.reflection = Some(reflection);
        Ok(self)
    }

    /// Answers the server-streaming method at `path` by telling `target`
    /// the message `make` builds from the decoded request and a
    /// [`ResponseStream`]. The actor sends responses through it with
    /// `try_send` and ends the call with `finish`.
    pub fn server_streaming<Req, Resp, M, F>(
        self,
        path: &str,
        target: ActorRef<M>,
        make: F,
    ) -> Result<Self, GatewayError>
    where
        Req: prost::Message + Default + Send + 'static,
        Resp: prost::Message + Send + 'static,
        M: Send + 'static,
        F: Fn(Req, ResponseStream<Resp>) -> M + Send + Sync + 'static,
    {
        self.add_stream(path, target, request_only, make)
    }

    /// Like [`GatewayBuilder::server_streaming`], with the request's
    /// custom metadata: `make` gets the request as a [`Call`]. (Response
    /// headers and trailers of the actor's choosing: not yet on streams.)
    pub fn server_streaming_with_metadata<Req, Resp, M, F>(
        self,
        path: &str,
        target: ActorRef<M>,
        make: F,
    ) -> Result<Self, GatewayError>
    where
        Req: prost::Message + Default + Send + 'static,
        Resp: prost::Message + Send + 'static,
        M: Send + 'static,
        F: Fn(Call<Req>, ResponseStream<Resp>) -> M + Send + Sync + 'static,
    {
        self.add_stream(path, target, Call::from_request, make)
    }

    fn add_stream<Req, In, Resp, M, F>(
        mut self,
        path: &str,
        target: ActorRef<M>,
        input: fn(Req, &HeaderMap) -> In,
        make: F,
    ) -> Result<Self, GatewayError>
    where
        Req: prost::Message + Default + Send + 'static,
        In: Send + 'static,
        Resp: prost::Message + Send + 'static,
        M: Send + 'static,
        F: Fn(In, ResponseStream<Resp>) -> M + Send + Sync + 'static,
    {
        check_path(path)?;
        if self.methods.contains_key(path) || self.streams.contains_key(path) {
            return Err(GatewayError::Duplicate(path.to_string()));
        }
        let method = TypedStream {
            path: path.to_string(),
            target,
            input,
            make,
            buffer: self.settings.stream_buffer,
            open: self.open_streams.clone(),
            types: PhantomData,
        };
        self.streams.insert(path.to_string(), Box::new(method));
        Ok(self)
    }

    /// Answers the unary method at `path` (`/package.Service/Method`) by
    /// asking `target` (an actor or a router) the message `make` builds
    /// from the decoded request and a reply handle. The actor replies
    /// `Ok(response)`, or `Err(status)` to fail the call with a status of
    /// its choosing.
    pub fn unary<Req, Resp, M, T, F>(
        self,
        path: &str,
        target: T,
        make: F,
    ) -> Result<Self, GatewayError>
    where
        Req: prost::Message + Default + Send + 'static,
        Resp: prost::Message + Send + 'static,
        M: Send + 'static,
        T: AskTarget<M>,
        F: Fn(Req, ReplyTo<Reply<Resp>>) -> M + Send + Sync + 'static,
    {
        let method = Typed {
            target,
            make,
            types: PhantomData,
        };
        self.add_unary(path, Box::new(method))
    }

    /// Like [`GatewayBuilder::unary`], with metadata both ways: `make`
    /// gets the request as a [`Call`], its message and the client's custom
    /// metadata (`authorization` and the like), and the actor replies
    /// [`WithMetadata`], whose headers and trailers go out with the
    /// response. An `Err(status)` sends the status's own metadata, as with
    /// `unary`.
    pub fn unary_with_metadata<Req, Resp, M, T, F>(
        self,
        path: &str,
        target: T,
        make: F,
    ) -> Result<Self, GatewayError>
    where
        Req: prost::Message + Default + Send + 'static,
        Resp: prost::Message + Send + 'static,
        M: Send + 'static,
        T: AskTarget<M>,
        F: Fn(Call<Req>, ReplyTo<Reply<WithMetadata<Resp>>>) -> M + Send + Sync + 'static,
    {
        let method = TypedWithMetadata {
            target,
            make,
            types: PhantomData,
        };
        self.add_unary(path, Box::new(method))
    }

    fn add_unary(mut self, path: &str, method: Box<dyn UnaryMethod>) -> Result<Self, GatewayError> {
        check_path(path)?;
        if self.methods.contains_key(path) || self.streams.contains_key(path) {
            return Err(GatewayError::Duplicate(path.to_string()));
        }
        self.methods.insert(path.to_string(), method);
        Ok(self)
    }

    /// The gateway, with the health service added: `Check` answers
    /// SERVING for the whole server (`""`) and each service with a method
    /// here while the actor system runs, NOT_SERVING after; `Watch` sends
    /// the same (SERVICE_UNKNOWN for other services) and NOT_SERVING when
    /// the system stops, from an actor of the gateway's own (anonymous,
    /// under `/user`). Methods registered at those paths take precedence.
    pub fn build(mut self) -> Gateway {
        let health = HealthCheck::new(
            self.system.clone(),
            self.methods.keys().chain(self.streams.keys()),
        );
        let services = health.services();
        if !self.streams.contains_key(crate::health_watch::WATCH_PATH) {
            // A system that is already stopping gets no Watch: the call is
            // then UNIMPLEMENTED, and Check says NOT_SERVING.
            if let Ok(watchers) = self.system.spawn_anonymous(volley::Props::new(move || {
                crate::health_watch::Watchers::new(services.clone())
            })) {
                self.streams.insert(
                    crate::health_watch::WATCH_PATH.to_string(),
                    Box::new(TypedStream {
                        path: crate::health_watch::WATCH_PATH.to_string(),
                        target: watchers,
                        input: request_only,
                        make: crate::health_watch::WatchMsg::Watch,
                        buffer: self.settings.stream_buffer,
                        open: self.open_streams.clone(),
                        types: PhantomData,
                    }),
                );
            }
        }
        self.methods
            .entry(crate::health::CHECK_PATH.to_string())
            .or_insert_with(|| Box::new(health));
        Gateway {
            inner: Arc::new(Inner {
                methods: self.methods,
                streams: self.streams,
                budget: RequestBudget::new(self.settings.max_buffered_request_bytes),
                gate: ConnectionGate::new("grpc", self.settings.connections.clone()),
                settings: self.settings,
                open_streams: self.open_streams,
                #[cfg(feature = "reflection")]
                reflection: self.reflection,
            }),
        }
    }
}

fn check_path(path: &str) -> Result<(), GatewayError> {
    let bad = || GatewayError::BadPath(path.to_string());
    let rest = path.strip_prefix('/').ok_or_else(bad)?;
    let (service, method) = rest.split_once('/').ok_or_else(bad)?;
    let fine = |s: &str| {
        !s.is_empty()
            && s.chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '.')
    };
    if fine(service) && fine(method) && !method.contains('.') {
        Ok(())
    } else {
        Err(bad())
    }
}

/// Actors behind gRPC methods: an HTTP/2 service, cheap to clone. Serve it
/// with [`crate::serve`], or mount it in a tower-based server (tonic,
/// axum) as a `tower::Service`.
#[derive(Clone)]
pub struct Gateway {
    inner: Arc<Inner>,
}

struct Inner {
    methods: HashMap<String, Box<dyn UnaryMethod>>,
    streams: HashMap<String, Box<dyn StreamingMethod>>,
    settings: GatewaySettings,
    open_streams: Arc<AtomicUsize>,
    budget: RequestBudget,
    gate: Arc<ConnectionGate>,
    #[cfg(feature = "reflection")]
    reflection: Option<crate::reflection::Reflection>,
}

impl Gateway {
    /// A gateway for actors of `system`.
    pub fn builder(system: &ActorSystem, settings: GatewaySettings) -> GatewayBuilder {
        GatewayBuilder {
            system: system.clone(),
            settings,
            methods: HashMap::new(),
            streams: HashMap::new(),
            open_streams: Arc::new(AtomicUsize::new(0)),
            #[cfg(feature = "reflection")]
            reflection: None,
        }
    }

    /// How many server-streaming calls are in progress: started, and not
    /// yet ended and let go by the HTTP/2 server (a call the client
    /// cancelled is let go when its stream is reset). Unary calls hold
    /// nothing of the gateway's between their request and their reply.
    pub fn open_streams(&self) -> usize {
        self.inner.open_streams.load(Ordering::Relaxed)
    }

    /// The gate [`crate::serve`] admits connections through: how many
    /// are open, and how many were refused and why.
    pub fn connection_gate(&self) -> &Arc<ConnectionGate> {
        &self.inner.gate
    }

    /// Request bytes the gateway could still take from bodies being read
    /// (`max_buffered_request_bytes` less what calls hold now).
    pub fn request_bytes_available(&self) -> usize {
        self.inner.budget.available()
    }

    /// The per-connection HTTP/2 limits [`crate::serve`] sets.
    pub(crate) fn http2_limits(&self) -> &Http2Limits {
        &self.inner.settings.http2
    }

    /// Answers one HTTP/2 request.
    pub(crate) async fn handle<B>(&self, request: Request<B>) -> Response<UnaryBody>
    where
        B: Body + Send + 'static,
        B::Error: std::error::Error + Send + Sync + 'static,
    {
        let is_grpc = request
            .headers()
            .get(CONTENT_TYPE)
            .is_some_and(|v| v.as_bytes().starts_with(b"application/grpc"));
        if !is_grpc {
            // The gRPC spec's answer to a request that is not gRPC.
            let mut response = Response::new(UnaryBody::empty());
            *response.status_mut() = StatusCode::UNSUPPORTED_MEDIA_TYPE;
            return response;
        }
        match self.call(request).await {
            Ok(Answer::Stream(stream)) => {
                let mut response = Response::new(UnaryBody::stream(stream));
                response.headers_mut().insert(CONTENT_TYPE, GRPC);
                response
            }
            Ok(Answer::Unary(reply)) => {
                let mut trailers = HeaderMap::with_capacity(1);
                trailers.insert("grpc-status", HeaderValue::from_static("0"));
                let mut headers = HeaderMap::with_capacity(1);
                if let Some(metadata) = reply.metadata {
                    let (initial, trailing) = *metadata;
                    crate::metadata::add_custom(&mut headers, initial);
                    crate::metadata::add_custom(&mut trailers, trailing);
                }
                headers.insert(CONTENT_TYPE, GRPC);
                let mut response = Response::new(UnaryBody::message(reply.message, trailers));
                *response.headers_mut() = headers;
                response
            }
            #[cfg(feature = "reflection")]
            Ok(Answer::Forwarded(response)) => response.map(UnaryBody::forwarded),
            Err(status) => trailers_only(&status),
        }
    }

    async fn call<B>(&self, request: Request<B>) -> Result<Answer, Status>
    where
        B: Body + Send + 'static,
        B::Error: std::error::Error + Send + Sync + 'static,
    {
        let settings = &self.inner.settings;
        let path = request.uri().path();
        let unary = self.inner.methods.get(path);
        let stream = self.inner.streams.get(path);
        if unary.is_none() && stream.is_none() {
            #[cfg(feature = "reflection")]
            if let Some(service) = self.inner.reflection.as_ref().and_then(|r| r.route(path)) {
                let request = request.map(crate::body::to_tonic);
                return Ok(Answer::Forwarded(service.forward(request).await));
            }
            return Err(Status::unimplemented(format!("no method {path}")));
        }
        if request.method() != http::Method::POST {
            return Err(Status::unimplemented(format!(
                "gRPC calls are POSTs, not {}",
                request.method()
            )));
        }
        let timeout = match request.headers().get("grpc-timeout") {
            Some(value) => frame::parse_timeout(value.as_bytes())?.min(settings.default_timeout),
            None => settings.default_timeout,
        };
        let started = Instant::now();
        let (head, body) = request.into_parts();
        let max = settings.max_request_bytes + PREFIX_LEN;
        let body = tokio::time::timeout(timeout, read_whole(body, max, &self.inner.budget))
            .await
            .map_err(|_| {
                Status::deadline_exceeded("the request was not read within its deadline")
            })??;
        let timeout = timeout.saturating_sub(started.elapsed());
        let encoding = || head.headers.get("grpc-encoding").map(|e| e.as_bytes());
        let message = frame::single_message(&body.bytes, encoding)?;
        match (unary, stream) {
            (Some(method), _) => {
                // The message is decoded: its bytes go back to the budget
                // while the actor answers.
                let reply = method.call(message, &head.headers, timeout);
                drop(body);
                Ok(Answer::Unary(reply.await?))
            }
            (None, Some(method)) => Ok(Answer::Stream(method.start(
                message,
                &head.headers,
                timeout,
            )?)),
            (None, None) => Err(Status::unimplemented("no such method")),
        }
    }
}

enum Answer {
    Unary(UnaryReply),
    Stream(StreamBody),
    /// A whole response from a tonic service behind the gateway.
    #[cfg(feature = "reflection")]
    Forwarded(Response<tonic::body::Body>),
}

/// A response whose headers carry the status (gRPC's Trailers-Only).
fn trailers_only(status: &Status) -> Response<UnaryBody> {
    let mut response = Response::new(UnaryBody::empty());
    response.headers_mut().insert(CONTENT_TYPE, GRPC);
    if status.add_header(response.headers_mut()).is_err() {
        // Only a message that cannot be a header value gets here.
        response
            .headers_mut()
            .insert("grpc-status", HeaderValue::from(status.code() as i32));
    }
    response
}

impl<B> tower_service::Service<Request<B>> for Gateway
where
    B: Body + Send + 'static,
    B::Data: Send,
    B::Error: std::error::Error + Send + Sync + 'static,
{
    type Response = Response<UnaryBody>;
    type Error = Infallible;
    type Future = Pin<Box<dyn Future<Output = Result<Self::Response, Infallible>> + Send>>;

    fn poll_ready(&mut self, _cx: &mut Context<'_>) -> Poll<Result<(), Infallible>> {
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, request: Request<B>) -> Self::Future {
        let gateway = self.clone();
        Box::pin(async move { Ok(gateway.handle(request).await) })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn method_paths_are_checked() {
        assert!(check_path("/helloworld.Greeter/SayHello").is_ok());
        assert!(check_path("/Greeter/SayHello").is_ok());
        for bad in [
            "helloworld.Greeter/SayHello",
            "/helloworld.Greeter",
            "/helloworld.Greeter/",
            "//SayHello",
            "/a/b/c",
            "/a b/c",
            "/a/b.c",
        ] {
            assert_eq!(
                check_path(bad),
                Err(GatewayError::BadPath(bad.to_string())),
                "{bad}"
            );
        }
    }
}
