//! The import and export tables' unit tests.

use super::*;
use std::any::Any;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;

use volley::remote::{MessageType, RemoteRef, RemoteRoute, RemoteSendError, RemoteSystemMsg};
use volley::{ActorSystem, Settings};

/// A route that carries nothing: the tables only look at identities.
pub(crate) struct Nowhere;
impl RemoteRoute for Nowhere {
    fn send(
        &self,
        _: &RemoteRef,
        _: &(dyn Any + Send),
        _: &MessageType,
    ) -> Result<(), Box<RemoteSendError>> {
        Err(Box::new(RemoteSendError::Unavailable("test".into())))
    }
    fn send_system(&self, _: &RemoteRef, _: RemoteSystemMsg) {}
    fn room(&self, _: &RemoteRef) -> Pin<Box<dyn Future<Output = ()> + Send>> {
        Box::pin(async {})
    }
    fn as_any(&self) -> &dyn Any {
        self
    }
}

#[test]
fn lasting_refs_keep_their_id_and_reply_handles_use_a_bounded_ring() {
    let rt = tokio::runtime::Runtime::new().unwrap();
    let system = ActorSystem::with_settings("ref-tables", Settings::default()).unwrap();
    let node = volley::ActorPath::parse("volley://peer@127.0.0.1:1/").unwrap();
    let route: Arc<dyn RemoteRoute> = Arc::new(Nowhere);
    let lasting = RemoteRef::new(
        volley::ActorPath::parse("volley://peer@127.0.0.1:1/user/a").unwrap(),
        7,
        system.clone(),
        route.clone(),
    )
    .to_any();
    let mut table = ExportTable::new();
    let id = table.export(&lasting);
    assert!(id > TEMPORARY_IDS);
    assert_eq!(table.export(&lasting), id, "same ref, same id");
    assert_eq!(table.find(7, lasting.path()), Some(id));
    assert_eq!(table.take_pending().len(), 1, "declared once");
    let mut seen = std::collections::HashSet::new();
    for correlation in 1..=3 * u64::from(TEMPORARY_IDS) {
        let handle =
            RemoteRef::reply_handle(&node, correlation, system.clone(), route.clone()).to_any();
        assert!(handle.is_reply_handle());
        // Built on first use, the same as the node's own.
        assert_eq!(handle.path(), &node.reply_handle(correlation));
        let t = table.export(&handle);
        assert!((1..=TEMPORARY_IDS).contains(&t));
        seen.insert(t);
    }
    assert_eq!(seen.len(), TEMPORARY_IDS as usize, "the ring is reused");
    assert_eq!(table.len(), 1, "reply handles are not remembered");
    let redeclared: Vec<_> = table.lasting().map(|(id, a)| (id, a.clone())).collect();
    assert_eq!(
        redeclared,
        vec![(id, lasting.clone())],
        "a new connection re-declares the lasting refs only"
    );
    assert_eq!(table.take_pending().len(), 3 * TEMPORARY_IDS as usize);
    table.clear();
    assert_eq!(table.find(7, lasting.path()), None);
    let mut small = ExportTable::with_max(1);
    let kept = small.export(&lasting);
    let other = RemoteRef::new(
        volley::ActorPath::parse("volley://peer@127.0.0.1:1/user/c").unwrap(),
        8,
        system.clone(),
        route.clone(),
    )
    .to_any();
    small.take_pending();
    for _ in 0..2 {
        let once = small.export(&other);
        assert!(once <= TEMPORARY_IDS, "past the cap: a ring id");
        assert_eq!(
            small.take_pending(),
            vec![(once, other.clone())],
            "declared with each message"
        );
    }
    assert_eq!(small.export(&lasting), kept, "known refs keep their id");
    small.clear();
    assert!(
        small.export(&other) > TEMPORARY_IDS,
        "the cap survives a clear"
    );
    rt.block_on(system.terminate());
}

struct Idle;
impl volley::Actor for Idle {
    type Msg = u32;
    fn handle(&mut self, _: &mut volley::Context<Self>, _: u32) -> volley::HandleResult {
        Ok(())
    }
}

#[test]
fn a_uid_less_path_is_rebound_to_the_actor_there_now_within_the_cap() {
    let rt = tokio::runtime::Runtime::new().unwrap();
    let _guard = rt.enter();
    let system = ActorSystem::with_settings("rebind", Settings::default()).unwrap();
    let path = volley::ActorPath::parse("volley://rebind@127.0.0.1:1/user/x").unwrap();
    let limits = LimitSettings {
        max_imported_refs: 2,
        ..LimitSettings::default()
    };
    let mut imports = ImportTable::new(&limits, &Default::default());
    let id = TEMPORARY_IDS + 1;
    imports.declare_selection(id, path.clone(), None).unwrap();
    assert!(imports.is_stale(id), "nobody there yet");
    assert!(!imports.rebind(id, &system), "still nobody");
    assert!(imports.get(id).is_none());
    let first = system.spawn("x", volley::Props::new(|| Idle)).unwrap();
    assert!(imports.rebind(id, &system));
    assert_eq!(imports.get(id).unwrap().actor(), &first.to_any());
    assert!(!imports.is_stale(id), "bound to a live actor");
    system.stop(&first);
    rt.block_on(async {
        while system.spawn("x", volley::Props::new(|| Idle)).is_err() {
            tokio::time::sleep(std::time::Duration::from_millis(5)).await;
        }
    });
    assert!(imports.is_stale(id), "its actor terminated");
    assert!(imports.rebind(id, &system));
    let second = imports.get(id).unwrap().actor().clone();
    assert!(second != first.to_any() && !second.is_terminated());
    imports
        .declare_selection(id + 1, path.clone(), None)
        .unwrap();
    assert!(
        imports
            .declare_selection(id + 2, path.clone(), None)
            .is_err(),
        "unbound paths count against the cap"
    );
    imports.declare(id, first.to_any()).unwrap();
    assert!(!imports.may_rebind(id), "re-declared with a uid");
    imports.forget(id + 1);
    assert!(!imports.may_rebind(id + 1));
    imports.declare_selection(id + 2, path, None).unwrap();
    rt.block_on(system.terminate());
}

#[test]
fn refs_serialize_only_inside_a_connection_scope() {
    install_codec().unwrap();
    let rt = tokio::runtime::Runtime::new().unwrap();
    let system = ActorSystem::with_settings("ref-scope", Settings::default()).unwrap();
    let remote = RemoteRef::new(
        volley::ActorPath::parse("volley://peer@127.0.0.1:1/user/b").unwrap(),
        9,
        system.clone(),
        Arc::new(Nowhere),
    )
    .typed::<u32>();
    let outside = bincode::serde::encode_to_vec(&remote, bincode::config::standard());
    assert!(outside.is_err(), "no scope, no id");
    let exports = RefCell::new(ExportTable::new());
    let bytes = ExportTable::scope(&exports, || {
        bincode::serde::encode_to_vec(&remote, bincode::config::standard())
    })
    .unwrap();
    let declared = exports.borrow_mut().take_pending();
    assert_eq!(declared.len(), 1);
    let mut imports = ImportTable::new(&LimitSettings::default(), &Default::default());
    let back: Result<(volley::ActorRef<u32>, usize), _> =
        bincode::serde::decode_from_slice(&bytes, bincode::config::standard());
    assert!(back.is_err(), "no scope, no ref");
    imports
        .declare(declared[0].0, declared[0].1.clone())
        .unwrap();
    let (back, _): (volley::ActorRef<u32>, usize) = imports
        .scope(|| bincode::serde::decode_from_slice(&bytes, bincode::config::standard()))
        .unwrap();
    assert_eq!(back, remote);
    rt.block_on(system.terminate());
}

#[test]
fn ids_of_stopped_actors_are_given_out_again_once_the_queue_was_taken() {
    let rt = tokio::runtime::Runtime::new().unwrap();
    let _guard = rt.enter();
    let system = ActorSystem::with_settings("recycle", Settings::default()).unwrap();
    let spawn = |name: &str| system.spawn(name, volley::Props::new(|| Idle)).unwrap();
    let mut table = ExportTable::with_max(4);
    let first: Vec<_> = (0..4).map(|i| spawn(&format!("a{i}"))).collect();
    let ids: Vec<u32> = first.iter().map(|a| table.export(&a.to_any())).collect();
    assert_eq!(ids, vec![4097, 4098, 4099, 4100]);
    table.take_pending();
    for a in &first {
        system.stop(a);
    }
    rt.block_on(async {
        while first.iter().any(|a| !a.is_terminated()) {
            tokio::time::sleep(std::time::Duration::from_millis(2)).await;
        }
    });
    let live = spawn("b0");
    let once = table.export(&live.to_any());
    assert!(
        once <= TEMPORARY_IDS,
        "released, but frames using the old ids may still be queued: a ring id"
    );
    table.take_pending();
    let released: Vec<u32> = table.lasting().map(|(id, _)| id).collect();
    assert_eq!(released.len(), 4, "a new connection still declares them");
    table.note_load();
    let id = table.export(&live.to_any());
    assert!(ids.contains(&id), "a released id is reused: {id}");
    assert_eq!(
        table.take_pending(),
        vec![(id, live.to_any())],
        "and declared anew"
    );
    assert_eq!(table.export(&live.to_any()), id, "then kept");
    let again = table.export(&first[0].to_any());
    assert!(
        ids.contains(&again) && again != id,
        "a stopped ref sent again is declared anew"
    );
    assert_eq!(table.take_pending(), vec![(again, first[0].to_any())]);
    assert_eq!(table.highest_id(), 4100, "no id past the cap");
    // Live refs are never released: past a full table of them, a new ref
    // takes a ring id each time.
    let mut full = ExportTable::with_max(2);
    let (x, y, z) = (spawn("x"), spawn("y"), spawn("z"));
    assert!(full.export(&x.to_any()) > TEMPORARY_IDS && full.export(&y.to_any()) > TEMPORARY_IDS);
    full.note_load();
    assert!(full.export(&z.to_any()) <= TEMPORARY_IDS);
    assert_eq!(full.len(), 2);
    rt.block_on(system.terminate());
}

/// Elements of a path over 1000 bytes long (a name is at most 255).
fn kilobyte_path(c: char) -> String {
    let name = c.to_string().repeat(200);
    format!("/user/{name}/{name}/{name}/{name}/{name}")
}

#[test]
fn the_byte_budget_counts_every_kind_of_entry_and_refuses_past_it() {
    let rt = tokio::runtime::Runtime::new().unwrap();
    let _guard = rt.enter();
    let system = ActorSystem::with_settings("budget", Settings::default()).unwrap();
    let local = system.spawn("here", volley::Props::new(|| Idle)).unwrap();
    let remote = |path: &str, uid| {
        let path = volley::ActorPath::parse(&format!("volley://peer@127.0.0.1:1{path}")).unwrap();
        RemoteRef::new(path, uid, system.clone(), Arc::new(Nowhere)).to_any()
    };
    let meter = Arc::new(ImportMeter::default());
    let limits = LimitSettings {
        max_imported_ref_bytes: 64 * 1024,
        ..LimitSettings::default()
    };
    let mut imports = ImportTable::new(&limits, &meter);
    let id = TEMPORARY_IDS + 1;
    imports.declare(id, local.to_any()).unwrap();
    let slot = imports.bytes();
    assert!(
        slot > 0 && slot < 200,
        "a local actor costs its slot: {slot}"
    );
    imports.declare(id, local.to_any()).unwrap();
    assert_eq!(imports.bytes(), slot, "re-declaring counts once");
    let short = remote("/user/a", 1);
    imports.declare(id + 1, short).unwrap();
    let with_short = imports.bytes();
    let long = remote(&kilobyte_path('b'), 2);
    imports.declare(id + 1, long).unwrap();
    assert!(
        imports.bytes() >= with_short + 900,
        "a remote ref counts its path"
    );
    let elements = kilobyte_path('c');
    let path = volley::ActorPath::parse(&format!("volley://budget@127.0.0.1:1{elements}")).unwrap();
    let before = imports.bytes();
    imports
        .declare_selection(id + 2, path.clone(), None)
        .unwrap();
    assert!(imports.bytes() >= before + 1000, "so does a uid-less path");
    assert_eq!(meter.bytes(), imports.bytes(), "the node's total follows");
    imports.forget(id + 1);
    imports.forget(id + 2);
    assert_eq!(imports.bytes(), slot, "forgetting gives the bytes back");
    // Fill up to the budget with kilobyte paths: the one past it is
    // refused and counted, and nothing of it is kept.
    let mut next = id + 10;
    let refused = loop {
        match imports.declare_selection(next, path.clone(), None) {
            Ok(()) => next += 1,
            Err(e) => break e,
        }
    };
    assert!(matches!(refused, LimitError::ImportedRefBytes { max } if max == 64 * 1024));
    assert!(imports.bytes() <= 64 * 1024);
    assert!(!imports.may_rebind(next), "the refused path is not kept");
    assert_eq!(meter.refusals(), 1);
    assert_eq!(
        imports.get(id).unwrap().actor(),
        &local.to_any(),
        "the rest is intact"
    );
    drop(imports);
    assert_eq!(
        meter.bytes(),
        0,
        "a closed connection's bytes leave the total"
    );
    rt.block_on(system.terminate());
}
