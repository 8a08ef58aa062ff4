use std::time::Duration;

use super::{SingletonError, SingletonSettings};
use crate::runtime::{register_settings, ClusterError};

fn from_toml(toml: &str) -> Result<SingletonSettings, SingletonError> {
    register_settings();
    let settings = volley::Settings::from_toml_str(toml).expect("valid settings");
    SingletonSettings::from_system_settings(&settings, "counter")
}

#[test]
fn the_defaults_are_valid_and_bad_values_are_refused_by_key() {
    assert!(SingletonSettings::new("counter").validate().is_ok());
    let refused_key = |settings: SingletonSettings| match settings.validate() {
        Err(SingletonError::OutOfRange { key, .. }) => key,
        other => panic!("expected OutOfRange, got {other:?}"),
    };
    assert_eq!(refused_key(SingletonSettings::new("")), "name");
    assert_eq!(refused_key(SingletonSettings::new("a/b")), "name");
    let mut settings = SingletonSettings::new("counter");
    settings.buffer_size = 0;
    assert_eq!(refused_key(settings), "buffer_size");
    let mut settings = SingletonSettings::new("counter");
    settings.retry_interval = Duration::ZERO;
    assert_eq!(refused_key(settings), "retry_interval");
    let mut settings = SingletonSettings::new("counter");
    settings.pause_timeout = Duration::ZERO;
    assert_eq!(refused_key(settings), "pause_timeout");
}

#[test]
fn an_absent_section_gives_the_defaults() {
    assert_eq!(from_toml("").unwrap(), SingletonSettings::new("counter"));
}

#[test]
fn the_section_sets_every_field_with_durations_in_units() {
    let settings = from_toml(
        "[cluster.singleton]\nrole = \"backend\"\nretry_interval = \"250ms\"\n\
         max_hand_over_retries = 4\npause_timeout = \"3s\"\nbuffer_size = 10\n\
         down_removal_margin = \"12s\"\n",
    )
    .unwrap();
    let expected = SingletonSettings {
        role: Some("backend".into()),
        retry_interval: Duration::from_millis(250),
        max_hand_over_retries: 4,
        pause_timeout: Duration::from_secs(3),
        buffer_size: 10,
        down_removal_margin: Duration::from_secs(12),
        ..SingletonSettings::new("counter")
    };
    assert_eq!(settings, expected);
}

#[test]
fn without_a_margin_the_resolvers_fixed_stable_after_is_taken() {
    let fixed = "[cluster.split_brain_resolver]\nstable_after = \"20s\"\n";
    let settings = from_toml(fixed).unwrap();
    assert_eq!(settings.down_removal_margin, Duration::from_secs(20));
    // A margin written in the section wins.
    let both = format!("{fixed}[cluster.singleton]\ndown_removal_margin = \"25s\"\n");
    let settings = from_toml(&both).unwrap();
    assert_eq!(settings.down_removal_margin, Duration::from_secs(25));
    // By size, or with no resolver, the default stays.
    let default = SingletonSettings::new("counter").down_removal_margin;
    assert_eq!(from_toml("").unwrap().down_removal_margin, default);
    let off = "[cluster.split_brain_resolver]\nactive_strategy = \"off\"\nstable_after = \"20s\"\n";
    assert_eq!(from_toml(off).unwrap().down_removal_margin, default);
}

#[test]
fn bad_values_in_the_section_name_their_key() {
    let cases = [
        ("retry_interval = \"0s\"", "singleton.retry_interval"),
        ("pause_timeout = \"0s\"", "singleton.pause_timeout"),
        ("buffer_size = 0", "singleton.buffer_size"),
    ];
    for (line, key) in cases {
        let toml = format!("[cluster.singleton]\n{line}\n");
        match from_toml(&toml) {
            Err(SingletonError::Cluster(ClusterError::OutOfRange { key: k, .. })) => {
                assert_eq!(k, key, "{toml}");
            }
            other => panic!("{toml}: {other:?}"),
        }
    }
    for toml in [
        "[cluster.singleton]\nretry_intervall = \"1s\"",
        "[cluster.singleton]\npause_timeout = \"soon\"",
        "[cluster.singleton]\nbuffer_size = -1",
    ] {
        assert!(
            matches!(
                from_toml(toml),
                Err(SingletonError::Cluster(ClusterError::InvalidSettings(_)))
            ),
            "{toml}"
        );
    }
}
