//! A million tells to a peer that does not read: the ones over the lane's
//! bound are counted as dead letters, each of them, while the warnings about
//! them stay within their rate limit. The peer then reads, and what it gets
//! plus what was counted is what was sent.

use crate::common;
use crate::log_capture;
use crate::raw_peer;

use std::time::{Duration, Instant};

use bytes::BytesMut;
use tokio::io::AsyncReadExt;
use tokio::net::{TcpListener, TcpStream};
use tracing::Level;
use volley_remote::wire::{Address, Decoder, DecoderConfig, Lane, Pdu};
use volley_remote::RemoteSettings;

use common::Calc;

const TELLS: u64 = 1_000_000;

/// Counts the user messages arriving on `stream` until `enough` says stop.
async fn count_messages(
    stream: &mut TcpStream,
    mut buf: BytesMut,
    enough: impl Fn(u64) -> bool,
) -> u64 {
    let decoder = Decoder::new(DecoderConfig::for_lane(Lane::Ordinary));
    let mut messages = 0;
    loop {
        while let Some((pdu, used)) = decoder.decode_frame(&buf).unwrap() {
            if matches!(pdu, Pdu::UserMessage(_)) {
                messages += 1;
            }
            let _ = buf.split_to(used);
        }
        if enough(messages) {
            return messages;
        }
        let read = tokio::time::timeout(Duration::from_secs(30), stream.read_buf(&mut buf))
            .await
            .expect("the sender stopped writing");
        assert!(read.unwrap() > 0, "closed early");
    }
}

#[volley_testkit::each_dispatcher]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_million_tells_over_the_bound_are_all_counted_with_few_warnings() {
    log_capture::install();
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let me: Address = format!("volley://beta@{}", listener.local_addr().unwrap())
        .parse()
        .unwrap();
    let a = common::node(
        "alpha",
        RemoteSettings {
            // The handshakes wait for the tells to end.
            handshake_timeout: Duration::from_millis(120_000),
            ..RemoteSettings::default()
        },
    )
    .await;
    let calc = a
        .remoting
        .resolve::<Calc>(&format!("{me}/user/calc"))
        .unwrap();
    let recipient = format!("recipient={me}/user/calc");
    let warnings = || {
        log_capture::events(|e| {
            e.level == Level::WARN
                && e.text.starts_with("remote send failed")
                && e.text.contains(&recipient)
        })
        .len()
    };

    let start = Instant::now();
    for n in 0..TELLS {
        calc.tell(Calc::Seq { from: 0, n });
    }
    let seconds = start.elapsed().as_secs() + 1;
    let dropped = a.system.dead_letter_count();
    assert!(dropped > 0 && dropped < TELLS, "{dropped} dropped");
    let warned = warnings() as u64;
    // 10 a second; a window across a second boundary may hold twice that.
    assert!(
        (1..=10 * (seconds + 1)).contains(&warned),
        "{warned} warnings for {dropped} drops in {seconds} s"
    );

    // Now the peer reads: the queue arrives, and nothing else was lost.
    let ordinary = loop {
        let (mut stream, _) = tokio::time::timeout(Duration::from_secs(30), listener.accept())
            .await
            .expect("the sender connects")
            .unwrap();
        let (lane, rest) = raw_peer::answer_handshake(&mut stream, &me).await;
        if lane == Lane::Ordinary {
            break (stream, rest);
        }
    };
    let (mut stream, rest) = ordinary;
    let received = count_messages(&mut stream, rest, |m| m + dropped >= TELLS).await;
    assert_eq!(received + dropped, TELLS);
    assert_eq!(a.system.dead_letter_count(), dropped, "counted once each");
    a.system.terminate().await;
}
