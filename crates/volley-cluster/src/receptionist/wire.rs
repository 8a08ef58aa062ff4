//! An owner set's bytes, inside a custom broadcast item and inside an
//! anti-entropy page (layout in `docs/reference/cluster.md`): the owner
//! (host `str16`, port `u16`, uid `u64`), the version `u64`, an entry
//! count `u16`, and per entry the key id `str16`, the wire type id `u32`,
//! the path `str16` and the uid `u64`.

use std::sync::Arc;

use bytes::BufMut;

use super::entry::ServiceEntry;
use super::owner_set::OwnerSet;
use crate::codec::CodecError;
use crate::member::wire::{put_member, put_str16, read_member, Read};
use crate::member::UniqueAddress;

/// Writes `owner` and its set.
pub(crate) fn put_owner_set(out: &mut Vec<u8>, owner: &UniqueAddress, set: &OwnerSet) {
    put_member(out, owner);
    out.put_u64_le(set.version);
    let entries: Vec<&ServiceEntry> = set.entries.iter().take(usize::from(u16::MAX)).collect();
    out.put_u16_le(entries.len() as u16);
    for entry in entries {
        put_str16(out, &entry.key);
        out.put_u32_le(entry.wire_type_id);
        put_str16(out, &entry.path);
        out.put_u64_le(entry.uid);
    }
}

/// The encoded size of `owner` and its set, for paging.
pub(crate) fn owner_set_len(owner: &UniqueAddress, set: &OwnerSet) -> usize {
    let entries: usize = set
        .entries
        .iter()
        .map(|entry| 2 + entry.key.len() + 4 + 2 + entry.path.len() + 8)
        .sum();
    2 + owner.host.len() + 2 + 8 + 8 + 2 + entries
}

/// Reads an owner and its set.
pub(crate) fn read_owner_set(
    reader: &mut Read<'_>,
) -> Result<(UniqueAddress, OwnerSet), CodecError> {
    let owner = read_member(reader)?;
    let mut set = OwnerSet {
        version: reader.u64("services version")?,
        ..OwnerSet::default()
    };
    for _ in 0..reader.u16("service count")? {
        let key = reader.str16("service key")?;
        let wire_type_id = reader.u32("service wire type id")?;
        let path = reader.str16("service path")?;
        set.entries.insert(ServiceEntry {
            key: Arc::from(key),
            wire_type_id,
            path: Arc::from(path),
            uid: reader.u64("service uid")?,
        });
    }
    Ok((owner, set))
}
