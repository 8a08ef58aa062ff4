//! A cell's own name and its lazily built path.
//!
//! Spawning used to build the child's full path string at once: one
//! allocation and a copy of the parent's path per actor, although most
//! actors (a shard's entities, a request's workers) never have their path
//! asked for. A cell now keeps only its name (an anonymous one inline) and
//! builds the path from its parent's the first time it is needed: when it
//! is printed, looked up, compared with a remote ref's or serialized.

use std::sync::OnceLock;

use arrayvec::ArrayString;

use crate::actor::actor_ref::AnyRef;
use crate::actor::path::ActorPath;
use crate::system::actor_system::ActorSystem;

/// The last element of an actor's path.
pub(crate) enum ActorName {
    /// `$a`, `$b`, …: written inline, so an anonymous spawn allocates no
    /// string at all.
    Anonymous(AnonymousName),
    /// A name the spawner chose (or the root guardian's empty one).
    Given(Box<str>),
}

impl ActorName {
    pub(crate) fn as_str(&self) -> &str {
        match self {
            ActorName::Anonymous(name) => name.as_str(),
            ActorName::Given(name) => name,
        }
    }
}

/// An anonymous child's name: `$` and base-26 letters, at most 15 bytes.
/// An `ArrayString`, not bytes turned into a `&str` on each use: the
/// children table hashes a child's name on every spawn and stop, and
/// checking those bytes for UTF-8 each time cost more than the hashing.
pub(crate) struct AnonymousName(ArrayString<15>);

impl AnonymousName {
    /// The name of the `n`th anonymous child: `$a`, `$b`, … `$z`, `$ba`.
    pub(crate) fn nth(mut n: u64) -> Self {
        // Base 26 of a u64 is at most 14 digits, found lowest first.
        let mut digits = [0u8; 14];
        let mut len = 0;
        loop {
            digits[len] = b'a' + (n % 26) as u8;
            len += 1;
            n /= 26;
            if n == 0 {
                break;
            }
        }
        let mut name = ArrayString::new();
        name.push('$');
        for &digit in digits[..len].iter().rev() {
            name.push(char::from(digit));
        }
        AnonymousName(name)
    }

    pub(crate) fn as_str(&self) -> &str {
        &self.0
    }
}

/// A cell's name and, once asked for, its path.
pub(crate) struct LazyPath {
    name: ActorName,
    path: OnceLock<ActorPath>,
}

impl LazyPath {
    pub(crate) fn new(name: ActorName) -> Self {
        LazyPath {
            name,
            path: OnceLock::new(),
        }
    }

    pub(crate) fn name(&self) -> &str {
        self.name.as_str()
    }

    /// The full path: the parent's with this name appended, or the root
    /// path for the root guardian (the only cell without a parent).
    pub(crate) fn get(&self, parent: Option<&AnyRef>, system: &ActorSystem) -> &ActorPath {
        self.path.get_or_init(|| match parent {
            Some(parent) => parent.path().child(self.name()),
            None => system.root_path(),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn anonymous_names_count_in_base_26_behind_a_dollar() {
        let names: Vec<String> = [0, 1, 25, 26, 27, 26 * 26]
            .into_iter()
            .map(|n| AnonymousName::nth(n).as_str().to_string())
            .collect();
        assert_eq!(names, ["$a", "$b", "$z", "$ba", "$bb", "$baa"]);
        assert_eq!(AnonymousName::nth(u64::MAX).as_str().len(), 15);
    }

    #[test]
    fn the_name_is_the_last_element_of_the_path_it_builds() {
        let given = ActorName::Given("worker-1".into());
        assert_eq!(given.as_str(), "worker-1");
        let anonymous = ActorName::Anonymous(AnonymousName::nth(3));
        assert_eq!(anonymous.as_str(), "$d");
    }
}
