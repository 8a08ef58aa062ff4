//! The notes under local-pingpong's table: volley's best against the
//! issue's targets and against the best peers.

use super::best;
use crate::peers::Peer;
use crate::report::rows::LocalPingPongRow;
use crate::report::{measured, verdict, Row};

fn is_framework(system: &str) -> bool {
    Peer::from_name(system).is_some_and(Peer::is_framework)
}

fn describe((system, r): (&str, &LocalPingPongRow)) -> String {
    format!(
        "{system} {:.1} M msgs/s (P={} K={} T={})",
        r.msgs_per_sec / 1e6,
        r.pairs,
        r.inflight,
        r.throughput.map_or("-".to_string(), |t| t.to_string())
    )
}

/// The comparisons the issue sets targets for.
pub(super) fn summary(rows: &[Row<LocalPingPongRow>]) -> Vec<String> {
    let mut notes = vec![String::new()];
    let best_where = |keep: &dyn Fn(&str, &LocalPingPongRow) -> bool| {
        best(measured(rows).filter(|(s, r)| keep(s, r)))
    };
    let Some(v) = best_where(&|s, _| s == "volley") else {
        return notes;
    };
    let vb = v.1.msgs_per_sec;
    notes.push(format!(
        "best volley: {} — target ≥ 150 M msgs/s: {}",
        describe(v),
        verdict(vb >= 150e6)
    ));
    if let Some(f) = best_where(&|s, _| is_framework(s)) {
        let ratio = vb / f.1.msgs_per_sec;
        notes.push(format!(
            "best actor framework: {} — volley/it = {ratio:.2}× (target ≥ 2×: {})",
            describe(f),
            verdict(ratio >= 2.0)
        ));
    }
    if let Some(t) = best_where(&|s, _| s == "tokio") {
        let ratio = vb / t.1.msgs_per_sec;
        notes.push(format!(
            "best tokio-channel baseline: {} — volley/it = {ratio:.2}× (target ≥ 1.5×: {})",
            describe(t),
            verdict(ratio >= 1.5)
        ));
    }
    let latency = |r: &LocalPingPongRow| r.pairs == 1 && r.inflight == 1;
    if let (Some(v1), Some(p1)) = (
        best_where(&|s, r| s == "volley" && latency(r)),
        best_where(&|s, r| s != "volley" && latency(r)),
    ) {
        let (a, b) = (v1.1.msgs_per_sec, p1.1.msgs_per_sec);
        notes.push(format!(
            "P=1,K=1: volley {:.1} M vs best peer {} — {:.2}× (target ≥ 1×: {})",
            a / 1e6,
            describe(p1),
            a / b,
            verdict(a >= b)
        ));
    }
    notes
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::rows::tests::pingpong;

    #[test]
    fn summary_compares_with_the_targets() {
        let row = |system, pairs, inflight, t, rate| {
            Row::measured(system, pingpong(pairs, inflight, t, rate))
        };
        let rows = vec![
            row("volley", 4, 100, Some(50), 160e6),
            row("volley", 1, 1, Some(50), 10e6),
            row("actix", 4, 100, None, 60e6),
            row("tokio", 1, 1, None, 12e6),
            Row::skipped("pekko", "java not found"),
        ];
        let notes = summary(&rows).join("\n");
        assert!(notes.contains("best volley: volley 160.0"), "{notes}");
        assert!(notes.contains("2.67×"), "{notes}");
        assert!(
            notes.contains("P=1,K=1: volley 10.0 M vs best peer tokio 12.0"),
            "{notes}"
        );
        assert!(notes.contains("MISSED"), "{notes}");
        assert!(
            notes.contains("best actor framework: actix 60.0 M msgs/s (P=4 K=100 T=-)"),
            "{notes}"
        );
    }
}
