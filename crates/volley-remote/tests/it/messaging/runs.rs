//! The reader delivers consecutive messages for one actor as a run (one
//! mailbox lock per run): runs must keep order, respect their cap, stop at
//! a change of recipient and at any other frame (a declaration can rebind
//! an id mid-stream), and a bad payload inside a run must cost only itself.

use crate::common;
use crate::raw_peer;

use std::time::Duration;

use bytes::BytesMut;
use common::{node, spawn_calculator, Calc, CALC_ID, T};
use raw_peer::handshaken;
use tokio::io::AsyncWriteExt;
use volley::ActorRef;
use volley_remote::serialization::{BincodeSerializer, Serializer, SerializerId};
use volley_remote::wire::{Encoder, Lane, MessageHeader, Pdu, RefDeclaration, RefId};
use volley_remote::RemoteSettings;

/// Appends frames to `out` for one hand-driven connection.
struct Frames {
    enc: Encoder,
    out: BytesMut,
}

impl Frames {
    fn declare(&mut self, id: u32, path: &str) {
        let pdu = Pdu::RefDeclaration(RefDeclaration {
            id: RefId::new(id).unwrap(),
            uid: 0,
            path,
        });
        self.enc.encode(&pdu, &mut self.out).unwrap();
    }

    fn payload(&mut self, to: u32, write: impl FnOnce(&mut BytesMut)) {
        let header = MessageHeader {
            recipient: RefId::new(to).unwrap(),
            sender: None,
            serializer: SerializerId::BINCODE,
            type_id: CALC_ID,
        };
        self.enc
            .user_message_with(&mut self.out, &header, |b| {
                write(b);
                Ok(())
            })
            .unwrap();
    }

    /// `Seq { from, n }` for each `n` in `ns`, to ref id `to`.
    fn seq(&mut self, to: u32, from: u32, ns: std::ops::Range<u64>) {
        for n in ns {
            self.payload(to, |b| {
                BincodeSerializer.encode(&Calc::Seq { from, n }, b).unwrap()
            });
        }
    }
}

/// (messages received, out of order) as `calc` reports them.
async fn report(calc: &ActorRef<Calc>) -> Vec<u64> {
    calc.ask(Calc::Report, T).await.unwrap()
}

#[volley_testkit::each_dispatcher]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn runs_keep_order_stop_at_declarations_and_isolate_bad_payloads() {
    let b = node("beta", RemoteSettings::default()).await;
    let x = spawn_calculator(&b, "x");
    let y = spawn_calculator(&b, "y");
    let addr = b.remoting.address().clone();
    let mut f = Frames {
        enc: Encoder::for_lane(Lane::Ordinary),
        out: BytesMut::new(),
    };
    f.declare(1, &format!("{addr}/user/x"));
    f.declare(2, &format!("{addr}/user/y"));
    // 150 for x (longer than two runs' cap), with a payload that does not
    // decode in the middle of a run.
    f.seq(1, 0, 0..70);
    f.payload(1, |b| b.extend_from_slice(&[0xff; 3]));
    f.seq(1, 0, 70..150);
    // Alternating recipients: every run is short.
    for n in 0..20 {
        f.seq(2, 0, n..n + 1);
        f.seq(1, 1, n..n + 1);
    }
    // Id 1 now means y: the messages after the declaration must reach y,
    // so the run for x has to be delivered before the declaration applies.
    f.seq(1, 2, 0..10);
    f.declare(1, &format!("{addr}/user/y"));
    f.seq(1, 3, 0..30);

    let dead_before = b.system.dead_letter_count();
    let mut s = handshaken(&addr).await;
    // Both in one write, and split at an awkward place: runs must also be
    // right when a read ends inside a frame.
    let split = f.out.len() / 2 + 3;
    s.write_all(&f.out[..split]).await.unwrap();
    s.flush().await.unwrap();
    // Paces the halves, so that the node likely reads them apart; runs
    // must be right either way.
    tokio::time::sleep(Duration::from_millis(20)).await;
    s.write_all(&f.out[split..]).await.unwrap();

    let deadline = std::time::Instant::now() + T;
    loop {
        let (rx, ry) = (report(&x).await, report(&y).await);
        if rx[0] == 150 + 20 + 10 && ry[0] == 20 + 30 {
            assert_eq!(rx[1], 0, "x saw messages out of order");
            assert_eq!(ry[1], 0, "y saw messages out of order");
            break;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "x got {rx:?}, y got {ry:?}"
        );
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    assert_eq!(
        b.system.dead_letter_count(),
        dead_before + 1,
        "exactly the bad payload is a dead letter"
    );
    drop(s);
    b.system.terminate().await;
}
