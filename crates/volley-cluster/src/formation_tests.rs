use std::sync::Arc;

use proptest::prelude::*;

use super::*;

fn member(host: &str, port: u16, uid: u64) -> UniqueAddress {
    UniqueAddress {
        host: Arc::from(host),
        port,
        uid,
    }
}

fn formation(value: u64) -> Formation {
    Formation::from_wire(value).expect("not 0")
}

/// The envelope's golden bytes: marker, version, formation little-endian,
/// then the body untouched.
#[test]
fn an_envelope_has_its_golden_bytes() {
    let sealed = seal(Some(formation(0x0102_0304_0506_0708)), &[0xaa, 0xbb]);
    assert_eq!(
        sealed,
        [0x00, 0x01, 0x08, 0x07, 0x06, 0x05, 0x04, 0x03, 0x02, 0x01, 0xaa, 0xbb]
    );
    let opened = open(&sealed).expect("opens");
    assert_eq!(opened.formation, Some(formation(0x0102_0304_0506_0708)));
    assert_eq!(opened.body, [0xaa, 0xbb]);
}

#[test]
fn a_sender_in_no_cluster_writes_formation_zero() {
    let sealed = seal(None, &[7]);
    assert_eq!(sealed, [0, 1, 0, 0, 0, 0, 0, 0, 0, 0, 7]);
    assert_eq!(open(&sealed).expect("opens").formation, None);
}

/// A payload of a build before the envelope starts with a node id's host
/// length (1 to 255, little-endian): refused as such, whatever follows.
#[test]
fn a_payload_of_an_older_build_is_told_apart() {
    // The SWIM header of `a:1` as the older build wrote it.
    let older = [0x01, 0x00, b'a', 0x01, 0x00];
    assert_eq!(open(&older), Err(EnvelopeError::Missing));
    assert_eq!(open(&[0xff, 0x00]), Err(EnvelopeError::Missing));
}

/// An older build reads the envelope's first two bytes as a host length
/// of 256, over the codec's limit: it refuses the payload, on each
/// channel, as malformed (the decoders below are that build's, unchanged).
#[test]
fn an_older_build_refuses_an_enveloped_payload_as_malformed() {
    use foca::Codec;
    let sealed = seal(Some(formation(9)), &[0; 64]);
    let too_long = crate::CodecError::HostTooLong { len: 256 };
    assert_eq!(
        crate::ClusterCodec.decode_header(&sealed[..]).err(),
        Some(too_long.clone())
    );
    assert_eq!(
        crate::member::wire::decode_digest(&sealed).err(),
        Some(too_long.clone())
    );
    assert_eq!(
        crate::member::wire::decode_page(&sealed).err(),
        Some(too_long)
    );
}

#[test]
fn another_version_and_short_payloads_are_refused() {
    assert_eq!(
        open(&[0, 2, 0, 0, 0, 0, 0, 0, 0, 0]),
        Err(EnvelopeError::UnknownVersion(2))
    );
    assert_eq!(open(&[]), Err(EnvelopeError::Truncated(0)));
    assert_eq!(open(&[0]), Err(EnvelopeError::Truncated(1)));
    assert_eq!(open(&[0, 1, 5]), Err(EnvelopeError::Truncated(3)));
}

#[test]
fn a_founder_names_its_formation_by_its_incarnation() {
    let founder = member("10.0.0.1", 2552, 7);
    assert_eq!(
        Formation::founded_by(&founder),
        Formation::founded_by(&founder.clone())
    );
    let restarted = member("10.0.0.1", 2552, 8);
    assert_ne!(
        Formation::founded_by(&founder),
        Formation::founded_by(&restarted)
    );
    assert_ne!(
        Formation::founded_by(&founder),
        Formation::founded_by(&member("10.0.0.1", 2553, 7))
    );
    assert_eq!(formation(0xab).to_string(), "00000000000000ab");
}

proptest! {
    #[test]
    fn sealed_payloads_open_to_what_was_sealed(
        value in any::<u64>(),
        body in proptest::collection::vec(any::<u8>(), 0..64),
    ) {
        let sealed = seal(Formation::from_wire(value), &body);
        let opened = open(&sealed).expect("opens");
        prop_assert_eq!(opened.formation.map_or(0, Formation::get), value);
        prop_assert_eq!(opened.body, &body[..]);
    }

    #[test]
    fn arbitrary_bytes_never_panic(bytes in proptest::collection::vec(any::<u8>(), 0..32)) {
        let _opened = open(&bytes);
    }
}
