//! grpc/grpc's interoperability test cases, unary and streaming.

mod streaming;
mod unary;
