//! Who may open a session: the application's auth hook, the origin
//! allow-list, and unguessable session ids.

use std::sync::Arc;

use http::{HeaderMap, StatusCode};

use crate::frame::close;
use crate::settings::Origins;

/// What the auth hook sees of a client opening or resuming a session.
pub struct AuthRequest<'a> {
    /// The `hello` frame's `token`.
    pub token: Option<&'a str>,
    /// The HTTP request's headers (`Cookie`, `Authorization`, ...): the
    /// WebSocket upgrade's, or the long-poll `open`'s.
    pub headers: &'a HeaderMap,
}

/// The application's check: the client's identity, or why it is refused.
pub(crate) type AuthHook =
    Arc<dyn Fn(&AuthRequest<'_>) -> Result<Option<String>, String> + Send + Sync>;

/// Why a session was not opened: a WebSocket close code, an HTTP status
/// for long-poll, and a text for a human.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Refusal {
    pub(crate) code: u16,
    pub(crate) status: StatusCode,
    pub(crate) text: String,
}

impl Refusal {
    pub(crate) fn protocol(text: impl Into<String>) -> Self {
        Refusal {
            code: close::PROTOCOL,
            status: StatusCode::BAD_REQUEST,
            text: text.into(),
        }
    }

    pub(crate) fn unauthorized(text: String) -> Self {
        Refusal {
            code: close::UNAUTHORIZED,
            status: StatusCode::UNAUTHORIZED,
            text,
        }
    }

    pub(crate) fn unknown_session(id: &str) -> Self {
        Refusal {
            code: close::PROTOCOL,
            status: StatusCode::NOT_FOUND,
            text: format!("no session {id} (ended, or never opened)"),
        }
    }

    pub(crate) fn forbidden_origin(origin: &str) -> Self {
        Refusal {
            code: close::FORBIDDEN_ORIGIN,
            status: StatusCode::FORBIDDEN,
            text: format!("origin {origin} is not allowed"),
        }
    }

    pub(crate) fn busy() -> Self {
        Refusal {
            code: close::TRY_AGAIN_LATER,
            status: StatusCode::SERVICE_UNAVAILABLE,
            text: "too many sessions".into(),
        }
    }

    pub(crate) fn internal(text: impl std::fmt::Display) -> Self {
        Refusal {
            code: 1011,
            status: StatusCode::INTERNAL_SERVER_ERROR,
            text: text.to_string(),
        }
    }
}

/// Checks the request's `Origin` against the allow-list.
pub(crate) fn check_origin(origins: &Origins, headers: &HeaderMap) -> Result<(), Refusal> {
    let Some(origin) = headers.get(http::header::ORIGIN) else {
        // Not a browser page: origins protect browsers' users only.
        return Ok(());
    };
    let origin = origin.to_str().unwrap_or("");
    let host = headers
        .get(http::header::HOST)
        .and_then(|h| h.to_str().ok());
    let same_host = host.is_some_and(|host| {
        origin
            .split_once("://")
            .is_some_and(|(_, rest)| rest.eq_ignore_ascii_case(host))
    });
    let allowed = match origins {
        Origins::Any => true,
        Origins::SameHost => same_host,
        Origins::List(list) => same_host || list.iter().any(|o| o == origin),
    };
    if allowed {
        Ok(())
    } else {
        Err(Refusal::forbidden_origin(origin))
    }
}

/// A new session id: 128 random bits, in hex.
pub(crate) fn session_id() -> Result<String, getrandom::Error> {
    let mut bytes = [0u8; 16];
    getrandom::fill(&mut bytes)?;
    Ok(bytes.iter().map(|b| format!("{b:02x}")).collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn headers(origin: &str, host: &str) -> HeaderMap {
        let mut headers = HeaderMap::new();
        headers.insert(http::header::ORIGIN, origin.parse().unwrap());
        headers.insert(http::header::HOST, host.parse().unwrap());
        headers
    }

    #[test]
    fn origins_are_checked() {
        let same = headers("http://a.example:8080", "a.example:8080");
        let other = headers("http://evil.example", "a.example:8080");
        assert!(check_origin(&Origins::SameHost, &same).is_ok());
        assert!(check_origin(&Origins::SameHost, &other).is_err());
        assert!(check_origin(&Origins::Any, &other).is_ok());
        let list = Origins::List(vec!["http://evil.example".into()]);
        assert!(check_origin(&list, &other).is_ok());
        assert!(check_origin(&Origins::SameHost, &HeaderMap::new()).is_ok());
    }
}
