//! Two OS processes: this test binary re-runs itself as the server node.

use crate::common;

use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};
use std::time::Duration;

use common::{add, node, spawn_calculator, Calc, T};
use volley::ActorRef;
use volley_remote::wire::Address;
use volley_remote::RemoteSettings;

const SERVER_ENV: &str = "VOLLEY_TWO_PROCESS_SERVER";

/// The server half; does nothing unless started by the client test.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore]
async fn server_process() {
    if std::env::var(SERVER_ENV).is_err() {
        return;
    }
    let b = node(
        "server",
        RemoteSettings {
            remote_spawn: true,
            ..RemoteSettings::default()
        },
    )
    .await;
    spawn_calculator(&b, "calc");
    println!("ADDRESS {}", b.remoting.address());
    // Serve until the client closes our stdin.
    tokio::task::spawn_blocking(|| {
        let mut line = String::new();
        while std::io::stdin().read_line(&mut line).unwrap_or(0) > 0 {}
    })
    .await
    .unwrap();
    b.system.terminate().await;
}

#[volley_testkit::each_dispatcher]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tell_ask_and_spawn_across_processes() {
    let mut child = Command::new(std::env::current_exe().unwrap())
        .args([
            "--ignored",
            "--exact",
            "two_processes::server_process",
            "--nocapture",
        ])
        .env(SERVER_ENV, "1")
        .envs([common::dispatcher_env()])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let stdout = child.stdout.take().unwrap();
    // Read the address, then keep draining the child's output so that it
    // never dies of a closed pipe.
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines().map_while(Result::ok) {
            if let Some(a) = line.strip_prefix("ADDRESS ") {
                tx.send(a.to_string()).ok();
            }
        }
    });
    let address = tokio::task::spawn_blocking(move || rx.recv_timeout(Duration::from_secs(30)))
        .await
        .unwrap()
        .expect("server printed its address");
    let server: Address = address.parse().unwrap();

    let a = node("client", RemoteSettings::default()).await;
    let calc = a
        .remoting
        .resolve::<Calc>(&format!("{server}/user/calc"))
        .unwrap();
    let sum = add(&calc, 20, 22).await;
    assert_eq!(sum, 42);
    for n in 0..10_000 {
        calc.tell(Calc::Seq { from: 0, n });
    }
    let report = calc.ask(Calc::Report, T).await.unwrap();
    assert_eq!(report, vec![10_000, 0]);
    let spawned: ActorRef<Calc> = a
        .remoting
        .spawn_remote(&server, "calculator", Some("remote-spawned"), &(), T)
        .await
        .unwrap();
    let sum = add(&spawned, 1, 1).await;
    assert_eq!(sum, 2);

    drop(child.stdin.take());
    let status = tokio::task::spawn_blocking(move || child.wait())
        .await
        .unwrap()
        .unwrap();
    assert!(status.success());
    a.system.terminate().await;
}
