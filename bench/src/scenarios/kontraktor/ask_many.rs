//! `ask` from a few tokio tasks that each keep many asks in flight: the
//! shape of the client actors' row (10 senders, 1,000 requests in flight
//! each) written with `ActorRef::ask`, as an application that asks in bulk
//! would (`FuturesUnordered`, or `buffer_unordered` over a stream).
//!
//! Why a row of its own: the `ask from 10000 tasks` row has one ask per
//! task, so every reply wakes, schedules and polls a task of its own, and
//! 10,000 tasks' futures are spread over memory. Here a reply wakes a
//! future inside its task's set, and one poll of the task takes every
//! answer that came meanwhile; the ask itself (`ask()`, the reply handle,
//! the correlation, the wire) is the same.

use std::time::{Duration, Instant};

use futures_util::stream::{FuturesUnordered, StreamExt};

use crate::measure::Throughput;
use crate::scenarios::remote_common::{Calc, Nodes};
use crate::scenarios::Ctx;

/// `n` asks from `tasks` tasks spawned on `on`, each keeping `window` asks
/// in flight; every answer is checked (= a + 7), as `remote_ask::ask_once`
/// checks its own. The pairs are the same: `a` counts up from 0 over the
/// `tasks × (n / tasks)` asks.
pub fn ask_many_once(
    ctx: &Ctx,
    nodes: &Nodes,
    adder: &volley::ActorRef<Calc>,
    n: u64,
    (tasks, window): (usize, usize),
    on: &tokio::runtime::Handle,
) -> crate::Result<Throughput> {
    let tasks = (tasks as u64).min(n).max(1);
    let per = n / tasks;
    let window = (window as u64).max(1);
    let dead_before = nodes.dead_letters();
    let start = Instant::now();
    let (ok, wrong) = ctx.rt.block_on(async {
        let mut set = tokio::task::JoinSet::new();
        for t in 0..tasks {
            let adder = adder.clone();
            set.spawn_on(asks_of_one_task(adder, t * per, per, window), on);
        }
        crate::scenarios::ask_floor::right_and_wrong(set, per).await
    });
    let elapsed = start.elapsed();
    let dead = nodes.dead_letters() - dead_before;
    if ok != per * tasks || wrong != 0 || dead != 0 {
        return Err(format!(
            "ask (many in flight per task): {} asks, {ok} right answers, {wrong} wrong or \
             failed, {dead} dead letters",
            per * tasks
        )
        .into());
    }
    Ok(Throughput::new(ok, elapsed))
}

/// One task's `count` asks, `a` from `first` up, `window` of them in flight.
async fn asks_of_one_task(
    adder: volley::ActorRef<Calc>,
    first: u64,
    count: u64,
    window: u64,
) -> (u64, u64) {
    let ask = |i: u64| {
        let a = (first + i) as i64;
        let adder = &adder;
        async move {
            let answer = adder
                .ask(
                    |reply_to| Calc::Sum { a, b: 7, reply_to },
                    Duration::from_secs(60),
                )
                .await;
            (a, answer)
        }
    };
    let mut in_flight = FuturesUnordered::new();
    let mut next = 0;
    while next < count.min(window) {
        in_flight.push(ask(next));
        next += 1;
    }
    let (mut ok, mut wrong) = (0u64, 0u64);
    while let Some((a, answer)) = in_flight.next().await {
        match answer {
            Ok(s) if s == a + 7 => ok += 1,
            _ => wrong += 1,
        }
        if next < count {
            in_flight.push(ask(next));
            next += 1;
        }
    }
    (ok, wrong)
}
