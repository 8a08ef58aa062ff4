//! Cases ported from Pekko's specs of actor paths, lookup by path and ref
//! identity, in volley's API: `ActorPath::parse`, `ActorSystem::lookup`
//! (Pekko's `actorFor`) and `ActorSystem::identify` (`Identify`,
//! `resolveOne`). Each test names the case it ports. From `ActorPathSpec`:
//! parsing a path's string form and an address alone, malformed paths,
//! `toString`, path elements, `toStringWithoutAddress`, validating names,
//! `toStringWithAddress`, path separators in a name ("support parsing
//! remote paths" is `full_paths_parse_with_and_without_authority` in
//! `src/actor/path.rs`). From `RelativeActorPathSpec`: URL-encoded names. From
//! `ActorSelectionSpec` / `ActorLookupSpec`: lookup by full and by
//! root-anchored path, from the system and from inside a handler,
//! incarnations at one path, the guardians, non-existing paths, sending
//! through a looked-up ref, `resolveOne`. From `ActorRefSpec`: a ref
//! resolved from its path is the same ref, a dead actor's path, children
//! by name. From typed `ActorRefResolverSpec`: a path of another system.
//!
//! Not ported, for want of the feature: relative lookups (`"user/c1"`,
//! `".."`, `""`: volley wants a path anchored at `/` or `volley://` and
//! says so with `PathError::Invalid`), wildcards and `ActorSelection`
//! objects (sending, forwarding, comparing, printing), `/system`,
//! `/deadLetters` and `/temp` as lookup targets, a `#uid` fragment, the
//! `akka://` scheme, and host-name character checks (volley-remote's
//! `Address` owns those). A path of another system is an error here,
//! where Pekko answers "nobody".

use crate::common;

use std::hash::{BuildHasher, BuildHasherDefault, DefaultHasher, Hash};
use std::time::Duration;

use volley::{
    ActorPath, ActorRef, ActorSystem, AnyRef, PathError, Props, ReplyTo, SpawnError, SystemError,
};
use volley_testkit::{actor_fn, FnActor, TestProbe};

const T: Duration = Duration::from_secs(10);

enum NodeMsg {
    Create(String, ReplyTo<Result<AnyRef, SpawnError>>),
    Lookup(String, ReplyTo<Result<Option<AnyRef>, PathError>>),
    HasChild(String, ReplyTo<bool>),
    Parent(ReplyTo<Option<AnyRef>>),
    Ping(ReplyTo<String>),
}

/// ActorSelectionSpec's `Node`: makes children, looks paths up from inside
/// its handler, and answers pings with its path.
fn node() -> Props<FnActor<NodeMsg>> {
    actor_fn(|ctx, msg: NodeMsg| {
        match msg {
            NodeMsg::Create(name, reply) => {
                reply.tell(ctx.spawn(&name, node()).map(|c| c.to_any()))
            }
            NodeMsg::Lookup(path, reply) => reply.tell(ctx.system().lookup(&path)),
            NodeMsg::HasChild(name, reply) => reply.tell(ctx.child(&name).is_some()),
            NodeMsg::Parent(reply) => reply.tell(ctx.parent().cloned()),
            NodeMsg::Ping(reply) => reply.tell(ctx.path().elements().to_string()),
        }
        Ok(())
    })
}

/// The spec's fixture: `/user/c1`, `/user/c2` and `/user/c2/c21`.
struct Tree {
    system: ActorSystem,
    c1: ActorRef<NodeMsg>,
    c2: ActorRef<NodeMsg>,
    c21: ActorRef<NodeMsg>,
}

impl Tree {
    async fn new(name: &str) -> Tree {
        let system = common::system(name).unwrap();
        let c1 = system.spawn("c1", node()).unwrap();
        let c2 = system.spawn("c2", node()).unwrap();
        let c21 = c2.ask(|r| NodeMsg::Create("c21".into(), r), T).await;
        let c21 = c21.unwrap().unwrap().downcast::<NodeMsg>().unwrap();
        Tree {
            system,
            c1,
            c2,
            c21,
        }
    }

    fn all(&self) -> [&ActorRef<NodeMsg>; 3] {
        [&self.c1, &self.c2, &self.c21]
    }

    fn find(&self, path: &str) -> Option<AnyRef> {
        self.system.lookup(path).unwrap()
    }

    /// The root guardian, found by its path.
    fn root(&self) -> AnyRef {
        self.find("/").expect("the root guardian")
    }
}

/// Asks `looker` to look `path` up from inside its handler.
async fn lookup_from(looker: &ActorRef<NodeMsg>, path: &str) -> Option<AnyRef> {
    looker
        .ask(|r| NodeMsg::Lookup(path.to_string(), r), T)
        .await
        .unwrap()
        .unwrap_or_else(|e| panic!("{path:?} was refused from {}: {e}", looker.path()))
}

fn is_other_system<T>(result: &Result<T, PathError>) -> bool {
    matches!(result, Err(PathError::OtherSystem { .. }))
}

fn hash_of(value: &impl Hash) -> u64 {
    BuildHasherDefault::<DefaultHasher>::default().hash_one(value)
}

/// ActorPathSpec, "support parsing its String rep".
#[volley_testkit::each_dispatcher]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_path_parses_back_from_its_string_form() {
    let tree = Tree::new("parse-back").await;
    let root = tree.root();
    let paths = [root.path(), tree.c1.path(), tree.c21.path()];
    for path in paths {
        let parsed = ActorPath::parse(&path.to_string()).unwrap();
        assert_eq!(&parsed, path);
        assert_eq!(hash_of(&parsed), hash_of(path));
    }
    tree.system.terminate().await;
}

/// ActorPathSpec, "support parsing AddressFromURIString": an address
/// alone is the root path of that node.
#[volley_testkit::each_dispatcher]
#[test]
fn an_address_alone_parses_as_the_root_path_of_its_node() {
    let parse = |p: &str| ActorPath::parse(p).unwrap();
    let root = parse("volley://my_sys@host:1234");
    assert_eq!(root.system(), "my_sys");
    assert_eq!(root.authority(), Some("host:1234"));
    assert_eq!(root.elements(), "/");
    assert_eq!(root.name(), "");
    assert_eq!(root.to_string(), "volley://my_sys@host:1234/");
    assert_eq!(root, parse("volley://my_sys@host:1234/"));
    let v6 = parse("volley://my_sys@[::1]:2552/user");
    assert_eq!(v6.authority(), Some("[::1]:2552"));
}

/// ActorPathSpec, "throw exception upon malformed paths": each is a
/// `PathError::Invalid` naming the input, from `parse` and from `lookup`.
#[volley_testkit::each_dispatcher]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn malformed_paths_are_errors_not_panics() {
    let system = common::system("malformed").unwrap();
    let a = system.spawn("a", node()).unwrap();
    let display = a.to_string(); // `path#uid`: not a path
    let bad = [
        "",
        "://hallo",
        "pekko://malformed/user",
        "volley://",
        "volley://malformed@:12/user",
        "volley://malformed@h:hd/user",
        "volley://malformed@h:/user",
        "volley://malformed@h:70000/user",
        "volley://malformed@h/user",
        "volley://malformed@[::1/user",
        "volley://l:1/b",
        "volley://malformed/user//a",
        "volley://malformed/user/a%zz",
        display.as_str(),
    ];
    for path in bad {
        let parsed = ActorPath::parse(path);
        assert!(
            matches!(&parsed, Err(PathError::Invalid { path: p, .. }) if p == path),
            "parse accepted {path:?}: {parsed:?}"
        );
        let text = parsed.unwrap_err().to_string();
        assert!(text.contains("invalid actor path"), "{text}");
        let looked = system.lookup(path);
        assert!(
            matches!(looked, Err(PathError::Invalid { .. })),
            "lookup accepted {path:?}: {looked:?}"
        );
    }
    assert_eq!(system.lookup(a.path().elements()).unwrap().unwrap(), a);
    system.terminate().await;
}

/// ActorPathSpec, "throw exception upon malformed paths" ("a://l:1/b"): a
/// system whose name holds `:` or `@` would make such a path, so it cannot
/// start; the name rule is Pekko's.
#[volley_testkit::each_dispatcher]
#[test]
fn system_names_that_would_make_ambiguous_paths_are_refused() {
    for bad in ["", "l:1", "a@b", "a.b", "a/b", "-a", "_a", "a b"] {
        match ActorSystem::new(bad) {
            Err(SystemError::InvalidName { name, .. }) => assert_eq!(name, bad),
            Err(other) => panic!("{bad:?}: unexpected error {other}"),
            Ok(system) => panic!("system {:?} started", system.name()),
        }
    }
}

/// ActorPathSpec, "create correct toString".
#[volley_testkit::each_dispatcher]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn paths_display_as_scheme_system_and_elements() {
    let system = common::system("mysys").unwrap();
    let foo = system.spawn("foo", node()).unwrap();
    let bar = foo.ask(|r| NodeMsg::Create("bar".into(), r), T).await;
    let bar = bar.unwrap().unwrap();
    let root = system.lookup("/").unwrap().unwrap();
    let user = system.lookup("/user").unwrap().unwrap();
    assert_eq!(root.path().to_string(), "volley://mysys/");
    assert_eq!(user.path().to_string(), "volley://mysys/user");
    assert_eq!(foo.path().to_string(), "volley://mysys/user/foo");
    assert_eq!(bar.path().to_string(), "volley://mysys/user/foo/bar");
    assert_eq!(format!("{:?}", bar.path()), "volley://mysys/user/foo/bar");
    system.terminate().await;
}

/// ActorPathSpec, "have correct path elements".
#[volley_testkit::each_dispatcher]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_path_lists_the_names_from_the_root_down() {
    let tree = Tree::new("elements").await;
    let names: Vec<&str> = tree.c21.path().elements()[1..].split('/').collect();
    assert_eq!(names, ["user", "c2", "c21"]);
    assert_eq!(tree.c21.path().name(), "c21");
    assert_eq!(tree.c2.path().name(), "c2");
    assert_eq!(tree.find("/user").unwrap().path().name(), "user");
    assert_eq!(tree.root().path().name(), "");
    tree.system.terminate().await;
}

/// ActorPathSpec, "create correct toStringWithoutAddress": `elements()`.
#[volley_testkit::each_dispatcher]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_path_without_its_system_is_its_elements() {
    let tree = Tree::new("no-address").await;
    assert_eq!(tree.root().path().elements(), "/");
    assert_eq!(tree.find("/user").unwrap().path().elements(), "/user");
    assert_eq!(tree.c2.path().elements(), "/user/c2");
    assert_eq!(tree.c21.path().elements(), "/user/c2/c21");
    tree.system.terminate().await;
}

/// ActorPathSpec, "validate path elements": an empty name says why.
#[volley_testkit::each_dispatcher]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_empty_name_is_refused_with_the_reason() {
    let tree = Tree::new("empty-name").await;
    let err = tree.system.spawn("", node()).unwrap_err();
    assert!(matches!(err, SpawnError::InvalidName { .. }), "{err:?}");
    assert!(err.to_string().contains("must not be empty"), "{err}");
    let from_actor = tree.c1.ask(|r| NodeMsg::Create(String::new(), r), T);
    let from_actor = from_actor.await.unwrap().unwrap_err();
    assert!(from_actor.to_string().contains("must not be empty"));
    tree.system.terminate().await;
}

/// ActorPathSpec, "create correct toStringWithAddress": a local path gets
/// the node's `host:port`; a path that has one keeps it.
#[volley_testkit::each_dispatcher]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_local_path_takes_an_authority_and_a_remote_one_keeps_its_own() {
    let system = common::system("mysys").unwrap();
    let foo = system.spawn("foo", node()).unwrap();
    let root = system.lookup("/").unwrap().unwrap();
    let user = system.lookup("/user").unwrap().unwrap();
    for host in ["aaa", "bb", "cccc"] {
        let at = format!("{host}:7355");
        let with = |p: &ActorPath| p.to_string_with_authority(&at);
        assert_eq!(with(root.path()), format!("volley://mysys@{at}/"));
        assert_eq!(with(user.path()), format!("volley://mysys@{at}/user"));
        assert_eq!(with(foo.path()), format!("volley://mysys@{at}/user/foo"));
    }
    for elements in ["/", "/user", "/user/foo"] {
        let remote = format!("volley://mysys@aaa:7355{elements}");
        let parsed = ActorPath::parse(&remote).unwrap();
        assert_eq!(parsed.to_string_with_authority("bb:7355"), remote);
    }
    system.terminate().await;
}

/// ActorPathSpec, "not allow path separators in RootActorPath's name": a
/// path is not a name, though a path whose last name is `*` parses.
#[volley_testkit::each_dispatcher]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_path_given_as_a_name_is_refused() {
    let system = common::system("mysys").unwrap();
    let err = system.spawn("/user/boom/*", node()).unwrap_err();
    assert!(matches!(err, SpawnError::InvalidName { .. }), "{err:?}");
    let star = ActorPath::parse("volley://mysys/user/boom/*").unwrap();
    assert_eq!(star.name(), "*");
    assert!(system.lookup("/user/boom/*").unwrap().is_none());
    system.terminate().await;
}

/// RelativeActorPathSpec, "match url encoded name": a URL-encoded string
/// (here a whole path) is a name, found again by the path it makes.
#[volley_testkit::each_dispatcher]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_url_encoded_name_is_a_valid_name() {
    let system = common::system("encoded").unwrap();
    let name = "volley%3A%2F%2FClusterSystem%40127.0.0.1%3A7355";
    let a = system.spawn(name, node()).unwrap();
    assert_eq!(a.path().name(), name);
    let found = system.lookup(&format!("/user/{name}")).unwrap();
    assert_eq!(found.unwrap(), a);
    let parsed = ActorPath::parse(&a.path().to_string()).unwrap();
    assert_eq!(&parsed, a.path());
    // '$' inside a name is fine; '%' must start an encoded byte.
    assert!(system.spawn("a$b", node()).is_ok());
    for bad in ["100%", "%2", "%g0"] {
        let err = system.spawn(bad, node()).unwrap_err();
        assert!(matches!(err, SpawnError::InvalidName { .. }), "{bad}");
    }
    system.terminate().await;
}

/// ActorSelectionSpec, "select actors by their path" and "... by their
/// string path representation": the full path.
#[volley_testkit::each_dispatcher]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_system_finds_actors_by_their_full_path() {
    let tree = Tree::new("full-path").await;
    for actor in tree.all() {
        let full = actor.path().to_string();
        assert_eq!(tree.find(&full).unwrap(), *actor);
        assert_eq!(tree.find(&format!("{full}/")).unwrap(), *actor);
    }
    tree.system.terminate().await;
}

/// ActorSelectionSpec, "select actors by their root-anchored relative
/// path": the elements alone, with or without a trailing `/`.
#[volley_testkit::each_dispatcher]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_system_finds_actors_by_their_root_anchored_path() {
    let tree = Tree::new("anchored").await;
    for actor in tree.all() {
        let elements = actor.path().elements();
        assert_eq!(tree.find(elements).unwrap(), *actor);
        assert_eq!(tree.find(&format!("{elements}/")).unwrap(), *actor);
    }
    tree.system.terminate().await;
}

/// ActorSelectionSpec, "take actor incarnation into account when comparing
/// actor references".
#[volley_testkit::each_dispatcher]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_new_actor_at_a_dead_actors_path_is_a_different_ref() {
    let system = common::system("incarnation").unwrap();
    let probe = TestProbe::<()>::new(&system);
    let a1 = system.spawn("abcdefg", node()).unwrap();
    probe.watch(&a1);
    a1.graceful_stop();
    probe.expect_terminated(&a1);
    assert!(system.lookup(a1.path().elements()).unwrap().is_none());
    // The name is freed when the guardian hears of the end.
    let mut a2 = None;
    common::eventually("the name to be free", || {
        a2 = system.spawn("abcdefg", node()).ok();
        a2.is_some()
    });
    let a2 = a2.unwrap();
    assert_eq!(a2.path(), a1.path());
    assert_eq!(a2.path().to_string(), a1.path().to_string());
    assert_ne!(a2, a1);
    assert_ne!(a2.to_any(), a1.to_any());
    assert_ne!(a2.to_string(), a1.to_string());
    assert_eq!(system.lookup(a1.path().elements()).unwrap().unwrap(), a2);
    probe.watch(&a2);
    a2.graceful_stop();
    probe.expect_terminated(&a2);
    system.terminate().await;
}

/// ActorSelectionSpec, "select system-generated actors": the root and
/// user guardians (volley has no `/system` guardian).
#[volley_testkit::each_dispatcher]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_system_finds_its_guardians() {
    let tree = Tree::new("guardians").await;
    let root = tree.root();
    let user = tree.find("/user").unwrap();
    assert_eq!(root.path().elements(), "/");
    assert_eq!(user.path().elements(), "/user");
    let parent = tree.c1.ask(NodeMsg::Parent, T).await.unwrap();
    assert_eq!(parent.unwrap(), user, "c1's parent is not /user");
    for (path, guardian) in [
        ("volley://guardians/", &root),
        ("volley://guardians", &root),
        ("/user/", &user),
        ("volley://guardians/user", &user),
        ("volley://guardians/user/", &user),
    ] {
        assert_eq!(&tree.find(path).unwrap(), guardian, "{path}");
    }
    tree.system.terminate().await;
}

/// ActorSelectionSpec, "return ActorIdentity(None) ... for non-existing
/// paths".
#[volley_testkit::each_dispatcher]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn paths_where_no_actor_lives_identify_as_nobody() {
    let tree = Tree::new("nobody").await;
    for path in [
        "/a/b/c",
        "/user/hallo",
        "volley://nobody/user/hallo",
        "/user/c2/c21/c211",
        "/deadLetters",
        "/deadLetters/",
        "/system",
        "/temp",
    ] {
        let id = tree.system.identify(path).await.unwrap();
        assert!(id.actor.is_none(), "{path} found {:?}", id.actor);
        assert_eq!(id.path, path);
    }
    let other = tree.system.identify("volley://all-systems/user").await;
    assert!(is_other_system(&other), "{other:?}");
    tree.system.terminate().await;
}

/// ActorSelectionSpec / ActorLookupSpec, "An ActorContext must select
/// actors by their path" and "... string path representation" and
/// "... root-anchored relative path": the same lookups from inside every
/// actor's handler, its own path included.
#[volley_testkit::each_dispatcher]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_actor_finds_every_actor_by_path_from_inside_its_handler() {
    let tree = Tree::new("from-inside").await;
    for looker in tree.all() {
        for target in tree.all() {
            let full = target.path().to_string();
            let elements = target.path().elements();
            let trailing = format!("{elements}/");
            for path in [&full, &format!("{full}/"), elements, &trailing] {
                let found = lookup_from(looker, path).await.unwrap();
                assert_eq!(found, *target, "{path} from {}", looker.path());
            }
        }
    }
    tree.system.terminate().await;
}

/// ActorSelectionSpec, "An ActorContext must find system-generated actors".
#[volley_testkit::each_dispatcher]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_actor_finds_the_guardians_from_inside_its_handler() {
    let tree = Tree::new("guardians-inside").await;
    let targets = [tree.root(), tree.find("/user").unwrap()];
    for looker in tree.all() {
        for target in &targets {
            let full = target.path().to_string();
            for path in [&full, &format!("{full}/"), target.path().elements()] {
                let found = lookup_from(looker, path).await.unwrap();
                assert_eq!(&found, target, "{path} from {}", looker.path());
            }
        }
    }
    tree.system.terminate().await;
}

/// ActorSelectionSpec, "An ActorContext must return ... ActorIdentity(None)
/// for non-existing paths".
#[volley_testkit::each_dispatcher]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_actor_gets_nobody_for_paths_where_no_actor_lives() {
    let tree = Tree::new("nobody-inside").await;
    for looker in tree.all() {
        let own = looker.path().to_string();
        for path in [
            "/a/b/c".to_string(),
            "/user/hallo".to_string(),
            format!("{own}/hallo"),
            format!("{own}/a/b"),
        ] {
            assert!(lookup_from(looker, &path).await.is_none(), "{path}");
        }
        let nobody = "volley://all-systems/Nobody".to_string();
        let other = looker.ask(|r| NodeMsg::Lookup(nobody, r), T).await.unwrap();
        assert!(is_other_system(&other), "{other:?}");
    }
    tree.system.terminate().await;
}

/// ActorSelectionSpec, "send messages to string path" / "... to actor
/// path": the ref a lookup gives delivers to that actor, once typed.
#[volley_testkit::each_dispatcher]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_looked_up_ref_delivers_to_the_actor_at_that_path() {
    let tree = Tree::new("deliver").await;
    for path in ["/user/c2/c21", "volley://deliver/user/c2/c21"] {
        let found = tree.find(path).unwrap();
        assert!(found.downcast::<String>().is_none(), "wrong protocol");
        let typed = found.downcast::<NodeMsg>().unwrap();
        assert_eq!(typed, tree.c21);
        let pong = typed.ask(NodeMsg::Ping, T).await.unwrap();
        assert_eq!(pong, "/user/c2/c21");
    }
    tree.system.terminate().await;
}

/// ActorSelectionSpec, "resolve one actor with explicit timeout" (and
/// "... implicit timeout"): `identify` answers what `lookup` does.
#[volley_testkit::each_dispatcher]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn identify_resolves_one_actor() {
    let tree = Tree::new("resolve-one").await;
    let id = tree.system.identify("/user/c2").await.unwrap();
    assert_eq!(id.path, "/user/c2");
    assert_eq!(id.actor.unwrap(), tree.c2);
    tree.system.terminate().await;
}

/// ActorSelectionSpec, "resolve non-existing with Failure": an identity
/// without an actor (a malformed path is the error).
#[volley_testkit::each_dispatcher]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn identify_of_a_missing_actor_has_no_actor() {
    let tree = Tree::new("resolve-none").await;
    let id = tree.system.identify("/user/none").await.unwrap();
    assert!(id.actor.is_none());
    assert!(tree.system.identify("user/none").await.is_err());
    tree.system.terminate().await;
}

/// ActorRefSpec, "be serializable using Java Serialization on local node":
/// a ref resolved from its path string is the very same ref.
#[volley_testkit::each_dispatcher]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_ref_resolved_from_its_path_is_the_same_ref() {
    let tree = Tree::new("same-ref").await;
    for actor in tree.all() {
        let back = tree.find(&actor.path().to_string()).unwrap();
        assert!(back.same_target(&actor.to_any()));
        assert_eq!(back, *actor);
        assert_eq!(back.uid(), actor.to_any().uid());
        assert_eq!(hash_of(&back), hash_of(actor));
        assert_eq!(back.to_string(), actor.to_string());
    }
    tree.system.terminate().await;
}

/// ActorRefSpec, "return EmptyLocalActorRef on deserialize if not present
/// in actor hierarchy": the path of a dead actor resolves to nobody, and
/// its old ref takes messages into dead letters.
#[volley_testkit::each_dispatcher]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_path_of_a_dead_actor_resolves_to_nobody() {
    let system = common::system("dead-ref").unwrap();
    let probe = TestProbe::<()>::new(&system);
    let r = system.spawn("non-existing", node()).unwrap();
    let path = r.path().to_string();
    assert!(system.lookup(&path).unwrap().is_some());
    system.stop(&r);
    probe.expect_terminated(&r);
    assert!(r.is_terminated());
    assert!(system.lookup(&path).unwrap().is_none());
    let before = system.dead_letter_count();
    let pongs = TestProbe::<String>::new(&system);
    r.tell(NodeMsg::Ping(pongs.actor_ref()));
    common::eventually("a dead letter", || system.dead_letter_count() > before);
    pongs.expect_no_msg(Duration::from_millis(100));
    system.terminate().await;
}

/// ActorRefSpec, "be able to check for existence of children".
#[volley_testkit::each_dispatcher]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_actor_can_check_whether_it_has_a_child_of_a_name() {
    let tree = Tree::new("children").await;
    let has = |name: &str| {
        let name = name.to_string();
        tree.c2.ask(move |r| NodeMsg::HasChild(name, r), T)
    };
    assert!(has("c21").await.unwrap());
    assert!(!has("whatnot").await.unwrap());
    let c1_has = tree.c1.ask(|r| NodeMsg::HasChild("c21".into(), r), T);
    assert!(!c1_has.await.unwrap());
    tree.system.terminate().await;
}

/// Typed ActorRefResolverSpec, "not allow serialization of ref originating
/// from other system": a path of one system does not resolve in another.
#[volley_testkit::each_dispatcher]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_path_of_another_system_does_not_resolve_here() {
    let sys1 = common::system("sys1").unwrap();
    let sys2 = common::system("sys2").unwrap();
    let ref1 = sys1.spawn("ref1", node()).unwrap();
    let path = ref1.path().to_string();
    assert!(path.starts_with("volley://sys1/"), "{path}");
    assert_eq!(sys1.lookup(&path).unwrap().unwrap(), ref1);
    match sys2.lookup(&path) {
        Err(PathError::OtherSystem {
            found, expected, ..
        }) => {
            assert_eq!(found, "sys1");
            assert_eq!(expected, "sys2");
        }
        other => panic!("sys2 resolved {path}: {other:?}"),
    }
    // The elements alone name a path in sys2, where nobody lives.
    assert!(sys2.lookup(ref1.path().elements()).unwrap().is_none());
    sys1.terminate().await;
    sys2.terminate().await;
}

/// A path is built from the parent's the first time it is asked for: an
/// anonymous grandchild asked before its parent ever was has the path an
/// eager build gives (the parent's and its own name), a unique name among
/// its siblings, and is found under that path.
#[volley_testkit::each_dispatcher]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_path_built_on_first_use_is_the_parents_path_and_the_name() {
    let system = common::system("lazy-path").unwrap();
    let parent = system
        .spawn_anonymous(actor_fn(|ctx, reply: ReplyTo<AnyRef>| {
            let child = ctx.spawn_anonymous(actor_fn(|_, ()| Ok(())))?;
            reply.tell(child.to_any());
            Ok(())
        }))
        .unwrap();
    let mut children = Vec::new();
    for _ in 0..30 {
        children.push(parent.ask(|r| r, T).await.unwrap());
    }
    let first = children[0].path().to_string();
    assert_eq!(
        first,
        format!("volley://lazy-path{}/$a", parent.path().elements())
    );
    let mut names = std::collections::HashSet::new();
    for child in &children {
        let path = child.path();
        assert!(names.insert(path.name().to_string()), "{path} twice");
        assert!(path.name().starts_with('$'));
        assert_eq!(
            path.elements(),
            format!("{}/{}", parent.path().elements(), path.name())
        );
        assert_eq!(&ActorPath::parse(&path.to_string()).unwrap(), path);
        assert_eq!(
            system.lookup(&path.to_string()).unwrap().as_ref(),
            Some(child)
        );
    }
    assert_eq!(names.len(), children.len());
    system.terminate().await;
}
