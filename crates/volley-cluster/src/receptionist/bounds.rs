//! The limits an owner set keeps, so that one member cannot grow every
//! other member's memory without bound, and the refusal of a registration
//! or a received set beyond them.

/// The limits of the cluster receptionist.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ServiceBounds {
    /// Services one member may register (design §5 proposes 10,000; an
    /// owner set travels whole in one anti-entropy page, so the default
    /// keeps a set of long paths within the default 64 KiB page).
    pub max_entries_per_member: usize,
    /// The longest service path, in bytes.
    pub max_path_len: usize,
    /// The longest service key id, in bytes.
    pub max_key_len: usize,
}

impl Default for ServiceBounds {
    fn default() -> Self {
        Self {
            max_entries_per_member: 1_000,
            max_path_len: 1024,
            max_key_len: 255,
        }
    }
}

/// Why a registration, or a set received from another member, was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ServiceRefused {
    /// The owner would hold more services than the bounds allow.
    #[error("a member may register at most {max} services, {owner_has} held")]
    TooManyEntries {
        /// The bound.
        max: usize,
        /// What the owner holds (or sent).
        owner_has: usize,
    },
    /// A service path longer than the bounds allow.
    #[error("a service path of {len} bytes is longer than {max}")]
    PathTooLong {
        /// Its length.
        len: usize,
        /// The bound.
        max: usize,
    },
    /// A key id longer than the bounds allow.
    #[error("a service key id of {len} bytes is longer than {max}")]
    KeyTooLong {
        /// Its length.
        len: usize,
        /// The bound.
        max: usize,
    },
}

impl ServiceBounds {
    /// Checks one entry's strings.
    pub(crate) fn check_entry(&self, entry: &super::ServiceEntry) -> Result<(), ServiceRefused> {
        if entry.path.len() > self.max_path_len {
            return Err(ServiceRefused::PathTooLong {
                len: entry.path.len(),
                max: self.max_path_len,
            });
        }
        if entry.key.len() > self.max_key_len {
            return Err(ServiceRefused::KeyTooLong {
                len: entry.key.len(),
                max: self.max_key_len,
            });
        }
        Ok(())
    }

    /// Checks a whole set.
    pub(crate) fn check_set(&self, set: &super::OwnerSet) -> Result<(), ServiceRefused> {
        if set.entries.len() > self.max_entries_per_member {
            return Err(ServiceRefused::TooManyEntries {
                max: self.max_entries_per_member,
                owner_has: set.entries.len(),
            });
        }
        set.entries
            .iter()
            .try_for_each(|entry| self.check_entry(entry))
    }
}
