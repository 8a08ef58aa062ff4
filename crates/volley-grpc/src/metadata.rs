//! Custom metadata: the request's metadata handed to the actor ([`Call`],
//! unary and server-streaming methods), and response headers and trailers
//! of the actor's choosing ([`WithMetadata`], unary methods).
//!
//! A separate kind of method ([`GatewayBuilder::unary_with_metadata`])
//! rather than metadata on every call: copying the request's headers into
//! a `MetadataMap` costs an allocation per header, which a plain method
//! (`unary`) does not pay.
//!
//! [`GatewayBuilder::unary_with_metadata`]: crate::GatewayBuilder::unary_with_metadata

use std::marker::PhantomData;
use std::pin::Pin;
use std::time::Duration;

use http::HeaderMap;
use tonic::metadata::MetadataMap;
use tonic::Status;
use volley::ReplyTo;

use crate::frame;
use crate::unary::{decode_request, AskTarget, Reply, UnaryMethod, UnaryReply};

/// A request with the metadata it came with: its headers, without those
/// gRPC reserves for itself (`content-type`, `te` and every `grpc-*`
/// header, such as `grpc-timeout`).
#[derive(Debug, Clone, Default)]
pub struct Call<Req> {
    /// The decoded request message.
    pub message: Req,
    /// The client's custom metadata (`authorization`, `x-request-id`,
    /// `...-bin` binary values, ...).
    pub metadata: MetadataMap,
}

impl<Req> Call<Req> {
    /// `message` with the custom metadata among `headers`.
    pub(crate) fn from_request(message: Req, headers: &HeaderMap) -> Self {
        Call {
            message,
            metadata: request_metadata(headers),
        }
    }
}

/// A response with the metadata to send with it: `headers` go out as the
/// response's initial metadata, `trailers` after the message, next to
/// `grpc-status`. Reserved names (`content-type`, `te`, `grpc-*`) are
/// left out of both.
#[derive(Debug, Clone, Default)]
pub struct WithMetadata<Resp> {
    /// The response message.
    pub message: Resp,
    /// Initial metadata (response headers).
    pub headers: MetadataMap,
    /// Trailing metadata.
    pub trailers: MetadataMap,
}

impl<Resp> WithMetadata<Resp> {
    /// `message` with no metadata.
    pub fn new(message: Resp) -> Self {
        WithMetadata {
            message,
            headers: MetadataMap::new(),
            trailers: MetadataMap::new(),
        }
    }
}

/// True for a header gRPC keeps for itself, in either direction.
pub(crate) fn is_reserved(name: &str) -> bool {
    name.starts_with("grpc-") || name == "content-type" || name == "te"
}

/// The request's custom metadata.
fn request_metadata(headers: &HeaderMap) -> MetadataMap {
    let mut custom = HeaderMap::with_capacity(headers.len());
    for (name, value) in headers {
        if !is_reserved(name.as_str()) {
            custom.append(name.clone(), value.clone());
        }
    }
    MetadataMap::from_headers(custom)
}

/// `metadata`'s entries that are not reserved, added to `into`.
pub(crate) fn add_custom(into: &mut HeaderMap, metadata: MetadataMap) {
    let mut last = None;
    for (name, value) in metadata.into_headers() {
        // `HeaderMap`'s iterator names a key once, before all its values.
        let name = match name {
            Some(name) => {
                last = Some(name.clone());
                name
            }
            None => match &last {
                Some(name) => name.clone(),
                None => continue,
            },
        };
        if !is_reserved(name.as_str()) {
            into.append(name, value);
        }
    }
}

/// A unary method whose actor sees the request's metadata and sets the
/// response's.
pub(crate) struct TypedWithMetadata<Req, Resp, M, T, F> {
    pub(crate) target: T,
    pub(crate) make: F,
    pub(crate) types: PhantomData<fn(Req) -> (Resp, M)>,
}

impl<Req, Resp, M, T, F> UnaryMethod for TypedWithMetadata<Req, Resp, M, T, F>
where
    Req: prost::Message + Default + Send + 'static,
    Resp: prost::Message + Send + 'static,
    M: Send + 'static,
    T: AskTarget<M>,
    F: Fn(Call<Req>, ReplyTo<Reply<WithMetadata<Resp>>>) -> M + Send + Sync + 'static,
{
    fn call<'a>(
        &'a self,
        message: &[u8],
        headers: &HeaderMap,
        timeout: Duration,
    ) -> Pin<Box<dyn std::future::Future<Output = Result<UnaryReply, Status>> + Send + 'a>> {
        let call = decode_request::<Req>(message).map(|m| Call::from_request(m, headers));
        Box::pin(async move {
            let call = call?;
            let reply = self
                .target
                .ask_for(|reply_to| (self.make)(call, reply_to), timeout)
                .await??;
            Ok(UnaryReply {
                message: frame::encode(&reply.message),
                metadata: Some(Box::new((reply.headers, reply.trailers))),
            })
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reserved_headers_are_not_metadata() {
        let mut headers = HeaderMap::new();
        headers.insert("content-type", "application/grpc".parse().unwrap());
        headers.insert("te", "trailers".parse().unwrap());
        headers.insert("grpc-timeout", "1S".parse().unwrap());
        headers.insert("authorization", "Bearer x".parse().unwrap());
        headers.append("x-many", "1".parse().unwrap());
        headers.append("x-many", "2".parse().unwrap());
        let metadata = request_metadata(&headers);
        assert_eq!(metadata.len(), 3);
        assert_eq!(metadata.get("authorization").unwrap(), "Bearer x");
        let many: Vec<_> = metadata.get_all("x-many").iter().collect();
        assert_eq!(many, ["1", "2"]);
    }

    #[test]
    fn reserved_names_are_left_out_of_responses_and_repeated_keys_kept() {
        let mut metadata = MetadataMap::new();
        metadata.insert("grpc-status", "13".parse().unwrap());
        metadata.insert("content-type", "text/plain".parse().unwrap());
        metadata.append("x-a", "1".parse().unwrap());
        metadata.append("x-a", "2".parse().unwrap());
        metadata.insert_bin(
            "x-b-bin",
            tonic::metadata::MetadataValue::from_bytes(b"\xab"),
        );
        let mut out = HeaderMap::new();
        add_custom(&mut out, metadata);
        assert!(out.get("grpc-status").is_none());
        assert!(out.get("content-type").is_none());
        let a: Vec<_> = out.get_all("x-a").iter().collect();
        assert_eq!(a, ["1", "2"]);
        assert_eq!(out.get("x-b-bin").unwrap(), "qw");
    }
}
