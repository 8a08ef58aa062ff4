//! The simulated network: per-packet delay and loss, and links cut in
//! either direction.

use std::collections::BTreeSet;
use std::time::Duration;

use rand::rngs::Xoshiro256PlusPlus;
use rand::RngExt;

use crate::node_id::Addr;

/// How packets travel between simulated nodes.
#[derive(Debug, Clone)]
pub struct NetworkConfig {
    /// The shortest delay of a packet.
    pub min_latency: Duration,
    /// The longest delay of a packet; each packet's is drawn uniformly in
    /// between, so packets can overtake each other.
    pub max_latency: Duration,
    /// The chance that a packet is lost, from 0.0 to 1.0.
    pub loss: f64,
}

impl Default for NetworkConfig {
    fn default() -> Self {
        Self {
            min_latency: Duration::from_micros(200),
            max_latency: Duration::from_millis(2),
            loss: 0.0,
        }
    }
}

/// What the network did with a packet.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Fate {
    /// It arrives after this delay.
    Arrives(Duration),
    /// The link from sender to receiver is cut.
    Cut,
    /// It was lost at random.
    Lost,
}

/// The links and their behaviour.
#[derive(Debug)]
pub(crate) struct Network {
    pub(crate) config: NetworkConfig,
    /// Directed links that carry nothing: (from, to).
    cut: BTreeSet<(Addr, Addr)>,
}

impl Network {
    pub(crate) fn new(config: NetworkConfig) -> Self {
        Self {
            config,
            cut: BTreeSet::new(),
        }
    }

    /// Decides a packet's fate, drawing from the network's own RNG.
    pub(crate) fn send(&self, from: &Addr, to: &Addr, rng: &mut Xoshiro256PlusPlus) -> Fate {
        if self.cut.contains(&(from.clone(), to.clone())) {
            return Fate::Cut;
        }
        if self.config.loss > 0.0 && rng.random_bool(self.config.loss.min(1.0)) {
            return Fate::Lost;
        }
        let (min, max) = (self.config.min_latency, self.config.max_latency);
        if max <= min {
            return Fate::Arrives(min);
        }
        Fate::Arrives(rng.random_range(min..=max))
    }

    /// Cuts the link from `from` to `to` (one way).
    pub(crate) fn cut_one_way(&mut self, from: Addr, to: Addr) {
        self.cut.insert((from, to));
    }

    /// Restores every link.
    pub(crate) fn heal(&mut self) {
        self.cut.clear();
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use rand::SeedableRng;

    use super::*;

    fn addr(port: u16) -> Addr {
        (Arc::from("h"), port)
    }

    #[test]
    fn a_cut_link_carries_nothing_one_way_until_healed() {
        let mut rng = Xoshiro256PlusPlus::seed_from_u64(1);
        let mut network = Network::new(NetworkConfig::default());
        network.cut_one_way(addr(1), addr(2));
        assert_eq!(network.send(&addr(1), &addr(2), &mut rng), Fate::Cut);
        assert!(matches!(
            network.send(&addr(2), &addr(1), &mut rng),
            Fate::Arrives(_)
        ));
        network.heal();
        assert!(matches!(
            network.send(&addr(1), &addr(2), &mut rng),
            Fate::Arrives(_)
        ));
    }

    #[test]
    fn delays_stay_within_the_configured_range_and_loss_applies() {
        let mut rng = Xoshiro256PlusPlus::seed_from_u64(2);
        let config = NetworkConfig::default();
        let (min, max) = (config.min_latency, config.max_latency);
        let mut network = Network::new(config);
        for _ in 0..100 {
            match network.send(&addr(1), &addr(2), &mut rng) {
                Fate::Arrives(delay) => assert!(min <= delay && delay <= max),
                other => panic!("lossless network: {other:?}"),
            }
        }
        network.config.loss = 1.0;
        assert_eq!(network.send(&addr(1), &addr(2), &mut rng), Fate::Lost);
    }
}
