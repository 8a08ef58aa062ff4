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
         roles = [\"backend\"]\nmin_nr_of_members = 2\ngossip_interval = \"200ms\"\n\
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
}

#[test]
fn bad_settings_name_their_key() {
    let cases = [
        ("[cluster]\nmin_nr_of_members = 0", "min_nr_of_members"),
        ("[cluster]\ngossip_interval = \"0s\"", "gossip_interval"),
        ("[cluster]\nname = \"\"", "name"),
        ("[cluster]\ninbound_queue = 0", "inbound_queue"),
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
