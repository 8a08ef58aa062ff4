//! A load client over a WebSocket, in JSON: asks, subscriptions, and acks
//! every [`ACK_EVERY`] frames as docs/web-protocol.md asks.

use futures_util::{SinkExt, StreamExt};
use tokio::net::TcpStream;
use tokio_tungstenite::tungstenite::Message;
use tokio_tungstenite::{MaybeTlsStream, WebSocketStream};
use volley_web::frame::ServerFrame;

/// Frames between two acks.
pub const ACK_EVERY: u64 = 32;

pub struct WsClient {
    ws: WebSocketStream<MaybeTlsStream<TcpStream>>,
    next_id: u64,
    last_seq: u64,
    unacked: u64,
}

impl WsClient {
    /// Connects to `127.0.0.1:port/ws` and opens a session.
    pub async fn connect(port: u16) -> crate::Result<WsClient> {
        // Nagle off: an ack and the next ask are two small writes in a row,
        // and the second would wait for the delayed ACK of the first.
        let url = format!("ws://127.0.0.1:{port}/ws");
        let (ws, _) = tokio_tungstenite::connect_async_with_config(url, None, true).await?;
        let mut client = WsClient {
            ws,
            next_id: 0,
            last_seq: 0,
            unacked: 0,
        };
        client.send(r#"{"t":"hello","v":1}"#.into()).await?;
        match client.next_frame().await? {
            ServerFrame::Welcome { .. } => Ok(client),
            other => Err(format!("expected welcome, got {other:?}").into()),
        }
    }

    async fn send(&mut self, text: String) -> crate::Result<()> {
        Ok(self.ws.send(Message::text(text)).await?)
    }

    /// The next protocol frame, answering pings and acking on the way.
    async fn next_frame(&mut self) -> crate::Result<ServerFrame> {
        loop {
            let text = match self.ws.next().await {
                Some(Ok(Message::Text(text))) => text,
                Some(Ok(Message::Close(close))) => {
                    return Err(format!("server closed: {close:?}").into())
                }
                Some(Ok(_)) => continue,
                Some(Err(e)) => return Err(e.into()),
                None => return Err("connection ended".into()),
            };
            let frame: ServerFrame = serde_json::from_str(&text)?;
            match &frame {
                ServerFrame::Ping { n } => self.send(format!(r#"{{"t":"pong","n":{n}}}"#)).await?,
                ServerFrame::Reply { seq, .. }
                | ServerFrame::Error { seq, .. }
                | ServerFrame::Pub { seq, .. }
                | ServerFrame::Push { seq, .. } => self.received(*seq).await?,
                _ => {}
            }
            return Ok(frame);
        }
    }

    async fn received(&mut self, seq: u64) -> crate::Result<()> {
        self.last_seq = seq;
        self.unacked += 1;
        if self.unacked >= ACK_EVERY {
            self.unacked = 0;
            self.send(format!(r#"{{"t":"ack","seq":{seq}}}"#)).await?;
        }
        Ok(())
    }

    /// Asks `service` `msg` (JSON) and waits for the reply.
    pub async fn ask(&mut self, service: &str, msg: &str) -> crate::Result<()> {
        self.next_id += 1;
        let id = self.next_id;
        self.send(format!(
            r#"{{"t":"ask","id":{id},"service":"{service}","msg":{msg}}}"#
        ))
        .await?;
        loop {
            match self.next_frame().await? {
                ServerFrame::Reply { id: got, .. } if got == id => return Ok(()),
                ServerFrame::Error { code, text, .. } => {
                    return Err(format!("ask failed: {code}: {text}").into())
                }
                _ => {}
            }
        }
    }

    /// Subscribes to `topic`.
    pub async fn sub(&mut self, topic: &str) -> crate::Result<()> {
        self.send(format!(r#"{{"t":"sub","topic":"{topic}"}}"#))
            .await
    }

    /// Waits for the next `pub` frame.
    pub async fn next_pub(&mut self) -> crate::Result<()> {
        loop {
            match self.next_frame().await? {
                ServerFrame::Pub { .. } => return Ok(()),
                ServerFrame::Error { code, text, .. } => {
                    return Err(format!("error frame: {code}: {text}").into())
                }
                _ => {}
            }
        }
    }
}
