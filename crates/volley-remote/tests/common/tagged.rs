//! An actor that passes every number it gets to the test under its own
//! tag, so a test can tell which actor an answer reached.

use tokio::sync::mpsc::UnboundedSender;
use volley::{Actor, ActorRef, Context, HandleResult, Props};

use super::Node;

/// Sends `(tag, number)` to the test for each number.
pub struct Tagged(pub u64, pub UnboundedSender<(u64, i64)>);

impl Actor for Tagged {
    type Msg = i64;
    fn handle(&mut self, _ctx: &mut Context<Self>, n: i64) -> HandleResult {
        let _ = self.1.send((self.0, n));
        Ok(())
    }
}

/// A [`Tagged`] actor named `name` on `n`.
pub fn tagged(n: &Node, name: &str, tag: u64, tx: &UnboundedSender<(u64, i64)>) -> ActorRef<i64> {
    let tx = tx.clone();
    n.system
        .spawn(name, Props::new(move || Tagged(tag, tx.clone())))
        .unwrap()
}

/// Hands each message on to another ref: a test probe's own ref is an
/// adapter, which is local only (docs/reference/message-adapters.md), so
/// what comes from the other node reaches a probe through this plain
/// actor.
pub struct Forward<T: Send + 'static>(pub ActorRef<T>);

impl<T: Send + 'static> Actor for Forward<T> {
    type Msg = T;
    fn handle(&mut self, _ctx: &mut Context<Self>, msg: T) -> HandleResult {
        self.0.tell(msg);
        Ok(())
    }
}
