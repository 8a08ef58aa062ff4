//! `StatusReply` and `ask_with_status` across nodes: a success comes back
//! as the value, an error as the ask's `AskStatusError::Error` with its
//! text (a custom error travels as its text), and a failed ask stays an
//! ask error.

use crate::common;

use std::time::Duration;

use serde::{Deserialize, Serialize};
use volley::{
    Actor, ActorSystem, AskError, AskStatusError, Context, HandleResult, Props, ReplyTo,
    StatusReply,
};
use volley_remote::{Registry, RemoteSettings, Remoting};

#[derive(Serialize, Deserialize)]
enum Bank {
    Withdraw(u64, ReplyTo<StatusReply<u64>>),
    Ignore(ReplyTo<StatusReply<u64>>),
}

#[derive(Debug, thiserror::Error)]
#[error("account {0} is frozen")]
struct Frozen(u32);

struct Account {
    balance: u64,
}

impl Actor for Account {
    type Msg = Bank;
    fn handle(&mut self, _ctx: &mut Context<Self>, msg: Bank) -> HandleResult {
        match msg {
            Bank::Withdraw(0, reply) => reply.tell(StatusReply::error_from(Frozen(7))),
            Bank::Withdraw(n, reply) if n > self.balance => {
                reply.tell(StatusReply::error("insufficient funds"))
            }
            Bank::Withdraw(n, reply) => {
                self.balance -= n;
                reply.tell(StatusReply::success(self.balance));
            }
            Bank::Ignore(_) => {}
        }
        Ok(())
    }
}

async fn node(name: &str) -> (ActorSystem, Remoting) {
    let mut registry = Registry::default();
    registry.register::<Bank>(200).unwrap();
    registry.register::<StatusReply<u64>>(201).unwrap();
    let system = ActorSystem::with_settings(name, common::node_settings()).unwrap();
    let remoting = Remoting::start_with(&system, registry, RemoteSettings::default())
        .await
        .unwrap();
    (system, remoting)
}

#[volley_testkit::each_dispatcher]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn status_replies_cross_the_wire() {
    let (a, ra) = node("status-a").await;
    let (b, rb) = node("status-b").await;
    b.spawn("account", Props::new(|| Account { balance: 10 }))
        .unwrap();
    let account = ra
        .resolve::<Bank>(&format!("{}/user/account", rb.address()))
        .unwrap();
    let t = common::T;
    assert_eq!(
        account.ask_with_status(|r| Bank::Withdraw(4, r), t).await,
        Ok(6)
    );
    let refused = account
        .ask_with_status(|r| Bank::Withdraw(7, r), t)
        .await
        .unwrap_err();
    assert_eq!(
        refused.status_error().map(ToString::to_string).as_deref(),
        Some("insufficient funds")
    );
    let frozen = account
        .ask_with_status(|r| Bank::Withdraw(0, r), t)
        .await
        .unwrap_err();
    assert_eq!(
        frozen.status_error().map(ToString::to_string).as_deref(),
        Some("account 7 is frozen"),
        "a custom error travels as its text"
    );
    let silent = account
        .ask_with_status(Bank::Ignore, Duration::from_millis(300))
        .await;
    assert!(
        matches!(silent, Err(AskStatusError::Ask(AskError::Timeout { .. }))),
        "{silent:?}"
    );
    a.terminate().await;
    b.terminate().await;
}
