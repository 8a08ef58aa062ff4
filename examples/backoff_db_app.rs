//! The backoff_db example's logic: a client that connects to a database in
//! `pre_start`, supervised with `SupervisorStrategy::restart_with_backoff`,
//! so that while the database is down it retries after 50 ms, 100 ms,
//! 200 ms, … rather than in a tight loop.

use std::net::{SocketAddr, TcpListener, TcpStream};
use std::sync::Arc;
use std::time::{Duration, Instant};

use volley::{
    Actor, ActorError, ActorRef, ActorSystem, Context, HandleResult, Props, SpawnError,
    SupervisorStrategy,
};

/// One connection attempt, as the client reports it.
#[derive(Debug, Clone)]
pub struct Attempt {
    /// 1 for the first attempt.
    pub number: u32,
    /// When it was made.
    pub at: Instant,
    /// Why it failed; `None` if it connected.
    pub error: Option<String>,
}

type Report = Arc<dyn Fn(Attempt) + Send + Sync>;

/// An address nothing listens on: a port the OS just handed out and that
/// was closed again, so a connection to it is refused at once.
pub fn closed_port() -> std::io::Result<SocketAddr> {
    let listener = TcpListener::bind("127.0.0.1:0")?;
    listener.local_addr()
}

/// What the client is asked; it answers only once connected.
pub enum Query {
    /// Replies with the address it is connected to.
    Ping(ActorRef<String>),
}

/// Connects in `pre_start`: a failure there is the supervisor's to handle,
/// and each restart after the backoff is the next attempt.
pub struct DbClient {
    addr: SocketAddr,
    report: Report,
    attempts: Arc<std::sync::atomic::AtomicU32>,
    connection: Option<TcpStream>,
}

impl Actor for DbClient {
    type Msg = Query;

    fn pre_start(&mut self, _ctx: &mut Context<Self>) -> HandleResult {
        let number = self
            .attempts
            .fetch_add(1, std::sync::atomic::Ordering::Relaxed)
            + 1;
        // A blocking connect on a dispatcher thread: to a closed local port
        // it is refused at once, and the timeout bounds any other case.
        let result = TcpStream::connect_timeout(&self.addr, Duration::from_secs(1));
        (self.report)(Attempt {
            number,
            at: Instant::now(),
            error: result.as_ref().err().map(|e| e.to_string()),
        });
        self.connection = Some(result.map_err(|e| {
            ActorError::new(std::io::Error::new(
                e.kind(),
                format!("cannot connect to {}: {e}", self.addr),
            ))
        })?);
        Ok(())
    }

    fn handle(&mut self, _ctx: &mut Context<Self>, msg: Query) -> HandleResult {
        match msg {
            Query::Ping(reply) => reply.tell(self.addr.to_string()),
        }
        Ok(())
    }
}

/// The client's parent: it holds the backoff strategy.
struct DbSupervisor {
    client: Props<DbClient>,
    strategy: SupervisorStrategy,
}

impl Actor for DbSupervisor {
    type Msg = ();

    fn pre_start(&mut self, ctx: &mut Context<Self>) -> HandleResult {
        ctx.spawn("client", self.client.clone())?;
        Ok(())
    }

    fn handle(&mut self, _ctx: &mut Context<Self>, _msg: ()) -> HandleResult {
        Ok(())
    }

    fn supervisor_strategy(&self) -> SupervisorStrategy {
        self.strategy.clone()
    }
}

/// Starts `/user/db` and its client of `addr`, which backs off from `min`
/// to `max` (stretched by up to 20 %) while `addr` refuses it; `report`
/// hears of every attempt.
pub fn start(
    system: &ActorSystem,
    addr: SocketAddr,
    min: Duration,
    max: Duration,
    report: impl Fn(Attempt) + Send + Sync + 'static,
) -> Result<(), SpawnError> {
    let report: Report = Arc::new(report);
    let attempts = Arc::new(std::sync::atomic::AtomicU32::new(0));
    let client = Props::new(move || DbClient {
        addr,
        report: report.clone(),
        attempts: attempts.clone(),
        connection: None,
    });
    let strategy = SupervisorStrategy::restart_with_backoff(min, max, 0.2);
    system.spawn(
        "db",
        Props::new(move || DbSupervisor {
            client: client.clone(),
            strategy: strategy.clone(),
        }),
    )?;
    Ok(())
}

/// The gaps between consecutive attempts.
pub fn gaps(attempts: &[Attempt]) -> Vec<Duration> {
    attempts
        .windows(2)
        .map(|w| w[1].at.duration_since(w[0].at))
        .collect()
}
