//! Hostile clients on raw sockets: frames no HTTP/2 library sends, sent by
//! hand (`frames`), against the gateway's per-connection HTTP/2 limits
//! (`GatewaySettings::http2`). Each test checks that the gateway ends
//! what the client started, with HTTP/2's own error (or, for a client
//! that reads nothing, by dropping the connection), and answers an
//! ordinary call afterwards; `window` checks a streaming call's deadline
//! against a client that never opens its window.

mod floods;
mod frames;
mod streams;
mod window;

use crate::echo_server::Ping;

/// A request message's bytes (`Ping { text }`), gRPC-framed.
fn ping_message(text: &str) -> Vec<u8> {
    let mut encoded = Vec::new();
    prost::Message::encode(&Ping { text: text.into() }, &mut encoded).unwrap();
    frames::grpc_message(&encoded)
}
