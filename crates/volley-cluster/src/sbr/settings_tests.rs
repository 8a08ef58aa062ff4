//! The settings: defaults as Pekko's `reference.conf`, the stable-after
//! table, and typed refusals.

use std::time::Duration;

use crate::sbr::{
    ActiveStrategy, DownAllWhenUnstable, SbrSettings, SbrSettingsError, StableAfter, Strategy,
};

fn secs(s: u64) -> Duration {
    Duration::from_secs(s)
}

#[test]
fn defaults_are_keep_majority_with_down_all_when_unstable_on() {
    let settings = SbrSettings::default();
    assert_eq!(settings.active_strategy, ActiveStrategy::KeepMajority);
    assert_eq!(settings.down_all_when_unstable, DownAllWhenUnstable::On);
    assert!(settings.keep_oldest.down_if_alone);
    assert_eq!(
        settings.strategy(),
        Ok(Strategy::KeepMajority { role: None })
    );
}

/// Each size takes the row of the next size up in Pekko's table.
#[test]
fn stable_after_by_size_steps_up_the_table() {
    let by_size = StableAfter::BySize;
    let expected = [
        (0, 7),
        (1, 7),
        (5, 7),
        (6, 10),
        (10, 10),
        (11, 13),
        (20, 13),
        (21, 17),
        (50, 17),
        (51, 20),
        (100, 20),
        (101, 30),
        (1000, 30),
        (5000, 30),
    ];
    for (size, seconds) in expected {
        assert_eq!(by_size.for_size(size), secs(seconds), "{size} members");
    }
    assert_eq!(StableAfter::Fixed(secs(3)).for_size(500), secs(3));
}

/// "on" is 3/4 of stable-after but not less than 4 s (Pekko's
/// `SplitBrainResolverSettings`).
#[test]
fn down_all_when_unstable_on_derives_from_stable_after() {
    let on = DownAllWhenUnstable::On;
    assert_eq!(on.margin(secs(20)), Some(secs(15)));
    assert_eq!(on.margin(secs(7)), Some(Duration::from_millis(5250)));
    assert_eq!(on.margin(secs(4)), Some(secs(4)));
    assert_eq!(on.margin(Duration::ZERO), Some(secs(4)));
    assert_eq!(DownAllWhenUnstable::Off.margin(secs(20)), None);
    assert_eq!(
        DownAllWhenUnstable::After(secs(2)).margin(secs(20)),
        Some(secs(2))
    );
}

#[test]
fn strategy_names_parse_as_pekkos() {
    let parse = |s: &str| s.parse::<ActiveStrategy>();
    assert_eq!(parse("keep-majority"), Ok(ActiveStrategy::KeepMajority));
    assert_eq!(parse("static-quorum"), Ok(ActiveStrategy::StaticQuorum));
    assert_eq!(parse(" Keep-Oldest "), Ok(ActiveStrategy::KeepOldest));
    assert_eq!(parse("down-all"), Ok(ActiveStrategy::DownAll));
    assert_eq!(
        parse("lease-majority"),
        Err(SbrSettingsError::LeaseMajorityUnsupported)
    );
    assert_eq!(
        parse("keep-youngest"),
        Err(SbrSettingsError::UnknownStrategy {
            name: "keep-youngest".into()
        })
    );
}

#[test]
fn static_quorum_needs_a_quorum_size_of_at_least_one() {
    let mut settings = SbrSettings {
        active_strategy: ActiveStrategy::StaticQuorum,
        ..SbrSettings::default()
    };
    assert_eq!(
        settings.strategy(),
        Err(SbrSettingsError::QuorumSizeMissing)
    );
    settings.static_quorum.quorum_size = Some(0);
    assert_eq!(settings.strategy(), Err(SbrSettingsError::QuorumSizeZero));
    settings.static_quorum.quorum_size = Some(3);
    settings.static_quorum.role = Some("backend".into());
    assert_eq!(
        settings.strategy(),
        Ok(Strategy::StaticQuorum {
            quorum_size: 3,
            role: Some("backend".into())
        })
    );
}

#[test]
fn bad_values_are_refused_with_typed_errors() {
    let zero_margin = SbrSettings {
        down_all_when_unstable: DownAllWhenUnstable::After(Duration::ZERO),
        ..SbrSettings::default()
    };
    assert_eq!(
        zero_margin.strategy(),
        Err(SbrSettingsError::DownAllWhenUnstableZero)
    );

    let mut empty_role = SbrSettings {
        active_strategy: ActiveStrategy::KeepOldest,
        ..SbrSettings::default()
    };
    empty_role.keep_oldest.role = Some(String::new());
    assert_eq!(
        empty_role.strategy(),
        Err(SbrSettingsError::EmptyRole {
            strategy: "keep_oldest"
        })
    );
    let node = crate::node_id::NodeId::new("a", 1, 0, 0);
    let refused = crate::sbr::SplitBrainResolver::new(node, empty_role, Duration::ZERO);
    assert!(refused.is_err());
}

#[test]
fn errors_say_what_to_fix() {
    assert_eq!(
        SbrSettingsError::UnknownStrategy { name: "x".into() }.to_string(),
        "unknown split-brain resolver strategy \"x\"; one of [\"keep-majority\", \"static-quorum\", \"keep-oldest\", \"down-all\"]"
    );
    assert_eq!(
        SbrSettingsError::QuorumSizeMissing.to_string(),
        "static-quorum needs static_quorum.quorum_size"
    );
}

/// Extreme values neither overflow nor panic: they only postpone.
#[test]
fn extreme_values_saturate() {
    use crate::node_id::NodeId;
    use crate::sbr::{Partition, SbrInput, SbrMember, SbrStatus, SplitBrainResolver};

    assert_eq!(
        DownAllWhenUnstable::On.margin(Duration::MAX),
        Some(Duration::MAX / 4)
    );
    let huge = SbrSettings {
        stable_after: StableAfter::Fixed(Duration::MAX),
        down_all_when_unstable: DownAllWhenUnstable::After(Duration::MAX),
        ..SbrSettings::default()
    };
    let me = NodeId::new("a", 1, 0, 0);
    let other = NodeId::new("b", 1, 0, 0);
    let mut sbr = SplitBrainResolver::new(me.clone(), huge, Duration::ZERO).expect("valid");
    let inputs = [
        SbrInput::Member(SbrMember::new(me, SbrStatus::Up, 1)),
        SbrInput::Member(SbrMember::new(other.clone(), SbrStatus::Up, 2)),
        SbrInput::Leader(true),
        SbrInput::Unreachable(other),
    ];
    for input in inputs {
        assert_eq!(sbr.handle(secs(1), input), None);
    }
    assert_eq!(sbr.stable_deadline(), Duration::MAX);
    assert_eq!(sbr.handle(secs(1_000_000_000), SbrInput::Tick), None);
    assert_eq!(
        sbr.handle(
            Duration::MAX,
            SbrInput::Reachable(NodeId::new("b", 1, 0, 0))
        ),
        None
    );

    let mut quorum = SbrSettings {
        active_strategy: ActiveStrategy::StaticQuorum,
        ..SbrSettings::default()
    };
    quorum.static_quorum.quorum_size = Some(usize::MAX);
    let strategy = quorum.strategy().expect("valid");
    assert!(!strategy.too_many_for_quorum(&Partition::new()));
}
