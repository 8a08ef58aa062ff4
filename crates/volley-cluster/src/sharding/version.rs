//! Application versions as members announce them, ordered as Akka orders
//! its `app-version`: so that shards move to the newest version during a
//! rolling update.

use std::cmp::Ordering;

/// A dotted application version such as `1.10.2`, compared part by part:
/// numbers as numbers (`1.10` is after `1.9`), a missing part as 0
/// (`1.0` equals `1`; so does an empty part), and a part that is not a number after every
/// number, in text order. Akka also orders qualifiers such as `-M1`
/// before the release; volley compares them as text.
#[derive(Debug, Clone, Copy)]
pub struct AppVersion<'a>(pub &'a str);

impl AppVersion<'_> {
    fn part_order(a: &str, b: &str) -> Ordering {
        let a = if a.is_empty() { "0" } else { a };
        let b = if b.is_empty() { "0" } else { b };
        match (a.parse::<u64>(), b.parse::<u64>()) {
            (Ok(a), Ok(b)) => a.cmp(&b),
            (Ok(_), Err(_)) => Ordering::Less,
            (Err(_), Ok(_)) => Ordering::Greater,
            (Err(_), Err(_)) => a.cmp(b),
        }
    }
}

impl Ord for AppVersion<'_> {
    fn cmp(&self, other: &Self) -> Ordering {
        let mut mine = self.0.split('.');
        let mut theirs = other.0.split('.');
        loop {
            match (mine.next(), theirs.next()) {
                (None, None) => return Ordering::Equal,
                (a, b) => {
                    let order = Self::part_order(a.unwrap_or("0"), b.unwrap_or("0"));
                    if order != Ordering::Equal {
                        return order;
                    }
                }
            }
        }
    }
}

impl PartialOrd for AppVersion<'_> {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl PartialEq for AppVersion<'_> {
    fn eq(&self, other: &Self) -> bool {
        self.cmp(other) == Ordering::Equal
    }
}

impl Eq for AppVersion<'_> {}

#[cfg(test)]
mod tests {
    use super::AppVersion;

    #[test]
    fn numbers_compare_as_numbers_and_missing_parts_are_zero() {
        assert!(AppVersion("1.10.0") > AppVersion("1.9.9"));
        assert!(AppVersion("2") > AppVersion("1.99"));
        assert_eq!(AppVersion("1.0"), AppVersion("1"));
        assert_eq!(AppVersion("1.0.0"), AppVersion("1"));
        assert!(AppVersion("1.0.1") > AppVersion("1"));
    }

    #[test]
    fn text_parts_come_after_numbers_in_text_order() {
        assert!(AppVersion("1.x") > AppVersion("1.5"));
        assert!(AppVersion("1.b") > AppVersion("1.a"));
        assert_eq!(AppVersion(""), AppVersion("0"));
    }
}
