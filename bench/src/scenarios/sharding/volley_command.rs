//! The stdin commands of volley's `sharding-node`, parsed: the Pekko
//! peer's (bench/peers/README.md, "sharding"), with its argument order.

/// What a `run` command sends (the Pekko peer's `Load.Spec`).
#[derive(Debug, Clone, PartialEq)]
pub struct LoadSpec {
    pub row: String,
    pub total: u64,
    /// Most answers outstanding.
    pub window: usize,
    /// A tell load asks for an acknowledgement every this many messages.
    pub ack_every: u64,
    /// Message `seq` goes to `prefix + seq % entities`, or to
    /// `prefix + seq` (a new id each) when this is 0.
    pub entities: u64,
    pub prefix: String,
    /// Every message asked (`ask`), or told with acknowledgements (`tell`).
    pub ask: bool,
}

impl LoadSpec {
    /// The entity id of message `seq`.
    pub fn entity_of(&self, seq: u64) -> String {
        match self.entities {
            0 => format!("{}{seq}", self.prefix),
            n => format!("{}{}", self.prefix, seq % n),
        }
    }

    /// Whether message `seq` of a load of `total` asks for an answer.
    pub fn answered(&self, seq: u64, total: u64) -> bool {
        self.ask || (seq + 1) % self.ack_every == 0 || seq + 1 == total
    }
}

/// One stdin command.
#[derive(Debug, Clone, PartialEq)]
pub enum Command {
    /// `run ROW TOTAL WINDOW ACK_EVERY ENTITIES PREFIX ask|tell`
    Run(LoadSpec),
    /// `stop-load`: the running load sends nothing more.
    StopLoad,
    /// `reset`: zero every count.
    Reset,
    /// `check EXPECTED ids|-`
    Check {
        expected: i64,
        ids: bool,
    },
    /// `shards`: the shards this member hosts.
    Shards,
    PingSingleton,
    Leave,
    Exit,
}

/// A command that is not one of [`Command`]'s, or has bad arguments.
#[derive(Debug, Clone, PartialEq)]
pub struct BadCommand(String);

impl std::fmt::Display for BadCommand {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for BadCommand {}

fn number<T: std::str::FromStr>(word: &str, what: &str) -> Result<T, BadCommand> {
    word.parse()
        .map_err(|_| BadCommand(format!("{what} is not a number: {word:?}")))
}

impl Command {
    pub fn parse(line: &str) -> Result<Command, BadCommand> {
        let words: Vec<&str> = line.split_whitespace().collect();
        match words.as_slice() {
            ["run", row, total, window, ack_every, entities, prefix, mode] => {
                let spec = LoadSpec {
                    row: row.to_string(),
                    total: number(total, "TOTAL")?,
                    window: number(window, "WINDOW")?,
                    ack_every: number(ack_every, "ACK_EVERY")?,
                    entities: number(entities, "ENTITIES")?,
                    prefix: prefix.to_string(),
                    ask: match *mode {
                        "ask" => true,
                        "tell" => false,
                        other => return Err(BadCommand(format!("not ask or tell: {other:?}"))),
                    },
                };
                if spec.window == 0 || spec.ack_every == 0 {
                    return Err(BadCommand("WINDOW and ACK_EVERY must be above 0".into()));
                }
                Ok(Command::Run(spec))
            }
            ["run", ..] => Err(BadCommand(format!("run needs 7 arguments: {line}"))),
            ["check", expected, rest @ ..] if rest.len() <= 1 => Ok(Command::Check {
                expected: number(expected, "EXPECTED")?,
                ids: rest.first() == Some(&"ids"),
            }),
            ["stop-load"] => Ok(Command::StopLoad),
            ["reset"] => Ok(Command::Reset),
            ["shards"] => Ok(Command::Shards),
            ["ping-singleton"] => Ok(Command::PingSingleton),
            ["leave"] => Ok(Command::Leave),
            ["exit"] => Ok(Command::Exit),
            _ => Err(BadCommand(format!("unknown command {line:?}"))),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_the_drivers_run_commands() {
        let Command::Run(spec) = Command::parse("run tell 300000 20 100 10000 e tell").unwrap()
        else {
            panic!("not a run");
        };
        assert_eq!(
            (spec.total, spec.window, spec.ack_every, spec.entities),
            (300_000, 20, 100, 10_000)
        );
        assert!(!spec.ask);
        assert_eq!(spec.entity_of(10_001), "e1");
        assert!(spec.answered(99, 300_000) && !spec.answered(100, 300_000));
        assert!(spec.answered(299_999, 300_000));
        let Command::Run(fresh) = Command::parse("run activate 5 500 1 0 a0- ask").unwrap() else {
            panic!("not a run");
        };
        assert_eq!(fresh.entity_of(7), "a0-7");
        assert!(fresh.answered(3, 5));
    }

    #[test]
    fn parses_the_other_commands() {
        assert_eq!(
            Command::parse("check 30 ids"),
            Ok(Command::Check {
                expected: 30,
                ids: true
            })
        );
        assert_eq!(
            Command::parse("check -1 -"),
            Ok(Command::Check {
                expected: -1,
                ids: false
            })
        );
        assert_eq!(Command::parse(" shards "), Ok(Command::Shards));
        assert_eq!(Command::parse("stop-load"), Ok(Command::StopLoad));
    }

    #[test]
    fn bad_commands_are_errors() {
        for bad in [
            "run tell 1 2 3",
            "run tell x 20 100 10 e tell",
            "run tell 1 20 100 10 e maybe",
            "run tell 1 0 100 10 e tell",
            "check",
            "check many",
            "fly",
        ] {
            assert!(Command::parse(bad).is_err(), "{bad}");
        }
    }
}
