//! How a golden vector is built and written: its fields, named in wire
//! order, and the commented hex text of its file.

use std::fmt::Write as _;

use bytes::BytesMut;
use volley_remote::wire::*;

/// One vector: its bytes, and the fields they are made of.
pub struct Vector {
    pub name: &'static str,
    pub description: String,
    pub bytes: Vec<u8>,
    /// (field name, length) in wire order; lengths add up to `bytes.len()`.
    pub fields: Vec<(String, usize)>,
}

pub fn addr(s: &str) -> Address {
    s.parse().unwrap()
}

pub fn frame_fields(kind: PduKind, body: &[(&str, usize)]) -> Vec<(String, usize)> {
    let mut f = vec![
        ("frame length (u32 LE)".to_string(), 4),
        (format!("kind = {kind}"), 1),
    ];
    f.extend(body.iter().map(|(n, l)| (n.to_string(), *l)));
    f
}

pub fn str_fields(name: &str, s: &str) -> [(String, usize); 2] {
    [
        (format!("{name} length (u16 LE)"), 2),
        (format!("{name} = {s:?}"), s.len()),
    ]
}

pub fn address_fields(name: &str, a: &Address) -> Vec<(String, usize)> {
    let mut f = Vec::new();
    f.extend(str_fields(&format!("{name}.system"), a.system()));
    f.extend(str_fields(&format!("{name}.host"), a.host()));
    f.push((format!("{name}.port = {} (u16 LE)", a.port()), 2));
    f
}

pub fn encode(pdu: &Pdu<'_>) -> Vec<u8> {
    let mut buf = BytesMut::new();
    Encoder::for_lane(Lane::Large)
        .encode(pdu, &mut buf)
        .unwrap();
    buf.to_vec()
}

/// The vector's file text: one line per field, its name in a comment.
pub fn render(v: &Vector) -> String {
    let mut s = format!(
        "# volley wire protocol v{PROTOCOL_VERSION} golden vector: {}\n# {}\n# {} bytes\n",
        v.name,
        v.description,
        v.bytes.len()
    );
    let mut pos = 0;
    for (field, len) in &v.fields {
        let hex: Vec<String> = v.bytes[pos..pos + len]
            .iter()
            .map(|b| format!("{b:02x}"))
            .collect();
        let hex = if hex.is_empty() {
            "".to_string()
        } else {
            hex.join(" ")
        };
        if hex.is_empty() {
            writeln!(s, "# (empty) {field}").unwrap();
        } else {
            writeln!(s, "{hex:<24} # {field}").unwrap();
        }
        pos += len;
    }
    s
}
