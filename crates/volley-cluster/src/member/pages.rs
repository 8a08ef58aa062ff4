//! Splits a node's table into anti-entropy data pages of bounded size.

use super::knowledge::Knowledge;
use super::wire::{self, DataPage};

/// Bytes of a page's head besides the sender's node id (flags, two
/// hashes, three counts), plus the largest node id.
const PAGE_HEAD_LEN: usize = 1 + 8 + 8 + 3 * 2 + 2 + crate::codec::MAX_HOST_LEN + 22;

/// Entries per section, so that each count fits its `u16`.
const MAX_ENTRIES: usize = u16::MAX as usize;

/// The table, tombstones and seen-set of `knowledge` as pages of at most
/// `max_bytes` each (a single entry larger than that still gets a page of
/// its own); the last page is flagged.
pub(crate) fn pages(
    knowledge: &mut Knowledge,
    answer_wanted: bool,
    max_bytes: usize,
) -> Vec<DataPage> {
    let head = DataPage {
        from: None,
        answer_wanted,
        last: false,
        table_hash: knowledge.table.hash(),
        seen_hash: knowledge.seen_hash(),
        ..DataPage::default()
    };
    let mut pages = Vec::new();
    let mut page = head.clone();
    let mut size = PAGE_HEAD_LEN;
    let mut room = |page: &mut DataPage, size: &mut usize, len: usize, entries: usize| {
        if (*size + len > max_bytes && *size > PAGE_HEAD_LEN) || entries >= MAX_ENTRIES {
            pages.push(std::mem::replace(page, head.clone()));
            *size = PAGE_HEAD_LEN;
        }
        *size += len;
    };
    for record in knowledge.table.records() {
        let entries = page.records.len();
        room(&mut page, &mut size, wire::record_len(record), entries);
        page.records.push(record.clone());
    }
    let now = knowledge.now;
    for (member, removed_at) in knowledge.table.tombstones() {
        let entries = page.tombstones.len();
        room(&mut page, &mut size, wire::member_len(member) + 8, entries);
        page.tombstones
            .push((member.clone(), now.saturating_sub(removed_at)));
    }
    for (member, seen) in &knowledge.seen {
        let entries = page.seen.len();
        room(&mut page, &mut size, wire::member_len(member) + 16, entries);
        page.seen.push((member.clone(), *seen));
    }
    pages.push(page);
    if let Some(last) = pages.last_mut() {
        last.last = true;
    }
    pages
}
