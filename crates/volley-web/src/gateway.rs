//! The gateway: services and topics by name, the sessions open, and the
//! HTTP routes that serve them.

use std::collections::HashMap;
use std::future::Future;
use std::marker::PhantomData;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, OnceLock};
use std::time::Duration;

use axum::routing::{get, post};
use axum::Router;
use http::HeaderMap;
use serde::de::DeserializeOwned;
use serde::Serialize;
use volley::net::{ConnectionGate, GatedListener};
use volley::{ActorRef, ActorSystem, Props, ReplyTo, TopicCommand};

use crate::auth::{AuthHook, AuthRequest, Refusal};
use crate::frame::{close, ClientFrame, Encoding, ServerFrame, PROTOCOL_VERSION};
use crate::outbox::{Closing, Outbox};
use crate::service::{AskService, Call, Reply, Service, TellService};
use crate::session::{Session, SessionActor, SessionMsg};
use crate::settings::WebSettings;
use crate::topic::{TypedTopic, WebTopic};

/// A service or topic could not be added.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum WebGatewayError {
    /// The name is empty.
    #[error("a service or topic name must not be empty")]
    EmptyName,
    /// A service of that name was added before.
    #[error("the service {0} is added twice")]
    DuplicateService(String),
    /// A topic of that name was added before.
    #[error("the topic {0} is added twice")]
    DuplicateTopic(String),
}

/// Counters of what the gateway dropped or refused, beyond dead letters.
#[derive(Debug, Default)]
pub(crate) struct Stats {
    /// Frames dropped from a full queue after they were sent (no longer
    /// resendable, probably delivered).
    pub(crate) dropped_sent: AtomicU64,
    /// Sessions opened so far: numbers the session actors.
    pub(crate) sessions_opened: AtomicU64,
}

/// The gateway's tables, keyed by names the application registers and
/// session ids the gateway draws: a client only looks keys up, never
/// chooses one that goes in, so a fast hash (looked up twice per
/// long-poll ask) does not open a hash-flooding attack.
pub(crate) type Table<K, V> = HashMap<K, V, foldhash::fast::RandomState>;

pub(crate) struct Inner {
    pub(crate) system: ActorSystem,
    pub(crate) settings: WebSettings,
    pub(crate) services: Table<String, Box<dyn Service>>,
    pub(crate) topics: Table<String, Box<dyn WebTopic>>,
    pub(crate) auth: Option<AuthHook>,
    pub(crate) sessions: Mutex<Table<Arc<str>, Arc<Session>>>,
    pub(crate) stats: Stats,
    pub(crate) gate: Arc<ConnectionGate>,
}

impl Inner {
    pub(crate) fn sessions(&self) -> MutexGuard<'_, Table<Arc<str>, Arc<Session>>> {
        self.sessions.lock().unwrap_or_else(|e| e.into_inner())
    }

    pub(crate) fn forget(&self, id: &str) {
        self.sessions().remove(id);
    }

    pub(crate) fn session(&self, id: &str) -> Option<Arc<Session>> {
        self.sessions().get(id).cloned()
    }
}

/// A session opened (or resumed) by a `hello`.
pub(crate) struct Opened {
    pub(crate) session: Arc<Session>,
    pub(crate) resumed: bool,
    /// Where a resumed session's frames start again.
    pub(crate) last_seq: Option<u64>,
    max_frame: usize,
}

impl Opened {
    /// The `welcome`; `heartbeat`: how often the client hears from the
    /// server (pings, or the poll timeout).
    pub(crate) fn welcome(&self, heartbeat: Duration) -> ServerFrame {
        ServerFrame::Welcome {
            v: PROTOCOL_VERSION,
            session: self.session.id.to_string(),
            resumed: self.resumed,
            heartbeat_ms: heartbeat.as_millis() as u64,
            max_frame: self.max_frame,
        }
    }
}

/// Builds a [`WebGateway`].
pub struct WebGatewayBuilder {
    system: ActorSystem,
    settings: WebSettings,
    services: Table<String, Box<dyn Service>>,
    topics: Table<String, Box<dyn WebTopic>>,
    auth: Option<AuthHook>,
}

impl WebGatewayBuilder {
    fn add_service(
        mut self,
        name: &str,
        service: Box<dyn Service>,
    ) -> Result<Self, WebGatewayError> {
        if name.is_empty() {
            return Err(WebGatewayError::EmptyName);
        }
        if self.services.contains_key(name) {
            return Err(WebGatewayError::DuplicateService(name.to_string()));
        }
        self.services.insert(name.to_string(), service);
        Ok(self)
    }

    /// Adds the service `name`, which takes tells: each client message is
    /// decoded as `M` and told to `target` as `make(call)`.
    pub fn tell_service<M, T, F>(
        self,
        name: &str,
        target: ActorRef<T>,
        make: F,
    ) -> Result<Self, WebGatewayError>
    where
        M: DeserializeOwned + Send + 'static,
        T: Send + 'static,
        F: Fn(Call<M>) -> T + Send + Sync + 'static,
    {
        let service = TellService {
            target,
            make,
            types: PhantomData,
        };
        self.add_service(name, Box::new(service))
    }

    /// Adds the service `name`, which answers asks: each client message is
    /// decoded as `M` and `target` asked `make(call, reply_to)`; it
    /// replies `Ok(r)` (a `reply` frame) or `Err(ServiceError)` (an
    /// `error` frame with the service's code).
    pub fn ask_service<M, R, T, F>(
        self,
        name: &str,
        target: ActorRef<T>,
        make: F,
    ) -> Result<Self, WebGatewayError>
    where
        M: DeserializeOwned + Send + 'static,
        R: Serialize + Send + 'static,
        T: Send + 'static,
        F: Fn(Call<M>, ReplyTo<Reply<R>>) -> T + Send + Sync + 'static,
    {
        let service = AskService {
            name: Arc::from(name),
            target,
            make,
            types: PhantomData,
        };
        self.add_service(name, Box::new(service))
    }

    /// Lets clients subscribe to the volley topic `topic` as `name`.
    pub fn topic<M>(
        mut self,
        name: &str,
        topic: ActorRef<TopicCommand<M>>,
    ) -> Result<Self, WebGatewayError>
    where
        M: Clone + Serialize + Send + 'static,
    {
        if name.is_empty() {
            return Err(WebGatewayError::EmptyName);
        }
        if self.topics.contains_key(name) {
            return Err(WebGatewayError::DuplicateTopic(name.to_string()));
        }
        self.topics
            .insert(name.to_string(), Box::new(TypedTopic { topic }));
        Ok(self)
    }

    /// Checks each client that opens or resumes a session: `hook` gets the
    /// `hello`'s token and the HTTP request's headers (cookies included),
    /// and answers the client's identity (handed to services in
    /// [`ClientRef::identity`](crate::ClientRef::identity)) or refuses.
    pub fn auth(
        mut self,
        hook: impl Fn(&AuthRequest<'_>) -> Result<Option<String>, String> + Send + Sync + 'static,
    ) -> Self {
        self.auth = Some(Arc::new(hook));
        self
    }

    /// The gateway.
    pub fn build(self) -> WebGateway {
        WebGateway {
            inner: Arc::new(Inner {
                gate: ConnectionGate::new("web", self.settings.connections.clone()),
                system: self.system,
                settings: self.settings,
                services: self.services,
                topics: self.topics,
                auth: self.auth,
                sessions: Mutex::new(Table::default()),
                stats: Stats::default(),
            }),
        }
    }
}

/// Serves actors to browsers and JavaScript programs over WebSockets and
/// HTTP long-poll (docs/web.md).
#[derive(Clone)]
pub struct WebGateway {
    pub(crate) inner: Arc<Inner>,
}

impl WebGateway {
    /// A builder of a gateway whose sessions are actors of `system`.
    pub fn builder(system: &ActorSystem, settings: WebSettings) -> WebGatewayBuilder {
        WebGatewayBuilder {
            system: system.clone(),
            settings,
            services: Table::default(),
            topics: Table::default(),
            auth: None,
        }
    }

    /// The gateway's routes, to mount in an application's router (e.g.
    /// `app.nest("/volley", gateway.router())`): `/ws`, `/lp/open`,
    /// `/lp/send`, `/lp/recv`, `/lp/close`.
    pub fn router(&self) -> Router {
        Router::new()
            .route("/ws", get(crate::ws::upgrade))
            .route("/lp/open", post(crate::longpoll::open))
            .route("/lp/send", post(crate::longpoll::send))
            .route("/lp/recv", get(crate::longpoll::recv))
            .route("/lp/close", post(crate::longpoll::close))
            .with_state(self.clone())
    }

    /// Serves the gateway's routes alone on `listener` until `shutdown`
    /// resolves; then closes every session (1001) and returns. Every
    /// connection is admitted through the gateway's gate first (its
    /// settings' `connections` limits), and its request headers are held
    /// to `header_timeout` and `max_header_bytes`.
    pub async fn serve(
        self,
        listener: tokio::net::TcpListener,
        shutdown: impl Future<Output = ()> + Send + 'static,
    ) -> std::io::Result<()> {
        let router = self.router();
        self.serve_router(listener, router, shutdown).await
    }

    /// [`WebGateway::serve`] for an application's `router` that mounts
    /// the gateway's routes among its own (static pages, say): the same
    /// gate and header limits for all of them.
    pub async fn serve_router(
        self,
        listener: tokio::net::TcpListener,
        router: Router,
        shutdown: impl Future<Output = ()> + Send + 'static,
    ) -> std::io::Result<()> {
        let gateway = self.clone();
        let shutdown = async move {
            shutdown.await;
            gateway.close_all();
        };
        let listener = GatedListener::new(listener, self.inner.gate.clone());
        crate::serve::serve(listener, router, &self.inner.settings, shutdown).await;
        Ok(())
    }

    /// The gate [`WebGateway::serve`] admits connections through: how
    /// many are open, and how many were refused and why.
    pub fn connection_gate(&self) -> &Arc<ConnectionGate> {
        &self.inner.gate
    }

    /// Ends every session: their WebSockets close with 1001.
    pub fn close_all(&self) {
        let sessions: Vec<_> = self.inner.sessions().values().cloned().collect();
        for session in sessions {
            let closing = Closing {
                code: close::GOING_AWAY,
                reason: "the server is shutting down".into(),
            };
            session.outbox.close(closing.clone());
            if let Some(actor) = session.actor.get() {
                actor.tell(SessionMsg::Close(closing));
            }
        }
    }

    /// Sessions open (connected, or waiting to be resumed).
    pub fn session_count(&self) -> usize {
        self.inner.sessions().len()
    }

    /// Frames dropped from full queues after they had been sent (frames
    /// dropped before are dead letters).
    pub fn dropped_sent_frames(&self) -> u64 {
        self.inner.stats.dropped_sent.load(Ordering::Relaxed)
    }

    /// Opens a session for `hello`, or resumes the one it names.
    pub(crate) fn open(
        &self,
        hello: &ClientFrame,
        headers: &HeaderMap,
        encoding: Encoding,
    ) -> Result<Opened, Refusal> {
        let ClientFrame::Hello {
            v,
            token,
            resume,
            last_seq,
        } = hello
        else {
            return Err(Refusal::protocol("the first frame must be hello"));
        };
        if *v != PROTOCOL_VERSION {
            return Err(Refusal::protocol(format!(
                "protocol version {v} is not spoken here (1 is)"
            )));
        }
        let identity = match &self.inner.auth {
            Some(hook) => {
                let request = AuthRequest {
                    token: token.as_deref(),
                    headers,
                };
                // The application's code: a panic refuses, it ends nothing.
                std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| hook(&request)))
                    .map_err(|_| Refusal::internal("the auth hook panicked"))?
                    .map_err(Refusal::unauthorized)?
            }
            None => None,
        };
        let identity: Option<Arc<str>> = identity.map(Arc::from);
        if let Some(id) = resume {
            let session = self
                .inner
                .session(id)
                .ok_or_else(|| Refusal::unknown_session(id))?;
            if session.identity != identity {
                return Err(Refusal::unauthorized(
                    "the session belongs to another identity".into(),
                ));
            }
            if session.outbox.encoding() != encoding {
                return Err(Refusal::protocol(
                    "a session resumes in the encoding it began with",
                ));
            }
            return Ok(Opened {
                session,
                resumed: true,
                last_seq: Some(last_seq.unwrap_or(0)),
                max_frame: self.inner.settings.max_frame,
            });
        }
        Ok(Opened {
            session: self.new_session(identity, encoding)?,
            resumed: false,
            last_seq: None,
            max_frame: self.inner.settings.max_frame,
        })
    }

    fn new_session(
        &self,
        identity: Option<Arc<str>>,
        encoding: Encoding,
    ) -> Result<Arc<Session>, Refusal> {
        let settings = &self.inner.settings;
        let id: Arc<str> = Arc::from(crate::auth::session_id().map_err(Refusal::internal)?);
        let session = Arc::new(Session {
            id: id.clone(),
            identity,
            outbox: Outbox::new(encoding, settings.max_queued, settings.slow_consumer),
            gateway: self.inner.clone(),
            subscriptions: Mutex::new(HashMap::new()),
            open_asks: Default::default(),
            via_actor: Default::default(),
            actor: OnceLock::new(),
        });
        {
            let mut sessions = self.inner.sessions();
            if sessions.len() >= settings.max_sessions {
                return Err(Refusal::busy());
            }
            sessions.insert(id.clone(), session.clone());
        }
        let for_actor = session.clone();
        let props = Props::new(move || SessionActor {
            session: for_actor.clone(),
        });
        // Named by a counter, not by the id: paths are logged, and the id is
        // what resumes the session.
        let number = self
            .inner
            .stats
            .sessions_opened
            .fetch_add(1, Ordering::Relaxed);
        match self
            .inner
            .system
            .spawn(&format!("web-session-{number}"), props)
        {
            Ok(actor) => {
                let _ = session.actor.set(actor);
                Ok(session)
            }
            Err(e) => {
                self.inner.forget(&id);
                Err(Refusal::internal(e.to_string()))
            }
        }
    }
}
