//! The Pekko Artery row: the seed's tell sum and ask sum on Pekko 1.1's
//! Artery TCP in two JVMs (`bench/peers/pekko`, `sum-server` and
//! `sum-client`). Artery drops a message when its outbound queue is full,
//! so the tell sender keeps at most a window of pairs beyond the count the
//! receiver last acknowledged (it acks every [`ACK_EVERY`] pairs), and the
//! ask sender keeps at most a window of asks unanswered; both windows fit
//! the peer's outbound queue. Built with Maven (output on stderr) unless
//! `--no-build`, skipped with the reason when Java or Maven is missing.
//! Every run is checked here again from its line, like kontraktor's.

use std::path::{Path, PathBuf};
use std::process::Command;

use super::peer::{median_row, parse_result_lines, run_args, run_client, start_listening};
use super::row::{KontraktorRow, Test};
use crate::peers::Harness;
use crate::progress::Progress;
use crate::report::Row;

/// Tells the sender may have sent beyond the receiver's last ack.
pub const TELL_WINDOW: u64 = 20_000;
/// The receiver acks every this many pairs.
pub const ACK_EVERY: u64 = 1_000;
/// Asks unanswered at most ("tens of thousands in flight").
pub const ASK_WINDOW: u64 = 20_000;

/// Both rows, or one skipped row saying why.
pub fn rows(
    root: &Path,
    progress: &Progress,
    no_build: bool,
    sizes: [(Test, u64); 2],
    runs: usize,
) -> Vec<Row<KontraktorRow>> {
    let jar = match jar(root, progress, no_build) {
        Ok(jar) => jar,
        Err(why) => {
            progress.note(&format!("skipping pekko: {why}"));
            return vec![Row::skipped("pekko", &why)];
        }
    };
    sizes
        .into_iter()
        .map(|(test, n)| {
            progress.start(&format!(
                "pekko: {n} {} × {runs} (two JVMs, Artery TCP)",
                test.name()
            ));
            let row = match measure(&jar, test, n, runs) {
                Ok(row) => Row::measured("pekko", row),
                Err(why) => Row::skipped("pekko", &format!("{}: {why}", test.name())),
            };
            progress.done();
            row
        })
        .collect()
}

/// The Pekko peer's jar, built first unless `no_build`.
fn jar(root: &Path, progress: &Progress, no_build: bool) -> Result<PathBuf, String> {
    let harness = Harness::Pekko;
    if no_build {
        harness.ensure(root, false, progress)?;
    } else {
        harness.rebuild(root, progress)?;
    }
    Ok(harness.artifact(root))
}

/// The server's command line.
pub fn server_args() -> Vec<String> {
    ["sum-server", "--ack-every", &ACK_EVERY.to_string()]
        .map(String::from)
        .to_vec()
}

/// The client's command line for one test against the server at `address`.
pub fn client_args(address: &str, test: Test, messages: u64, runs: usize) -> Vec<String> {
    let window = match test {
        Test::Tell => TELL_WINDOW,
        Test::Ask => ASK_WINDOW,
    };
    let mut args = vec!["sum-client".into(), "--server".into(), address.into()];
    args.extend(run_args(test, messages, runs, "--warmup-messages"));
    args.extend(["--window".into(), window.to_string()]);
    args.extend(["--ack-every".into(), ACK_EVERY.to_string()]);
    args
}

/// The row's sender: who sends, and how it keeps Artery from dropping.
pub fn sender(test: Test) -> String {
    match test {
        Test::Tell => format!("1 actor, window {TELL_WINDOW}"),
        Test::Ask => "Patterns.ask from 1 actor".into(),
    }
}

/// The server's address from its `listening` line.
pub fn listening_address(line: &str) -> Result<String, String> {
    let value: serde_json::Value = serde_json::from_str(line)
        .map_err(|e| format!("the pekko server's listening line does not parse ({e}): {line}"))?;
    value["address"]
        .as_str()
        .map(String::from)
        .ok_or_else(|| format!("the pekko server's listening line has no address: {line}"))
}

/// Runs `test` with `messages` pairs, `runs` times after a warm-up of half
/// a run, in a fresh pair of JVMs.
fn measure(jar: &Path, test: Test, messages: u64, runs: usize) -> Result<KontraktorRow, String> {
    let java = || {
        let mut cmd = Command::new("java");
        cmd.arg("-jar").arg(jar);
        cmd
    };
    let mut server = java();
    server.args(server_args());
    let (server, line) = start_listening(server, "pekko sum-server")?;
    let mut client = java();
    client.args(client_args(
        &listening_address(&line)?,
        test,
        messages,
        runs,
    ));
    let stdout = run_client(client, "pekko");
    drop(server);
    median_row(
        "pekko",
        sender,
        parse_result_lines("pekko", &stdout?, test)?,
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A tell line as `sum-client` prints it, with the receiver's sum.
    fn tell_line(rate: f64, server_sum: i64) -> String {
        format!(
            r#"{{"scenario":"kontraktor","system":"pekko","test":"tell","messages":1000,"elapsed_ns":5,"msgs_per_s":{rate:.3},"window":20000,"ack_every":1000,"client_count":1000,"wrong":0,"client_sum":1000000,"server_count":1000,"server_sum":{server_sum},"expected_sum":1000000,"verified":true}}"#
        )
    }

    #[test]
    fn the_jvms_get_the_windows_and_the_server_address() {
        let address = "pekko://sum-b@127.0.0.1:4711";
        assert_eq!(
            client_args(address, Test::Tell, 1_000_000, 3).join(" "),
            "sum-client --server pekko://sum-b@127.0.0.1:4711 --test tell --messages 1000000 \
             --runs 3 --warmup-messages 500000 --window 20000 --ack-every 1000"
        );
        assert!(client_args(address, Test::Ask, 10, 1)
            .join(" ")
            .contains("--window 20000"));
        assert_eq!(server_args().join(" "), "sum-server --ack-every 1000");
        let line = r#"{"event":"listening","address":"pekko://sum-b@127.0.0.1:4711"}"#;
        assert_eq!(listening_address(line).unwrap(), address);
        assert!(listening_address(r#"{"event":"listening"}"#).is_err());
    }

    #[test]
    fn a_tell_row_has_no_in_flight_and_names_its_window() {
        let out = [
            tell_line(3.0, 1_000_000),
            tell_line(1.0, 1_000_000),
            tell_line(2.0, 1_000_000),
        ];
        let lines = parse_result_lines("pekko", &out.join("\n"), Test::Tell).unwrap();
        let r = median_row("pekko", sender, lines).unwrap();
        assert_eq!((r.test, r.msgs_per_s, r.in_flight), (Test::Tell, 2.0, None));
        assert_eq!(r.sender, "1 actor, window 20000");
        assert!(r.verified);
    }

    #[test]
    fn a_dropped_tell_is_not_verified_whatever_the_jvm_says() {
        let out = [tell_line(3.0, 1_000_000), tell_line(1.0, 999_999)].join("\n");
        let r = median_row(
            "pekko",
            sender,
            parse_result_lines("pekko", &out, Test::Tell).unwrap(),
        )
        .unwrap();
        assert!(!r.verified);
    }

    #[test]
    fn a_wrong_answer_fails_the_ask_row() {
        let ask = r#"{"scenario":"kontraktor","system":"pekko","test":"ask","messages":1000,"elapsed_ns":5,"msgs_per_s":9.0,"in_flight":20000,"window":20000,"ack_every":1000,"client_count":999,"wrong":1,"client_sum":998001,"server_count":1000,"server_sum":1000000,"expected_sum":1000000,"verified":false}"#;
        let lines = parse_result_lines("pekko", ask, Test::Ask).unwrap();
        let r = median_row("pekko", sender, lines).unwrap();
        assert_eq!((r.in_flight, r.verified), (Some(20000), false));
        assert_eq!(r.sender, "Patterns.ask from 1 actor");
        assert!(parse_result_lines("pekko", ask, Test::Tell)
            .unwrap_err()
            .contains("pekko: a ask line"));
    }
}
