//! The singleton's settings (Akka's `cluster.singleton` and
//! `cluster.singleton-proxy` sections), as typed fields.

use std::time::Duration;

/// How a cluster singleton is placed, handed over and reached.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SingletonSettings {
    /// The singleton's name: its manager is `/user/<name>` on every node,
    /// the instance `/user/<name>/singleton` on the oldest, the proxy
    /// `/user/<name>-proxy`.
    pub name: String,
    /// Only members with this role host it (Akka's `role`); `None`: any.
    pub role: Option<String>,
    /// How often a new oldest asks the previous one to hand over, and how
    /// often a proxy asks the oldest where the singleton is (Akka's
    /// `hand-over-retry-interval` and `singleton-identification-interval`).
    pub retry_interval: Duration,
    /// Hand-over requests to a previous oldest that left, after which the
    /// new oldest starts without its answer (Akka's
    /// `min-number-of-hand-over-retries`).
    pub max_hand_over_retries: u32,
    /// How long a handing-over manager waits for the proxies to confirm
    /// that they buffer before it stops the instance.
    pub pause_timeout: Duration,
    /// Messages a proxy keeps while it knows of no instance (Akka's
    /// `buffer-size`); beyond it the oldest is dropped and counted.
    pub buffer_size: usize,
    /// How long a new oldest waits after the removal of a downed older
    /// member before it starts (Akka's `down-removal-margin`): the
    /// resolver on the downed member's side of a partition downs it about
    /// when the other side does, not before, so this covers the time its
    /// own shutdown takes. Set it to the resolver's `stable_after`.
    pub down_removal_margin: Duration,
}

impl SingletonSettings {
    /// The defaults, under `name`.
    pub fn new(name: &str) -> Self {
        Self {
            name: name.to_owned(),
            role: None,
            retry_interval: Duration::from_secs(1),
            max_hand_over_retries: 15,
            pause_timeout: Duration::from_secs(2),
            buffer_size: 1000,
            down_removal_margin: Duration::from_secs(7),
        }
    }

    /// Only members with `role` host the singleton.
    #[must_use]
    pub fn with_role(mut self, role: &str) -> Self {
        self.role = Some(role.to_owned());
        self
    }

    /// Checks the values.
    pub fn validate(&self) -> Result<(), SingletonError> {
        let bad = |what: &str| Err(SingletonError::BadSettings(what.to_owned()));
        if self.name.is_empty() || self.name.contains('/') {
            return bad("name must be a non-empty actor name without '/'");
        }
        if self.retry_interval.is_zero() {
            return bad("retry_interval must be above zero");
        }
        if self.pause_timeout.is_zero() {
            return bad("pause_timeout must be above zero");
        }
        if self.buffer_size == 0 {
            return bad("buffer_size must be at least 1");
        }
        Ok(())
    }
}

/// Why a singleton (or its proxy) did not start.
#[derive(Debug, thiserror::Error)]
pub enum SingletonError {
    /// A setting is out of range.
    #[error("bad singleton settings: {0}")]
    BadSettings(String),
    /// The system runs no `Cluster` (start one first).
    #[error("the actor system runs no cluster")]
    NoCluster,
    /// Spawning the manager or the proxy failed (a name in use, or the
    /// system terminating).
    #[error("cannot spawn the singleton's actors: {0}")]
    Spawn(#[from] volley::SpawnError),
    /// The system is terminating.
    #[error("the actor system is terminating")]
    SystemTerminated,
}

#[cfg(test)]
mod tests {
    use super::SingletonSettings;

    #[test]
    fn the_defaults_are_valid_and_bad_values_are_refused() {
        assert!(SingletonSettings::new("counter").validate().is_ok());
        assert!(SingletonSettings::new("").validate().is_err());
        assert!(SingletonSettings::new("a/b").validate().is_err());
        let mut settings = SingletonSettings::new("counter");
        settings.buffer_size = 0;
        assert!(settings.validate().is_err());
        let mut settings = SingletonSettings::new("counter");
        settings.retry_interval = std::time::Duration::ZERO;
        assert!(settings.validate().is_err());
    }
}
