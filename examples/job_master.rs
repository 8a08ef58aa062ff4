//! "Watch the routees": a master runs jobs on a round-robin pool of workers
//! that retry failed tasks, and aborts a job when a worker gives up.
//! The logic is in `job_master_logic.rs`; this prints the three outcomes.
//!
//! `cargo run --example job_master`

use volley::ActorSystem;
use volley_examples::job_master_logic::{
    all_succeed_job, poison_job, run_job, transient_failures_job, JobOutcome,
};

fn show(case: &str, outcome: &JobOutcome) {
    match outcome {
        Ok(report) => println!(
            "{case}: job {} done, total {} from {} tasks, {} retries",
            report.job_id,
            report.total,
            report.results.len(),
            report.retries
        ),
        Err(error) => println!("{case}: {error}"),
    }
}

#[tokio::main]
async fn main() {
    let system = ActorSystem::new("jobs").expect("system starts");
    let cases = [
        ("all tasks succeed", "master-ok", all_succeed_job()),
        (
            "transient failures",
            "master-flaky",
            transient_failures_job(),
        ),
        ("a poison task", "master-poison", poison_job()),
    ];
    let mut expected = true;
    for (case, name, job) in cases {
        let outcome = run_job(&system, name, 4, job)
            .await
            .expect("the master answers");
        show(case, &outcome);
        expected &= outcome.is_ok() == (name != "master-poison");
    }
    system.terminate().await;
    if !expected {
        eprintln!("unexpected outcome");
        std::process::exit(1);
    }
}
