//! Ask-style routing: scatter-gather-first-completed and tail-chopping.
//!
//! Both need a reply, so they are requests on [`RouterRef`] rather than
//! logics for `tell`, and they work with a router of any logic (they use its
//! routees, not its logic). `make` builds one request per routee around
//! that routee's reply handle; the first reply wins, later replies go to
//! dead letters. The pending asks are polled together in one future (no
//! task per routee), and dropping that future cancels them all.

use std::future::{poll_fn, Future};
use std::pin::Pin;
use std::task::Poll;
use std::time::Duration;

use super::error::RoutingError;
use super::random::next_random;
use super::router_ref::RouterRef;
use crate::actor::actor_ref::ActorRef;
use crate::ask::{AskError, ReplyTo};

type PendingAsk<'a, R> = Pin<Box<dyn Future<Output = Result<R, AskError>> + Send + 'a>>;

fn ask_one<'a, M, R>(
    routee: ActorRef<M>,
    make: &'a (impl Fn(ReplyTo<R>) -> M + Sync),
    timeout: Duration,
) -> PendingAsk<'a, R>
where
    M: Send + 'static,
    R: Send + 'static,
{
    Box::pin(async move { routee.ask(make, timeout).await })
}

impl<M: Send + 'static> RouterRef<M> {
    /// Sends the request to every routee at once and answers with the first
    /// reply (Akka's scatter-gather-first-completed). Fails with
    /// [`RoutingError::NoRoutees`] at once if there are none, and with
    /// [`RoutingError::Timeout`] if no routee answers within `timeout`.
    pub async fn scatter_gather<R: Send + 'static>(
        &self,
        make: impl Fn(ReplyTo<R>) -> M + Sync,
        timeout: Duration,
    ) -> Result<R, RoutingError> {
        let routees = self.ready_routees(timeout).await?;
        if routees.is_empty() {
            return Err(self.no_routees());
        }
        let mut pending: Vec<PendingAsk<'_, R>> = routees
            .into_iter()
            .map(|r| ask_one(r, &make, timeout))
            .collect();
        let mut last_error = None;
        let outcome = poll_fn(|cx| {
            let mut i = 0;
            while i < pending.len() {
                match pending[i].as_mut().poll(cx) {
                    Poll::Ready(Ok(reply)) => return Poll::Ready(Some(reply)),
                    Poll::Ready(Err(e)) => {
                        last_error = Some(e);
                        drop(pending.swap_remove(i));
                    }
                    Poll::Pending => i += 1,
                }
            }
            if pending.is_empty() {
                Poll::Ready(None)
            } else {
                Poll::Pending
            }
        })
        .await;
        match outcome {
            Some(reply) => Ok(reply),
            None => Err(self.all_failed(last_error, timeout)),
        }
    }

    /// Sends the request to one routee, then to another every `interval`
    /// until one answers or `timeout` passes (Akka's tail-chopping): the
    /// first reply wins. Routees are tried in a random order; a routee whose
    /// ask fails at once (it terminated) is skipped without waiting.
    pub async fn tail_chopping<R: Send + 'static>(
        &self,
        make: impl Fn(ReplyTo<R>) -> M + Sync,
        interval: Duration,
        timeout: Duration,
    ) -> Result<R, RoutingError> {
        let started_at = std::time::Instant::now();
        let mut routees = self.ready_routees(timeout).await?;
        if routees.is_empty() {
            return Err(self.no_routees());
        }
        let start = (next_random() % routees.len() as u64) as usize;
        routees.rotate_left(start);
        let system = self.as_actor_ref().to_any().target.system().clone();
        let remaining = timeout.saturating_sub(started_at.elapsed());
        let Some(deadline) = system.sleep(remaining) else {
            return Err(RoutingError::Ask(AskError::SystemTerminated));
        };
        let mut deadline = Box::pin(deadline);
        let mut queue = routees.into_iter();
        let mut pending: Vec<PendingAsk<'_, R>> = Vec::new();
        let mut chop: Option<Pin<Box<tokio::time::Sleep>>> = None;
        let mut last_error = None;
        let outcome = poll_fn(|cx| loop {
            if deadline.as_mut().poll(cx).is_ready() {
                return Poll::Ready(None);
            }
            let due = match chop.as_mut() {
                Some(c) => c.as_mut().poll(cx).is_ready(),
                None => false,
            };
            let mut started = false;
            if due || pending.is_empty() {
                match queue.next() {
                    Some(routee) => {
                        let left = timeout.saturating_sub(started_at.elapsed());
                        pending.push(ask_one(routee, &make, left));
                        chop = system.sleep(interval).map(Box::pin);
                        started = true;
                    }
                    None if pending.is_empty() => return Poll::Ready(None),
                    None => chop = None,
                }
            }
            let mut progressed = false;
            let mut i = 0;
            while i < pending.len() {
                match pending[i].as_mut().poll(cx) {
                    Poll::Ready(Ok(reply)) => return Poll::Ready(Some(reply)),
                    Poll::Ready(Err(e)) => {
                        last_error = Some(e);
                        drop(pending.swap_remove(i));
                        progressed = true;
                    }
                    Poll::Pending => i += 1,
                }
            }
            // Loop again only if something changed (a new ask or timer to
            // poll, or a failure that may start the next ask); otherwise
            // every pending future and timer has registered the waker.
            if !progressed && !started {
                return Poll::Pending;
            }
        })
        .await;
        match outcome {
            Some(reply) => Ok(reply),
            None => Err(self.all_failed(last_error, timeout)),
        }
    }

    fn no_routees(&self) -> RoutingError {
        if self.is_terminated() {
            RoutingError::RouterTerminated {
                router: self.path().to_string(),
            }
        } else {
            RoutingError::NoRoutees {
                router: self.path().to_string(),
            }
        }
    }

    fn all_failed(&self, last_error: Option<AskError>, timeout: Duration) -> RoutingError {
        match last_error {
            Some(AskError::Timeout { .. }) | None => RoutingError::Timeout {
                router: self.path().to_string(),
                after: timeout,
            },
            Some(e) => RoutingError::Ask(e),
        }
    }
}
