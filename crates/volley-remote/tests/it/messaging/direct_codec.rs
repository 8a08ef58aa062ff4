//! Types registered direct (`Registry::register_direct`, no serde) travel
//! between a node that registers them so and one that registers them the
//! serde way: the same bytes under the same serializer id. Refs in them
//! work both ways: a lasting ref (declared), an ask's reply handle (inline
//! in a Request), and per-sender order holds over runs of them.

use crate::common;

use common::T;
use serde::{Deserialize, Serialize};
use volley::{Actor, ActorRef, ActorSystem, Context, HandleResult, Props};
use volley_remote::serialization::{DirectCodec, DirectError, DirectReader, DirectWriter};
use volley_remote::{Registry, RemoteSettings, Remoting};
use volley_testkit::TestProbe;

const ORDER_ID: u32 = 2101;
const TOTAL_ID: u32 = 2102;

#[derive(Debug, Clone, Serialize, Deserialize)]
enum Order {
    /// Answer `id + qty` to `reply_to`.
    Price {
        id: u64,
        qty: i32,
        reply_to: ActorRef<u64>,
    },
    /// Pass `n` on to `to`, which checks the order of arrival.
    Seq(u64, ActorRef<u64>),
}

impl DirectCodec for Order {
    fn encode(&self, out: &mut DirectWriter<'_>) -> Result<(), DirectError> {
        match self {
            Order::Price { id, qty, reply_to } => {
                out.variant(0);
                out.put(id)?;
                out.put(qty)?;
                out.put(reply_to)
            }
            Order::Seq(n, to) => {
                out.variant(1);
                out.put(n)?;
                out.put(to)
            }
        }
    }

    fn decode(input: &mut DirectReader<'_>) -> Result<Self, DirectError> {
        Ok(match input.variant()? {
            0 => Order::Price {
                id: input.take()?,
                qty: input.take()?,
                reply_to: input.take()?,
            },
            1 => Order::Seq(input.take()?, input.take()?),
            index => return Err(DirectError::unknown_variant::<Order>(index)),
        })
    }
}

struct Desk;

impl Actor for Desk {
    type Msg = Order;
    fn handle(&mut self, _ctx: &mut Context<Self>, msg: Order) -> HandleResult {
        match msg {
            Order::Price { id, qty, reply_to } => reply_to.tell(id + qty as u64),
            Order::Seq(n, to) => to.tell(n),
        }
        Ok(())
    }
}

struct Forward(ActorRef<u64>);

impl Actor for Forward {
    type Msg = u64;
    fn handle(&mut self, _ctx: &mut Context<Self>, msg: u64) -> HandleResult {
        self.0.tell(msg);
        Ok(())
    }
}

async fn node(name: &str, direct: bool) -> (ActorSystem, Remoting) {
    let mut r = Registry::default();
    if direct {
        r.register_direct::<Order>(ORDER_ID).unwrap();
        r.register_direct::<u64>(TOTAL_ID).unwrap();
    } else {
        r.register::<Order>(ORDER_ID).unwrap();
        r.register::<u64>(TOTAL_ID).unwrap();
    }
    let system = ActorSystem::with_settings(name, common::node_settings()).unwrap();
    let remoting = Remoting::start_with(&system, r, RemoteSettings::default())
        .await
        .unwrap();
    (system, remoting)
}

/// `from` asks and tells `to`'s desk; the answers come back.
async fn exchange(from: &(ActorSystem, Remoting), to: &(ActorSystem, Remoting)) {
    to.0.spawn("desk", Props::new(|| Desk)).unwrap();
    let desk = from
        .1
        .resolve::<Order>(&format!("{}/user/desk", to.1.address()))
        .unwrap();
    for id in 0..5u64 {
        let total = desk
            .ask(
                |reply_to| Order::Price {
                    id,
                    qty: 40,
                    reply_to,
                },
                T,
            )
            .await
            .unwrap();
        assert_eq!(total, id + 40);
    }
    // A probe's own ref stays local: an actor forwards to it.
    let probe = TestProbe::<u64>::new(&from.0);
    let to_probe = probe.actor_ref();
    let forward = from
        .0
        .spawn_anonymous(Props::new(move || Forward(to_probe.clone())))
        .unwrap();
    for n in 0..500 {
        desk.tell(Order::Seq(n, forward.clone()));
    }
    for n in 0..500 {
        probe.expect_msg(n);
    }
    assert_eq!(to.0.dead_letter_count(), 0);
}

#[volley_testkit::each_dispatcher]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_direct_node_and_a_serde_node_understand_each_other_refs_included() {
    let direct = node("direct", true).await;
    let serde = node("serde", false).await;
    exchange(&direct, &serde).await;
    exchange(&serde, &direct).await;
    direct.0.terminate().await;
    serde.0.terminate().await;
}
