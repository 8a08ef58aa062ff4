//! `closed_by_peer`: a connection the other end closes, and one it keeps.

use std::time::Duration;

use tokio::io::AsyncWriteExt;
use tokio::net::{TcpListener, TcpStream};
use volley_testkit::{closed_by_peer, closed_by_peer_within};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn returns_once_the_peer_closes_after_what_it_sent() {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let mut client = TcpStream::connect(listener.local_addr().unwrap())
        .await
        .unwrap();
    let (mut server, _) = listener.accept().await.unwrap();
    server.write_all(b"bye").await.unwrap();
    drop(server);
    closed_by_peer(&mut client).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn says_false_while_the_peer_keeps_the_connection() {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let mut client = TcpStream::connect(listener.local_addr().unwrap())
        .await
        .unwrap();
    let (_server, _) = listener.accept().await.unwrap();
    assert!(!closed_by_peer_within(Duration::from_millis(50), &mut client).await);
}
