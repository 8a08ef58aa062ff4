//! The stash example's actor: an inventory that loads its stock
//! asynchronously when it starts (as from a database) and stashes the
//! queries that arrive meanwhile, then answers them, in the order they
//! came, once the stock is in (Akka's Stash pattern).

use std::collections::HashMap;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;

use volley::{Actor, ActorRef, ActorSystem, Context, HandleResult, Props, SpawnError};

/// The stock: item name to count.
pub type Stock = HashMap<String, u32>;

/// How the inventory loads its stock.
pub type Loader = Arc<dyn Fn() -> Pin<Box<dyn Future<Output = Stock> + Send>> + Send + Sync>;

/// What the inventory takes.
#[derive(Debug)]
pub enum InventoryMsg {
    /// How many of `item` are in stock (`None`: never stocked).
    Count {
        item: String,
        reply_to: ActorRef<Option<u32>>,
    },
    /// The stock has been loaded (sent by the inventory's own load).
    Loaded(Stock),
}

/// Stashes queries until its stock is loaded.
pub struct Inventory {
    load: Loader,
    stock: Option<Stock>,
}

impl Actor for Inventory {
    type Msg = InventoryMsg;

    fn pre_start(&mut self, ctx: &mut Context<Self>) -> HandleResult {
        ctx.pipe_to((self.load)(), InventoryMsg::Loaded);
        Ok(())
    }

    fn handle(&mut self, ctx: &mut Context<Self>, msg: InventoryMsg) -> HandleResult {
        match (&self.stock, msg) {
            (_, InventoryMsg::Loaded(stock)) => {
                self.stock = Some(stock);
                // Handled next, before anything that arrives from now on.
                ctx.unstash_all();
            }
            // Not loaded yet: put the query aside. Past the stash's
            // capacity this fails the actor, for its supervisor to decide.
            (None, query) => ctx.stash(query)?,
            (Some(stock), InventoryMsg::Count { item, reply_to }) => {
                reply_to.tell(stock.get(&item).copied());
            }
        }
        Ok(())
    }
}

/// Starts an inventory under `/user/inventory` that stashes at most
/// `capacity` queries while `load` runs.
pub fn start(
    system: &ActorSystem,
    load: Loader,
    capacity: usize,
) -> Result<ActorRef<InventoryMsg>, SpawnError> {
    system.spawn(
        "inventory",
        Props::new(move || Inventory {
            load: load.clone(),
            stock: None,
        })
        .with_stash_capacity(capacity),
    )
}
