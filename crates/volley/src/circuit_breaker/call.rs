//! An async call through the breaker, raced against its call timeout.
//!
//! The timeout timer is armed only if the call does not finish on its
//! first poll, so a call that is ready at once arms nothing. It is armed
//! on the breaker's timer driver, so a manual clock times it too.

use std::future::{poll_fn, Future};
use std::pin::pin;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll, Waker};
use std::time::Duration;

use super::{CallPermit, CircuitBreakerError};
use crate::time::clock::{TimerDriver, TimerHandle};
use crate::util::locks::lock;

pub(super) async fn run<F, T, E>(
    permit: CallPermit,
    call: F,
    is_failure: impl FnOnce(&Result<T, E>) -> bool,
) -> Result<T, CircuitBreakerError<E>>
where
    F: Future<Output = Result<T, E>>,
{
    let outcome = {
        let mut call = pin!(call);
        let mut timer: Option<CallTimer> = None;
        poll_fn(|cx| {
            if let Poll::Ready(result) = call.as_mut().poll(cx) {
                return Poll::Ready(Some(result));
            }
            let timer = timer
                .get_or_insert_with(|| CallTimer::arm(&permit.core().driver, permit.time_left()));
            if timer.fired(cx) {
                Poll::Ready(None)
            } else {
                Poll::Pending
            }
        })
        .await
    };
    match outcome {
        Some(result) => permit.finish_with(result, is_failure),
        None => Err(permit.timed_out()),
    }
}

#[derive(Default)]
struct Slot {
    fired: bool,
    waker: Option<Waker>,
}

/// Cancelled when dropped (the call finished or was dropped).
struct CallTimer {
    slot: Arc<Mutex<Slot>>,
    handle: TimerHandle,
}

impl CallTimer {
    fn arm(driver: &TimerDriver, delay: Duration) -> Self {
        let slot = Arc::new(Mutex::new(Slot::default()));
        let fire = slot.clone();
        let handle = driver.after(delay, move || {
            let waker = {
                let mut slot = lock(&fire);
                slot.fired = true;
                slot.waker.take()
            };
            if let Some(waker) = waker {
                waker.wake();
            }
        });
        CallTimer { slot, handle }
    }

    fn fired(&self, cx: &mut Context<'_>) -> bool {
        let mut slot = lock(&self.slot);
        if slot.fired {
            return true;
        }
        match &slot.waker {
            Some(waker) if waker.will_wake(cx.waker()) => {}
            _ => slot.waker = Some(cx.waker().clone()),
        }
        false
    }
}

impl Drop for CallTimer {
    fn drop(&mut self) {
        self.handle.cancel();
    }
}
