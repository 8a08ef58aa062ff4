//! Node addresses: `volley://system@host:port`.

use std::fmt;
use std::str::FromStr;

/// The URI scheme of volley addresses.
pub const SCHEME: &str = "volley";

/// Longest system name or host, in bytes. Keeps every address encodable
/// with 16-bit length prefixes and bounded in logs.
const MAX_COMPONENT_LEN: usize = 255;

/// The address of one actor system on one node: `volley://system@host:port`.
///
/// IPv6 hosts are written in brackets in the text form
/// (`volley://sys@[::1]:2552`) and stored without them. Components are
/// validated on construction, so every `Address` can be encoded and parsed
/// back.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Address {
    system: String,
    host: String,
    port: u16,
}

/// Why a string or its parts are not a valid [`Address`].
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum AddressError {
    /// The text does not start with `volley://`.
    #[error("address must start with \"volley://\"")]
    MissingScheme,
    /// Nothing before the `@`, or no `@` at all.
    #[error("address has no system name (expected volley://system@host:port)")]
    MissingSystem,
    /// The system name is too long or has characters other than ASCII
    /// letters, digits, `-` and `_` (or does not start with a letter or digit).
    #[error("invalid system name: must be 1-255 ASCII letters, digits, '-' or '_', starting with a letter or digit")]
    InvalidSystem,
    /// Nothing between `@` and the port.
    #[error("address has no host")]
    MissingHost,
    /// The host is too long, has forbidden characters, or an IPv6 literal is
    /// not bracketed.
    #[error("invalid host: must be 1-255 characters of letters, digits, '.', '-', '_' or ':' (IPv6 in brackets)")]
    InvalidHost,
    /// No `:port` after the host.
    #[error("address has no port")]
    MissingPort,
    /// The port is not a decimal number in 1..=65535.
    #[error("invalid port: must be a decimal number in 1..=65535")]
    InvalidPort,
    /// Something follows the port (a path, query, ...).
    #[error("unexpected characters after the port")]
    TrailingCharacters,
}

impl Address {
    /// Builds an address from its parts, validating each.
    pub fn new(
        system: impl Into<String>,
        host: impl Into<String>,
        port: u16,
    ) -> Result<Address, AddressError> {
        let (system, host) = (system.into(), host.into());
        validate_system(&system)?;
        validate_host(&host)?;
        if port == 0 {
            return Err(AddressError::InvalidPort);
        }
        Ok(Address { system, host, port })
    }

    /// The actor system name.
    pub fn system(&self) -> &str {
        &self.system
    }

    /// The host name or IP literal (IPv6 without brackets).
    pub fn host(&self) -> &str {
        &self.host
    }

    /// The TCP port.
    pub fn port(&self) -> u16 {
        self.port
    }
}

pub(crate) fn validate_system(system: &str) -> Result<(), AddressError> {
    let b = system.as_bytes();
    match b.first() {
        None => Err(AddressError::MissingSystem),
        Some(first) if !first.is_ascii_alphanumeric() => Err(AddressError::InvalidSystem),
        _ if b.len() > MAX_COMPONENT_LEN => Err(AddressError::InvalidSystem),
        _ if !b
            .iter()
            .all(|c| c.is_ascii_alphanumeric() || *c == b'-' || *c == b'_') =>
        {
            Err(AddressError::InvalidSystem)
        }
        _ => Ok(()),
    }
}

pub(crate) fn validate_host(host: &str) -> Result<(), AddressError> {
    let b = host.as_bytes();
    if b.is_empty() {
        return Err(AddressError::MissingHost);
    }
    let ok = b.len() <= MAX_COMPONENT_LEN
        && b.iter()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, b'.' | b'-' | b'_' | b':'));
    if ok {
        Ok(())
    } else {
        Err(AddressError::InvalidHost)
    }
}

impl fmt::Display for Address {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.host.contains(':') {
            write!(
                f,
                "{SCHEME}://{}@[{}]:{}",
                self.system, self.host, self.port
            )
        } else {
            write!(f, "{SCHEME}://{}@{}:{}", self.system, self.host, self.port)
        }
    }
}

impl FromStr for Address {
    type Err = AddressError;

    fn from_str(s: &str) -> Result<Address, AddressError> {
        let rest = s
            .strip_prefix(SCHEME)
            .and_then(|r| r.strip_prefix("://"))
            .ok_or(AddressError::MissingScheme)?;
        let (system, authority) = rest.split_once('@').ok_or(AddressError::MissingSystem)?;
        validate_system(system)?;

        let (host, after_host) = if let Some(bracketed) = authority.strip_prefix('[') {
            let (host, after) = bracketed.split_once(']').ok_or(AddressError::InvalidHost)?;
            if !host.contains(':') {
                // Brackets are only for IPv6 literals; accepting "[name]"
                // would give one address two spellings.
                return Err(AddressError::InvalidHost);
            }
            (host, after)
        } else {
            let end = authority.find(':').unwrap_or(authority.len());
            (&authority[..end], &authority[end..])
        };
        validate_host(host)?;

        let port = after_host
            .strip_prefix(':')
            .ok_or(AddressError::MissingPort)?;
        if port.is_empty() {
            return Err(AddressError::MissingPort);
        }
        let digits = port.bytes().take_while(u8::is_ascii_digit).count();
        if digits < port.len() {
            return Err(if digits == 0 {
                AddressError::InvalidPort
            } else {
                AddressError::TrailingCharacters
            });
        }
        // At most five digits keeps the parse overflow-free and rejects
        // zero-padded spellings like ":002552".
        if digits > 5 || (digits > 1 && port.starts_with('0')) {
            return Err(AddressError::InvalidPort);
        }
        let port: u16 = port.parse().map_err(|_| AddressError::InvalidPort)?;
        Address::new(system, host, port)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_and_displays() {
        let a: Address = "volley://sys@host.example:2552".parse().unwrap();
        assert_eq!(
            (a.system(), a.host(), a.port()),
            ("sys", "host.example", 2552)
        );
        assert_eq!(a.to_string(), "volley://sys@host.example:2552");

        let v6: Address = "volley://my-sys_1@[::1]:1".parse().unwrap();
        assert_eq!(v6.host(), "::1");
        assert_eq!(v6.to_string(), "volley://my-sys_1@[::1]:1");
        assert_eq!(v6.to_string().parse::<Address>().unwrap(), v6);
    }

    #[test]
    fn rejects_malformed() {
        use AddressError::*;
        let cases = [
            ("", MissingScheme),
            ("akka://sys@h:1", MissingScheme),
            ("volley:/sys@h:1", MissingScheme),
            ("volley://h:1", MissingSystem),
            ("volley://@h:1", MissingSystem),
            ("volley://s y@h:1", InvalidSystem),
            ("volley://-sys@h:1", InvalidSystem),
            ("volley://sys@:1", MissingHost),
            ("volley://sys@h/x:1", InvalidHost),
            ("volley://sys@[h]:1", InvalidHost),
            ("volley://sys@[::1:1", InvalidHost),
            ("volley://sys@h", MissingPort),
            ("volley://sys@h:", MissingPort),
            ("volley://sys@[::1]", MissingPort),
            ("volley://sys@h:x", InvalidPort),
            ("volley://sys@h:0", InvalidPort),
            ("volley://sys@h:65536", InvalidPort),
            ("volley://sys@h:0080", InvalidPort),
            ("volley://sys@h:99999999999999999999", InvalidPort),
            ("volley://sys@h:80/user/a", TrailingCharacters),
        ];
        for (input, want) in cases {
            assert_eq!(input.parse::<Address>(), Err(want), "{input:?}");
        }
        let long = "a".repeat(256);
        assert_eq!(Address::new(&*long, "h", 1), Err(InvalidSystem));
        assert_eq!(Address::new("s", &*long, 1), Err(InvalidHost));
    }
}
