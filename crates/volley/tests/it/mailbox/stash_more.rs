//! Stash cases from Pekko's specs that `stash.rs` does not already cover,
//! in volley's API (the stash is the actor's, on its `Context`; a typed
//! `StashBuffer`'s behaviors become the actor's state). From the classic
//! `ActorWithStashSpec` (actor-tests): "support protocols" and
//! "re-receive unstashed Terminated messages" (as a `watch_with` message).
//! From the typed `StashBufferSpec`: "answer empty correctly", "append and
//! drop", "be able to stash while unstashing" and "unstash at most the
//! number of messages in the buffer". From the typed `StashSpec`: "support
//! unstash a few at a time", and `UnstashingSpec`'s "work with
//! Behaviors.same when switching Behavior while unstashing one", "signal
//! PostStop to the latest unstashed behavior on failure" (with stop
//! supervision), "signal PreRestart to the latest unstashed behavior on
//! failure" (restart and backoff supervision), "handle resume correctly on
//! failure unstashing", "deal with initial stop" and "deal with stop".
//!
//! Where volley differs (docs/reference/stash.md): `unstash` and
//! `unstash_all` hand the messages back to the mailbox's front at once, as
//! Pekko classic's `unstashAll` does, rather than running them through the
//! behavior inside the call as a typed `StashBuffer` does. So when a
//! handler fails partway, the messages handed back and not yet handled are
//! not in the stash any more: the resumed or restarted actor gets them
//! next, where Pekko typed leaves them in the buffer (resume) or loses
//! them with it (restart).
//!
//! Not ported: stashing "the same message twice" (`stash` takes the
//! message by value, so the compiler rules it out); `StashBuffer`'s
//! `head`, `foreach`, `exists`, `contains`, `clear` and `capacity` (volley
//! offers `stash_len` only); and the cases about `Behaviors.same`,
//! `setup`, unhandled messages and the restart supervisor's own stash,
//! which have no counterpart in an actor with one state.

use crate::common;

use std::time::Duration;

use common::eventually;
use common::pekko::{child, supervisor};
use volley::{
    Actor, ActorError, ActorRef, Context, Directive, Failure, HandleResult, Props,
    SupervisorStrategy,
};
use volley_testkit::{actor_fn_with, TestProbe};

/// "support protocols": the second "open", stashed while open, is handled
/// once closed again, so the last "write" is written, not stashed.
#[volley_testkit::each_dispatcher]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_protocol_of_stash_and_unstash_across_states_handles_everything() {
    let system = common::system("pstash-protocol").unwrap();
    let probe = TestProbe::<String>::new(&system);
    let to = probe.actor_ref();
    // Pekko's `ActorWithProtocol`: while closed it stashes everything but
    // "open" and "done"; while open it writes, and stashes everything but
    // "write" and "close". Each change of state hands the stash back.
    let protocol = actor_fn_with(false, move |open, ctx, msg: &'static str| {
        match (*open, msg) {
            (false, "open") | (true, "close") => {
                *open = !*open;
                ctx.unstash_all();
            }
            (false, "done") => to.tell(format!("done, {} stashed", ctx.stash_len())),
            (true, "write") => to.tell("write".into()),
            _ => ctx.stash(msg)?,
        }
        Ok(())
    });
    let a = system.spawn("a", protocol.props()).unwrap();
    for msg in ["open", "write", "open", "close", "write", "close", "done"] {
        a.tell(msg);
    }
    assert_eq!(probe.receive_n(2), vec!["write", "write"]);
    probe.expect_msg("done, 0 stashed".to_string());
    system.terminate().await;
}

struct ChildTerminated;

/// "re-receive unstashed Terminated messages": a termination delivered as
/// a message can be stashed and comes back like any other.
#[volley_testkit::each_dispatcher]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stashed_termination_message_is_received_again() {
    let system = common::system("pstash-terminated").unwrap();
    let probe = TestProbe::<String>::new(&system);
    let to = probe.actor_ref();
    // Watches a child with `watch_with`, stops it, and stashes and
    // unstashes the termination the first time it sees it.
    let watcher = actor_fn_with(false, move |stashed, ctx, msg: ChildTerminated| {
        if !*stashed {
            *stashed = true;
            ctx.stash(msg)?;
            ctx.unstash_all();
        }
        to.tell("terminated".into());
        Ok(())
    })
    .on_start(|_, ctx| {
        let watched = ctx.spawn("watched", Props::new(FewAtATime::default))?;
        ctx.watch_with(&watched, ChildTerminated);
        ctx.stop(&watched);
        Ok(())
    });
    system.spawn("a", watcher.props()).unwrap();
    expect_all(&probe, "terminated terminated");
    probe.expect_no_msg(Duration::from_millis(100));
    system.terminate().await;
}

type Job = Box<dyn FnOnce(&mut Buf, &mut Context<Buf>) -> HandleResult + Send>;

/// A word, stashed while the actor is stashing and otherwise handled by
/// the test's rule; or a job run on the actor.
enum Word {
    W(&'static str),
    Run(Job),
}

fn run(job: impl FnOnce(&mut Buf, &mut Context<Buf>) -> HandleResult + Send + 'static) -> Word {
    Word::Run(Box::new(job))
}

type Rule = fn(&mut Buf, &mut Context<Buf>, &'static str) -> HandleResult;

/// The typed specs' buffer and behavior: `seen` is the state a behavior
/// would carry from one message to the next.
struct Buf {
    to: ActorRef<String>,
    stashing: bool,
    seen: String,
    rule: Rule,
}

impl Buf {
    fn tell(&self, what: impl Into<String>) {
        self.to.tell(what.into());
    }
}

impl Actor for Buf {
    type Msg = Word;
    fn handle(&mut self, ctx: &mut Context<Self>, msg: Word) -> HandleResult {
        match msg {
            Word::W(w) if self.stashing => ctx.stash(Word::W(w))?,
            Word::W(w) => (self.rule)(self, ctx, w)?,
            Word::Run(job) => job(self, ctx)?,
        }
        Ok(())
    }
}

/// A `Buf` that starts stashing, with `rule`, reporting to a new probe.
fn buf(system: &volley::ActorSystem, rule: Rule) -> (TestProbe<String>, ActorRef<Word>) {
    let probe = TestProbe::<String>::new(system);
    let to = probe.actor_ref();
    let a = system
        .spawn_anonymous(Props::new(move || Buf {
            to: to.clone(),
            stashing: true,
            seen: String::new(),
            rule,
        }))
        .unwrap();
    (probe, a)
}

/// Reports the stash's length.
fn len() -> Word {
    run(|b, ctx| {
        b.tell(format!("len={}", ctx.stash_len()));
        Ok(())
    })
}

/// Stops stashing and hands back at most `n`, reporting how many.
fn unstash(n: usize) -> Word {
    run(move |b, ctx| {
        b.stashing = false;
        b.tell(format!("unstashed={}", ctx.unstash(n)));
        Ok(())
    })
}

/// The specs' behavior: "get" reports what was seen, any other word is
/// appended to it.
fn append(b: &mut Buf, _ctx: &mut Context<Buf>, w: &'static str) -> HandleResult {
    if w == "get" {
        b.tell(b.seen.clone());
    } else {
        b.seen.push_str(w);
    }
    Ok(())
}

/// "answer empty correctly" and "append and drop": the length follows
/// what is stashed and handed back; handing back from an empty stash
/// hands back nothing.
#[volley_testkit::each_dispatcher]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_stash_length_follows_stash_and_unstash() {
    let system = common::system("pstash-len").unwrap();
    let (probe, a) = buf(&system, append);
    a.tell(len());
    probe.expect_msg("len=0".to_string());
    a.tell(Word::W("m1"));
    a.tell(Word::W("m2"));
    a.tell(len());
    probe.expect_msg("len=2".to_string());
    for left in [1, 0] {
        a.tell(unstash(1));
        probe.expect_msg("unstashed=1".to_string());
        a.tell(len());
        probe.expect_msg(format!("len={left}"));
    }
    a.tell(unstash(1));
    probe.expect_msg("unstashed=0".to_string());
    a.tell(Word::W("get"));
    probe.expect_msg("m1m2".to_string());
    system.terminate().await;
}

/// "be able to stash while unstashing": a message stashed again while
/// being handed back stays stashed; it is not handed back again by the
/// same `unstash_all`.
#[volley_testkit::each_dispatcher]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_message_stashed_again_while_unstashing_stays_stashed() {
    fn restash_m2(b: &mut Buf, ctx: &mut Context<Buf>, w: &'static str) -> HandleResult {
        match w {
            "m2" => Ok(ctx.stash(Word::W("m2"))?),
            _ => append(b, ctx, w),
        }
    }
    let system = common::system("pstash-restash").unwrap();
    let (probe, a) = buf(&system, restash_m2);
    for w in ["m1", "m2", "m3", "get"] {
        a.tell(Word::W(w));
    }
    a.tell(unstash(usize::MAX));
    a.tell(len());
    expect_all(&probe, "unstashed=4 m1m3 len=1");
    // Handing back again hands back "m2", which stashes itself again.
    a.tell(unstash(usize::MAX));
    a.tell(len());
    expect_all(&probe, "unstashed=1 len=1");
    system.terminate().await;
}

/// "unstash at most the number of messages in the buffer": `unstash(20)`
/// hands back the four stashed; the two stashed while they are handled
/// wait for the next call.
#[volley_testkit::each_dispatcher]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn unstash_hands_back_only_what_was_stashed_when_called() {
    fn m2_stashes_more(b: &mut Buf, ctx: &mut Context<Buf>, w: &'static str) -> HandleResult {
        if w == "m2" {
            ctx.stash(Word::W("m4"))?;
            ctx.stash(Word::W("get"))?;
            return Ok(());
        }
        append(b, ctx, w)
    }
    let system = common::system("pstash-at-most").unwrap();
    let (probe, a) = buf(&system, m2_stashes_more);
    for w in ["m1", "m2", "m3", "get"] {
        a.tell(Word::W(w));
    }
    a.tell(unstash(20));
    a.tell(len());
    expect_all(&probe, "unstashed=4 m1m3 len=2");
    a.tell(unstash(20));
    a.tell(len());
    expect_all(&probe, "unstashed=2 m1m3m4 len=0");
    system.terminate().await;
}

/// "work with Behaviors.same when switching Behavior while unstashing
/// one": each handed-back message hands back the next one; the rest stay
/// ahead of a message that arrived meanwhile.
#[volley_testkit::each_dispatcher]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn unstashing_one_at_a_time_from_the_handler_keeps_the_order() {
    fn one_by_one(b: &mut Buf, ctx: &mut Context<Buf>, w: &'static str) -> HandleResult {
        b.tell(w);
        ctx.unstash(1);
        Ok(())
    }
    let system = common::system("pstash-one-by-one").unwrap();
    let (probe, a) = buf(&system, one_by_one);
    for w in ["a", "b1", "b2"] {
        a.tell(Word::W(w));
    }
    a.tell(unstash(1));
    a.tell(Word::W("late"));
    probe.expect_msg("unstashed=1".to_string());
    assert_eq!(probe.receive_n(4), vec!["a", "b1", "b2", "late"]);
    system.terminate().await;
}

enum Cmd {
    Msg(&'static str),
    Stash,
    Unstash,
    GetStashSize(ActorRef<usize>),
    GetProcessed(ActorRef<Vec<&'static str>>),
}

/// The typed `StashSpec`'s actor: stashes after `Stash`; `Unstash` hands
/// back two at a time and sends itself `Unstash` until the stash is
/// empty, stashing whatever new arrives meanwhile. The two handed back
/// are the next two handled (they go to the front of the mailbox), which
/// is how it tells them from new arrivals (Pekko wraps them instead).
#[derive(Default)]
struct FewAtATime {
    stashing: bool,
    handed_back: usize,
    processed: Vec<&'static str>,
}

impl Actor for FewAtATime {
    type Msg = Cmd;
    fn handle(&mut self, ctx: &mut Context<Self>, cmd: Cmd) -> HandleResult {
        let handed_back = self.handed_back > 0;
        self.handed_back = self.handed_back.saturating_sub(1);
        match cmd {
            Cmd::Stash => self.stashing = true,
            Cmd::GetStashSize(reply) => reply.tell(ctx.stash_len()),
            Cmd::Msg(_) | Cmd::GetProcessed(_) if self.stashing && !handed_back => {
                ctx.stash(cmd)?
            }
            Cmd::Msg(m) => self.processed.push(m),
            Cmd::GetProcessed(reply) => reply.tell(self.processed.clone()),
            Cmd::Unstash if ctx.stash_len() == 0 => self.stashing = false,
            Cmd::Unstash => {
                self.handed_back = ctx.unstash(2);
                ctx.myself().tell(Cmd::Unstash);
            }
        }
        Ok(())
    }
}

/// `StashSpec` "support unstash a few at a time": handing back two at a
/// time, with new messages arriving in between, keeps the order.
#[volley_testkit::each_dispatcher]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn unstashing_a_few_at_a_time_keeps_newer_messages_behind() {
    let system = common::system("pstash-few").unwrap();
    let sizes = TestProbe::<usize>::new(&system);
    let processed = TestProbe::<Vec<&'static str>>::new(&system);
    let a = system.spawn("a", Props::new(FewAtATime::default)).unwrap();
    for m in ["a", "b", "c"] {
        a.tell(Cmd::Msg(m));
    }
    a.tell(Cmd::Stash);
    for m in ["d", "e", "f"] {
        a.tell(Cmd::Msg(m));
    }
    a.tell(Cmd::GetStashSize(sizes.actor_ref()));
    sizes.expect_msg(3);
    a.tell(Cmd::Unstash);
    a.tell(Cmd::Msg("g"));
    a.tell(Cmd::GetProcessed(processed.actor_ref()));
    processed.expect_msg(vec!["a", "b", "c", "d", "e", "f", "g"]);
    a.tell(Cmd::GetStashSize(sizes.actor_ref()));
    sizes.expect_msg(0);
    system.terminate().await;
}

/// `UnstashingSpec`'s `stashingBehavior`: stashes "stash…" messages until
/// "unstash"; from then on (`Some(n)`) counts each "stash" handed back and
/// fails on "stash-fail". Its hooks report the count they see.
struct Unstasher {
    to: ActorRef<String>,
    count: Option<u32>,
}

impl Unstasher {
    fn props(to: &ActorRef<String>) -> Props<Unstasher> {
        let to = to.clone();
        Props::new(move || Unstasher {
            to: to.clone(),
            count: None,
        })
    }

    fn tell(&self, what: impl Into<String>) {
        self.to.tell(what.into());
    }

    fn current(&self) -> String {
        self.count.map_or("00".into(), |n| n.to_string())
    }
}

impl Actor for Unstasher {
    type Msg = &'static str;
    fn handle(&mut self, ctx: &mut Context<Self>, msg: &'static str) -> HandleResult {
        match (self.count, msg) {
            (None, m) if m.starts_with("stash") => ctx.stash(m)?,
            (None, "unstash") => {
                self.count = Some(0);
                ctx.unstash_all();
            }
            (Some(n), "stash") => {
                self.tell(format!("unstashing-{n}"));
                self.count = Some(n + 1);
            }
            (Some(n), "stash-fail") => {
                self.tell(format!("stash-fail-{n}"));
                return Err(ActorError::new("unstash-fail on purpose"));
            }
            (Some(_), "unstash") => {
                ctx.unstash_all();
            }
            (_, "get-current") => self.tell(format!("current-{}", self.current())),
            (_, "get-stash-size") => self.tell(format!("stash-size-{}", ctx.stash_len())),
            (_, other) => panic!("unexpected {other}"),
        }
        Ok(())
    }
    fn pre_restart(&mut self, _ctx: &mut Context<Self>, _f: &Failure, _m: Option<&'static str>) {
        self.tell(format!("pre-restart-{}", self.current()));
    }
    fn post_stop(&mut self, _ctx: &mut Context<Self>) {
        self.tell(format!("post-stop-{}", self.current()));
    }
}

/// Sends each word of `msgs`.
fn send_all(to: &ActorRef<&'static str>, msgs: &'static str) {
    msgs.split_whitespace().for_each(|m| to.tell(m));
}

/// Expects each word of `expected`, in order.
fn expect_all(probe: &TestProbe<String>, expected: &str) {
    for e in expected.split_whitespace() {
        probe.expect_msg(e.to_string());
    }
}

/// A supervisor whose decider says `directive` to every failure.
fn deciding(system: &volley::ActorSystem, directive: Directive) -> ActorRef<common::pekko::SupMsg> {
    supervisor(
        system,
        SupervisorStrategy::one_for_one().with_decider(move |_| directive),
    )
}

/// "signal PostStop to the latest unstashed behavior on failure with stop
/// supervision": `post_stop` sees the state the last handled message left;
/// what was handed back and not handled goes to dead letters.
#[volley_testkit::each_dispatcher]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failure_while_unstashing_under_stop_stops_with_the_latest_state() {
    common::quiet_deliberate_panics();
    let system = common::system("pstash-fail-stop").unwrap();
    let probe = TestProbe::<String>::new(&system);
    let sup = deciding(&system, Directive::Stop);
    let a = child(&sup, Unstasher::props(&probe.actor_ref())).await;
    send_all(&a, "stash stash stash-fail stash");
    let dead_before = system.dead_letter_count();
    a.tell("unstash");
    expect_all(&probe, "unstashing-0 unstashing-1 stash-fail-2 post-stop-2");
    eventually("the last stash is a dead letter", || {
        system.dead_letter_count() - dead_before == 1
    });
    system.terminate().await;
}

/// "signal PreRestart to the latest unstashed behavior on failure with
/// restart supervision" (and "... with backoff supervision"):
/// `pre_restart` sees the latest state and the new instance starts
/// afresh. Unlike Pekko typed, the message handed back and not handled is
/// not lost: the new instance gets it (and stashes it again).
#[volley_testkit::each_dispatcher]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failure_while_unstashing_under_restart_restarts_from_the_latest_state() {
    common::quiet_deliberate_panics();
    let system = common::system("pstash-fail-restart").unwrap();
    let p = TestProbe::<String>::new(&system);
    let backoff = SupervisorStrategy::restart_with_backoff(
        Duration::from_millis(10),
        Duration::from_millis(10),
        0.0,
    );
    for strategy in [SupervisorStrategy::one_for_one(), backoff] {
        let sup = supervisor(&system, strategy);
        let a = child(&sup, Unstasher::props(&p.actor_ref())).await;
        send_all(&a, "stash stash stash-fail stash");
        send_all(&a, "unstash get-current get-stash-size");
        expect_all(&p, "unstashing-0 unstashing-1 stash-fail-2");
        expect_all(&p, "pre-restart-2 current-00 stash-size-1");
    }
    system.terminate().await;
}

/// "handle resume correctly on failure unstashing": the resumed actor
/// keeps its state. Unlike Pekko typed, which leaves the messages after
/// the failing one in the buffer until the next `unstashAll`, volley had
/// handed them all back already: the actor handles them next.
#[volley_testkit::each_dispatcher]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failure_while_unstashing_under_resume_goes_on_with_the_rest() {
    common::quiet_deliberate_panics();
    let system = common::system("pstash-fail-resume").unwrap();
    let p = TestProbe::<String>::new(&system);
    let sup = deciding(&system, Directive::Resume);
    let a = child(&sup, Unstasher::props(&p.actor_ref())).await;
    send_all(&a, "stash stash stash-fail stash");
    send_all(&a, "stash stash stash-fail stash");
    send_all(&a, "unstash get-current get-stash-size");
    expect_all(&p, "unstashing-0 unstashing-1 stash-fail-2");
    expect_all(&p, "unstashing-2 unstashing-3 unstashing-4");
    expect_all(&p, "stash-fail-5 unstashing-5 current-6");
    expect_all(&p, "stash-size-0");
    system.terminate().await;
}

/// "deal with initial stop": an actor that hands back its stash and stops
/// in the same handler stops; what it handed back goes to dead letters.
#[volley_testkit::each_dispatcher]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn unstashing_and_stopping_at_once_stops_and_dead_letters_the_stash() {
    let system = common::system("pstash-initial-stop").unwrap();
    let (probe, a) = buf(&system, append);
    let watcher = TestProbe::<String>::new(&system);
    watcher.watch(&a);
    a.tell(Word::W("one"));
    a.tell(len());
    probe.expect_msg("len=1".to_string());
    let dead_before = system.dead_letter_count();
    a.tell(run(|b, ctx| {
        b.stashing = false;
        ctx.unstash_all();
        ctx.stop_self();
        Ok(())
    }));
    watcher.expect_terminated(&a);
    eventually("one dead letter", || {
        system.dead_letter_count() - dead_before == 1
    });
    probe.expect_no_msg(Duration::from_millis(100));
    system.terminate().await;
}

/// "deal with stop": the first message handed back stops the actor; the
/// second goes to dead letters.
#[volley_testkit::each_dispatcher]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn stopping_while_handling_an_unstashed_message_dead_letters_the_rest() {
    fn report_and_stop(b: &mut Buf, ctx: &mut Context<Buf>, w: &'static str) -> HandleResult {
        b.tell(w);
        ctx.stop_self();
        Ok(())
    }
    let system = common::system("pstash-stop").unwrap();
    let (probe, a) = buf(&system, report_and_stop);
    let watcher = TestProbe::<String>::new(&system);
    watcher.watch(&a);
    a.tell(Word::W("one"));
    a.tell(Word::W("two"));
    a.tell(len());
    probe.expect_msg("len=2".to_string());
    let dead_before = system.dead_letter_count();
    a.tell(unstash(usize::MAX));
    expect_all(&probe, "unstashed=2 one");
    watcher.expect_terminated(&a);
    eventually("one dead letter", || {
        system.dead_letter_count() - dead_before == 1
    });
    probe.expect_no_msg(Duration::from_millis(100));
    system.terminate().await;
}
