//! What each row does to a running cluster, through the member commands
//! of bench/peers/README.md ("sharding"); the checks that make a row
//! `verified`. Loads run inside the member [`DRIVER`] (as a client
//! colocated with the cluster would), so the figures are the systems',
//! not this process's.

use std::time::Duration;

use super::members::{duplicate_ids, num, strings, Members};
use super::rows::ShardingRow;
use super::Params;
use crate::scenarios::cluster::view::{now_ms, Event};

/// The member that runs the loads and pings the singleton: not the
/// oldest (member 0), which hosts the singleton and is killed.
pub const DRIVER: usize = 1;

/// How long one load may run.
const LOAD_TIMEOUT: Duration = Duration::from_secs(600);
/// How long a query (`check`, `shards`, `reset`) may take.
const QUERY_TIMEOUT: Duration = Duration::from_secs(30);
/// Asks in flight in the ask, activation and background loads.
const ASK_WINDOW: u64 = 500;
/// A tell row asks for an acknowledgement every this many messages...
const ACK_EVERY: u64 = 100;
/// ...with at most this many outstanding: the flow control that keeps a
/// transport's outbound queue from overflowing.
const TELL_WINDOW: u64 = 20;
/// Tries of the warm-up that places the entities (a first ask may time
/// out while the shard coordinator starts).
const WARM_TRIES: usize = 3;

/// What a `row` line says.
struct Outcome {
    sent: u64,
    replies: u64,
    failures: u64,
    duplicate_replies: u64,
    secs: f64,
}

impl Outcome {
    fn of(e: &Event) -> Outcome {
        Outcome {
            sent: num(e, "sent"),
            replies: num(e, "replies"),
            failures: num(e, "failures"),
            duplicate_replies: num(e, "duplicate_replies"),
            secs: num(e, "elapsed_us") as f64 / 1e6,
        }
    }

    fn answered_all(&self, expected: u64) -> bool {
        self.replies == expected && self.failures == 0 && self.duplicate_replies == 0
    }

    fn describe(&self) -> String {
        format!(
            "{} sent, {} answered, {} failed, {} answered twice",
            self.sent, self.replies, self.failures, self.duplicate_replies
        )
    }
}

/// The sum of every running member's `check` line.
#[derive(Debug, Default)]
struct Totals {
    live: u64,
    received: u64,
    mismatched: u64,
    started: u64,
    local_duplicates: u64,
    /// Ids alive on two members at once (with `ids`).
    duplicates: u64,
}

fn check(m: &mut Members, expected: i64, ids: bool) -> crate::Result<Totals> {
    let mut totals = Totals::default();
    let mut lists = Vec::new();
    let command = format!("check {expected} {}", if ids { "ids" } else { "-" });
    for i in m.running() {
        let e = m.query(i, &command, "check", QUERY_TIMEOUT)?;
        totals.live += num(&e, "live");
        totals.received += num(&e, "received");
        totals.mismatched += num(&e, "mismatched");
        totals.started += num(&e, "started");
        totals.local_duplicates += num(&e, "local_duplicates");
        lists.push(strings(&e, "ids"));
    }
    totals.duplicates = duplicate_ids(&lists) + totals.local_duplicates;
    Ok(totals)
}

fn reset(m: &mut Members) -> crate::Result<()> {
    for i in m.running() {
        m.query(i, "reset", "reset", QUERY_TIMEOUT)?;
    }
    Ok(())
}

/// Runs `run ...` on the driver and waits for its `row` line.
fn run_load(m: &mut Members, args: &str) -> crate::Result<Outcome> {
    let e = m.query(DRIVER, &format!("run {args}"), "row", LOAD_TIMEOUT)?;
    Ok(Outcome::of(&e))
}

/// Places every entity (asks each once) until no ask fails, then waits
/// until the shards are spread evenly over the members, so that no
/// rebalance moves entities (and restarts their counts) inside a row.
/// A shard a rebalance round moved after its entities had their ask has
/// no live entity until its next message, so while the placement is not
/// even the entities are asked again.
pub fn warm(m: &mut Members, p: &Params) -> crate::Result<()> {
    let e = p.entities;
    let ask_all = |m: &mut Members| run_load(m, &format!("warm {e} {ASK_WINDOW} 1 {e} e ask"));
    for _ in 0..WARM_TRIES {
        if !ask_all(m)?.answered_all(e) {
            continue;
        }
        let members = m.running().len();
        let even = |counts: &[(String, u64)]| balanced(counts, p.shards, members);
        for _ in 0..SETTLE_ROUNDS {
            if await_shards(m, SETTLE_STEP, even).is_ok() {
                return Ok(());
            }
            ask_all(m)?;
        }
        return await_shards(m, SETTLE_STEP, even).map(|_| ());
    }
    Err(format!("the warm-up asks still failed after {WARM_TRIES} tries").into())
}

/// How long the shards may take to spread evenly after an ask of every
/// entity, and how many times the entities are asked again.
const SETTLE_STEP: Duration = Duration::from_secs(10);
const SETTLE_ROUNDS: usize = 12;

/// Every one of `shards` shards placed, on `members` regions that are at
/// most one shard apart (where the least-shard strategy stops moving).
fn balanced(counts: &[(String, u64)], shards: u64, members: usize) -> bool {
    let (min, max) = counts
        .iter()
        .fold((u64::MAX, 0), |(lo, hi), (_, n)| (lo.min(*n), hi.max(*n)));
    counts.len() == members
        && counts.iter().map(|(_, n)| n).sum::<u64>() == shards
        && max <= min + 1
}

/// Tell throughput to the warmed entities, every message counted by its
/// entity: each of them must have got exactly its share.
pub fn tell(m: &mut Members, p: &Params) -> crate::Result<ShardingRow> {
    let (n, e) = (p.tell_messages, p.entities);
    reset(m)?;
    let cpu_before = m.cpu_time()?;
    let o = run_load(m, &format!("tell {n} {TELL_WINDOW} {ACK_EVERY} {e} e tell"))?;
    let cpu = m.cpu_time()?.saturating_sub(cpu_before);
    let t = check(m, (n / e) as i64, true)?;
    let acks = n.div_ceil(ACK_EVERY);
    let verified = o.answered_all(acks)
        && t.received == n
        && t.mismatched == 0
        && t.live == e
        && t.duplicates == 0;
    Ok(ShardingRow {
        row: "tell".into(),
        value: Some(n as f64 / o.secs),
        unit: "msgs/s".into(),
        verified,
        duplicates: Some(t.duplicates),
        count: Some(n),
        note: format!(
            "{n} tells to {e} entities, an acknowledged one every {ACK_EVERY} (at most \
             {TELL_WINDOW} outstanding); entities counted {} in all, {} live, {} with a count \
             other than {}; acks: {}; the members' CPU time (user and system, all {} \
             processes): {:.3} µs per message",
            t.received,
            t.live,
            t.mismatched,
            n / e,
            o.describe(),
            m.running().len(),
            cpu.as_secs_f64() * 1e6 / n as f64
        ),
    })
}

/// Ask throughput to the warmed entities ([`ASK_WINDOW`] in flight).
pub fn ask(m: &mut Members, p: &Params) -> crate::Result<ShardingRow> {
    let (n, e) = (p.ask_messages, p.entities);
    reset(m)?;
    let o = run_load(m, &format!("ask {n} {ASK_WINDOW} 1 {e} e ask"))?;
    let t = check(m, (n / e) as i64, true)?;
    let verified = o.answered_all(n) && t.received == n && t.mismatched == 0 && t.duplicates == 0;
    Ok(ShardingRow {
        row: "ask".into(),
        value: Some(n as f64 / o.secs),
        unit: "msgs/s".into(),
        verified,
        duplicates: Some(t.duplicates),
        count: Some(n),
        note: format!(
            "{n} asks to {e} entities, {ASK_WINDOW} in flight; {}; entities counted {}, \
             {} with a count other than {}",
            o.describe(),
            t.received,
            t.mismatched,
            n / e
        ),
    })
}

/// Activations: an ask to each of `activations` new ids, each the first
/// message to its id, so each starts an entity.
pub fn activate(m: &mut Members, p: &Params, round: usize) -> crate::Result<ShardingRow> {
    let n = p.activations;
    let before = check(m, -1, false)?;
    reset(m)?;
    let o = run_load(m, &format!("activate {n} {ASK_WINDOW} 1 0 a{round}- ask"))?;
    let t = check(m, -1, true)?;
    let started = t.started - before.started;
    let verified = o.answered_all(n) && started == n && t.received == n && t.duplicates == 0;
    Ok(ShardingRow {
        row: "activate".into(),
        value: Some(n as f64 / o.secs),
        unit: "activations/s".into(),
        verified,
        duplicates: Some(t.duplicates),
        count: Some(n),
        note: format!(
            "asks to {n} new ids, {ASK_WINDOW} in flight; {}; {started} entities started",
            o.describe()
        ),
    })
}

/// The shard count of each region in a `shards` line, by host:port.
fn shard_counts(e: &Event) -> Vec<(String, u64)> {
    strings(e, "regions")
        .into_iter()
        .filter_map(|r| {
            let (node, count) = r.rsplit_once('=')?;
            Some((node.to_string(), count.parse().ok()?))
        })
        .collect()
}

/// The shard placement of one poll: when it was known, the shards that
/// did not answer, and the shard count of each region.
#[derive(Debug, PartialEq)]
struct Placement {
    t_ms: f64,
    failed: u64,
    counts: Vec<(String, u64)>,
}

/// `shards` lines added up: a line with `"scope":"local"` (volley's
/// member, which has no cluster-wide stats query yet) covers its own
/// member only, so every running member's line is needed; the placement
/// is known when the last of them was printed.
fn placement_of(lines: &[Event]) -> Placement {
    Placement {
        t_ms: lines.iter().map(|e| e.t_ms).fold(f64::MIN, f64::max),
        failed: lines.iter().map(|e| num(e, "failed")).sum(),
        counts: lines.iter().flat_map(shard_counts).collect(),
    }
}

fn covers_own_member_only(e: &Event) -> bool {
    e.fields.get("scope").and_then(|s| s.as_str()) == Some("local")
}

/// Asks the driver for the shard placement, and every other running
/// member too when the driver's line covers its own member only.
fn poll_placement(m: &mut Members) -> crate::Result<Placement> {
    let first = m.query(DRIVER, "shards", "shards", QUERY_TIMEOUT)?;
    let mut lines = Vec::new();
    if covers_own_member_only(&first) {
        for i in m.running().into_iter().filter(|&i| i != DRIVER) {
            match m.query(i, "shards", "shards", QUERY_TIMEOUT) {
                Ok(line) => lines.push(line),
                // A member that left exits; its entities went with it.
                Err(_) if terminated(m, i) => {}
                Err(e) => return Err(e),
            }
        }
    }
    lines.push(first);
    Ok(placement_of(&lines))
}

/// Whether member `i` printed `terminated` (it has left and exits).
fn terminated(m: &mut Members, i: usize) -> bool {
    let exit = Duration::from_secs(5);
    !m.running().contains(&i)
        || m.await_line(exit, "terminated", |j, e| j == i && e.event == "terminated")
            .is_ok()
}

/// Polls the shard placement until `done` holds for its counts; the
/// time it was known.
fn await_shards(
    m: &mut Members,
    timeout: Duration,
    mut done: impl FnMut(&[(String, u64)]) -> bool,
) -> crate::Result<f64> {
    let deadline = std::time::Instant::now() + timeout;
    loop {
        let p = poll_placement(m)?;
        if p.failed == 0 && done(&p.counts) {
            return Ok(p.t_ms);
        }
        if std::time::Instant::now() > deadline {
            return Err(format!("shards never settled: {:?}", p.counts).into());
        }
        std::thread::sleep(POLL_EVERY);
    }
}

/// How often the shard placement is polled.
const POLL_EVERY: Duration = Duration::from_millis(200);

/// The background load that keeps every entity busy while members join
/// and leave (a rebalanced shard moves on its next message).
/// The counts are reset first, so that the entities' own count after
/// [`stop_traffic`] tells an ask whose message was lost from one answered
/// late.
fn start_traffic(m: &mut Members, p: &Params) -> crate::Result<()> {
    reset(m)?;
    let e = p.entities;
    m.command(DRIVER, &format!("run traffic {} 100 1 {e} e ask", u32::MAX))
}

/// Whether the traffic was all answered, and the note's account of it:
/// asks sent, answered, failed (unanswered within the ask timeout), and
/// what the entities of the members `counted` say they got.
fn traffic_account(traffic: &Outcome, t: &Totals, counted: &str) -> (bool, String) {
    let ok = traffic.failures == 0 && traffic.duplicate_replies == 0;
    let note = format!(
        "{}; the entities on {counted} counted {} messages",
        traffic.describe(),
        t.received
    );
    (ok, note)
}

fn stop_traffic(m: &mut Members) -> crate::Result<Outcome> {
    let e = m.query(DRIVER, "stop-load", "row", LOAD_TIMEOUT)?;
    Ok(Outcome::of(&e))
}

/// A fourth member joins under traffic: from the driver seeing it Up to
/// the shard placement giving it its share (S / 4 shards, rounded down).
pub fn rebalance_join(m: &mut Members, p: &Params) -> crate::Result<(ShardingRow, usize)> {
    start_traffic(m, p)?;
    let joiner = m.add()?;
    let address = m.address(joiner);
    let (_, up) = m.await_line(Duration::from_secs(120), "the new member Up", |i, e| {
        i == DRIVER && e.event == "up" && e.member.as_deref() == Some(&address)
    })?;
    let share = p.shards / m.running().len() as u64;
    let done = await_shards(m, Duration::from_secs(300), |counts| {
        counts
            .iter()
            .any(|(node, n)| *node == address && *n >= share)
    })?;
    let traffic = stop_traffic(m)?;
    let t = check(m, -1, true)?;
    let (answered, account) = traffic_account(&traffic, &t, "all 4 members");
    let row = ShardingRow {
        row: "rebalance-join".into(),
        value: Some(done - up.t_ms),
        unit: "ms".into(),
        verified: answered && t.duplicates == 0,
        duplicates: Some(t.duplicates),
        count: Some(share),
        note: format!(
            "the 4th member Up (seen by the driver) to it hosting {share} of {} shards, \
             while asks kept every entity busy ({account})",
            p.shards,
        ),
    };
    Ok((row, joiner))
}

/// Member `leaver` leaves gracefully under traffic: from the `leave`
/// command to the driver seeing it Removed and every shard hosted by the
/// others.
pub fn rebalance_leave(m: &mut Members, p: &Params, leaver: usize) -> crate::Result<ShardingRow> {
    start_traffic(m, p)?;
    let address = m.address(leaver);
    let start = now_ms();
    m.command(leaver, "leave")?;
    m.await_line(Duration::from_secs(120), "the leaver Removed", |i, e| {
        i == DRIVER && e.event == "removed" && e.member.as_deref() == Some(&address)
    })?;
    let shards = p.shards;
    let done = await_shards(m, Duration::from_secs(300), |counts| {
        counts.iter().all(|(node, _)| *node != address)
            && counts.iter().map(|(_, n)| n).sum::<u64>() == shards
    })?;
    m.forget(leaver);
    let traffic = stop_traffic(m)?;
    let t = check(m, -1, true)?;
    let (answered, account) = traffic_account(
        &traffic,
        &t,
        "the 3 that stayed (the leaver's counts left with it)",
    );
    Ok(ShardingRow {
        row: "rebalance-leave".into(),
        value: Some(done - start),
        unit: "ms".into(),
        verified: answered && t.duplicates == 0,
        duplicates: Some(t.duplicates),
        count: None,
        note: format!(
            "leave of the 4th member to it Removed (seen by the driver) and all {shards} \
             shards hosted by the 3 others, while asks kept every entity busy ({account})"
        ),
    })
}

/// The singleton's member is killed (kill -9): from the kill to the
/// pings (every 50 ms, through the proxy of the driver, or of another
/// member when the singleton runs on the driver) answered from another
/// member. Answers from the old and the new member alternating
/// afterwards would be two instances: counted over [`AFTER_SINGLETON`].
pub fn singleton_kill(m: &mut Members) -> crate::Result<ShardingRow> {
    let (holder, old) = singleton_holder(m, DRIVER)?;
    let pinger = match holder {
        DRIVER => m
            .running()
            .into_iter()
            .find(|&i| i != holder)
            .ok_or("no member to ping the singleton from")?,
        _ => DRIVER,
    };
    if pinger != DRIVER {
        singleton_holder(m, pinger)?;
    }
    let killed = now_ms();
    m.kill(holder)?;
    let (_, moved) = m.await_line(Duration::from_secs(120), "the singleton moved", |i, e| {
        i == pinger && e.event == "singleton" && num(e, "port") != old
    })?;
    let mut flips = 0;
    while m
        .await_line(AFTER_SINGLETON, "another singleton answer", |i, e| {
            i == pinger && e.event == "singleton"
        })
        .is_ok()
    {
        flips += 1;
    }
    Ok(ShardingRow {
        row: "singleton-kill".into(),
        value: Some(moved.t_ms - killed),
        unit: "ms".into(),
        verified: flips == 0,
        duplicates: Some(flips),
        count: None,
        note: format!(
            "kill -9 of the singleton's member (member {holder}) to its first answer from member \
             port {} (pings every 50 ms from member {pinger}; failure detection, the resolver's \
             stable-after and the hand-over margin included); answers from another member in the \
             {} s after: {flips}",
            num(&moved, "port"),
            AFTER_SINGLETON.as_secs()
        ),
    })
}

/// Starts pinging the singleton from member `pinger`; the member that
/// answers, and its port.
fn singleton_holder(m: &mut Members, pinger: usize) -> crate::Result<(usize, u64)> {
    m.command(pinger, "ping-singleton")?;
    let (_, first) = m.await_line(Duration::from_secs(60), "a singleton answer", |i, e| {
        i == pinger && e.event == "singleton"
    })?;
    let port = num(&first, "port");
    let holder = (0..m.len())
        .find(|&i| u64::from(m.port(i)) == port)
        .ok_or("the singleton answered from no member")?;
    Ok((holder, port))
}

/// How long the singleton row watches for answers from a second instance.
const AFTER_SINGLETON: Duration = Duration::from_secs(3);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_shard_counts_by_member() {
        let e = Event::parse(
            r#"{"t_ms":1.0,"event":"shards","regions":["127.0.0.1:1=34","127.0.0.1:2=33"],"failed":0}"#,
        )
        .unwrap();
        assert_eq!(
            shard_counts(&e),
            vec![
                ("127.0.0.1:1".to_string(), 34),
                ("127.0.0.1:2".to_string(), 33)
            ]
        );
    }

    #[test]
    fn balanced_means_all_shards_on_every_member_at_most_one_apart() {
        let c = |v: &[u64]| {
            v.iter()
                .enumerate()
                .map(|(i, n)| (i.to_string(), *n))
                .collect::<Vec<_>>()
        };
        assert!(balanced(&c(&[34, 33, 33]), 100, 3));
        assert!(!balanced(&c(&[35, 33, 32]), 100, 3));
        assert!(!balanced(&c(&[50, 50]), 100, 3));
        assert!(!balanced(&c(&[34, 33, 32]), 100, 3));
    }

    #[test]
    fn local_shard_lines_add_up_to_the_placement() {
        let line = |t: f64, regions: &str, scope: &str| {
            Event::parse(&format!(
                r#"{{"t_ms":{t},"event":"shards","regions":[{regions}],"failed":0{scope}}}"#
            ))
            .unwrap()
        };
        let local = r#","scope":"local""#;
        let lines = [
            line(5.0, r#""127.0.0.1:1=40""#, local),
            line(7.0, r#""127.0.0.1:2=60""#, local),
            line(6.0, "", local),
        ];
        assert!(covers_own_member_only(&lines[0]));
        assert_eq!(
            placement_of(&lines),
            Placement {
                t_ms: 7.0,
                failed: 0,
                counts: vec![
                    ("127.0.0.1:1".to_string(), 40),
                    ("127.0.0.1:2".to_string(), 60)
                ],
            }
        );
        assert!(!covers_own_member_only(&line(1.0, "", "")));
    }
}
