//! gRPC server reflection (`grpc.reflection.v1` and `v1alpha`), served by
//! tonic's own reflection service behind the gateway: tools such as
//! grpcurl list the services and fetch their descriptors without the
//! `.proto` files.
//!
//! Reflection is a bidirectional-streaming method, which the gateway does
//! not answer itself; its calls are handed to tonic's service whole. The
//! gateway looks for it only when a path matches none of its methods, so
//! the methods' own path costs nothing more.

use std::convert::Infallible;
use std::future::Future;
use std::pin::Pin;

use http::{Request, Response};
use tonic::body::Body as TonicBody;
use tower_service::Service;

const V1: &str = "/grpc.reflection.v1.ServerReflection/";
const V1ALPHA: &str = "/grpc.reflection.v1alpha.ServerReflection/";

pub(crate) type Answer = Pin<Box<dyn Future<Output = Response<TonicBody>> + Send>>;

/// A tonic service the gateway hands whole calls to.
pub(crate) trait Forward: Send + Sync {
    /// Hands the call over; the answer is the service's response.
    fn forward(&self, request: Request<TonicBody>) -> Answer;
}

impl<S> Forward for S
where
    S: Service<Request<TonicBody>, Response = Response<TonicBody>, Error = Infallible>
        + Clone
        + Send
        + Sync
        + 'static,
    S::Future: Send + 'static,
{
    fn forward(&self, request: Request<TonicBody>) -> Answer {
        let mut service = self.clone();
        Box::pin(async move {
            let ready = std::future::poll_fn(|cx| service.poll_ready(cx)).await;
            let answer = match ready {
                Ok(()) => service.call(request).await,
                Err(never) => Err(never),
            };
            match answer {
                Ok(response) => response,
                Err(never) => match never {},
            }
        })
    }
}

/// Both versions of the reflection service, over the same descriptors.
pub(crate) struct Reflection {
    v1: Box<dyn Forward>,
    v1alpha: Box<dyn Forward>,
}

impl Reflection {
    /// Reflection over the encoded `FileDescriptorSet`s given (the
    /// reflection service's own descriptors are added).
    pub(crate) fn new(
        file_descriptor_sets: &[&'static [u8]],
    ) -> Result<Self, tonic_reflection::server::Error> {
        let builder = || {
            file_descriptor_sets.iter().fold(
                tonic_reflection::server::Builder::configure(),
                |builder, set| builder.register_encoded_file_descriptor_set(set),
            )
        };
        Ok(Reflection {
            v1: Box::new(builder().build_v1()?),
            v1alpha: Box::new(builder().build_v1alpha()?),
        })
    }

    /// The service for `path`, if it is a reflection method's.
    pub(crate) fn route(&self, path: &str) -> Option<&dyn Forward> {
        if path.starts_with(V1) {
            Some(self.v1.as_ref())
        } else if path.starts_with(V1ALPHA) {
            Some(self.v1alpha.as_ref())
        } else {
            None
        }
    }
}
