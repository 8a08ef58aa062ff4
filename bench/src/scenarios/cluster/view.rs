//! What every member printed: its event lines (see bench/peers/README.md,
//! `cluster`), and per node every time it saw each member become Up,
//! Unreachable, Down or Removed, when its receptionist first listed the
//! service, and when it stopped. The timestamps are the nodes' own
//! (wall-clock epoch ms, one machine), so they compare with the driver's
//! [`now_ms`].

use std::collections::HashMap;
use std::time::{SystemTime, UNIX_EPOCH};

use serde::Deserialize;
use serde_json::{Map, Value};

/// The wall clock in epoch ms, as the nodes stamp their lines.
pub fn now_ms() -> f64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0.0, |d| d.as_secs_f64() * 1000.0)
}

/// One event line of a node.
#[derive(Debug, Clone, PartialEq, Deserialize)]
pub struct Event {
    pub t_ms: f64,
    pub event: String,
    /// The member an event is about (`host:port`); `null` for a leader
    /// change to none.
    #[serde(default)]
    pub member: Option<String>,
    /// `started`, `terminated`: the node itself.
    #[serde(default)]
    pub node: Option<String>,
    /// `listing`: services listed.
    #[serde(default)]
    pub count: Option<u64>,
    /// Every field of the line (the settings of `started`).
    #[serde(skip)]
    pub fields: Map<String, Value>,
}

impl Event {
    /// Reads one line; `Err` says what was wrong with it.
    pub fn parse(line: &str) -> Result<Event, String> {
        let fields: Map<String, Value> =
            serde_json::from_str(line).map_err(|e| format!("not a JSON object ({e}): {line}"))?;
        let mut event: Event = serde_json::from_value(Value::Object(fields.clone()))
            .map_err(|e| format!("not an event line ({e}): {line}"))?;
        event.fields = fields;
        Ok(event)
    }
}

/// What one node has seen so far: per member, the times it entered each
/// state (a member can become Unreachable, Reachable and Unreachable
/// again, as a loaded machine makes it).
#[derive(Debug, Default, Clone)]
pub struct NodeView {
    pub address: Option<String>,
    pub started_ms: Option<f64>,
    /// The settings of its `started` line.
    pub settings: Map<String, Value>,
    pub up: HashMap<String, Vec<f64>>,
    pub unreachable: HashMap<String, Vec<f64>>,
    pub down: HashMap<String, Vec<f64>>,
    pub removed: HashMap<String, Vec<f64>>,
    /// First listing with at least one service.
    pub listed_ms: Option<f64>,
    pub terminated_ms: Option<f64>,
    /// The last `sent` line: when, and how many numbers its stream sent.
    pub sent: Option<(f64, u64)>,
    /// The last `received` line: when, and how many distinct numbers its
    /// sink got.
    pub received: Option<(f64, u64)>,
}

/// Which of a node's per-member maps a question is about.
pub type Seen = fn(&NodeView) -> &HashMap<String, Vec<f64>>;

/// Every node's view, by node index.
#[derive(Debug, Default, Clone)]
pub struct ClusterView {
    pub nodes: Vec<NodeView>,
}

impl ClusterView {
    pub fn new(nodes: usize) -> Self {
        ClusterView {
            nodes: vec![NodeView::default(); nodes],
        }
    }

    /// Records `event` of node `i`.
    pub fn apply(&mut self, i: usize, event: Event) {
        let node = &mut self.nodes[i];
        let t = event.t_ms;
        let first = |map: &mut HashMap<String, Vec<f64>>, member: Option<String>| {
            if let Some(m) = member {
                map.entry(m).or_default().push(t);
            }
        };
        match event.event.as_str() {
            "started" => {
                node.address = event.node;
                node.started_ms = Some(t);
                node.settings = event.fields;
            }
            "up" => first(&mut node.up, event.member),
            "unreachable" => first(&mut node.unreachable, event.member),
            "down" => first(&mut node.down, event.member),
            "removed" => first(&mut node.removed, event.member),
            "listing" if event.count.unwrap_or(0) > 0 => {
                node.listed_ms.get_or_insert(t);
            }
            "terminated" => node.terminated_ms = Some(t),
            "sent" => node.sent = event.count.map(|c| (t, c)),
            "received" => node.received = event.count.map(|c| (t, c)),
            // joining, leaving, exiting, reachable, leader, empty listings.
            _ => {}
        }
    }

    /// The addresses of `nodes`, once every one has started.
    pub fn addresses(&self, nodes: &[usize]) -> Option<Vec<String>> {
        nodes
            .iter()
            .map(|&i| self.nodes[i].address.clone())
            .collect()
    }

    /// When the last of `nodes` printed `started`.
    pub fn all_started(&self, nodes: &[usize]) -> Option<f64> {
        latest(nodes.iter().map(|&i| self.nodes[i].started_ms))
    }

    /// When every one of `observers` had seen every one of `members` enter
    /// the state `seen` picks at `since` or later (the latest of those
    /// first times): what happened before the case does not count. An
    /// observer that has stopped (downed by mistake: a false down) is not
    /// waited for.
    pub fn all_seen(
        &self,
        observers: &[usize],
        members: &[String],
        seen: Seen,
        since: f64,
    ) -> Option<f64> {
        let running: Vec<usize> = observers
            .iter()
            .copied()
            .filter(|&i| self.nodes[i].terminated_ms.is_none())
            .collect();
        if running.is_empty() {
            return None;
        }
        latest(running.into_iter().flat_map(|i| {
            let map = seen(&self.nodes[i]);
            members.iter().map(move |m| {
                map.get(m)
                    .and_then(|times| times.iter().copied().find(|&t| t >= since))
            })
        }))
    }

    /// When the last of `nodes` stopped.
    pub fn all_terminated(&self, nodes: &[usize]) -> Option<f64> {
        latest(nodes.iter().map(|&i| self.nodes[i].terminated_ms))
    }

    /// When every one of `observers` first listed the service.
    pub fn all_listed(&self, observers: &[usize]) -> Option<f64> {
        latest(observers.iter().map(|&i| self.nodes[i].listed_ms))
    }

    /// Members other than `excused` that a node other than `excused` saw
    /// Down or Removed within `(from, to]`, and nodes other than `excused`
    /// that stopped then: each counted once. An excused node's own view is
    /// left out: a member that leaves reports every other member Removed as
    /// it shuts down.
    pub fn false_downs(&self, from: f64, to: f64, excused: &[String]) -> u64 {
        let within = |t: f64| t > from && t <= to;
        let mut wrong: Vec<&String> = Vec::new();
        let observers = self
            .nodes
            .iter()
            .filter(|n| n.address.as_ref().is_none_or(|a| !excused.contains(a)));
        for node in observers {
            for (member, times) in node.down.iter().chain(&node.removed) {
                let in_window = times.iter().any(|&t| within(t));
                if in_window && !excused.contains(member) && !wrong.contains(&member) {
                    wrong.push(member);
                }
            }
        }
        for node in &self.nodes {
            if let (Some(t), Some(a)) = (node.terminated_ms, &node.address) {
                if within(t) && !excused.contains(a) && !wrong.contains(&a) {
                    wrong.push(a);
                }
            }
        }
        wrong.len() as u64
    }
}

/// The latest of the times, if every one is known.
fn latest(mut times: impl Iterator<Item = Option<f64>>) -> Option<f64> {
    times.try_fold(f64::MIN, |acc, t| t.map(|t| acc.max(t)))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn event(line: &str) -> Event {
        Event::parse(line).unwrap()
    }

    #[test]
    fn reads_the_node_lines() {
        let e = event(
            r#"{"t_ms":1795947758655.178,"event":"started","node":"127.0.0.1:25511","pid":30241,"heartbeat_ms":1000}"#,
        );
        assert_eq!(e.node.as_deref(), Some("127.0.0.1:25511"));
        assert_eq!(e.fields["heartbeat_ms"], 1000);
        let e = event(r#"{"t_ms":2.5,"event":"leader","member":null}"#);
        assert_eq!((e.event.as_str(), e.member), ("leader", None));
        assert!(Event::parse("INFO started")
            .unwrap_err()
            .contains("not a JSON object"));
        assert!(Event::parse(r#"{"event":"up"}"#)
            .unwrap_err()
            .contains("not an event line"));
    }

    fn view() -> ClusterView {
        let mut v = ClusterView::new(2);
        let lines = [
            (0, r#"{"t_ms":10,"event":"started","node":"a:1"}"#),
            (1, r#"{"t_ms":12,"event":"started","node":"a:2"}"#),
            (0, r#"{"t_ms":20,"event":"up","member":"a:1"}"#),
            (0, r#"{"t_ms":25,"event":"up","member":"a:2"}"#),
            (1, r#"{"t_ms":30,"event":"up","member":"a:1"}"#),
            (1, r#"{"t_ms":31,"event":"up","member":"a:2"}"#),
            (1, r#"{"t_ms":40,"event":"up","member":"a:2"}"#),
            (0, r#"{"t_ms":41,"event":"listing","count":0,"nodes":[]}"#),
            (
                0,
                r#"{"t_ms":42,"event":"listing","count":1,"nodes":["a:2"]}"#,
            ),
            (
                1,
                r#"{"t_ms":43,"event":"listing","count":1,"nodes":["a:2"]}"#,
            ),
            (0, r#"{"t_ms":50,"event":"down","member":"a:2"}"#),
            (0, r#"{"t_ms":50.5,"event":"sent","count":7}"#),
            (1, r#"{"t_ms":50.6,"event":"received","count":6}"#),
        ];
        for (i, line) in lines {
            v.apply(i, event(line));
        }
        v
    }

    /// `view()` after node 1 (a:2) stopped.
    fn stopped(mut v: ClusterView) -> ClusterView {
        v.apply(1, event(r#"{"t_ms":51,"event":"terminated","node":"a:2"}"#));
        v
    }

    #[test]
    fn answers_when_everyone_saw_everything() {
        let v = view();
        let members = v.addresses(&[0, 1]).unwrap();
        assert_eq!(v.all_started(&[0, 1]), Some(12.0));
        // The first Up since the start counts; the repeated one at 40 does
        // only when the question starts after 31.
        assert_eq!(v.all_seen(&[0, 1], &members, |n| &n.up, 0.0), Some(31.0));
        assert_eq!(v.all_seen(&[0, 1], &members, |n| &n.up, 26.0), None);
        assert_eq!(v.all_seen(&[1], &members[1..], |n| &n.up, 32.0), Some(40.0));
        assert_eq!(v.all_seen(&[0, 1], &members, |n| &n.removed, 0.0), None);
        assert_eq!(v.all_listed(&[0, 1]), Some(43.0));
        assert_eq!(v.nodes[0].sent, Some((50.5, 7)));
        assert_eq!(v.nodes[1].received, Some((50.6, 6)));
        assert_eq!(v.all_terminated(&[1]), None);
        // Node 1 stops: only node 0 is waited for; with both stopped, no
        // one can answer.
        let mut v = stopped(v);
        assert_eq!(v.all_terminated(&[1]), Some(51.0));
        assert_eq!(v.all_terminated(&[0, 1]), None);
        assert_eq!(
            v.all_seen(&[0, 1], &members[..1], |n| &n.up, 0.0),
            Some(20.0)
        );
        v.nodes[0].terminated_ms = Some(60.0);
        assert_eq!(v.all_seen(&[0, 1], &members, |n| &n.up, 0.0), None);
        assert_eq!(ClusterView::new(1).addresses(&[0]), None);
    }

    #[test]
    fn counts_each_wrongly_downed_member_once() {
        let v = stopped(view());
        // a:2 downed by node 0 and stopped: one member.
        assert_eq!(v.false_downs(0.0, 100.0, &[]), 1);
        assert_eq!(v.false_downs(0.0, 100.0, &["a:2".into()]), 0);
        assert_eq!(v.false_downs(0.0, 49.0, &[]), 0);
        assert_eq!(v.false_downs(50.0, 100.0, &[]), 1);
        // What a leaving member reports about the others does not count.
        let mut v = stopped(view());
        v.apply(1, event(r#"{"t_ms":60,"event":"removed","member":"a:1"}"#));
        assert_eq!(v.false_downs(55.0, 100.0, &["a:2".into()]), 0);
        assert_eq!(v.false_downs(55.0, 100.0, &[]), 1);
    }
}
