use std::time::Duration;

use super::{register_settings, ClusterSettings};
use crate::runtime::error::ClusterError;

fn parse(toml: &str) -> Result<ClusterSettings, ClusterError> {
    register_settings();
    let settings = volley::Settings::from_toml_str(toml).expect("valid settings");
    ClusterSettings::from_system_settings(&settings)
}

#[test]
fn absent_section_gives_the_defaults() {
    assert_eq!(parse("").unwrap(), ClusterSettings::default());
}

#[test]
fn akka_names_and_durations_with_units_parse() {
    let s = parse(
        "[cluster]\nname = \"shop\"\nseed_nodes = [\"volley://sys@127.0.0.1:2552\"]\n\
         roles = [\"backend\"]\nmin_nr_of_members = 2\ngossip_interval = \"200ms\"\nmax_members = 50\n\
         [cluster.role_min_nr_of_members]\nbackend = 3\n\
         [cluster.swim]\nprobe_period = \"300ms\"\nprobe_rtt = \"100ms\"\n\
         suspect_to_down_after = \"2s\"\n",
    )
    .unwrap();
    assert_eq!(s.name, "shop");
    assert_eq!(s.seed_nodes, ["volley://sys@127.0.0.1:2552"]);
    assert_eq!(s.min_nr_of_members, 2);
    assert_eq!(s.gossip_interval, Duration::from_millis(200));
    let swim = s.swim();
    assert_eq!(swim.probe_period, Duration::from_millis(300));
    assert_eq!(swim.suspect_to_down_after, Duration::from_secs(2));
    let membership = s.membership();
    assert!(membership.roles.contains("backend"));
    assert_eq!(membership.gossip_interval, Duration::from_millis(200));
    assert_eq!(membership.max_members, 50);
    assert_eq!(membership.role_min_nr_of_members["backend"], 3);
}

#[test]
fn bad_settings_name_their_key() {
    let cases = [
        ("[cluster]\nmin_nr_of_members = 0", "min_nr_of_members"),
        ("[cluster]\ngossip_interval = \"0s\"", "gossip_interval"),
        ("[cluster]\nname = \"\"", "name"),
        ("[cluster]\ninbound_queue = 0", "inbound_queue"),
        ("[cluster]\nmax_members = 0", "max_members"),
        (
            "[cluster.role_min_nr_of_members]\nbackend = 0",
            "role_min_nr_of_members",
        ),
        (
            "[cluster.swim]\nprobe_period = \"100ms\"\nprobe_rtt = \"100ms\"",
            "swim.probe_rtt",
        ),
        (
            "[cluster.swim]\nmax_packet_size = 100",
            "swim.max_packet_size",
        ),
    ];
    for (toml, key) in cases {
        match parse(toml) {
            Err(ClusterError::OutOfRange { key: k, .. }) => assert_eq!(k, key, "{toml}"),
            other => panic!("{toml}: {other:?}"),
        }
    }
    assert!(matches!(
        parse("[cluster]\nseed_node = []"),
        Err(ClusterError::InvalidSettings(_))
    ));
}

#[test]
fn the_split_brain_resolver_is_keep_majority_by_default_and_can_be_set_or_turned_off() {
    use crate::sbr::{ActiveStrategy, DownAllWhenUnstable, StableAfter};
    let default = parse("")
        .unwrap()
        .membership()
        .split_brain_resolver
        .unwrap();
    assert_eq!(default.active_strategy, ActiveStrategy::KeepMajority);
    assert_eq!(default.stable_after, StableAfter::BySize);
    let s = parse(
        "[cluster.split_brain_resolver]\nactive_strategy = \"static-quorum\"\n\
         stable_after = \"2s\"\ndown_all_when_unstable = \"1500ms\"\n\
         [cluster.split_brain_resolver.static_quorum]\nquorum_size = 3\nrole = \"backend\"\n",
    )
    .unwrap();
    let sbr = s.membership().split_brain_resolver.unwrap();
    assert_eq!(sbr.active_strategy, ActiveStrategy::StaticQuorum);
    assert_eq!(sbr.stable_after, StableAfter::Fixed(Duration::from_secs(2)));
    assert_eq!(
        sbr.down_all_when_unstable,
        DownAllWhenUnstable::After(Duration::from_millis(1500))
    );
    assert_eq!(sbr.static_quorum.quorum_size, Some(3));
    let off = parse("[cluster.split_brain_resolver]\nactive_strategy = \"off\"").unwrap();
    assert_eq!(off.membership().split_brain_resolver, None);
}

#[test]
fn bad_split_brain_resolver_settings_are_typed_errors() {
    for toml in [
        "[cluster.split_brain_resolver]\nactive_strategy = \"keep-youngest\"",
        "[cluster.split_brain_resolver]\nactive_strategy = \"lease-majority\"",
        "[cluster.split_brain_resolver]\nactive_strategy = \"static-quorum\"",
    ] {
        assert!(
            matches!(parse(toml), Err(ClusterError::SplitBrainResolver(_))),
            "{toml}"
        );
    }
    assert!(matches!(
        parse("[cluster.split_brain_resolver]\ndown_all_when_unstable = \"soon\""),
        Err(ClusterError::OutOfRange { .. })
    ));
    assert!(matches!(
        parse("[cluster.split_brain_resolver]\nstable_after = 3"),
        Err(ClusterError::InvalidSettings(_))
    ));
}

#[test]
fn allow_weakly_up_members_is_a_duration_or_off() {
    let default = parse("").unwrap();
    assert_eq!(
        default.allow_weakly_up_members,
        Some(Duration::from_secs(7))
    );
    assert_eq!(
        default.membership().allow_weakly_up_members,
        Some(Duration::from_secs(7))
    );
    let cases = [
        ("\"3s\"", Some(Duration::from_secs(3))),
        ("\"1500ms\"", Some(Duration::from_millis(1500))),
        ("\"off\"", None),
        ("\"OFF\"", None),
        ("false", None),
        ("\"on\"", Some(Duration::from_secs(7))),
        ("true", Some(Duration::from_secs(7))),
    ];
    for (value, expected) in cases {
        let s = parse(&format!("[cluster]\nallow_weakly_up_members = {value}")).unwrap();
        assert_eq!(s.allow_weakly_up_members, expected, "{value}");
        assert_eq!(s.membership().allow_weakly_up_members, expected, "{value}");
    }
    match parse("[cluster]\nallow_weakly_up_members = \"0s\"") {
        Err(ClusterError::OutOfRange { key, .. }) => assert_eq!(key, "allow_weakly_up_members"),
        other => panic!("a zero duration: {other:?}"),
    }
    for bad in ["\"soon\"", "7"] {
        let toml = format!("[cluster]\nallow_weakly_up_members = {bad}");
        match parse(&toml) {
            Err(ClusterError::InvalidSettings(why)) => {
                assert!(why.contains("allow_weakly_up_members"), "{bad}: {why}");
            }
            other => panic!("{bad}: {other:?}"),
        }
    }
}

#[test]
fn settings_written_back_read_the_same() {
    for value in ["\"off\"", "\"2s 500ms\""] {
        let s = parse(&format!("[cluster]\nallow_weakly_up_members = {value}")).unwrap();
        let written = toml::to_string(&s).expect("the section serializes");
        let back: super::ClusterSettings = toml::from_str(&written).expect("and parses back");
        assert_eq!(back, s, "{written}");
    }
}
