//! Progress on stderr: an indicatif bar on a terminal, plain lines otherwise
//! (so logs of non-interactive runs still show what is going on).

use std::io::IsTerminal;
use std::time::Duration;

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};

/// Steps of a scenario, shown on stderr.
pub struct Progress {
    bar: Option<ProgressBar>,
    step: std::cell::Cell<u64>,
    total: std::cell::Cell<u64>,
}

impl Progress {
    /// A progress display for `total` steps.
    pub fn new(total: u64) -> Self {
        let bar = std::io::stderr().is_terminal().then(|| {
            let bar = ProgressBar::with_draw_target(Some(total), ProgressDrawTarget::stderr());
            bar.set_style(
                ProgressStyle::with_template(
                    "{spinner} [{elapsed_precise}] {bar:30} {pos}/{len} {wide_msg}",
                )
                .expect("valid template"),
            );
            bar.enable_steady_tick(Duration::from_millis(120));
            bar
        });
        Progress {
            bar,
            step: 0.into(),
            total: total.into(),
        }
    }

    /// Adds `n` steps to the total.
    pub fn add_steps(&self, n: u64) {
        self.total.set(self.total.get() + n);
        if let Some(bar) = &self.bar {
            bar.inc_length(n);
        }
    }

    /// Starts the next step.
    pub fn start(&self, what: &str) {
        match &self.bar {
            Some(bar) => bar.set_message(what.to_string()),
            None => eprintln!(
                "[{}/{}] {what}",
                self.step.get() + 1,
                self.total.get().max(self.step.get() + 1)
            ),
        }
    }

    /// Finishes the current step.
    pub fn done(&self) {
        self.step.set(self.step.get() + 1);
        if let Some(bar) = &self.bar {
            bar.inc(1);
        }
    }

    /// A line on stderr that stays (above the bar).
    pub fn note(&self, line: &str) {
        match &self.bar {
            Some(bar) => bar.println(line),
            None => eprintln!("{line}"),
        }
    }

    /// Runs `f` (e.g. a build writing to stderr) with the bar hidden.
    pub fn suspend<R>(&self, f: impl FnOnce() -> R) -> R {
        match &self.bar {
            Some(bar) => bar.suspend(f),
            None => f(),
        }
    }

    /// Removes the bar.
    pub fn finish(&self) {
        if let Some(bar) = &self.bar {
            bar.finish_and_clear();
        }
    }
}

impl Drop for Progress {
    fn drop(&mut self) {
        self.finish();
    }
}
