//! The feature list of an accepted HandshakeResponse (wire-protocol.md
//! §5.2a): what an acceptor advertises it decodes beyond every version-1
//! peer, and how an initiator reads it.

use proptest::prelude::*;
use volley_remote::wire::*;

fn response(status: HandshakeStatus, reason: &str) -> HandshakeResponse<'_> {
    HandshakeResponse {
        version: PROTOCOL_VERSION,
        status,
        from: "volley://beta@127.0.0.1:2553".parse().unwrap(),
        uid: 7,
        auth: None,
        reason,
    }
}

#[test]
fn an_empty_list_advertises_nothing_and_unknown_names_are_ignored() {
    assert_eq!(Features::parse(""), Features::default());
    assert_eq!(Features::parse("flying streams"), Features::default());
    assert!(Features::parse("  streams\trequests ").requests);
    assert!(
        !Features::parse("requestsX").requests,
        "names are whole words"
    );
    assert_eq!(Features::SUPPORTED.list(), FEATURE_REQUESTS);
    assert_eq!(Features::default().list(), "");
}

#[test]
fn only_an_accepted_response_advertises() {
    let accepted = response(HandshakeStatus::Accepted, FEATURE_REQUESTS);
    assert!(accepted.features().requests);
    for status in [
        HandshakeStatus::IncompatibleVersion,
        HandshakeStatus::Unauthorized,
        HandshakeStatus::WrongAddress,
        HandshakeStatus::Quarantined,
    ] {
        // A refusal's reason is text for people, even if it says "requests".
        assert_eq!(
            response(status, FEATURE_REQUESTS).features(),
            Features::default()
        );
    }
}

fn name() -> impl Strategy<Value = String> {
    "[a-z_]{1,12}"
}

proptest! {
    /// A list survives encoding and decoding in a response, and is read as
    /// advertising `requests` exactly when that name is among its words,
    /// whatever other names and spacing surround it.
    #[test]
    fn lists_round_trip_through_a_response(
        names in proptest::collection::vec(name(), 0..6),
        with_requests in any::<bool>(),
        at in any::<prop::sample::Index>(),
    ) {
        let mut names = names;
        if with_requests {
            let i = at.index(names.len() + 1);
            names.insert(i, FEATURE_REQUESTS.to_string());
        }
        let list = names.join("  ");
        let mut buf = bytes::BytesMut::new();
        let pdu = Pdu::HandshakeResponse(Box::new(response(HandshakeStatus::Accepted, &list)));
        Encoder::for_lane(Lane::Control).encode(&pdu, &mut buf).unwrap();
        let decoder = Decoder::new(DecoderConfig::for_lane(Lane::Control));
        let (decoded, _) = decoder.decode_frame(&buf).unwrap().unwrap();
        let Pdu::HandshakeResponse(r) = decoded else { panic!("not a response") };
        let expected = names.iter().any(|n| n == FEATURE_REQUESTS);
        prop_assert_eq!(r.features().requests, expected);
    }
}
