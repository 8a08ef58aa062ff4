//! The probe's record: every instance's life, from the `<PREFIX> start|stop
//! <µs> [<id>] <port>` lines the instances print (the singleton's
//! `SINGLETON`, the entities' `ENTITY`), in every process the test ran.
//! A life ends at its stop line, or at its process's kill -9; a process
//! that is only stopped (SIGSTOP) or cut off keeps its instances alive in
//! the record until it prints their stop. The invariant: no two lives of
//! one id overlap.

use std::collections::BTreeMap;

use super::ProcessCluster;

/// One instance's life.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Life {
    /// The instance's id (empty for the singleton).
    pub id: String,
    /// The port of its node, for the failure message.
    pub port: u16,
    /// The process (the transcript's run) it lived in.
    pub run: usize,
    pub start: u128,
    /// Its stop line or its process's kill; `None` while alive.
    pub stop: Option<u128>,
}

/// Every life of the instances that print `prefix` lines (`"ENTITY "`,
/// `"SINGLETON "`), by id, each id's in the order they started.
pub fn lives(cluster: &ProcessCluster, prefix: &str) -> BTreeMap<String, Vec<Life>> {
    let mut lives: Vec<Life> = Vec::new();
    for (run, line) in cluster.all_reports_by_run() {
        let Some(rest) = line.strip_prefix(prefix) else {
            continue;
        };
        let words: Vec<&str> = rest.split_whitespace().collect();
        let parsed = match words.as_slice() {
            [kind, at, id @ .., port] => at
                .parse::<u128>()
                .ok()
                .zip(port.parse::<u16>().ok())
                .map(|(at, port)| (*kind, at, id.join(" "), port)),
            _ => None,
        };
        let (kind, at, id, port) = parsed.unwrap_or_else(|| panic!("a bad report {line:?}"));
        if kind == "start" {
            let stop = None;
            lives.push(Life {
                id,
                port,
                run,
                start: at,
                stop,
            });
            continue;
        }
        let open = lives
            .iter_mut()
            .rev()
            .find(|l| l.run == run && l.id == id && l.stop.is_none());
        open.unwrap_or_else(|| panic!("a stop without a start: {line:?}"))
            .stop = Some(at);
    }
    for &(run, at) in cluster.killed() {
        lives
            .iter_mut()
            .filter(|l| l.run == run && l.stop.is_none())
            .for_each(|l| l.stop = Some(at));
    }
    let mut by_id: BTreeMap<String, Vec<Life>> = BTreeMap::new();
    for life in lives {
        by_id.entry(life.id.clone()).or_default().push(life);
    }
    by_id.values_mut().for_each(|l| l.sort_by_key(|l| l.start));
    by_id
}

/// The pairs of lives of one id that overlapped: each life against the
/// latest-ending one before it.
pub fn overlaps(lives: &BTreeMap<String, Vec<Life>>) -> Vec<(Life, Life)> {
    let mut found = Vec::new();
    for own in lives.values() {
        let mut longest: Option<&Life> = None;
        for life in own {
            if let Some(before) = longest {
                if before.stop.is_none_or(|stop| stop > life.start) {
                    found.push((before.clone(), life.clone()));
                }
            }
            let ends_later = |b: &Life| b.stop.is_some_and(|s| life.stop.is_none_or(|l| l > s));
            if longest.is_none_or(ends_later) {
                longest = Some(life);
            }
        }
    }
    found
}

/// Panics, with every node's last lines, if two lives of one id of the
/// `prefix` instances overlapped; returns how many lives there were.
pub fn assert_never_twice(cluster: &ProcessCluster, prefix: &str) -> usize {
    let lives = lives(cluster, prefix);
    let overlapping = overlaps(&lives);
    assert!(
        overlapping.is_empty(),
        "{} pairs of {prefix}lives overlapped, the first: {:?}\n{}",
        overlapping.len(),
        overlapping.iter().take(5).collect::<Vec<_>>(),
        cluster.tail_and_save()
    );
    lives.values().map(Vec::len).sum()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn life(id: &str, run: usize, start: u128, stop: Option<u128>) -> Life {
        let (id, port) = (id.to_owned(), 0);
        Life {
            id,
            port,
            run,
            start,
            stop,
        }
    }

    /// The checker itself: touching lives pass; a life that starts before
    /// an earlier one (not only the one just before it) stops, or while
    /// one never stopped, is caught; other ids do not count.
    #[test]
    fn overlapping_lives_of_one_id_are_found() {
        let touching = vec![life("a", 0, 1, Some(5)), life("a", 1, 5, None)];
        let other_id = vec![life("b", 1, 2, None)];
        let apart = BTreeMap::from([("a".to_owned(), touching), ("b".to_owned(), other_id)]);
        assert!(overlaps(&apart).is_empty());

        let long = life("a", 0, 1, Some(10));
        let short = life("a", 1, 2, Some(3));
        let third = life("a", 2, 4, Some(12));
        let nested = BTreeMap::from([(
            "a".to_owned(),
            vec![long.clone(), short.clone(), third.clone()],
        )]);
        assert_eq!(
            overlaps(&nested),
            vec![(long.clone(), short), (long, third)]
        );

        let open = vec![life("a", 0, 1, None), life("a", 1, 7, Some(8))];
        assert_eq!(overlaps(&BTreeMap::from([("a".to_owned(), open)])).len(), 1);
    }
}
