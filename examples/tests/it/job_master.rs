//! The job_master example's three cases, checked.

use std::time::{Duration, Instant};

use volley::{Actor, ActorRef, ActorSystem, Context, HandleResult, Props};
use volley_examples::job_master_logic::{
    all_succeed_job, poison_job, run_job, transient_failures_job, JobError, JobOutcome, Master,
    MasterMsg,
};

const T: Duration = Duration::from_secs(10);

fn eventually(what: &str, mut cond: impl FnMut() -> bool) {
    let deadline = Instant::now() + T;
    while !cond() {
        assert!(Instant::now() < deadline, "timed out waiting for {what}");
        std::thread::sleep(Duration::from_millis(2));
    }
}

/// Counts the answers it gets.
#[derive(Default)]
struct Client {
    answers: Vec<JobOutcome>,
}

enum ClientMsg {
    Answer(JobOutcome),
    Answers(ActorRef<Vec<JobOutcome>>),
}

impl Actor for Client {
    type Msg = ClientMsg;
    fn handle(&mut self, _ctx: &mut Context<Self>, msg: ClientMsg) -> HandleResult {
        match msg {
            ClientMsg::Answer(a) => self.answers.push(a),
            ClientMsg::Answers(reply) => reply.tell(self.answers.clone()),
        }
        Ok(())
    }
}

/// Forwards answers into the client's protocol.
struct Relay(ActorRef<ClientMsg>);

impl Actor for Relay {
    type Msg = JobOutcome;
    fn handle(&mut self, _ctx: &mut Context<Self>, msg: JobOutcome) -> HandleResult {
        self.0.tell(ClientMsg::Answer(msg));
        Ok(())
    }
}

/// Waits (by polling the lookup) until the master has stopped, then checks
/// that its router and workers are gone too.
async fn nothing_left_eventually(system: &ActorSystem, master: &str) {
    for _ in 0..5000 {
        let id = system.identify(&format!("/user/{master}")).await.unwrap();
        if id.actor.is_none() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(2)).await;
    }
    nothing_left(system, master, 4).await;
}

/// Nothing of the master is left: not it, its router, nor any worker.
async fn nothing_left(system: &ActorSystem, master: &str, workers: usize) {
    let mut paths = vec![format!("/user/{master}"), format!("/user/{master}/workers")];
    for i in 0..workers {
        let name = (b'a' + i as u8) as char;
        paths.push(format!("/user/{master}/workers/${name}"));
    }
    for path in paths {
        let id = system.identify(&path).await.unwrap();
        assert!(id.actor.is_none(), "{path} is still alive");
    }
}

#[tokio::test]
async fn all_tasks_succeed_with_exactly_one_aggregated_answer() {
    let system = ActorSystem::new("jobs-ok").unwrap();
    let client = system.spawn("client", Props::new(Client::default)).unwrap();
    let relay_target = client.clone();
    let relay = system
        .spawn("relay", Props::new(move || Relay(relay_target.clone())))
        .unwrap();
    let master = system.spawn("master", Master::props(4)).unwrap();
    master.tell(MasterMsg::Run(all_succeed_job(), relay));
    eventually("master stopped", || master.is_terminated());
    // The master answers before it stops, so no answer can come after this
    // point; the relay may still be forwarding it: wait for it, then count.
    let mut answers = Vec::new();
    for _ in 0..1000 {
        answers = client.ask(ClientMsg::Answers, T).await.unwrap();
        if !answers.is_empty() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(2)).await;
    }
    assert_eq!(answers.len(), 1, "exactly one answer: {answers:?}");
    let report = answers[0].clone().unwrap();
    assert_eq!(report.results.len(), 8);
    assert_eq!(report.total, (1..=8u64).map(|i| i * i).sum::<u64>());
    assert_eq!(report.retries, 0);
    nothing_left(&system, "master", 4).await;
    system.terminate().await;
}

#[tokio::test]
async fn transient_failures_are_retried_and_succeed() {
    let system = ActorSystem::new("jobs-flaky").unwrap();
    let outcome = run_job(&system, "master", 4, transient_failures_job())
        .await
        .unwrap();
    let report = outcome.unwrap();
    assert_eq!(report.results.len(), 8);
    assert_eq!(report.results[&3], 9);
    assert_eq!(report.results[&6], 36);
    assert_eq!(report.retries, 2);
    nothing_left_eventually(&system, "master").await;
    system.terminate().await;
}

#[tokio::test]
async fn a_poison_task_stops_its_worker_and_aborts_the_job_leaving_nothing_behind() {
    let system = ActorSystem::new("jobs-poison").unwrap();
    let outcome = run_job(&system, "master", 4, poison_job()).await.unwrap();
    let error = outcome.unwrap_err();
    match &error {
        JobError::Aborted {
            job_id,
            task_id,
            worker,
            failures,
            ..
        } => {
            assert_eq!(*job_id, 3);
            assert_eq!(*task_id, Some(6));
            assert_eq!(*failures, 3, "first try and 2 retries");
            assert!(worker.contains("/user/master/workers/$"), "{worker}");
        }
        other => panic!("unexpected {other:?}"),
    }
    let text = error.to_string();
    assert!(text.contains("task 6 failed 3 times"), "{text}");
    nothing_left_eventually(&system, "master").await;
    system.terminate().await;
}
