//! Priority and control-aware mailboxes, cases ported from Pekko's
//! `PriorityDispatcherSpec`, `StablePriorityDispatcherSpec` and
//! `ControlAwareDispatcherSpec` to volley's API. As in those specs, the
//! actor sends the messages to itself from one handler, so all of them are
//! queued before the next is taken, whatever the dispatcher.

use crate::common;

use common::system;
use volley::{MailboxConfig, Overflow, Props};
use volley_testkit::{actor_fn_with, FnActor};

#[derive(Debug, Clone, PartialEq)]
enum Msg {
    /// Sends `self` each of these, then `Result`.
    Start(Vec<Msg>),
    Num(u32),
    Text(&'static str),
    Important,
    /// Reports what was handled, in order.
    Result,
}

/// Records what it handles; reports the record on `Result`.
type Recorder = FnActor<Msg, Vec<Msg>>;

/// Runs `msgs` through a `Recorder` spawned with `props`' mailbox.
fn handled_order(
    name: &str,
    props: impl FnOnce(Props<Recorder>) -> Props<Recorder>,
    msgs: Vec<Msg>,
) -> Vec<Msg> {
    let sys = system(name).unwrap();
    let (report, rx) = std::sync::mpsc::channel();
    let recorder = actor_fn_with(Vec::new(), move |seen, ctx, msg: Msg| {
        match msg {
            Msg::Start(msgs) => {
                for m in msgs {
                    ctx.myself().tell(m);
                }
                ctx.myself().tell(Msg::Result);
            }
            Msg::Result => {
                let _ = report.send(std::mem::take(seen));
            }
            other => seen.push(other),
        }
        Ok(())
    });
    let recorder = sys.spawn("recorder", props(recorder.props())).unwrap();
    recorder.tell(Msg::Start(msgs));
    rx.recv_timeout(std::time::Duration::from_secs(10))
        .expect("the recorder reports")
}

fn nums(range: impl Iterator<Item = u32>) -> Vec<Msg> {
    range.map(Msg::Num).collect()
}

/// Numbers rank by value; `Result` last (it is only counted once all
/// numbers are handled).
fn by_value(m: &Msg) -> i32 {
    match m {
        Msg::Num(n) => *n as i32,
        _ => i32::MAX,
    }
}

/// PriorityDispatcherSpec: "Order its messages according to the specified
/// comparator" using an unbounded mailbox.
#[volley_testkit::each_dispatcher]
#[test]
fn an_unbounded_priority_mailbox_orders_by_priority() {
    let order = handled_order(
        "priority-unbounded",
        |p| p.with_priority_mailbox(by_value),
        nums((1..=100).rev()),
    );
    assert_eq!(order, nums(1..=100));
}

/// PriorityDispatcherSpec: "Order its messages according to the specified
/// comparator" using a bounded mailbox.
#[volley_testkit::each_dispatcher]
#[test]
fn a_bounded_priority_mailbox_orders_by_priority() {
    let order = handled_order(
        "priority-bounded",
        |p| {
            p.with_mailbox(MailboxConfig::bounded(1000, Overflow::DropNewest))
                .with_priority_mailbox(by_value)
        },
        nums((1..=100).rev()),
    );
    assert_eq!(order, nums(1..=100));
}

/// StablePriorityDispatcherSpec: "Order its messages according to the
/// specified comparator while preserving FIFO for equal priority
/// messages", unbounded and bounded: 1..=100 by value, everything above
/// 100 as equals, in the shuffled order it was sent.
#[volley_testkit::each_dispatcher]
#[test]
fn a_stable_priority_mailbox_keeps_arrival_order_among_equals() {
    // A fixed shuffle (multiplication by a unit mod 200), so the test is
    // the same every run.
    let shuffled: Vec<u32> = (0..200u32).map(|i| (i * 77) % 200 + 1).collect();
    let rank = |m: &Msg| match m {
        Msg::Num(n) if *n <= 100 => *n as i32,
        Msg::Num(_) => 101,
        _ => i32::MAX,
    };
    let expected: Vec<Msg> = nums(1..=100)
        .into_iter()
        .chain(nums(shuffled.iter().copied().filter(|n| *n > 100)))
        .collect();
    for bounded in [false, true] {
        let order = handled_order(
            &format!("stable-priority-{bounded}"),
            |p| {
                let p = p.with_priority_mailbox(rank);
                if bounded {
                    p.with_mailbox(MailboxConfig::bounded(1000, Overflow::DropNewest))
                } else {
                    p
                }
            },
            nums(shuffled.iter().copied()),
        );
        assert_eq!(order, expected, "bounded: {bounded}");
    }
}

/// ControlAwareDispatcherSpec: "deliver control messages first using an
/// unbounded mailbox" (and a bounded one).
#[volley_testkit::each_dispatcher]
#[test]
fn a_control_aware_mailbox_delivers_control_messages_first() {
    let sent = vec![
        Msg::Text("test"),
        Msg::Text("test2"),
        Msg::Important,
        Msg::Important,
    ];
    let expected = vec![
        Msg::Important,
        Msg::Important,
        Msg::Text("test"),
        Msg::Text("test2"),
    ];
    for bounded in [false, true] {
        let order = handled_order(
            &format!("control-aware-{bounded}"),
            |p| {
                // `Result` is no control message: it comes after the others.
                let p = p.with_control_aware_mailbox(|m| matches!(m, Msg::Important));
                if bounded {
                    p.with_mailbox(MailboxConfig::bounded(100, Overflow::DropNewest))
                } else {
                    p
                }
            },
            sent.clone(),
        );
        assert_eq!(order, expected, "bounded: {bounded}");
    }
}

/// The default mailbox is first in, first out (the ordered ones above
/// differ from it only by their order).
#[volley_testkit::each_dispatcher]
#[test]
fn the_default_mailbox_keeps_sending_order() {
    let order = handled_order("fifo", |p| p, nums((1..=100).rev()));
    assert_eq!(order, nums((1..=100).rev()));
}
