//! The peer harnesses (`bench/peers/`): locate them, build a missing one if
//! its toolchain exists, run one and parse its JSON lines.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use serde::de::DeserializeOwned;
use serde_json::Value;

use crate::progress::Progress;
use crate::report::Reported;

/// A system volley is compared with.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Peer {
    Actix,
    Ractor,
    Kameo,
    Tokio,
    Pekko,
}

impl Peer {
    /// Every peer, in table order.
    pub const ALL: [Peer; 5] = [
        Peer::Tokio,
        Peer::Actix,
        Peer::Ractor,
        Peer::Kameo,
        Peer::Pekko,
    ];

    /// The `--system` name, also the `system` of its rows.
    pub fn name(self) -> &'static str {
        match self {
            Peer::Actix => "actix",
            Peer::Ractor => "ractor",
            Peer::Kameo => "kameo",
            Peer::Tokio => "tokio",
            Peer::Pekko => "pekko",
        }
    }

    pub fn from_name(name: &str) -> Option<Peer> {
        Peer::ALL.into_iter().find(|p| p.name() == name)
    }

    /// Which program runs this peer.
    pub fn harness(self) -> Harness {
        match self {
            Peer::Pekko => Harness::Pekko,
            _ => Harness::Rust,
        }
    }

    /// Which program runs this peer for `scenario`: ractor's
    /// `remote-pingpong` needs ractor_cluster, which is a separate build of
    /// the Rust harness (see [`Harness::RactorCluster`]).
    pub fn harness_for(self, scenario: &str) -> Harness {
        match (self, scenario) {
            (Peer::Ractor, "remote-pingpong") => Harness::RactorCluster,
            (Peer::Pekko, "cluster" | "sharding") => Harness::PekkoCluster,
            _ => self.harness(),
        }
    }

    /// An actor framework (tokio is the no-framework baseline).
    pub fn is_framework(self) -> bool {
        self != Peer::Tokio
    }

    /// Has a dispatcher `throughput` knob (only Pekko does).
    pub fn has_throughput(self) -> bool {
        self == Peer::Pekko
    }
}

/// One of the harness programs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Harness {
    /// `bench/peers/rust`: actix, ractor, kameo, tokio.
    Rust,
    /// `bench/peers/rust` built with `--features cluster` into its own
    /// target directory: ractor's `remote-pingpong` on ractor_cluster.
    /// ractor_cluster switches on ractor's `cluster` feature, which changes
    /// ractor for every actor (a global PID-registry entry per spawn,
    /// serialization checks per send), so the local ractor numbers come
    /// from the plain build.
    RactorCluster,
    /// `bench/peers/pekko`: Apache Pekko on the JVM.
    Pekko,
    /// `bench/peers/pekko-cluster`: Pekko Cluster (a newer Pekko than
    /// `Pekko`'s, so a project of its own: Pekko refuses mixed module
    /// versions in one JVM).
    PekkoCluster,
}

/// The repository root, found at compile time so the driver works from any
/// working directory.
pub fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("bench/ has a parent")
        .to_path_buf()
}

impl Harness {
    fn dir(self, root: &Path) -> PathBuf {
        match self {
            Harness::Rust | Harness::RactorCluster => root.join("bench/peers/rust"),
            Harness::Pekko => root.join("bench/peers/pekko"),
            Harness::PekkoCluster => root.join("bench/peers/pekko-cluster"),
        }
    }

    /// Where cargo builds a Rust harness.
    fn target_dir(self, root: &Path) -> PathBuf {
        match self {
            Harness::RactorCluster => self.dir(root).join("target/cluster"),
            _ => self.dir(root).join("target"),
        }
    }

    /// The built program.
    pub fn artifact(self, root: &Path) -> PathBuf {
        match self {
            Harness::Rust | Harness::RactorCluster => {
                self.target_dir(root).join("release/volley-peers")
            }
            Harness::Pekko => self.dir(root).join("target/pekko-bench.jar"),
            Harness::PekkoCluster => self.dir(root).join("target/pekko-cluster-bench.jar"),
        }
    }

    /// Runs on the JVM (needs `java`).
    fn is_jvm(self) -> bool {
        matches!(self, Harness::Pekko | Harness::PekkoCluster)
    }

    /// Why this harness cannot run even when built (Java missing).
    fn cannot_run(self) -> Option<String> {
        (self.is_jvm() && !on_path("java"))
            .then(|| "java not found on PATH (JDK 17 needed for the Pekko peer)".to_string())
    }

    /// Why this harness cannot be built here.
    fn cannot_build(self) -> Option<String> {
        match self {
            Harness::Rust | Harness::RactorCluster => {
                (!on_path("cargo")).then(|| "cargo not found on PATH".to_string())
            }
            Harness::Pekko | Harness::PekkoCluster => (!on_path("mvn") || !on_path("java"))
                .then(|| "mvn or java not found on PATH (Maven and JDK 17 needed)".to_string()),
        }
    }

    /// Built and runnable.
    pub fn is_ready(self, root: &Path) -> bool {
        self.artifact(root).is_file() && self.cannot_run().is_none()
    }

    fn build_command(self, root: &Path) -> Command {
        let dir = self.dir(root);
        match self {
            Harness::Rust | Harness::RactorCluster => {
                let mut c = Command::new("cargo");
                c.arg("build")
                    .arg("--release")
                    .arg("--manifest-path")
                    .arg(dir.join("Cargo.toml"));
                if self == Harness::RactorCluster {
                    c.args(["--features", "cluster"]);
                }
                // The artifact must land where we look for it, whatever
                // CARGO_TARGET_DIR the caller has set.
                c.arg("--target-dir")
                    .arg(self.target_dir(root))
                    .env_remove("CARGO_TARGET_DIR");
                c
            }
            Harness::Pekko | Harness::PekkoCluster => {
                let mut c = Command::new("mvn");
                c.args(["-q", "-B", "-f"])
                    .arg(dir.join("pom.xml"))
                    .args(["package", "-DskipTests"]);
                c
            }
        }
    }

    /// Makes sure the harness is built, building it when `build` allows.
    /// `Err` is the reason to skip its peers.
    pub fn ensure(self, root: &Path, build: bool, progress: &Progress) -> Result<(), String> {
        if let Some(why) = self.cannot_run() {
            return Err(why);
        }
        if self.artifact(root).is_file() {
            return Ok(());
        }
        if !build {
            return Err(format!(
                "not built ({} missing; run bench/peers/build.sh)",
                self.artifact(root).display()
            ));
        }
        if let Some(why) = self.cannot_build() {
            return Err(format!("not built and cannot build: {why}"));
        }
        self.build(root, progress)
    }

    /// Builds the harness even when it is there (a jar from before a peer
    /// gained a mode would lack it; `mvn package` redoes only what
    /// changed), output on stderr. `Err` is the reason to skip its peers.
    pub fn rebuild(self, root: &Path, progress: &Progress) -> Result<(), String> {
        if let Some(why) = self.cannot_run().or_else(|| self.cannot_build()) {
            return Err(why);
        }
        self.build(root, progress)
    }

    fn build(self, root: &Path, progress: &Progress) -> Result<(), String> {
        progress.note(&format!(
            "building the {self:?} peer harness (output below)…"
        ));
        let mut cmd = self.build_command(root);
        cmd.stdin(Stdio::null())
            .stdout(std::io::stderr())
            .stderr(std::io::stderr());
        let status = progress
            .suspend(|| cmd.status())
            .map_err(|e| format!("cannot start the build: {e}"))?;
        if !status.success() {
            return Err(format!("build failed ({status})"));
        }
        if !self.artifact(root).is_file() {
            return Err(format!(
                "build succeeded but {} is missing",
                self.artifact(root).display()
            ));
        }
        Ok(())
    }

    fn command(self, root: &Path) -> Command {
        match self {
            Harness::Rust | Harness::RactorCluster => Command::new(self.artifact(root)),
            Harness::Pekko | Harness::PekkoCluster => {
                let mut c = Command::new("java");
                c.arg("-jar").arg(self.artifact(root));
                c
            }
        }
    }
}

/// True if `program` is an executable file in a `PATH` directory.
pub fn on_path(program: &str) -> bool {
    std::env::var_os("PATH").is_some_and(|paths| {
        std::env::split_paths(&paths).any(|dir| {
            let p = dir.join(program);
            p.is_file()
                && std::fs::metadata(&p)
                    .map(|m| {
                        use std::os::unix::fs::PermissionsExt;
                        m.permissions().mode() & 0o111 != 0
                    })
                    .unwrap_or(false)
        })
    })
}

/// Runs `peer`'s harness for `scenario` ([`Peer::harness_for`]):
/// `<program> <scenario> --system <peer> <args>`, and returns its JSON lines
/// as the scenario's rows. The harness's stderr is kept and shown only when
/// it fails.
pub fn run<M: DeserializeOwned>(
    root: &Path,
    peer: Peer,
    scenario: &str,
    args: &[String],
) -> Result<Vec<Reported<M>>, String> {
    let mut cmd = peer.harness_for(scenario).command(root);
    cmd.arg(scenario)
        .args(["--system", peer.name()])
        .args(args)
        .stdin(Stdio::null());
    let out = cmd
        .output()
        .map_err(|e| format!("cannot start the {} harness: {e}", peer.name()))?;
    if !out.status.success() {
        let stderr = String::from_utf8_lossy(&out.stderr);
        let tail: Vec<&str> = stderr.lines().rev().take(8).collect();
        let tail: Vec<&str> = tail.into_iter().rev().collect();
        return Err(format!(
            "{} harness failed ({}): {}",
            peer.name(),
            out.status,
            tail.join(" | ")
        ));
    }
    parse_lines(&String::from_utf8_lossy(&out.stdout), peer.name(), scenario)
}

/// Parses a harness's stdout: one JSON object per non-empty line, each for
/// `scenario` and `system`, whose other fields make the scenario's row type
/// `M` (see `report::rows`).
pub fn parse_lines<M: DeserializeOwned>(
    stdout: &str,
    system: &str,
    scenario: &str,
) -> Result<Vec<Reported<M>>, String> {
    let mut rows = Vec::new();
    for (i, line) in stdout.lines().enumerate() {
        let line = line.trim();
        if line.is_empty() {
            continue;
        }
        let value: Value = serde_json::from_str(line)
            .map_err(|e| format!("{system}: line {} is not JSON ({e}): {line}", i + 1))?;
        let Value::Object(mut obj) = value else {
            return Err(format!("{system}: line {} is not a JSON object", i + 1));
        };
        match obj.remove("scenario") {
            Some(Value::String(s)) if s == scenario => {}
            other => {
                return Err(format!(
                    "{system}: line {} is for scenario {other:?}, expected {scenario}",
                    i + 1
                ))
            }
        }
        let sys = obj.remove("system");
        if sys
            .as_ref()
            .and_then(Value::as_str)
            .is_some_and(|s| s != system)
        {
            return Err(format!("{system}: line {} is for system {sys:?}", i + 1));
        }
        let metrics = serde_json::from_value(Value::Object(obj.clone())).map_err(|e| {
            format!(
                "{system}: line {} does not match the {scenario} row ({e}): {line}",
                i + 1
            )
        })?;
        rows.push(Reported {
            metrics,
            printed: obj,
        });
    }
    if rows.is_empty() {
        return Err(format!("{system}: the harness printed no result"));
    }
    Ok(rows)
}

#[cfg(test)]
mod tests {
    use super::*;

    use crate::report::remote_rows::RemotePingPongRow;
    use crate::report::rows::{AskLocalRow, LocalPingPongRow, SpawnRow};
    use crate::report::Row;
    use serde::Serialize;

    #[test]
    fn parses_harness_lines() {
        let out = concat!(
            r#"{"scenario":"local-pingpong","system":"actix","pairs":4,"inflight":100,"throughput":null,"messages":20000000,"elapsed_ns":123456789,"msgs_per_sec":162000000.0}"#,
            "\n\n",
            r#"{"scenario":"local-pingpong","system":"actix","pairs":1,"inflight":1,"throughput":null,"messages":400,"elapsed_ns":1000,"msgs_per_sec":4e8}"#,
            "\n"
        );
        let rows: Vec<Reported<LocalPingPongRow>> =
            parse_lines(out, "actix", "local-pingpong").unwrap();
        assert_eq!(rows.len(), 2);
        assert_eq!(
            (rows[0].metrics.pairs, rows[0].metrics.throughput),
            (4, None)
        );
        assert_eq!(rows[1].metrics.msgs_per_sec, 4e8);
        assert!(!rows[0].printed.contains_key("scenario"));
        assert!(!rows[0].printed.contains_key("system"));
    }

    fn printed<M: DeserializeOwned + Serialize>(line: &str) -> String {
        let v: Value = serde_json::from_str(line).unwrap();
        let (system, scenario) = (
            v["system"].as_str().unwrap(),
            v["scenario"].as_str().unwrap(),
        );
        let mut rows: Vec<Reported<M>> = parse_lines(line, system, scenario).unwrap();
        serde_json::to_string(&Row::reported(system, rows.remove(0))).unwrap()
    }

    #[test]
    fn peer_rows_print_as_the_driver_always_printed_them() {
        // `system` first, then the harness's last two fields, then the
        // others (see `Reported`); numbers as serde_json reads and writes
        // them. Lines as bench/peers/rust and bench/peers/pekko (doubles
        // with three decimals) print them.
        assert_eq!(
            printed::<LocalPingPongRow>(
                r#"{"scenario":"local-pingpong","system":"pekko","pairs":4,"inflight":100,"throughput":50,"messages":20000000,"elapsed_ns":123456789,"msgs_per_sec":162000000.120}"#
            ),
            r#"{"system":"pekko","msgs_per_sec":162000000.12,"elapsed_ns":123456789,"pairs":4,"inflight":100,"throughput":50,"messages":20000000}"#
        );
        assert_eq!(
            printed::<SpawnRow>(
                r#"{"scenario":"spawn","system":"kameo","actors":100000,"spawn_ns_per_actor":812.5,"stop_ns_per_actor":300.5,"bytes_per_actor":-12.25}"#
            ),
            r#"{"system":"kameo","bytes_per_actor":-12.25,"stop_ns_per_actor":300.5,"actors":100000,"spawn_ns_per_actor":812.5}"#
        );
        assert_eq!(
            printed::<AskLocalRow>(
                r#"{"scenario":"ask-local","system":"tokio","requests":100000,"p50_ns":5000,"p99_ns":9000,"mean_ns":5123.4567}"#
            ),
            r#"{"system":"tokio","mean_ns":5123.4567,"p99_ns":9000,"requests":100000,"p50_ns":5000}"#
        );
        assert_eq!(
            printed::<RemotePingPongRow>(
                r#"{"scenario":"remote-pingpong","system":"ractor","clients":10,"total":2000000,"elapsed_ns":987654321,"msgs_per_sec":2e6}"#
            ),
            r#"{"system":"ractor","msgs_per_sec":2000000.0,"elapsed_ns":987654321,"clients":10,"total":2000000}"#
        );
        // A field the row type does not know is passed on, as before.
        assert!(printed::<AskLocalRow>(
            r#"{"scenario":"ask-local","system":"tokio","requests":1,"p50_ns":5,"p99_ns":9,"mean_ns":5.5,"gc_ms":3}"#
        )
        .contains(r#""gc_ms":3"#));
    }

    #[test]
    fn rejects_bad_harness_output() {
        let spawn = |out: &str| parse_lines::<SpawnRow>(out, "tokio", "spawn");
        assert!(spawn("").is_err());
        assert!(spawn("starting...\n").unwrap_err().contains("not JSON"));
        assert!(spawn("[1]").is_err());
        let wrong = r#"{"scenario":"ask-local","system":"tokio","p50_ns":1}"#;
        assert!(spawn(wrong).is_err());
        let other = r#"{"scenario":"spawn","system":"kameo","actors":1}"#;
        assert!(spawn(other).is_err());
        // A line without the row's fields cannot be read.
        let missing = r#"{"scenario":"spawn","system":"tokio","actors":10}"#;
        assert!(spawn(missing)
            .unwrap_err()
            .contains("does not match the spawn row"));
        let pekko = r#"{"scenario":"spawn","system":"pekko","actors":10,"spawn_ns_per_actor":1.5,"stop_ns_per_actor":2.0,"bytes_per_actor":900.0}"#;
        let rows = parse_lines::<SpawnRow>(pekko, "pekko", "spawn").unwrap();
        assert_eq!(rows[0].metrics.bytes_per_actor, 900.0);
    }

    #[test]
    fn names_and_locations() {
        for p in Peer::ALL {
            assert_eq!(Peer::from_name(p.name()), Some(p));
        }
        assert!(!Peer::Tokio.is_framework() && Peer::Actix.is_framework());
        let root = repo_root();
        assert!(root.join("bench/peers/README.md").is_file());
        assert!(Harness::Rust
            .artifact(&root)
            .ends_with("bench/peers/rust/target/release/volley-peers"));
        assert!(Harness::Pekko
            .artifact(&root)
            .ends_with("bench/peers/pekko/target/pekko-bench.jar"));
        assert!(Harness::RactorCluster
            .artifact(&root)
            .ends_with("bench/peers/rust/target/cluster/release/volley-peers"));
        assert_eq!(
            Peer::Ractor.harness_for("remote-pingpong"),
            Harness::RactorCluster
        );
        assert_eq!(Peer::Ractor.harness_for("spawn"), Harness::Rust);
        assert_eq!(Peer::Pekko.harness_for("remote-pingpong"), Harness::Pekko);
        assert_eq!(Peer::Pekko.harness_for("cluster"), Harness::PekkoCluster);
        assert!(Harness::PekkoCluster
            .artifact(&root)
            .ends_with("bench/peers/pekko-cluster/target/pekko-cluster-bench.jar"));
        let build = Harness::PekkoCluster.build_command(&root);
        assert!(build.get_args().any(|a| a
            .to_string_lossy()
            .ends_with("bench/peers/pekko-cluster/pom.xml")));
        let build = Harness::RactorCluster.build_command(&root);
        let args: Vec<_> = build.get_args().map(|a| a.to_string_lossy()).collect();
        assert!(
            args.windows(2).any(|w| w == ["--features", "cluster"]),
            "{args:?}"
        );
        assert!(args
            .last()
            .unwrap()
            .ends_with("bench/peers/rust/target/cluster"));
        let build = Harness::Rust.build_command(&root);
        assert!(!build.get_args().any(|a| a == "--features"));
        assert!(on_path("sh"));
        assert!(!on_path("definitely-not-a-program-xyz"));
    }
}
