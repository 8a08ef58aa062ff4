//! The writer's byte handling: chunking, resuming a full socket, counting
//! what a failed connection loses.

use super::*;
use tokio::io::AsyncReadExt;

/// `n` frames of 4-byte length + `len` bytes, each filled with its index.
fn frames(n: usize, len: usize) -> BytesMut {
    let mut b = BytesMut::new();
    for i in 0..n {
        b.extend_from_slice(&(len as u32).to_le_bytes());
        b.extend(std::iter::repeat_n(i as u8, len));
    }
    b
}

#[test]
fn chunks_end_on_frame_boundaries() {
    let b = frames(3, 10);
    assert_eq!(chunk_end(&b, 0, 1), 14);
    assert_eq!(chunk_end(&b, 14, 1), 28);
    assert_eq!(chunk_end(&b, 0, 2), 28);
    assert_eq!(chunk_end(&b, 0, 4096), 42);
    // A truncated length header still makes progress.
    assert_eq!(chunk_end(&b[..2], 0, 1), 1);
}

#[test]
fn only_messages_not_completely_written_are_counted() {
    use crate::serialization::SerializerId;
    use crate::wire::{Encoder, Lane, MessageHeader, Pdu, RefDeclaration, RefId};
    let encoder = Encoder::for_lane(Lane::Ordinary);
    let mut out = BytesMut::new();
    let mut ends = Vec::new();
    let declaration = RefDeclaration {
        id: RefId::new(4097).unwrap(),
        uid: 1,
        path: "volley://b@127.0.0.1:1/user/x",
    };
    encoder
        .encode(&Pdu::RefDeclaration(declaration), &mut out)
        .unwrap();
    ends.push(out.len());
    let header = MessageHeader {
        recipient: RefId::new(4097).unwrap(),
        sender: None,
        serializer: SerializerId::BINCODE,
        type_id: 1,
    };
    for _ in 0..3 {
        encoder
            .user_message_with(&mut out, &header, |b| {
                b.extend_from_slice(b"payload");
                Ok(())
            })
            .unwrap();
        ends.push(out.len());
    }
    assert_eq!(messages_from(&out, 0), 3, "a declaration is no message");
    assert_eq!(messages_from(&out, ends[0]), 3);
    assert_eq!(messages_from(&out, ends[1] - 1), 3, "a cut frame is lost");
    assert_eq!(messages_from(&out, ends[1]), 2);
    assert_eq!(messages_from(&out, ends[3] - 1), 1);
    assert_eq!(messages_from(&out, ends[3]), 0, "all written");
}

/// Fills a socket nobody reads until `try_write_all` reports it full,
/// then lets the reader drain it and finishes with `write_all`: every
/// byte arrives once, in order, whether writes are batched or
/// frame-by-frame.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_full_socket_is_resumed_where_it_stopped() {
    for max_frames in [1, 4096] {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let (client, server) = tokio::join!(TcpStream::connect(addr), listener.accept());
        let (mut server, _) = server.unwrap();
        let mut conn = Connection::new(Arc::new(client.unwrap()), None);
        let mut queued = frames(200_000, 60);
        let expected = queued.clone();
        conn.take_from(&mut queued);
        conn.stream.writable().await.unwrap();
        let done = conn.try_write_all(max_frames).unwrap();
        assert!(!done, "a 12.8 MB write should fill an unread socket");
        assert!(conn.written > 0 && conn.written < expected.len());
        let reader = tokio::spawn(async move {
            let mut got = Vec::with_capacity(expected.len());
            while got.len() < expected.len() {
                let n = server.read_buf(&mut got).await.unwrap();
                assert!(n > 0, "closed early");
            }
            assert!(
                got == expected[..],
                "bytes differ (max_frames {max_frames})"
            );
        });
        conn.write_all(max_frames).await.unwrap();
        reader.await.unwrap();
    }
}
