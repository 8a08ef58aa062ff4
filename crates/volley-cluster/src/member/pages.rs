//! Splits a node's table into anti-entropy data pages of bounded size.

use super::knowledge::Knowledge;
use super::wire::{self, DataPage};
use crate::receptionist::wire::owner_set_len;

/// Bytes of a page's head besides the sender's node id (flags, three
/// hashes, four counts), plus the largest node id.
const PAGE_HEAD_LEN: usize = 1 + 3 * 8 + 4 * 2 + 2 + crate::codec::MAX_HOST_LEN + 22;

/// Which of the large sections a node sends: those the peer's hashes say
/// differ.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Sections {
    /// The member records.
    pub(crate) records: bool,
    /// The service registry's owner sets.
    pub(crate) services: bool,
}

/// Entries per section, so that each count fits its `u16`.
const MAX_ENTRIES: usize = u16::MAX as usize;

/// The table (its records only if `sections` says), tombstones, seen-set
/// and service registry (only if `sections` says) of `knowledge` as pages
/// of at most `max_bytes` each (a single entry larger than that still
/// gets a page of its own); the last page is flagged.
pub(crate) fn pages(
    knowledge: &mut Knowledge,
    answer_wanted: bool,
    sections: Sections,
    max_bytes: usize,
) -> Vec<DataPage> {
    let head = DataPage {
        from: None,
        answer_wanted,
        last: false,
        table_hash: knowledge.table.hash(),
        seen_hash: knowledge.seen_hash(),
        services_hash: knowledge.services.hash(),
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
    let records = knowledge.table.records().filter(|_| sections.records);
    for record in records {
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
    let services = knowledge.services.sets().filter(|_| sections.services);
    for (owner, set) in services {
        let entries = page.services.len();
        room(&mut page, &mut size, owner_set_len(owner, set), entries);
        page.services.push((owner.clone(), set.clone()));
    }
    pages.push(page);
    if let Some(last) = pages.last_mut() {
        last.last = true;
    }
    pages
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeSet;

    use super::*;
    use crate::member::MemberRecord;
    use crate::node_id::NodeId;

    fn knowledge(members: u16) -> Knowledge {
        let mut knowledge = Knowledge::default();
        for port in 0..members {
            let node = NodeId::new("10.0.0.1", port, u64::from(port), 7);
            knowledge.apply_record(MemberRecord::joining(node, "1".to_owned(), BTreeSet::new()));
        }
        knowledge
    }

    #[test]
    fn a_table_is_split_into_bounded_pages_the_last_flagged() {
        let mut knowledge = knowledge(100);
        let all = Sections {
            records: true,
            services: true,
        };
        let pages = pages(&mut knowledge, true, all, 1024);
        assert!(pages.len() > 1);
        let records: usize = pages.iter().map(|page| page.records.len()).sum();
        assert_eq!(records, 100);
        let node = NodeId::new("10.0.0.1", 1, 1, 7);
        for page in &pages {
            assert!(wire::encode_page(page, &node).len() <= 1024 + PAGE_HEAD_LEN);
        }
        let flagged: Vec<bool> = pages.iter().map(|page| page.last).collect();
        assert_eq!(flagged.iter().filter(|last| **last).count(), 1);
        assert_eq!(flagged.last(), Some(&true));
    }

    #[test]
    fn pages_without_records_carry_only_tombstones_and_the_seen_set() {
        let mut knowledge = knowledge(10);
        let none = Sections {
            records: false,
            services: false,
        };
        let pages = pages(&mut knowledge, false, none, 64 * 1024);
        assert_eq!(pages.len(), 1);
        assert!(pages[0].records.is_empty());
        assert_eq!(pages[0].table_hash, knowledge.table.hash());
    }
}
