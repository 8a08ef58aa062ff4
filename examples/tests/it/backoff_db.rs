//! The backoff_db example against a closed port: every attempt is refused,
//! and the gaps between attempts grow as the backoff doubles.

use std::sync::mpsc::channel;
use std::time::Duration;

use volley::ActorSystem;
use volley_examples::backoff_db_app::{closed_port, gaps, start};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn restart_gaps_grow() {
    let system = ActorSystem::new("backoff-db-test").unwrap();
    let min = Duration::from_millis(40);
    let (tx, rx) = channel();
    start(
        &system,
        closed_port().unwrap(),
        min,
        Duration::from_secs(5),
        move |attempt| {
            let _ = tx.send(attempt);
        },
    )
    .unwrap();
    let attempts: Vec<_> = (0..5)
        .map(|_| {
            rx.recv_timeout(Duration::from_secs(30))
                .expect("an attempt")
        })
        .collect();
    assert!(attempts.iter().all(|a| a.error.is_some()), "{attempts:?}");
    let numbers: Vec<u32> = attempts.iter().map(|a| a.number).collect();
    assert_eq!(numbers, [1, 2, 3, 4, 5]);
    let gaps = gaps(&attempts);
    // Lower bounds only: each gap is at least its delay, min * 2^n; a
    // loaded machine can only stretch them.
    for (n, gap) in gaps.iter().enumerate() {
        assert!(*gap >= min * 2u32.pow(n as u32), "gap {n}: {gaps:?}");
    }
    // The fourth gap is at least 320 ms; the first is 40 to 48 ms plus
    // what a busy moment adds.
    assert!(gaps[3] > gaps[0], "{gaps:?}");
    system.terminate().await;
}
