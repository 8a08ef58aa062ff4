//! Two nodes as two processes: this program starts a second copy of itself
//! as the server node, then talks to it: a tell, an ask whose reply handle
//! crosses the network, and a remote spawn.
//!
//! `cargo run --example remote_hello`

use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};
use std::time::Duration;

use serde::{Deserialize, Serialize};
use volley::{Actor, ActorRef, ActorSystem, Context, HandleResult, Props};
use volley_remote::{Registry, RemoteSettings, Remoting};

/// The greeter's protocol; registered under the same wire id on both nodes.
#[derive(Debug, Serialize, Deserialize)]
enum Greet {
    Hello {
        name: String,
        reply_to: ActorRef<String>,
    },
    Note(String),
}

struct Greeter {
    node: String,
}

impl Actor for Greeter {
    type Msg = Greet;
    fn handle(&mut self, ctx: &mut Context<Self>, msg: Greet) -> HandleResult {
        match msg {
            Greet::Hello { name, reply_to } => reply_to.tell(format!(
                "hello {name}, from {} on {}",
                ctx.path(),
                self.node
            )),
            Greet::Note(text) => eprintln!("[server] note received: {text}"),
        }
        Ok(())
    }
}

fn registry() -> Registry {
    let mut r = Registry::default();
    r.register::<Greet>(1).expect("unique id");
    r.register::<String>(2).expect("unique id");
    r.spawnable::<Greeter, String>("greeter", |node| Greeter { node })
        .expect("unique kind");
    r
}

async fn server() {
    let system = ActorSystem::new("server").expect("system starts");
    let settings = RemoteSettings {
        remote_spawn: true,
        ..RemoteSettings::default()
    };
    let remoting = Remoting::start_with(&system, registry(), settings)
        .await
        .expect("listens");
    system
        .spawn(
            "greeter",
            Props::new(|| Greeter {
                node: "server".into(),
            }),
        )
        .expect("unique name");
    println!("ADDRESS {}", remoting.address());
    // Serve until the client closes our stdin.
    tokio::task::spawn_blocking(|| {
        let mut line = String::new();
        while std::io::stdin().read_line(&mut line).unwrap_or(0) > 0 {}
    })
    .await
    .ok();
    system.terminate().await;
}

async fn client() -> Result<(), Box<dyn std::error::Error>> {
    let mut child = Command::new(std::env::current_exe()?)
        .arg("server")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()?;
    let mut lines = BufReader::new(child.stdout.take().ok_or("no stdout")?).lines();
    let address = lines
        .find_map(|l| l.ok()?.strip_prefix("ADDRESS ").map(str::to_string))
        .ok_or("the server did not start")?;
    println!("server node is at {address}");

    let system = ActorSystem::new("client")?;
    let remoting = Remoting::start(&system, registry()).await?;
    let greeter = remoting.resolve::<Greet>(&format!("{address}/user/greeter"))?;
    greeter.tell(Greet::Note("a tell from the client".into()));
    let answer = greeter
        .ask(
            |reply_to| Greet::Hello {
                name: "ada".into(),
                reply_to,
            },
            Duration::from_secs(5),
        )
        .await?;
    println!("ask answered: {answer}");

    let spawned: ActorRef<Greet> = remoting
        .spawn_remote(
            &address.parse()?,
            "greeter",
            Some("spawned-greeter"),
            &"server (remote-spawned)".to_string(),
            Duration::from_secs(5),
        )
        .await?;
    let answer = spawned
        .ask(
            |reply_to| Greet::Hello {
                name: "grace".into(),
                reply_to,
            },
            Duration::from_secs(5),
        )
        .await?;
    println!("remote-spawned actor answered: {answer}");

    drop(child.stdin.take());
    std::thread::spawn(move || lines.for_each(drop));
    child.wait()?;
    system.terminate().await;
    Ok(())
}

#[tokio::main]
async fn main() {
    if std::env::args().nth(1).as_deref() == Some("server") {
        server().await;
    } else if let Err(e) = client().await {
        eprintln!("remote_hello failed: {e}");
        std::process::exit(1);
    }
}
