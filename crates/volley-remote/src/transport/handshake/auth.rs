//! The handshake's challenge and response: both sides of a connection
//! prove that they know the shared secret (`remote.secret`), and the
//! secret never crosses the wire (docs/wire-protocol.md §6.1).
//!
//! Each side sends a fresh random challenge; each proves itself with an
//! HMAC-SHA256, keyed by the secret, over a transcript that names the
//! role, both challenges, both addresses, both incarnations and the lane.
//! A proof therefore answers one connection only: replaying it on another
//! (new challenges) or for another role fails. The acceptor proves first,
//! in its response, so a dialer that reached an impostor learns that
//! before it sends anything beyond its challenge. Proofs are compared in
//! constant time (`ring::hmac::verify`).
//!
//! Hand-written on `ring`'s primitives: the exchange is a dozen lines, and
//! a general authentication crate would bring its own framing.

use ring::hmac;
use ring::rand::{SecureRandom, SystemRandom};

use crate::wire::{Address, Lane, AUTH_MAC_LEN, AUTH_NONCE_LEN};

/// A configured shared secret, as an HMAC key.
pub(crate) struct Secret {
    key: hmac::Key,
}

impl std::fmt::Debug for Secret {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Secret(..)")
    }
}

/// A random challenge.
pub(crate) type Nonce = [u8; AUTH_NONCE_LEN];
/// A proof of the secret.
pub(crate) type Mac = [u8; AUTH_MAC_LEN];

/// Who proves: the two proofs of one handshake must differ, or the
/// acceptor's could be sent back as the initiator's.
#[derive(Clone, Copy)]
pub(crate) enum Role {
    Acceptor,
    Initiator,
}

/// What a proof covers: the connection, as both sides see it.
pub(crate) struct Transcript<'a> {
    pub(crate) initiator: &'a Address,
    pub(crate) initiator_uid: u64,
    pub(crate) initiator_nonce: &'a Nonce,
    pub(crate) acceptor: &'a Address,
    pub(crate) acceptor_uid: u64,
    pub(crate) acceptor_nonce: &'a Nonce,
    pub(crate) lane: Lane,
}

/// The secret could not be used, or no challenge could be drawn.
#[derive(Debug, thiserror::Error)]
pub(crate) enum AuthError {
    #[error("the operating system's random source failed")]
    Random,
}

impl Secret {
    /// The key for `secret`.
    pub(crate) fn new(secret: &str) -> Self {
        Secret {
            key: hmac::Key::new(hmac::HMAC_SHA256, secret.as_bytes()),
        }
    }

    /// This side's proof for `role` over `t`.
    pub(crate) fn prove(&self, role: Role, t: &Transcript<'_>) -> Mac {
        let tag = hmac::sign(&self.key, &t.bytes(role));
        let mut mac = [0u8; AUTH_MAC_LEN];
        mac.copy_from_slice(tag.as_ref());
        mac
    }

    /// True if `mac` is the other side's proof for `role` over `t`; the
    /// compare takes the same time whatever `mac` holds.
    pub(crate) fn verify(&self, role: Role, t: &Transcript<'_>, mac: &[u8]) -> bool {
        self.verify_signed(&t.bytes(role), mac)
    }

    /// True if `mac` is the proof of `signed` (`Transcript::bytes`).
    pub(crate) fn verify_signed(&self, signed: &[u8], mac: &[u8]) -> bool {
        hmac::verify(&self.key, signed, mac).is_ok()
    }
}

/// A fresh challenge from the operating system's random source.
pub(crate) fn nonce() -> Result<Nonce, AuthError> {
    let mut n = [0u8; AUTH_NONCE_LEN];
    SystemRandom::new()
        .fill(&mut n)
        .map_err(|_| AuthError::Random)?;
    Ok(n)
}

impl Transcript<'_> {
    /// The bytes a proof signs: each variable-length field is preceded by
    /// its length, so two different transcripts never share bytes.
    pub(crate) fn bytes(&self, role: Role) -> Vec<u8> {
        let mut out = Vec::with_capacity(160);
        out.extend_from_slice(match role {
            Role::Acceptor => b"volley handshake v1: acceptor",
            Role::Initiator => b"volley handshake v1: initiator",
        });
        for nonce in [self.initiator_nonce, self.acceptor_nonce] {
            out.extend_from_slice(nonce);
        }
        for address in [self.initiator, self.acceptor] {
            let text = address.to_string();
            out.extend_from_slice(&(text.len() as u16).to_le_bytes());
            out.extend_from_slice(text.as_bytes());
        }
        out.extend_from_slice(&self.initiator_uid.to_le_bytes());
        out.extend_from_slice(&self.acceptor_uid.to_le_bytes());
        out.push(self.lane as u8);
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn transcript<'a>(
        a: &'a Address,
        b: &'a Address,
        n1: &'a Nonce,
        n2: &'a Nonce,
    ) -> Transcript<'a> {
        Transcript {
            initiator: a,
            initiator_uid: 1,
            initiator_nonce: n1,
            acceptor: b,
            acceptor_uid: 2,
            acceptor_nonce: n2,
            lane: Lane::Control,
        }
    }

    #[test]
    fn a_proof_holds_for_its_secret_role_and_transcript_only() {
        let a: Address = "volley://a@127.0.0.1:1".parse().unwrap();
        let b: Address = "volley://b@127.0.0.1:2".parse().unwrap();
        let (n1, n2) = (nonce().unwrap(), nonce().unwrap());
        assert_ne!(n1, n2, "challenges are random");
        let secret = Secret::new("s3cret");
        let t = transcript(&a, &b, &n1, &n2);
        let mac = secret.prove(Role::Acceptor, &t);
        assert!(secret.verify(Role::Acceptor, &t, &mac));
        assert!(!secret.verify(Role::Initiator, &t, &mac), "roles differ");
        assert!(!Secret::new("other").verify(Role::Acceptor, &t, &mac));
        let n3 = nonce().unwrap();
        let fresh = transcript(&a, &b, &n1, &n3);
        assert!(!secret.verify(Role::Acceptor, &fresh, &mac), "no replay");
        let swapped = transcript(&b, &a, &n1, &n2);
        assert!(!secret.verify(Role::Acceptor, &swapped, &mac));
        assert!(!secret.verify(Role::Acceptor, &t, &mac[..16]), "truncated");
    }

    /// The example of docs/wire-protocol.md §6.1, pinned.
    #[test]
    fn the_documented_example_proof() {
        let a: Address = "volley://alpha@10.0.0.1:2552".parse().unwrap();
        let b: Address = "volley://beta@10.0.0.2:2552".parse().unwrap();
        let t = Transcript {
            initiator: &a,
            initiator_uid: 1,
            initiator_nonce: &[0x11; AUTH_NONCE_LEN],
            acceptor: &b,
            acceptor_uid: 2,
            acceptor_nonce: &[0x22; AUTH_NONCE_LEN],
            lane: Lane::Ordinary,
        };
        let secret = Secret::new("s3cret");
        let hex = |m: Mac| m.iter().map(|b| format!("{b:02x}")).collect::<String>();
        assert_eq!(
            hex(secret.prove(Role::Acceptor, &t)),
            "0037801315d54d0d62f76fc69dd373a80327d60a05f34ada35b6dd54cd820af1"
        );
        assert_eq!(
            hex(secret.prove(Role::Initiator, &t)),
            "26ff8e1e6a172e4aceebf6d1b8b9cb8d5229b5d870015b121a124ed684e15b08"
        );
    }
}
