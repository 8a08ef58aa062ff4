//! The standard health service's `Check` (`grpc.health.v1`), answered by
//! the gateway itself: load balancers and orchestrators probe it, and the
//! answer must not queue behind actors.
//!
//! `Watch`, the streaming half, is `health_watch.rs`.

use std::collections::HashSet;
use std::future::Future;
use std::pin::Pin;
use std::time::Duration;

use tonic::Status;
use volley::ActorSystem;

use crate::frame;
use crate::unary::{UnaryMethod, UnaryReply};

/// The path of `Check`.
pub(crate) const CHECK_PATH: &str = "/grpc.health.v1.Health/Check";

/// `grpc.health.v1.HealthCheckRequest`.
#[derive(Clone, PartialEq, prost::Message)]
pub struct HealthCheckRequest {
    /// The service asked about; empty for the whole server.
    #[prost(string, tag = "1")]
    pub service: String,
}

/// `grpc.health.v1.HealthCheckResponse`.
#[derive(Clone, PartialEq, prost::Message)]
pub struct HealthCheckResponse {
    /// A [`ServingStatus`].
    #[prost(enumeration = "ServingStatus", tag = "1")]
    pub status: i32,
}

/// `grpc.health.v1.HealthCheckResponse.ServingStatus`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, prost::Enumeration)]
#[repr(i32)]
pub enum ServingStatus {
    /// Not known.
    Unknown = 0,
    /// Calls are answered.
    Serving = 1,
    /// Calls are not answered (the actor system has terminated).
    NotServing = 2,
    /// Only for `Watch`.
    ServiceUnknown = 3,
}

/// Answers `Check` for the services the gateway has methods of.
pub(crate) struct HealthCheck {
    system: ActorSystem,
    services: HashSet<String>,
}

impl HealthCheck {
    /// The services the gateway has methods of.
    pub(crate) fn services(&self) -> std::collections::HashSet<String> {
        self.services.clone()
    }

    pub(crate) fn new<'a>(system: ActorSystem, paths: impl Iterator<Item = &'a String>) -> Self {
        let services = paths
            .filter_map(|p| {
                p.strip_prefix('/')?
                    .split_once('/')
                    .map(|(s, _)| s.to_string())
            })
            .collect();
        HealthCheck { system, services }
    }
}

impl UnaryMethod for HealthCheck {
    fn call<'a>(
        &'a self,
        message: &[u8],
        _headers: &http::HeaderMap,
        _timeout: Duration,
    ) -> Pin<Box<dyn Future<Output = Result<UnaryReply, Status>> + Send + 'a>> {
        let answer = <HealthCheckRequest as prost::Message>::decode(message)
            .map_err(|e| {
                Status::invalid_argument(format!("cannot decode a HealthCheckRequest: {e}"))
            })
            .and_then(|request| {
                if !request.service.is_empty() && !self.services.contains(&request.service) {
                    return Err(Status::not_found(format!("no service {}", request.service)));
                }
                let status = if self.system.is_terminated() {
                    ServingStatus::NotServing
                } else {
                    ServingStatus::Serving
                };
                Ok(UnaryReply::plain(frame::encode(&HealthCheckResponse {
                    status: status as i32,
                })))
            });
        Box::pin(std::future::ready(answer))
    }
}
