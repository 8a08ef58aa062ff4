//! A shard's key for an entity: the id's bytes inside the map's own slot
//! when short. A shard looks its entities up once per message, for ids
//! spread over thousands of entities, so the slot is rarely in cache; a
//! key behind a pointer (`Arc<str>`) costs a second miss, to compare the
//! id the message carries with the one in the slot. Most ids (a user, an
//! order, a device number) fit inline; longer ones stay shared.

use std::borrow::Borrow;
use std::fmt;
use std::hash::{Hash, Hasher};
use std::sync::Arc;

/// The most bytes kept inline: with the length byte and the tag, the key
/// is as large as a `String`.
const INLINE: usize = 22;

/// An entity id as a key of a shard's map; borrows as `str`, so the map
/// is looked up by the id itself.
#[derive(Clone)]
pub(crate) enum EntityKey {
    /// `len` bytes of `bytes`, valid UTF-8 (copied from a `str`).
    Inline { len: u8, bytes: [u8; INLINE] },
    /// A longer id.
    Shared(Arc<str>),
}

impl EntityKey {
    /// The key of `id`.
    pub(crate) fn new(id: &Arc<str>) -> Self {
        if id.len() > INLINE {
            return EntityKey::Shared(id.clone());
        }
        let mut bytes = [0; INLINE];
        bytes[..id.len()].copy_from_slice(id.as_bytes());
        EntityKey::Inline {
            len: id.len() as u8,
            bytes,
        }
    }

    /// The id.
    pub(crate) fn as_str(&self) -> &str {
        match self {
            // Copied from a `str`, whole: never the default.
            EntityKey::Inline { len, bytes } => {
                std::str::from_utf8(&bytes[..*len as usize]).unwrap_or_default()
            }
            EntityKey::Shared(id) => id,
        }
    }

    /// The id, shared (allocated for an inline one).
    pub(crate) fn to_shared(&self) -> Arc<str> {
        match self {
            EntityKey::Inline { .. } => self.as_str().into(),
            EntityKey::Shared(id) => id.clone(),
        }
    }
}

impl Borrow<str> for EntityKey {
    fn borrow(&self) -> &str {
        self.as_str()
    }
}

/// As `str`'s, which `Borrow` requires.
impl Hash for EntityKey {
    fn hash<H: Hasher>(&self, state: &mut H) {
        self.as_str().hash(state);
    }
}

impl PartialEq for EntityKey {
    fn eq(&self, other: &Self) -> bool {
        self.as_str() == other.as_str()
    }
}

impl Eq for EntityKey {}

impl fmt::Debug for EntityKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(self.as_str(), f)
    }
}

#[cfg(test)]
mod tests {
    use std::collections::HashMap;

    use super::*;

    #[test]
    fn short_and_long_ids_are_found_by_their_text() {
        let short: Arc<str> = "e17".into();
        let edge: Arc<str> = "x".repeat(INLINE).into();
        let long: Arc<str> = "y".repeat(INLINE + 1).into();
        let unicode: Arc<str> = "é-ü-ß".into();
        let mut map = HashMap::new();
        for (n, id) in [&short, &edge, &long, &unicode].into_iter().enumerate() {
            map.insert(EntityKey::new(id), n);
        }
        assert!(matches!(EntityKey::new(&edge), EntityKey::Inline { .. }));
        assert!(matches!(EntityKey::new(&long), EntityKey::Shared(_)));
        assert_eq!(map.get("e17"), Some(&0));
        assert_eq!(map.get(&*edge), Some(&1));
        assert_eq!(map.get(&*long), Some(&2));
        assert_eq!(map.get("é-ü-ß"), Some(&3));
        assert_eq!(map.get("e1"), None);
        assert_eq!(&*EntityKey::new(&unicode).to_shared(), "é-ü-ß");
        assert_eq!(&*EntityKey::new(&long).to_shared(), &*long);
    }
}
