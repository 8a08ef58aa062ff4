//! Streams a client opens past what the gateway takes: more at once than
//! `max_concurrent_streams`, header lists past `max_header_list_size`
//! (whole, or continued without end), and streams reset as fast as they
//! are opened (rapid reset).

use volley_grpc::{GatewaySettings, Http2Limits};

use super::frames::*;
use super::ping_message;
use crate::echo_server::{server, PATH};

fn with(http2: Http2Limits) -> GatewaySettings {
    GatewaySettings {
        http2,
        ..GatewaySettings::default()
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stream_past_max_concurrent_streams_is_refused() {
    let s = server(with(Http2Limits {
        max_concurrent_streams: 4,
        ..Http2Limits::default()
    }))
    .await;
    let mut raw = RawH2::handshake(s.served.port, &[]).await;
    // Five calls whose bodies never come: each holds its stream open.
    for id in [1, 3, 5, 7, 9] {
        raw.send(&frame(HEADERS, END_HEADERS, id, &grpc_request(PATH)))
            .await;
    }
    let refused = raw
        .until(|f| f.kind == RST_STREAM)
        .await
        .expect("a reset, with the connection open");
    assert_eq!(
        (refused.stream, refused.error_code()),
        (9, Some(REFUSED_STREAM))
    );
    s.still_answers().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_header_list_past_max_header_list_size_is_answered_431() {
    let s = server(with(Http2Limits {
        max_header_list_size: 4096,
        ..Http2Limits::default()
    }))
    .await;
    let mut raw = RawH2::handshake(s.served.port, &[]).await;
    let mut block = grpc_request(PATH);
    literal(&mut block, "x-big", &[b'a'; 6000]);
    raw.send(&frame(HEADERS, END_HEADERS, 1, &block)).await;
    raw.send(&frame(DATA, END_STREAM, 1, &ping_message("big")))
        .await;
    let answer = raw
        .until(|f| f.kind == HEADERS)
        .await
        .expect("an answer, with the connection open");
    // `:status: 431` in HPACK (the static table's `:status` name, the
    // value Huffman-coded), and the end of the stream.
    assert_eq!(answer.payload, [0x48, 0x83, 0x69, 0x90, 0xff], "{answer:?}");
    assert_eq!((answer.stream, answer.flags & END_STREAM), (1, END_STREAM));
    assert_eq!(s.asked(), 0, "no actor saw the call");
    s.still_answers().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_header_block_continued_without_end_ends_the_connection() {
    let s = server(GatewaySettings::default()).await;
    let mut raw = RawH2::handshake(s.served.port, &[]).await;
    raw.send(&frame(HEADERS, 0, 1, &grpc_request(PATH))).await;
    // CONTINUATION frames of headers, none with END_HEADERS, for as long
    // as the server reads them (at most 64 MiB).
    let mut one = Vec::new();
    literal(&mut one, "x-more", &[b'a'; 16_000]);
    let continuation = frame(CONTINUATION, 0, 1, &one);
    let flood = raw.flood(move |_| continuation.clone(), 64 << 20);
    let goaway = raw.until(|f| f.kind == GOAWAY).await;
    raw.closed().await;
    let (sent, cut_off) = flood.await.unwrap();
    assert!(
        cut_off,
        "the server read all {sent} bytes of one header block"
    );
    let goaway = goaway.expect("a GOAWAY before the close");
    assert_eq!(goaway.error_code(), Some(ENHANCE_YOUR_CALM), "{goaway:?}");
    assert_eq!(s.asked(), 0);
    s.still_answers().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn streams_reset_as_fast_as_they_are_opened_end_the_connection() {
    let s = server(with(Http2Limits {
        max_pending_accept_reset_streams: 20,
        ..Http2Limits::default()
    }))
    .await;
    let mut raw = RawH2::handshake(s.served.port, &[]).await;
    let message = ping_message("reset");
    // Each call whole (headers, message, end), then reset at once, 100
    // calls a write, for at most 100,000 calls.
    let headers = grpc_request(PATH);
    let flood = raw.flood(
        move |round| {
            let mut batch = Vec::new();
            for i in 0..100 {
                let id = 2 * (round * 100 + i) + 1;
                batch.extend(frame(HEADERS, END_HEADERS, id, &headers));
                batch.extend(frame(DATA, END_STREAM, id, &message));
                batch.extend(reset(id, CANCEL));
            }
            batch
        },
        16 << 20,
    );
    let goaway = raw.until(|f| f.kind == GOAWAY).await;
    let (sent, cut_off) = flood.await.unwrap();
    assert!(cut_off, "the server read all {sent} bytes");
    let goaway = goaway.expect("a GOAWAY before the connection closed");
    assert_eq!(goaway.error_code(), Some(ENHANCE_YOUR_CALM));
    s.still_answers().await;
}
