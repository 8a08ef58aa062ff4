//! `grpc.health.v1.Health/Watch`, the streaming half of the health
//! service. An actor of the gateway's own holds every open Watch: it
//! answers each with the current status at once and keeps the call open,
//! as the health-checking protocol asks (SERVICE_UNKNOWN for a service the
//! gateway has no method of, without ending the call). The gateway's
//! status changes only when its actor system stops: the actor's
//! `post_stop` then sends NOT_SERVING to every watcher and ends the calls
//! with UNAVAILABLE. A watcher that goes away is forgotten.

use std::collections::{HashMap, HashSet};

use tonic::Status;
use volley::{Actor, Context, HandleResult};

use crate::health::{HealthCheckRequest, HealthCheckResponse, ServingStatus};
use crate::streaming::ResponseStream;

/// The path of `Watch`.
pub(crate) const WATCH_PATH: &str = "/grpc.health.v1.Health/Watch";

/// What the watchers' actor is told.
pub(crate) enum WatchMsg {
    /// A new Watch call.
    Watch(HealthCheckRequest, ResponseStream<HealthCheckResponse>),
    /// The watcher with this id cancelled or went away.
    Closed(u64),
}

/// Holds the open Watch calls.
pub(crate) struct Watchers {
    services: HashSet<String>,
    open: HashMap<u64, ResponseStream<HealthCheckResponse>>,
    next: u64,
}

impl Watchers {
    pub(crate) fn new(services: HashSet<String>) -> Self {
        Watchers {
            services,
            open: HashMap::new(),
            next: 0,
        }
    }
}

fn response(status: ServingStatus) -> HealthCheckResponse {
    HealthCheckResponse {
        status: status as i32,
    }
}

impl Actor for Watchers {
    type Msg = WatchMsg;

    fn handle(&mut self, ctx: &mut Context<Self>, msg: WatchMsg) -> HandleResult {
        match msg {
            WatchMsg::Watch(request, stream) => {
                let status =
                    if request.service.is_empty() || self.services.contains(&request.service) {
                        ServingStatus::Serving
                    } else {
                        ServingStatus::ServiceUnknown
                    };
                // A new call's buffer has room for its first response; an
                // error here means the client is already gone.
                if stream.try_send(&response(status)).is_ok() {
                    let id = self.next;
                    self.next += 1;
                    stream.notify_when_closed(&ctx.myself(), WatchMsg::Closed(id));
                    self.open.insert(id, stream);
                }
            }
            WatchMsg::Closed(id) => {
                if let Some(stream) = self.open.remove(&id) {
                    stream.finish(Ok(()));
                }
            }
        }
        Ok(())
    }

    fn post_stop(&mut self, _ctx: &mut Context<Self>) {
        for (_, stream) in self.open.drain() {
            let _ = stream.try_send(&response(ServingStatus::NotServing));
            stream.finish(Err(Status::unavailable("the actor system has stopped")));
        }
    }
}
