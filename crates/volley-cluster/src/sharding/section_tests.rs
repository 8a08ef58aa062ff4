use std::time::Duration;

use super::ShardingSection;
use crate::runtime::{register_settings, ClusterError};
use crate::sharding::{LeastShardAllocation, ShardingError, ShardingSettings};

fn from_toml(toml: &str) -> Result<ShardingSettings, ClusterError> {
    register_settings();
    let settings = volley::Settings::from_toml_str(toml).expect("valid settings");
    ShardingSettings::from_system_settings(&settings)
}

fn refused_key(toml: &str) -> &'static str {
    match from_toml(toml) {
        Err(ClusterError::OutOfRange { key, .. }) => key,
        other => panic!("expected OutOfRange for {toml:?}, got {other:?}"),
    }
}

#[test]
fn an_absent_section_gives_the_defaults() {
    assert_eq!(from_toml("").unwrap(), ShardingSettings::default());
    assert_eq!(
        ShardingSection::default().settings(None).unwrap(),
        ShardingSettings::default()
    );
}

#[test]
fn the_section_sets_every_field_with_durations_in_units() {
    let settings = from_toml(
        "[cluster.sharding]\nrole = \"backend\"\nbuffer_size = 50\nretry_interval = \"250ms\"\n\
         rebalance_interval = \"3s\"\nhandoff_timeout = \"20s\"\ndown_removal_margin = \"9s\"\n\
         coordinator_state_wait = \"4s\"\nshard_start_timeout = \"6s\"\n\
         shard_failure_backoff = \"2s\"\nentity_restart_backoff = \"1s\"\n\
         remember_entities = true\npassivation_idle_timeout = \"2m\"\n\
         passivation_active_entity_limit = 1000\npassivation_check_interval = \"5s\"\n\
         shard_buffer_limit = 77\nrebalance_absolute_limit = 3\nrebalance_relative_limit = 0.5\n\
         remote_batch_messages = 8\nremote_batch_bytes = 1024\n\
         shard_region_query_timeout = \"7s\"\n",
    )
    .unwrap();
    let mut expected = ShardingSettings {
        role: Some("backend".into()),
        buffer_size: 50,
        retry_interval: Duration::from_millis(250),
        rebalance_interval: Duration::from_secs(3),
        handoff_timeout: Duration::from_secs(20),
        down_removal_margin: Duration::from_secs(9),
        coordinator_state_wait: Duration::from_secs(4),
        shard_start_timeout: Duration::from_secs(6),
        shard_failure_backoff: Duration::from_secs(2),
        remember_entities: true,
        allocation: LeastShardAllocation::new(3, 0.5).unwrap(),
        remote_batch_messages: 8,
        remote_batch_bytes: 1024,
        shard_region_query_timeout: Duration::from_secs(7),
        ..ShardingSettings::default()
    };
    expected.shard.entity_restart_backoff = Duration::from_secs(1);
    expected.shard.passivation.idle_timeout = Some(Duration::from_secs(120));
    expected.shard.passivation.max_active = Some(1000);
    expected.shard.passivation_check_interval = Duration::from_secs(5);
    expected.shard.buffer_limit = 77;
    assert_eq!(settings, expected);
}

#[test]
fn without_a_margin_the_resolvers_fixed_stable_after_is_taken() {
    let fixed = "[cluster.split_brain_resolver]\nstable_after = \"20s\"\n";
    assert_eq!(
        from_toml(fixed).unwrap().down_removal_margin,
        Duration::from_secs(20)
    );
    let both = format!("{fixed}[cluster.sharding]\ndown_removal_margin = \"25s\"\n");
    assert_eq!(
        from_toml(&both).unwrap().down_removal_margin,
        Duration::from_secs(25)
    );
    let default = ShardingSettings::default().down_removal_margin;
    assert_eq!(from_toml("").unwrap().down_removal_margin, default);
}

#[test]
fn bad_values_in_the_section_name_their_key() {
    let cases = [
        ("retry_interval = \"0s\"", "sharding.retry_interval"),
        ("rebalance_interval = \"0s\"", "sharding.rebalance_interval"),
        ("handoff_timeout = \"0s\"", "sharding.handoff_timeout"),
        (
            "shard_start_timeout = \"0s\"",
            "sharding.shard_start_timeout",
        ),
        (
            "shard_region_query_timeout = \"0s\"",
            "sharding.shard_region_query_timeout",
        ),
        (
            "passivation_check_interval = \"0s\"",
            "sharding.passivation_check_interval",
        ),
        (
            "remote_batch_messages = 0",
            "sharding.remote_batch_messages",
        ),
        ("role = \"\"", "sharding.role"),
        (
            "passivation_idle_timeout = \"0s\"",
            "sharding.passivation_idle_timeout",
        ),
        (
            "passivation_active_entity_limit = 0",
            "sharding.passivation_active_entity_limit",
        ),
        (
            "rebalance_absolute_limit = 0",
            "sharding.rebalance_absolute_limit",
        ),
        (
            "rebalance_relative_limit = 1.5",
            "sharding.rebalance_relative_limit",
        ),
        (
            "rebalance_relative_limit = 0.0",
            "sharding.rebalance_relative_limit",
        ),
    ];
    for (line, key) in cases {
        assert_eq!(refused_key(&format!("[cluster.sharding]\n{line}\n")), key);
    }
    // An unknown key or a wrong type does not parse at all.
    for bad in ["nonsense = 1", "retry_interval = 5"] {
        register_settings();
        let settings = volley::Settings::from_toml_str(&format!("[cluster.sharding]\n{bad}\n"));
        let refused = settings
            .map_err(|e| e.to_string())
            .and_then(|s| ShardingSettings::from_system_settings(&s).map_err(|e| e.to_string()));
        assert!(refused.is_err(), "{bad:?} was taken");
    }
}

#[test]
fn settings_given_in_code_are_checked_by_field() {
    assert!(ShardingSettings::default().validate().is_ok());
    let refused = |change: fn(&mut ShardingSettings)| {
        let mut settings = ShardingSettings::default();
        change(&mut settings);
        match settings.validate() {
            Err(ShardingError::OutOfRange { key, .. }) => key,
            other => panic!("expected OutOfRange, got {other:?}"),
        }
    };
    assert_eq!(
        refused(|s| s.retry_interval = Duration::ZERO),
        "retry_interval"
    );
    assert_eq!(
        refused(|s| s.shard.passivation_check_interval = Duration::ZERO),
        "shard.passivation_check_interval"
    );
    assert_eq!(
        refused(|s| s.remote_batch_messages = 0),
        "remote_batch_messages"
    );
    assert_eq!(
        refused(|s| s.shard.passivation.max_active = Some(0)),
        "shard.passivation.max_active"
    );
}
