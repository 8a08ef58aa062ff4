//! The byte layout of membership items (custom broadcasts) and of the
//! anti-entropy messages, little-endian as `ClusterCodec`'s, specified in
//! `docs/reference/cluster.md`.

use std::collections::BTreeSet;
use std::sync::Arc;
use std::time::Duration;

use bytes::BufMut;

use super::record::{MemberRecord, UniqueAddress};
use super::status::MemberStatus;
use crate::codec::{CodecError, Reader, Writer};
use crate::node_id::NodeId;
use crate::receptionist::wire::{put_owner_set, read_owner_set};
use crate::receptionist::OwnerSet;

/// Item tags: what a custom broadcast carries.
const ITEM_RECORD: u8 = 0x01;
const ITEM_SEEN: u8 = 0x02;
const ITEM_SERVICES: u8 = 0x03;
const ITEM_EXITING_CONFIRMED: u8 = 0x04;

/// Flags of a data page.
const PAGE_ANSWER_WANTED: u8 = 0x01;
const PAGE_LAST: u8 = 0x02;

/// Which table a node has seen: its version (bumped whenever the node's
/// table changes) and the table's hash.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Seen {
    pub(crate) version: u64,
    pub(crate) hash: u64,
}

/// One custom broadcast.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Item {
    /// A member's record.
    Record(MemberRecord),
    /// The table a member has seen.
    Seen { member: UniqueAddress, seen: Seen },
    /// A member's registered services (the cluster receptionist).
    Services { owner: UniqueAddress, set: OwnerSet },
    /// An Exiting member finished its exiting tasks (Akka's
    /// `ExitingConfirmed`): the leader may remove it.
    ExitingConfirmed(UniqueAddress),
}

/// Anti-entropy, first message: the sender's table and seen-set hashes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Digest {
    pub(crate) from: NodeId,
    /// The sender's own seen entry (its table's hash).
    pub(crate) seen: Seen,
    /// A hash of the sender's seen-set.
    pub(crate) seen_hash: u64,
    /// A hash of the sender's service registry (its owners' versions).
    pub(crate) services_hash: u64,
}

/// Anti-entropy, the answer: one page of the sender's table.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub(crate) struct DataPage {
    pub(crate) from: Option<NodeId>,
    /// Whether the receiver should answer with its own table if, once the
    /// last page is merged, its table still differs (push-pull).
    pub(crate) answer_wanted: bool,
    /// Whether this is the sender's last page.
    pub(crate) last: bool,
    /// The hash of the sender's whole table.
    pub(crate) table_hash: u64,
    /// The hash of the sender's seen-set.
    pub(crate) seen_hash: u64,
    pub(crate) records: Vec<MemberRecord>,
    /// Removed members and how long ago they were removed.
    pub(crate) tombstones: Vec<(UniqueAddress, Duration)>,
    pub(crate) seen: Vec<(UniqueAddress, Seen)>,
    /// The hash of the sender's whole service registry.
    pub(crate) services_hash: u64,
    /// Owner sets of the service registry.
    pub(crate) services: Vec<(UniqueAddress, OwnerSet)>,
}

/// FNV-1a, 64 bits: a hash that is the same on every build and platform.
pub(crate) struct Fnv1a(u64);

impl Default for Fnv1a {
    fn default() -> Self {
        Self(0xcbf2_9ce4_8422_2325)
    }
}

impl Fnv1a {
    pub(crate) fn write(&mut self, bytes: &[u8]) {
        for byte in bytes {
            self.0 ^= u64::from(*byte);
            self.0 = self.0.wrapping_mul(0x0100_0000_01b3);
        }
    }

    pub(crate) fn finish(&self) -> u64 {
        self.0
    }
}

/// A `str16`; a string longer than a `u16` length allows is cut at a
/// character boundary (a role or version that long is a configuration
/// mistake, and cutting keeps every node's bytes and hashes equal).
pub(crate) fn put_str16(out: &mut Vec<u8>, text: &str) {
    let mut end = text.len().min(usize::from(u16::MAX));
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    out.put_u16_le(end as u16);
    out.put_slice(&text.as_bytes()[..end]);
}

pub(crate) fn put_member(out: &mut Vec<u8>, member: &UniqueAddress) {
    put_str16(out, &member.host);
    out.put_u16_le(member.port);
    out.put_u64_le(member.uid);
}

fn put_seen(out: &mut Vec<u8>, seen: Seen) {
    out.put_u64_le(seen.version);
    out.put_u64_le(seen.hash);
}

/// A record: node id, status `u8`, up-number `u32`, app version `str16`,
/// role count `u16` and the roles as `str16`s.
pub(crate) fn put_record(out: &mut Vec<u8>, record: &MemberRecord) {
    Writer(&mut *out).node_id(&record.node);
    out.put_u8(record.status.code());
    out.put_u32_le(record.up_number);
    put_str16(out, &record.app_version);
    let roles: Vec<&String> = record.roles.iter().take(usize::from(u16::MAX)).collect();
    out.put_u16_le(roles.len() as u16);
    for role in roles {
        put_str16(out, role);
    }
}

pub(crate) fn encode_item(item: &Item) -> Vec<u8> {
    let mut out = Vec::new();
    match item {
        Item::Record(record) => {
            out.put_u8(ITEM_RECORD);
            put_record(&mut out, record);
        }
        Item::Seen { member, seen } => {
            out.put_u8(ITEM_SEEN);
            put_member(&mut out, member);
            put_seen(&mut out, *seen);
        }
        Item::Services { owner, set } => {
            out.put_u8(ITEM_SERVICES);
            put_owner_set(&mut out, owner, set);
        }
        Item::ExitingConfirmed(member) => {
            out.put_u8(ITEM_EXITING_CONFIRMED);
            put_member(&mut out, member);
        }
    }
    out
}

pub(crate) fn encode_digest(digest: &Digest) -> Vec<u8> {
    let mut out = Vec::new();
    Writer(&mut out).node_id(&digest.from);
    put_seen(&mut out, digest.seen);
    out.put_u64_le(digest.seen_hash);
    out.put_u64_le(digest.services_hash);
    out
}

/// Encodes one page: head (sender, flags, table hash, seen-set hash), then counted
/// sections of records, tombstones (member, ms ago `u64`) and seen
/// entries, each count a `u16`.
pub(crate) fn encode_page(page: &DataPage, from: &NodeId) -> Vec<u8> {
    let mut out = Vec::new();
    Writer(&mut out).node_id(from);
    let flags = if page.answer_wanted {
        PAGE_ANSWER_WANTED
    } else {
        0
    } | if page.last { PAGE_LAST } else { 0 };
    out.put_u8(flags);
    out.put_u64_le(page.table_hash);
    out.put_u64_le(page.seen_hash);
    out.put_u64_le(page.services_hash);
    out.put_u16_le(page.records.len() as u16);
    for record in &page.records {
        put_record(&mut out, record);
    }
    out.put_u16_le(page.tombstones.len() as u16);
    for (member, ago) in &page.tombstones {
        put_member(&mut out, member);
        out.put_u64_le(u64::try_from(ago.as_millis()).unwrap_or(u64::MAX));
    }
    out.put_u16_le(page.seen.len() as u16);
    for (member, seen) in &page.seen {
        put_member(&mut out, member);
        put_seen(&mut out, *seen);
    }
    out.put_u16_le(page.services.len() as u16);
    for (owner, set) in &page.services {
        put_owner_set(&mut out, owner, set);
    }
    out
}

/// The encoded size of each kind of page entry, for paging.
pub(crate) fn record_len(record: &MemberRecord) -> usize {
    let mut out = Vec::new();
    put_record(&mut out, record);
    out.len()
}

pub(crate) fn member_len(member: &UniqueAddress) -> usize {
    2 + member.host.len() + 2 + 8
}

pub(crate) type Read<'a> = Reader<&'a [u8]>;

fn finish<T>(reader: Read<'_>, value: T) -> Result<T, CodecError> {
    match reader.0.len() {
        0 => Ok(value),
        left => Err(CodecError::TrailingBytes(left)),
    }
}

pub(crate) fn read_member(reader: &mut Read<'_>) -> Result<UniqueAddress, CodecError> {
    let host = reader.str16("member host")?;
    if host.is_empty() {
        return Err(CodecError::EmptyHost);
    }
    Ok(UniqueAddress {
        host: Arc::from(host),
        port: reader.u16("member port")?,
        uid: reader.u64("member uid")?,
    })
}

fn read_seen(reader: &mut Read<'_>) -> Result<Seen, CodecError> {
    Ok(Seen {
        version: reader.u64("seen version")?,
        hash: reader.u64("seen hash")?,
    })
}

fn read_record(reader: &mut Read<'_>) -> Result<MemberRecord, CodecError> {
    let node = reader.node_id()?;
    let code = reader.u8("member status")?;
    let status = MemberStatus::from_code(code).ok_or(CodecError::UnknownStatus(code))?;
    let up_number = reader.u32("up number")?;
    let app_version = reader.str16("app version")?;
    let count = reader.u16("role count")?;
    let mut roles = BTreeSet::new();
    for _ in 0..count {
        roles.insert(reader.str16("role")?);
    }
    Ok(MemberRecord {
        node,
        status,
        up_number,
        app_version,
        roles,
    })
}

pub(crate) fn decode_item(bytes: &[u8]) -> Result<Item, CodecError> {
    let mut reader = Reader(bytes);
    let item = match reader.u8("item tag")? {
        ITEM_RECORD => Item::Record(read_record(&mut reader)?),
        ITEM_SEEN => Item::Seen {
            member: read_member(&mut reader)?,
            seen: read_seen(&mut reader)?,
        },
        ITEM_SERVICES => {
            let (owner, set) = read_owner_set(&mut reader)?;
            Item::Services { owner, set }
        }
        ITEM_EXITING_CONFIRMED => Item::ExitingConfirmed(read_member(&mut reader)?),
        other => return Err(CodecError::UnknownItem(other)),
    };
    finish(reader, item)
}

/// The sender an anti-entropy message names (digests and pages both
/// open with it), read without the rest.
pub(crate) fn decode_sync_sender(bytes: &[u8]) -> Result<NodeId, CodecError> {
    Reader(bytes).node_id()
}

pub(crate) fn decode_digest(bytes: &[u8]) -> Result<Digest, CodecError> {
    let mut reader = Reader(bytes);
    let digest = Digest {
        from: reader.node_id()?,
        seen: read_seen(&mut reader)?,
        seen_hash: reader.u64("seen-set hash")?,
        services_hash: reader.u64("services hash")?,
    };
    finish(reader, digest)
}

pub(crate) fn decode_page(bytes: &[u8]) -> Result<DataPage, CodecError> {
    let mut reader = Reader(bytes);
    let from = reader.node_id()?;
    let flags = reader.u8("page flags")?;
    let mut page = DataPage {
        from: Some(from),
        answer_wanted: flags & PAGE_ANSWER_WANTED != 0,
        last: flags & PAGE_LAST != 0,
        table_hash: reader.u64("table hash")?,
        seen_hash: reader.u64("seen-set hash")?,
        services_hash: reader.u64("services hash")?,
        ..DataPage::default()
    };
    for _ in 0..reader.u16("record count")? {
        page.records.push(read_record(&mut reader)?);
    }
    for _ in 0..reader.u16("tombstone count")? {
        let member = read_member(&mut reader)?;
        let ago = Duration::from_millis(reader.u64("removed ago")?);
        page.tombstones.push((member, ago));
    }
    for _ in 0..reader.u16("seen count")? {
        let member = read_member(&mut reader)?;
        page.seen.push((member, read_seen(&mut reader)?));
    }
    for _ in 0..reader.u16("owner set count")? {
        page.services.push(read_owner_set(&mut reader)?);
    }
    finish(reader, page)
}

#[cfg(test)]
#[path = "wire_tests.rs"]
mod tests;
