//! The check the seed insists on: every message arrived. Both sides keep a
//! tally (how many, and their sum) and both must equal what was sent.

/// How many messages one side counted and the sum of their `a + b`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Tally {
    pub count: u64,
    pub sum: i64,
}

impl Tally {
    pub fn new(count: u64, sum: i64) -> Self {
        Tally { count, sum }
    }

    /// What `n` pairs `(a, a + 1)` for `a` in `0..n` (the seed's pairs)
    /// add up to: n messages summing to n².
    pub fn seed_pairs(n: u64) -> Self {
        Tally::new(n, (n as i64).wrapping_mul(n as i64))
    }

    /// `a + b` for `a` in `from..from + n` and a fixed `b`.
    pub fn range_plus(from: u64, n: u64, b: i64) -> Self {
        let (from, n) = (from as i64, n as i64);
        let sum_a = n.wrapping_mul(2 * from + n - 1) / 2;
        Tally::new(n as u64, sum_a.wrapping_add(b.wrapping_mul(n)))
    }

    /// The tallies of two disjoint sets of messages together.
    pub fn plus(self, other: Tally) -> Tally {
        Tally::new(self.count + other.count, self.sum.wrapping_add(other.sum))
    }
}

/// One run's tallies: what was sent, what the sender counted (for ask: the
/// answers it got, and how many were wrong or failed; for tell: what it
/// sent without an error) and what the receiver counted.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SumCheck {
    pub expected: Tally,
    pub sender: Tally,
    pub wrong: u64,
    pub receiver: Tally,
}

impl SumCheck {
    /// `Ok` when nothing was wrong and both sides have every message and
    /// the expected sum; else what differs.
    pub fn verify(&self) -> Result<(), String> {
        let mut problems = Vec::new();
        if self.wrong != 0 {
            problems.push(format!("{} wrong or failed at the sender", self.wrong));
        }
        for (side, got) in [("sender", self.sender), ("receiver", self.receiver)] {
            if got != self.expected {
                problems.push(format!(
                    "the {side} counted {} (sum {}), expected {} (sum {})",
                    got.count, got.sum, self.expected.count, self.expected.sum
                ));
            }
        }
        if problems.is_empty() {
            Ok(())
        } else {
            Err(problems.join("; "))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn check(sender: Tally, wrong: u64, receiver: Tally) -> Result<(), String> {
        SumCheck {
            expected: Tally::seed_pairs(1000),
            sender,
            wrong,
            receiver,
        }
        .verify()
    }

    #[test]
    fn the_seed_pairs_add_up_to_n_squared() {
        let by_hand = (0..1000i64).map(|a| a + a + 1).sum::<i64>();
        assert_eq!(Tally::seed_pairs(1000), Tally::new(1000, by_hand));
        let by_hand = (50..150i64).map(|a| a + 7).sum::<i64>();
        assert_eq!(Tally::range_plus(50, 100, 7), Tally::new(100, by_hand));
        assert_eq!(
            Tally::range_plus(0, 50, 7).plus(Tally::range_plus(50, 50, 7)),
            Tally::range_plus(0, 100, 7)
        );
    }

    #[test]
    fn every_message_on_both_sides_is_verified() {
        let all = Tally::seed_pairs(1000);
        assert_eq!(check(all, 0, all), Ok(()));
    }

    #[test]
    fn a_wrong_sum_fails_on_either_side() {
        let all = Tally::seed_pairs(1000);
        let off = Tally::new(all.count, all.sum + 1);
        let at_receiver = check(all, 0, off).unwrap_err();
        assert!(
            at_receiver.contains("the receiver counted"),
            "{at_receiver}"
        );
        assert!(!at_receiver.contains("sender"), "{at_receiver}");
        assert!(check(off, 0, all)
            .unwrap_err()
            .contains("the sender counted"));
    }

    #[test]
    fn a_lost_or_wrong_message_fails() {
        let all = Tally::seed_pairs(1000);
        let lost = Tally::new(999, all.sum - 1999);
        assert!(check(all, 0, lost).is_err());
        assert!(check(lost, 0, all).is_err());
        assert!(check(all, 1, all).unwrap_err().contains("1 wrong"));
    }
}
