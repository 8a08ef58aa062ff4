//! gRPC's length-prefixed messages and its `grpc-timeout` header.
//!
//! A unary call carries exactly one message each way: a compressed-flag
//! byte, a big-endian `u32` length, the protobuf bytes. The gateway reads
//! the request's whole body and finds the message in place, so a request
//! is decoded once, from the buffer hyper filled, with no stream set up per
//! message.

use std::time::Duration;

use bytes::{BufMut, Bytes, BytesMut};
use tonic::Status;

/// The compressed flag and the length.
pub(crate) const PREFIX_LEN: usize = 5;

/// The one message of a unary request body. `encoding` gives the
/// request's `grpc-encoding` (`None` when absent); it is read only for a
/// compressed message, so the common call looks up no header.
pub(crate) fn single_message<'a, 'e>(
    body: &'a [u8],
    encoding: impl FnOnce() -> Option<&'e [u8]>,
) -> Result<&'a [u8], Status> {
    if body.len() < PREFIX_LEN {
        return Err(Status::invalid_argument(format!(
            "the request body holds no whole gRPC message ({} bytes)",
            body.len()
        )));
    }
    if body[0] != 0 {
        return Err(match encoding().filter(|e| *e != b"identity") {
            // gRPC's compression spec: a flag without an encoding is the
            // client's mistake, INTERNAL; an encoding the server lacks is
            // UNIMPLEMENTED, saying which it takes in grpc-accept-encoding.
            None => Status::internal(
                "the message's compressed flag is set, but the request has no grpc-encoding",
            ),
            Some(e) => {
                let mut status = Status::unimplemented(format!(
                    "grpc-encoding {:?} is not supported; supported: identity",
                    String::from_utf8_lossy(e)
                ));
                let identity = tonic::metadata::MetadataValue::from_static("identity");
                status
                    .metadata_mut()
                    .insert("grpc-accept-encoding", identity);
                status
            }
        });
    }
    let len = u32::from_be_bytes(body[1..PREFIX_LEN].try_into().expect("4 bytes")) as usize;
    let message = &body[PREFIX_LEN..];
    if message.len() != len {
        return Err(Status::invalid_argument(format!(
            "a unary request holds exactly one message: the prefix says {len} bytes, the body has {}",
            message.len()
        )));
    }
    Ok(message)
}

/// `message`, length-prefixed, uncompressed.
pub(crate) fn encode(message: &impl prost::Message) -> Bytes {
    let len = message.encoded_len();
    let mut out = BytesMut::with_capacity(PREFIX_LEN + len);
    out.put_u8(0);
    out.put_u32(len as u32);
    message
        .encode(&mut out)
        .expect("the buffer was sized by encoded_len");
    out.freeze()
}

/// The client's deadline from a `grpc-timeout` value: at most 8 digits and
/// a unit (`H`, `M`, `S`, `m`, `u`, `n`).
pub(crate) fn parse_timeout(value: &[u8]) -> Result<Duration, Status> {
    let bad = || {
        Status::invalid_argument(format!(
            "malformed grpc-timeout header {:?}",
            String::from_utf8_lossy(value)
        ))
    };
    let (digits, unit) = value.split_at(value.len().checked_sub(1).ok_or_else(bad)?);
    if digits.is_empty() || digits.len() > 8 || !digits.iter().all(u8::is_ascii_digit) {
        return Err(bad());
    }
    let n: u64 = std::str::from_utf8(digits)
        .map_err(|_| bad())?
        .parse()
        .map_err(|_| bad())?;
    Ok(match unit {
        b"H" => Duration::from_secs(n * 3600),
        b"M" => Duration::from_secs(n * 60),
        b"S" => Duration::from_secs(n),
        b"m" => Duration::from_millis(n),
        b"u" => Duration::from_micros(n),
        b"n" => Duration::from_nanos(n),
        _ => return Err(bad()),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn timeouts_parse_in_every_unit_and_garbage_is_refused() {
        assert_eq!(parse_timeout(b"5S").unwrap(), Duration::from_secs(5));
        assert_eq!(parse_timeout(b"250m").unwrap(), Duration::from_millis(250));
        assert_eq!(parse_timeout(b"2H").unwrap(), Duration::from_secs(7200));
        assert_eq!(parse_timeout(b"3M").unwrap(), Duration::from_secs(180));
        assert_eq!(parse_timeout(b"7u").unwrap(), Duration::from_micros(7));
        assert_eq!(parse_timeout(b"9n").unwrap(), Duration::from_nanos(9));
        for bad in [&b""[..], b"S", b"5", b"5s", b"123456789S", b"-5S", b"5 S"] {
            let e = parse_timeout(bad).unwrap_err();
            assert_eq!(e.code(), tonic::Code::InvalidArgument, "{bad:?}");
        }
    }

    #[test]
    fn a_unary_body_must_hold_exactly_one_uncompressed_message() {
        let framed = encode(&"hi".to_string());
        assert_eq!(
            single_message(&framed, || None).unwrap(),
            &framed[PREFIX_LEN..]
        );
        // An uncompressed message under a grpc-encoding is fine.
        assert_eq!(
            single_message(&framed, || Some(b"gzip")).unwrap(),
            &framed[PREFIX_LEN..]
        );
        assert_eq!(
            single_message(&framed[..3], || None).unwrap_err().code(),
            tonic::Code::InvalidArgument
        );
        let mut two = framed.to_vec();
        two.extend_from_slice(&framed);
        assert_eq!(
            single_message(&two, || None).unwrap_err().code(),
            tonic::Code::InvalidArgument
        );
        let mut compressed = framed.to_vec();
        compressed[0] = 1;
        for encoding in [None, Some(&b"identity"[..])] {
            let e = single_message(&compressed, || encoding).unwrap_err();
            assert_eq!(e.code(), tonic::Code::Internal, "{encoding:?}");
        }
        let e = single_message(&compressed, || Some(b"gzip")).unwrap_err();
        assert_eq!(e.code(), tonic::Code::Unimplemented);
        assert_eq!(
            e.metadata().get("grpc-accept-encoding").unwrap(),
            "identity"
        );
    }
}
