//! One counter shared by browser tabs through the web gateway: each tab
//! asks it, and sees the others' changes pushed live on topic `counter`.
//!
//! Run it with `cargo run -p volley-examples --example web_counter --
//! --port 8080` and open `http://127.0.0.1:8080/`.
//!
//! Options (stable: the TypeScript client's tests start this example):
//! - `--port N`: the port on 127.0.0.1; 0 picks a free one. Default 8080.
//! - `--pages DIR`: the page directory. Default `examples/web_counter/`.
//! - `--ping-ms N`, `--grace-ms N`: the gateway's ping interval and
//!   resume grace period (defaults 15000 and 30000).
//!
//! Once listening it prints `LISTENING <port>` on a line of its own on
//! stdout. It stops on Ctrl-C (SIGINT), closing its sessions with 1001, or
//! at once on SIGTERM. The services and
//! the topic are those of `volley_examples::web_counter_app`.

use std::io::Write;
use std::path::PathBuf;
use std::time::Duration;

use volley::ActorSystem;
use volley_examples::http_counter_app::settings;
use volley_examples::web_counter_app::{default_pages, gateway, routes};
use volley_web::WebSettings;

struct Args {
    port: u16,
    pages: PathBuf,
    web: WebSettings,
}

fn args() -> Result<Args, String> {
    let mut args = Args {
        port: 8080,
        pages: default_pages(),
        web: WebSettings::default(),
    };
    let mut given = std::env::args().skip(1);
    while let Some(flag) = given.next() {
        let value = given.next().ok_or(format!("{flag} needs a value"))?;
        let number = || {
            value
                .parse::<u64>()
                .map_err(|e| format!("{flag} {value}: {e}"))
        };
        match flag.as_str() {
            "--port" => args.port = value.parse().map_err(|e| format!("--port {value}: {e}"))?,
            "--pages" => args.pages = PathBuf::from(&value),
            "--ping-ms" => args.web.ping_interval = Duration::from_millis(number()?),
            "--grace-ms" => args.web.resume_grace = Duration::from_millis(number()?),
            _ => return Err(format!("unknown option {flag}")),
        }
    }
    Ok(args)
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args = args()?;
    let system =
        ActorSystem::with_runtime("web-counter", settings(), tokio::runtime::Handle::current())?;
    let gateway = gateway(&system, args.web)?;
    let listener = tokio::net::TcpListener::bind(("127.0.0.1", args.port)).await?;
    println!("LISTENING {}", listener.local_addr()?.port());
    std::io::stdout().flush()?;
    // `serve_router`, not `axum::serve`: the gateway's connection and
    // header limits hold for the pages as for the gateway's routes.
    let routes = routes(&gateway, args.pages);
    gateway
        .serve_router(listener, routes, async {
            let _ = tokio::signal::ctrl_c().await;
        })
        .await?;
    system.terminate().await;
    Ok(())
}
