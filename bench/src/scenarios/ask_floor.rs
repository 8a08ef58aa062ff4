//! The floor under any `ask()` from tokio tasks: W tasks each send a
//! number and a `tokio::sync::oneshot` sender to a plain thread, which
//! answers every one, and await the answer, in a loop. No actor, no
//! encoding, no network: what is left is the task's wake-up and poll, the
//! oneshot and one channel send each way, so no ask from tasks on the same
//! runtime can be faster. `remote-ask` prints it next to its `ask()` rows
//! (system `tokio`, mode `task floor …`) so that their gap to the target can
//! be read against what tokio itself does on the machine, in the same run.

use std::sync::mpsc;
use std::time::Instant;

use tokio::sync::oneshot;

use crate::measure::Throughput;

/// `n` round trips from `window` tasks spawned on `on`, answered by one
/// thread; every answer is checked.
pub fn floor_once(
    rt: &tokio::runtime::Runtime,
    n: u64,
    window: usize,
    on: &tokio::runtime::Handle,
) -> crate::Result<Throughput> {
    let window = (window as u64).min(n).max(1);
    let per = n / window;
    let (tx, rx) = mpsc::channel::<(u64, oneshot::Sender<u64>)>();
    // Answers while any task holds a sender; ends with the last one.
    let answerer = std::thread::spawn(move || {
        while let Ok((x, reply)) = rx.recv() {
            let _ = reply.send(x + 1);
        }
    });
    let start = Instant::now();
    let handle = on.clone();
    let (ok, wrong) = rt.block_on(async move {
        let mut set = tokio::task::JoinSet::new();
        for w in 0..window {
            let tx = tx.clone();
            set.spawn_on(
                async move {
                    let (mut ok, mut wrong) = (0u64, 0u64);
                    for i in 0..per {
                        let x = w * per + i;
                        let (reply, answer) = oneshot::channel();
                        if tx.send((x, reply)).is_err() {
                            wrong += 1;
                            continue;
                        }
                        match answer.await {
                            Ok(y) if y == x + 1 => ok += 1,
                            _ => wrong += 1,
                        }
                    }
                    (ok, wrong)
                },
                &handle,
            );
        }
        drop(tx);
        right_and_wrong(set, per).await
    });
    let elapsed = start.elapsed();
    answerer
        .join()
        .map_err(|_| "the floor's answering thread panicked")?;
    if ok != per * window || wrong != 0 {
        return Err(format!(
            "task floor: {} round trips, {ok} right answers, {wrong} wrong",
            per * window
        )
        .into());
    }
    Ok(Throughput::new(ok, elapsed))
}

/// The right and wrong answers counted by each task of `set`; a task that
/// failed counts its `per` round trips as wrong.
pub async fn right_and_wrong(mut set: tokio::task::JoinSet<(u64, u64)>, per: u64) -> (u64, u64) {
    let (mut ok, mut wrong) = (0, 0);
    while let Some(r) = set.join_next().await {
        let (o, w) = r.unwrap_or((0, per));
        ok += o;
        wrong += w;
    }
    (ok, wrong)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_round_trip_is_answered_and_counted() {
        let rt = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .build()
            .unwrap();
        let t = floor_once(&rt, 10_000, 100, rt.handle()).unwrap();
        assert_eq!(t.count, 10_000);
    }
}
