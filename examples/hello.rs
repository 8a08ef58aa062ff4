//! A greeter with a supervised child: tell, ask, a restart, and shutdown.
//!
//! `cargo run --example hello`

use std::time::Duration;

use volley::{Actor, ActorRef, ActorSystem, Context, HandleResult, Props};

enum Greet {
    Hello(String, ActorRef<String>),
    Crash,
}

#[derive(Default)]
struct Greeter {
    greeted: u32,
}

impl Actor for Greeter {
    type Msg = Greet;
    fn handle(&mut self, _ctx: &mut Context<Self>, msg: Greet) -> HandleResult {
        match msg {
            Greet::Hello(name, reply) => {
                self.greeted += 1;
                reply.tell(format!("hello {name} (greeting #{})", self.greeted));
            }
            Greet::Crash => return Err("asked to crash".into()),
        }
        Ok(())
    }
}

#[tokio::main]
async fn main() {
    let system = ActorSystem::new("hello").expect("system starts");
    let greeter = system
        .spawn("greeter", Props::new(Greeter::default))
        .expect("unique name");
    for name in ["ada", "grace"] {
        let answer = greeter
            .ask(|r| Greet::Hello(name.into(), r), Duration::from_secs(1))
            .await
            .expect("greeter answers");
        println!("{answer}");
    }
    greeter.tell(Greet::Crash);
    let answer = greeter
        .ask(|r| Greet::Hello("linus".into(), r), Duration::from_secs(1))
        .await
        .expect("greeter answers after its restart");
    println!("{answer}  <- restarted: state was reset, the ref still works");
    system.terminate().await;
}
