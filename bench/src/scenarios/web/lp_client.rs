//! A load client over HTTP long-poll: one keep-alive HTTP/1.1 connection
//! that sends an ask (`lp/send`) and polls (`lp/recv`) until its reply.

use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper::client::conn::http1::SendRequest;
use hyper::{Method, Request};
use hyper_util::rt::TokioIo;
use tokio::net::TcpStream;
use volley_web::frame::ServerFrame;

pub struct LpClient {
    http: SendRequest<Full<Bytes>>,
    session: String,
    next_id: u64,
    /// The last `seq` received: every `recv` acknowledges it.
    last_seq: u64,
}

impl LpClient {
    /// Connects to 127.0.0.1:`port` and opens a session (`lp/open`).
    pub async fn connect(port: u16) -> crate::Result<LpClient> {
        let stream = TcpStream::connect(("127.0.0.1", port)).await?;
        stream.set_nodelay(true)?;
        let (http, connection) =
            hyper::client::conn::http1::handshake(TokioIo::new(stream)).await?;
        tokio::spawn(connection);
        let mut client = LpClient {
            http,
            session: String::new(),
            next_id: 0,
            last_seq: 0,
        };
        let welcome = client
            .request(Method::POST, "/lp/open?enc=json", r#"{"t":"hello","v":1}"#)
            .await?;
        match serde_json::from_slice(&welcome)? {
            ServerFrame::Welcome { session, .. } => client.session = session,
            other => return Err(format!("expected welcome, got {other:?}").into()),
        }
        Ok(client)
    }

    /// One request on the connection; its body, when the status is 2xx.
    async fn request(&mut self, method: Method, path: &str, body: &str) -> crate::Result<Bytes> {
        self.http.ready().await?;
        let request = Request::builder()
            .method(method)
            .uri(path)
            .header(hyper::header::HOST, "127.0.0.1")
            .body(Full::new(Bytes::copy_from_slice(body.as_bytes())))?;
        let response = self.http.send_request(request).await?;
        let status = response.status();
        let body = response.into_body().collect().await?.to_bytes();
        if !status.is_success() {
            return Err(format!("{path}: {status}").into());
        }
        Ok(body)
    }

    /// Asks `service` `msg` (JSON) and polls until the reply.
    pub async fn ask(&mut self, service: &str, msg: &str) -> crate::Result<()> {
        self.next_id += 1;
        let id = self.next_id;
        let send = format!("/lp/send?session={}", self.session);
        let frame = format!(r#"[{{"t":"ask","id":{id},"service":"{service}","msg":{msg}}}]"#);
        self.request(Method::POST, &send, &frame).await?;
        loop {
            let recv = format!("/lp/recv?session={}&ack={}", self.session, self.last_seq);
            let body = self.request(Method::GET, &recv, "").await?;
            for frame in serde_json::from_slice::<Vec<ServerFrame>>(&body)? {
                match frame {
                    ServerFrame::Reply { seq, id: got, .. } => {
                        self.last_seq = seq;
                        if got == id {
                            return Ok(());
                        }
                    }
                    ServerFrame::Error { code, text, .. } => {
                        return Err(format!("ask failed: {code}: {text}").into())
                    }
                    _ => {}
                }
            }
        }
    }
}
