//! Command-line parsing. The contract is shared with the Pekko harness and
//! consumed by `volley-bench`, so errors are strict: anything unexpected is
//! reported on stderr and the process exits with code 2.

use std::fmt;

/// The peer frameworks this binary knows how to drive.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum System {
    Actix,
    Ractor,
    Kameo,
    Tokio,
}

impl System {
    fn parse(s: &str) -> Result<Self, UsageError> {
        match s {
            "actix" => Ok(Self::Actix),
            "ractor" => Ok(Self::Ractor),
            "kameo" => Ok(Self::Kameo),
            "tokio" => Ok(Self::Tokio),
            other => Err(UsageError(format!(
                "unknown --system '{other}' (expected actix, ractor, kameo or tokio)"
            ))),
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            Self::Actix => "actix",
            Self::Ractor => "ractor",
            Self::Kameo => "kameo",
            Self::Tokio => "tokio",
        }
    }
}

/// One `P:K[:T]` entry of `--configs`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PairConfig {
    pub pairs: u64,
    pub inflight: u64,
    /// Dispatcher throughput; only Pekko has such a knob. Parsed so that the
    /// same `--configs` string works for every harness, then ignored.
    pub throughput: Option<u64>,
}

#[derive(Debug, PartialEq, Eq)]
pub enum Command {
    LocalPingPong {
        system: System,
        configs: Vec<PairConfig>,
        messages: u64,
        warmup: bool,
    },
    Spawn {
        system: System,
        actors: u64,
    },
    AskLocal {
        system: System,
        requests: u64,
    },
    /// ractor only, on ractor_cluster (the `cluster` build).
    RemotePingPong {
        system: System,
        clients: Vec<u64>,
        repeat: u64,
        inflight: u64,
    },
}

/// `--inflight` of remote-pingpong when not given.
pub const DEFAULT_INFLIGHT: u64 = 50;

#[derive(Debug)]
pub struct UsageError(pub String);

impl fmt::Display for UsageError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

pub const USAGE: &str = "\
usage:
  volley-peers local-pingpong --system S --configs P:K:T[,P:K:T...] --messages M [--warmup]
  volley-peers spawn          --system S --actors N
  volley-peers ask-local      --system S --requests N
  volley-peers remote-pingpong --system ractor --clients C[,C...] --repeat R [--inflight 50]
systems: actix, ractor, kameo, tokio (remote-pingpong: ractor on ractor_cluster,
only in the build with `--features cluster`)";

fn err<T>(msg: impl Into<String>) -> Result<T, UsageError> {
    Err(UsageError(msg.into()))
}

fn positive(flag: &str, value: &str) -> Result<u64, UsageError> {
    match value.parse::<u64>() {
        Ok(n) if n > 0 => Ok(n),
        _ => err(format!("{flag} expects a positive integer, got '{value}'")),
    }
}

fn parse_list(flag: &str, value: &str) -> Result<Vec<u64>, UsageError> {
    value.split(',').map(|v| positive(flag, v)).collect()
}

fn parse_configs(value: &str) -> Result<Vec<PairConfig>, UsageError> {
    let mut out = Vec::new();
    for item in value.split(',') {
        let parts: Vec<&str> = item.split(':').collect();
        if !(2..=3).contains(&parts.len()) {
            return err(format!("--configs entry '{item}' is not P:K:T"));
        }
        out.push(PairConfig {
            pairs: positive("--configs pairs", parts[0])?,
            inflight: positive("--configs inflight", parts[1])?,
            throughput: parts
                .get(2)
                .map(|t| positive("--configs throughput", t))
                .transpose()?,
        });
    }
    Ok(out)
}

/// Parses `args` (without the program name).
pub fn parse(args: &[String]) -> Result<Command, UsageError> {
    let Some((scenario, rest)) = args.split_first() else {
        return err("missing scenario");
    };
    let mut system = None;
    let mut configs = None;
    let mut messages = None;
    let mut actors = None;
    let mut requests = None;
    let mut clients = None;
    let mut repeat = None;
    let mut inflight = None;
    let mut warmup = false;

    let mut it = rest.iter();
    while let Some(flag) = it.next() {
        if flag == "--warmup" {
            warmup = true;
            continue;
        }
        let Some(value) = it.next() else {
            return err(format!("{flag} needs a value"));
        };
        match flag.as_str() {
            "--system" => system = Some(System::parse(value)?),
            "--configs" => configs = Some(parse_configs(value)?),
            "--messages" => messages = Some(positive(flag, value)?),
            "--actors" => actors = Some(positive(flag, value)?),
            "--requests" => requests = Some(positive(flag, value)?),
            "--clients" => clients = Some(parse_list(flag, value)?),
            "--repeat" => repeat = Some(positive(flag, value)?),
            "--inflight" => inflight = Some(positive(flag, value)?),
            _ => return err(format!("unknown flag '{flag}' for {scenario}")),
        }
    }

    let system = system.ok_or_else(|| UsageError("--system is required".into()))?;
    let require = |v: Option<u64>, flag: &str| {
        v.ok_or_else(|| UsageError(format!("{flag} is required for {scenario}")))
    };
    let has_configs = configs.is_some();
    let remote_flags = clients.is_some() || repeat.is_some() || inflight.is_some();
    let cmd = match scenario.as_str() {
        "local-pingpong" => Command::LocalPingPong {
            system,
            configs: configs.ok_or_else(|| UsageError("--configs is required".into()))?,
            messages: require(messages, "--messages")?,
            warmup,
        },
        "spawn" => Command::Spawn {
            system,
            actors: require(actors, "--actors")?,
        },
        "ask-local" => Command::AskLocal {
            system,
            requests: require(requests, "--requests")?,
        },
        "remote-pingpong" => {
            if system != System::Ractor {
                return err(format!(
                    "remote-pingpong runs only ractor (on ractor_cluster), not {}",
                    system.name()
                ));
            }
            Command::RemotePingPong {
                system,
                clients: clients.ok_or_else(|| UsageError("--clients is required".into()))?,
                repeat: require(repeat, "--repeat")?,
                inflight: inflight.unwrap_or(DEFAULT_INFLIGHT),
            }
        }
        other => return err(format!("unknown scenario '{other}'")),
    };
    // Flags that belong to another scenario are a caller bug; say so.
    let stray = match &cmd {
        Command::LocalPingPong { .. } => actors.is_some() || requests.is_some() || remote_flags,
        Command::Spawn { .. } => {
            has_configs || messages.is_some() || requests.is_some() || warmup || remote_flags
        }
        Command::AskLocal { .. } => {
            has_configs || messages.is_some() || actors.is_some() || warmup || remote_flags
        }
        Command::RemotePingPong { .. } => {
            has_configs || messages.is_some() || actors.is_some() || requests.is_some() || warmup
        }
    };
    if stray {
        return err(format!("flag not valid for {scenario}"));
    }
    Ok(cmd)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(s: &str) -> Vec<String> {
        s.split_whitespace().map(String::from).collect()
    }

    #[test]
    fn parses_pingpong() {
        let cmd = parse(&args(
            "local-pingpong --system ractor --configs 1:1:1,4:100:20 --messages 1000 --warmup",
        ))
        .unwrap();
        assert_eq!(
            cmd,
            Command::LocalPingPong {
                system: System::Ractor,
                configs: vec![
                    PairConfig {
                        pairs: 1,
                        inflight: 1,
                        throughput: Some(1)
                    },
                    PairConfig {
                        pairs: 4,
                        inflight: 100,
                        throughput: Some(20)
                    },
                ],
                messages: 1000,
                warmup: true,
            }
        );
    }

    #[test]
    fn parses_remote_pingpong() {
        assert_eq!(
            parse(&args(
                "remote-pingpong --system ractor --clients 1,5,10 --repeat 2000"
            ))
            .unwrap(),
            Command::RemotePingPong {
                system: System::Ractor,
                clients: vec![1, 5, 10],
                repeat: 2000,
                inflight: 50,
            }
        );
        assert_eq!(
            parse(&args(
                "remote-pingpong --system ractor --clients 3 --repeat 10 --inflight 7"
            ))
            .unwrap(),
            Command::RemotePingPong {
                system: System::Ractor,
                clients: vec![3],
                repeat: 10,
                inflight: 7,
            }
        );
    }

    #[test]
    fn rejects_bad_input() {
        for bad in [
            "",
            "spawn --system akka --actors 10",
            "spawn --system tokio",
            "spawn --system tokio --actors 0",
            "spawn --system tokio --actors 10 --warmup",
            "local-pingpong --system tokio --configs 1 --messages 10",
            "ask-local --system tokio --requests",
            "remote-pingpong --system tokio --clients 1 --repeat 10",
            "remote-pingpong --system ractor --clients 1",
            "remote-pingpong --system ractor --clients 1,0 --repeat 10",
            "remote-pingpong --system ractor --clients 1 --repeat 10 --warmup",
            "spawn --system tokio --actors 10 --repeat 10",
        ] {
            assert!(parse(&args(bad)).is_err(), "accepted: {bad}");
        }
    }
}
