//! An inventory that stashes queries until its stock has loaded.
//!
//! Run with `cargo run -p volley-examples --example stash_inventory`: the
//! inventory's stock takes 300 ms to load; three queries sent at once are
//! stashed, then answered in order as soon as it is in.

use std::sync::Arc;
use std::time::{Duration, Instant};

use volley::ActorSystem;
use volley_examples::stash_inventory_app::{start, InventoryMsg, Stock};

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error + Send + Sync>> {
    let system = ActorSystem::new("stash-inventory")?;
    let inventory = start(
        &system,
        Arc::new(|| {
            Box::pin(async {
                tokio::time::sleep(Duration::from_millis(300)).await;
                Stock::from([("apples".to_string(), 12), ("pears".to_string(), 0)])
            })
        }),
        100,
    )?;
    let began = Instant::now();
    let asks = ["apples", "pears", "plums"].map(|item| {
        inventory.ask(
            |reply_to| InventoryMsg::Count {
                item: item.to_string(),
                reply_to,
            },
            Duration::from_secs(5),
        )
    });
    for (item, ask) in ["apples", "pears", "plums"].iter().zip(asks) {
        let count = ask.await?;
        println!("{item}: {count:?} (after {:?})", began.elapsed());
    }
    system.terminate().await;
    Ok(())
}
