//! Actor paths: `volley://system/user/a/b`.
//!
//! A path is stored whole (one allocation per actor) because it is read far
//! more often (display, lookup, dead letters) than actors are created.

use std::fmt;
use std::sync::Arc;

/// Where an ask's reply handles live in the path space (Akka's `/temp`).
const REPLY_HANDLES: &str = "/temp/";

/// Where an actor sits in its system's hierarchy, e.g. `volley://app/user/a/b`,
/// or for a remote actor `volley://app@host:port/user/a/b`.
#[derive(Clone, PartialEq, Eq, Hash)]
pub struct ActorPath {
    /// The system name, followed by `@host:port` for a remote actor: one
    /// string, so a local path carries no extra field.
    system: Arc<str>,
    /// Starts with `/`; the root guardian's is `/`.
    elements: Box<str>,
}

/// A path or name that cannot be parsed or used.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PathError {
    /// The path does not start with `/` or `volley://system/`.
    #[error("invalid actor path {path:?}: {reason}")]
    Invalid {
        /// The path given.
        path: String,
        /// What is wrong with it.
        reason: &'static str,
    },
    /// The path names another actor system.
    #[error("path {path:?} belongs to system {found:?}, not {expected:?}")]
    OtherSystem {
        /// The path given.
        path: String,
        /// The system it names.
        found: String,
        /// This system's name.
        expected: String,
    },
}

impl ActorPath {
    pub(crate) fn root(system: Arc<str>) -> Self {
        ActorPath {
            system,
            elements: "/".into(),
        }
    }

    pub(crate) fn child(&self, name: &str) -> Self {
        let mut s = String::with_capacity(self.elements.len() + 1 + name.len());
        s.push_str(&self.elements);
        if !self.elements.ends_with('/') {
            s.push('/');
        }
        s.push_str(name);
        ActorPath {
            system: self.system.clone(),
            elements: s.into_boxed_str(),
        }
    }

    /// The actor system's name.
    pub fn system(&self) -> &str {
        self.system.split('@').next().unwrap_or(&self.system)
    }

    /// `host:port` of a remote actor's node; `None` for a local actor.
    pub fn authority(&self) -> Option<&str> {
        self.system.split_once('@').map(|(_, a)| a)
    }

    /// The full path as seen from another node: with `authority` inserted
    /// when the path is local.
    pub fn to_string_with_authority(&self, authority: &str) -> String {
        match self.authority() {
            Some(_) => self.to_string(),
            None => format!("volley://{}@{}{}", self.system, authority, self.elements),
        }
    }

    /// Parses a full path `volley://system[@host:port]/elements`.
    pub fn parse(full: &str) -> Result<ActorPath, PathError> {
        let invalid = |reason| PathError::Invalid {
            path: full.to_string(),
            reason,
        };
        let rest = full
            .strip_prefix("volley://")
            .ok_or_else(|| invalid("a full path starts with 'volley://'"))?;
        let slash = rest.find('/').unwrap_or(rest.len());
        let (system, elements) = rest.split_at(slash);
        let (name, authority) = match system.split_once('@') {
            Some((name, authority)) => (name, Some(authority)),
            None => (system, None),
        };
        if validate_system_name(name).is_err() {
            return Err(invalid("the system name is not valid"));
        }
        if let Some(authority) = authority {
            validate_authority(authority).map_err(invalid)?;
        }
        // The error names the whole path, not only its elements.
        let parsed =
            parse_elements(if elements.is_empty() { "/" } else { elements }, "").map_err(|e| {
                match e {
                    PathError::Invalid { reason, .. } => invalid(reason),
                    other => other,
                }
            })?;
        // Rebuild the elements in canonical form (no trailing '/') in one
        // string: a remote declaration is parsed once per ask.
        let mut canonical = String::with_capacity(elements.len().max(1));
        for element in &parsed {
            canonical.push('/');
            canonical.push_str(element);
        }
        if canonical.is_empty() {
            canonical.push('/');
        }
        Ok(ActorPath {
            system: system.into(),
            elements: canonical.into_boxed_str(),
        })
    }

    /// The path of the ask reply handle `correlation` on this path's node
    /// (`/temp/$ask<correlation>`), the name `ask` gives its handles.
    pub fn reply_handle(&self, correlation: u64) -> ActorPath {
        Self::reply_handle_on(self.system.clone(), correlation)
    }

    /// The system part of the path (`name`, or `name@host:port`).
    pub(crate) fn system_part(&self) -> &Arc<str> {
        &self.system
    }

    /// [`ActorPath::reply_handle`] on the node `system` names.
    pub(crate) fn reply_handle_on(system: Arc<str>, correlation: u64) -> ActorPath {
        // Written at its exact length, without the formatting machinery and
        // the growing string's reallocations of `format!`.
        let mut digits = [0u8; 20];
        let mut at = digits.len();
        let mut n = correlation;
        loop {
            at -= 1;
            digits[at] = b'0' + (n % 10) as u8;
            n /= 10;
            if n == 0 {
                break;
            }
        }
        let digits = std::str::from_utf8(&digits[at..]).expect("ASCII digits");
        let mut elements = String::with_capacity(REPLY_HANDLES.len() + 4 + digits.len());
        elements.push_str(REPLY_HANDLES);
        elements.push_str("$ask");
        elements.push_str(digits);
        ActorPath {
            system,
            elements: elements.into_boxed_str(),
        }
    }

    /// True for the path of an ask's reply handle (under `/temp/`). Only
    /// for paths read from outside the process; a ref says it with
    /// `AnyRef::is_reply_handle`.
    pub fn is_reply_handle(&self) -> bool {
        self.elements.starts_with(REPLY_HANDLES)
    }

    /// The path inside the system, e.g. `/user/a/b`.
    pub fn elements(&self) -> &str {
        &self.elements
    }

    /// The last element: the actor's name (`""` for the root guardian).
    pub fn name(&self) -> &str {
        // A byte scan from the end: names are short, and this runs on every
        // spawn and stop (the children table's key), where `rsplit`'s
        // searcher set-up cost more than the scan.
        let bytes = self.elements.as_bytes();
        match bytes.iter().rposition(|&b| b == b'/') {
            // '/' is ASCII, so the byte after it starts a character.
            Some(slash) => &self.elements[slash + 1..],
            None => "",
        }
    }
}

impl fmt::Display for ActorPath {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "volley://{}{}", self.system, self.elements)
    }
}

impl fmt::Debug for ActorPath {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(self, f)
    }
}

/// Checks a user-given actor name. `$` starts anonymous names only; `%`
/// must start a percent-encoded byte (`%2F`), so that a URL-encoded string
/// is a valid name, as in Akka.
pub(crate) fn validate_name(name: &str) -> Result<(), &'static str> {
    if name.is_empty() {
        return Err("a name must not be empty");
    }
    if name.starts_with('$') {
        return Err("names starting with '$' are reserved for anonymous actors");
    }
    if name.len() > 255 {
        return Err("a name must be at most 255 bytes");
    }
    let bytes = name.as_bytes();
    let mut i = 0;
    while i < bytes.len() {
        let b = bytes[i];
        if b == b'%' {
            let hex = |at: usize| bytes.get(at).is_some_and(u8::is_ascii_hexdigit);
            if !(hex(i + 1) && hex(i + 2)) {
                return Err("'%' in a name must be followed by two hex digits");
            }
            i += 3;
            continue;
        }
        if !(b.is_ascii_alphanumeric() || b"-_.*$+:@&=,!~';".contains(&b)) {
            return Err("a name may hold only ASCII letters, digits, -_.*$+:@&=,!~'; and %XX");
        }
        i += 1;
    }
    Ok(())
}

/// Checks an actor system's name: ASCII letters, digits, `-` and `_`,
/// starting with a letter or digit (Akka's rule). `@` and `:` would make
/// the name part of a path ambiguous with the `@host:port` that follows it.
pub(crate) fn validate_system_name(name: &str) -> Result<(), &'static str> {
    let bytes = name.as_bytes();
    match bytes.first() {
        None => Err("a system name must not be empty"),
        Some(first) if !first.is_ascii_alphanumeric() => {
            Err("a system name must start with an ASCII letter or digit")
        }
        _ if bytes.len() > 255 => Err("a system name must be at most 255 bytes"),
        _ if !bytes
            .iter()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_')) =>
        {
            Err("a system name may hold only ASCII letters, digits, '-' and '_'")
        }
        _ => Ok(()),
    }
}

/// Checks the `host:port` after a path's `@`: a host (an IPv6 literal in
/// brackets) and a decimal port that fits in 16 bits. Which hosts exist is
/// the transport's business.
fn validate_authority(authority: &str) -> Result<(), &'static str> {
    let Some((host, port)) = authority.rsplit_once(':') else {
        return Err("'@' must be followed by host:port");
    };
    let host_ok = match host.strip_prefix('[') {
        Some(v6) => v6.len() > 1 && v6.ends_with(']') && !v6[..v6.len() - 1].contains(['[', ']']),
        None => !host.is_empty() && !host.contains(['[', ']', ':', '@']),
    };
    if !host_ok {
        return Err("the host before ':port' is missing or malformed");
    }
    if port.is_empty() || port.len() > 5 || !port.bytes().all(|b| b.is_ascii_digit()) {
        return Err("the port must be a decimal number");
    }
    if port
        .parse::<u32>()
        .map_or(true, |p| p > u32::from(u16::MAX))
    {
        return Err("the port must be at most 65535");
    }
    Ok(())
}

/// Splits `/user/a/b` or `volley://sys/user/a/b` into its elements, checking
/// the system name.
pub(crate) fn parse_elements<'a>(path: &'a str, system: &str) -> Result<Vec<&'a str>, PathError> {
    let invalid = |reason| PathError::Invalid {
        path: path.to_string(),
        reason,
    };
    let local = if let Some(rest) = path.strip_prefix("volley://") {
        let (sys, tail) = rest.split_at(rest.find('/').unwrap_or(rest.len()));
        let (sys_name, authority) = match sys.split_once('@') {
            Some((name, authority)) => (name, Some(authority)),
            None => (sys, None),
        };
        validate_system_name(sys_name).map_err(|_| invalid("the system name is not valid"))?;
        if let Some(authority) = authority {
            validate_authority(authority).map_err(invalid)?;
        }
        if sys_name != system {
            return Err(PathError::OtherSystem {
                path: path.to_string(),
                found: sys_name.to_string(),
                expected: system.to_string(),
            });
        }
        if tail.is_empty() {
            "/"
        } else {
            tail
        }
    } else if path.starts_with('/') {
        path
    } else {
        return Err(invalid("a path starts with '/' or 'volley://'"));
    };
    let trimmed = local.trim_end_matches('/');
    if trimmed.is_empty() {
        return Ok(Vec::new());
    }
    let mut out = Vec::new();
    for element in trimmed[1..].split('/') {
        if element.is_empty() {
            return Err(invalid("a path must not hold an empty element ('//')"));
        }
        if element.starts_with('$') {
            if element.len() == 1 {
                return Err(invalid("'$' alone is not an actor name"));
            }
        } else if validate_name(element).is_err() {
            return Err(invalid(
                "a path element holds a character that is not allowed",
            ));
        }
        out.push(element);
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reply_handle_paths_name_the_correlation_in_decimal() {
        let root = ActorPath::root("app".into());
        for n in [0, 7, 10, 4_096, u64::MAX] {
            let path = root.child("user").reply_handle(n);
            assert_eq!(path.elements(), format!("{REPLY_HANDLES}$ask{n}"));
            assert!(path.is_reply_handle());
        }
    }

    #[test]
    fn child_paths_display_with_system() {
        let root = ActorPath::root("app".into());
        let user = root.child("user");
        let a = user.child("a");
        assert_eq!(a.to_string(), "volley://app/user/a");
        assert_eq!(a.name(), "a");
        assert_eq!(root.elements(), "/");
        assert_eq!(root.name(), "");
        assert_eq!(user.child("$bé").name(), "$bé");
        let remote = ActorPath::parse("volley://app@h:1/user/worker-7").unwrap();
        assert_eq!(remote.name(), "worker-7");
    }

    #[test]
    fn parse_accepts_local_and_full_forms() {
        assert_eq!(parse_elements("/user/a", "s").unwrap(), vec!["user", "a"]);
        assert_eq!(
            parse_elements("volley://s/user/a/", "s").unwrap(),
            vec!["user", "a"]
        );
        assert!(parse_elements("/", "s").unwrap().is_empty());
    }

    #[test]
    fn parse_rejects_bad_paths() {
        assert!(matches!(
            parse_elements("user/a", "s"),
            Err(PathError::Invalid { .. })
        ));
        assert!(matches!(
            parse_elements("/user//a", "s"),
            Err(PathError::Invalid { .. })
        ));
        assert!(matches!(
            parse_elements("/user/a b", "s"),
            Err(PathError::Invalid { .. })
        ));
        assert!(matches!(
            parse_elements("volley://other/user", "s"),
            Err(PathError::OtherSystem { .. })
        ));
    }

    #[test]
    fn full_paths_parse_with_and_without_authority() {
        let p = ActorPath::parse("volley://app@10.0.0.1:2552/user/a").unwrap();
        assert_eq!(p.system(), "app");
        assert_eq!(p.authority(), Some("10.0.0.1:2552"));
        assert_eq!(p.elements(), "/user/a");
        assert_eq!(p.to_string(), "volley://app@10.0.0.1:2552/user/a");
        let local = ActorPath::parse("volley://app/user/a").unwrap();
        assert_eq!(local.authority(), None);
        assert_eq!(
            local.to_string_with_authority("h:1"),
            "volley://app@h:1/user/a"
        );
        assert!(ActorPath::parse("/user/a").is_err());
        assert!(ActorPath::parse("volley://app@/user").is_err());
        assert!(ActorPath::parse("volley://a pp/user").is_err());
    }

    #[test]
    fn names_are_validated() {
        assert!(validate_name("worker-1").is_ok());
        assert!(validate_name("").is_err());
        assert!(validate_name("$a").is_err());
        assert!(validate_name("a/b").is_err());
        assert!(validate_name("a$b").is_ok());
        assert!(validate_name("a%2Fb%3a").is_ok());
        for bad in ["%", "a%", "a%2", "a%2g", "a#1", "é"] {
            assert!(validate_name(bad).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn system_names_follow_akkas_rule() {
        for good in ["a", "my_sys", "Sys-2", "9lives"] {
            assert!(validate_system_name(good).is_ok(), "{good:?}");
        }
        for bad in ["", "-a", "_a", "a.b", "a:1", "a@b", "a b", "a/b"] {
            assert!(validate_system_name(bad).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn authorities_need_a_host_and_a_16_bit_port() {
        for good in ["h:1", "10.0.0.1:2552", "[::1]:65535", "is_valid.org:0"] {
            assert!(validate_authority(good).is_ok(), "{good:?}");
        }
        for bad in [
            "", "h", ":1", "h:", "h:x", "h:65536", "h:123456", "[::1:1", "[]:1", "a:b:1",
        ] {
            assert!(validate_authority(bad).is_err(), "{bad:?}");
        }
    }
}
