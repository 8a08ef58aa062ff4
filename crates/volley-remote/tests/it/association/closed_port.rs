//! A node aimed at a port where nothing listens: every connection attempt
//! is refused at once, so only the back-off keeps the lanes from
//! hammering it. (`reconnect.rs` covers a peer that accepts and then
//! closes; a refused connect fails on another path.)

use crate::common;
use crate::log_capture;

use std::time::Duration;

use common::{node, Calc};
use volley_remote::wire::Lane;
use volley_remote::RemoteSettings;

// One dispatcher kind: what this checks is the transport's timing (its
// connection attempts and timers), which no actor's scheduling touches,
// and it waits seconds of real time.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn five_seconds_at_a_closed_port_make_at_most_10_attempts_per_lane() {
    log_capture::install();
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let a = node("alpha", RemoteSettings::default()).await;
    let remote = format!("volley://beta@127.0.0.1:{port}");
    let calc = a
        .remoting
        .resolve::<Calc>(&format!("{remote}/user/calc"))
        .unwrap();
    // A small and a large message: every lane of the association tries.
    calc.tell(Calc::Seq { from: 0, n: 0 });
    let reply_to = a
        .system
        .spawn_anonymous(volley::Props::new(|| Sink))
        .unwrap();
    calc.tell(Calc::Blob(vec![0; 100 * 1024], reply_to));
    tokio::time::sleep(Duration::from_secs(5)).await;

    let remote = format!("remote={remote}");
    for lane in Lane::ALL {
        let lane = format!("lane={lane:?}");
        let attempts = log_capture::events(|e| {
            e.text.starts_with("cannot connect")
                && e.text.contains(&remote)
                && e.text.contains(&lane)
        })
        .len();
        // 200 ms doubling (±20 %): attempts near 0, 0.2, 0.6, 1.4 and 3 s.
        assert!(
            (2..=10).contains(&attempts),
            "{attempts} refused attempts on {lane} in 5 s"
        );
    }
    assert_eq!(
        a.system.dead_letter_count(),
        0,
        "refused attempts drop nothing"
    );
    a.system.terminate().await;
}

/// Takes the replies that never come.
struct Sink;

impl volley::Actor for Sink {
    type Msg = i64;
    fn handle(&mut self, _ctx: &mut volley::Context<Self>, _len: i64) -> volley::HandleResult {
        Ok(())
    }
}
