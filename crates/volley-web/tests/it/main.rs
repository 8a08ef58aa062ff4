//! volley-web's tests, in one binary: a real gateway on a local port,
//! real WebSocket clients (tokio-tungstenite), and long-poll requests
//! through the gateway's router.

mod bad_input;
mod common;
mod hostile;
mod limits;
mod longpoll;
mod msgpack;
mod resume;
mod ws;
