//! Timed steps: every long command prints how long each of its steps took,
//! as it goes and as one table at the end, so a slow run says where its time
//! went.

use std::time::{Duration, Instant};

/// A step running on a thread of its own.
pub struct Alongside<T> {
    name: String,
    thread: std::thread::JoinHandle<(Result<T, String>, Duration)>,
}

impl<T> Alongside<T> {
    /// Waits for the step and records it in `steps`.
    pub fn finish(self, steps: &mut Steps) -> Result<T, String> {
        let (result, took) = self
            .thread
            .join()
            .unwrap_or_else(|_| (Err(format!("{} panicked", self.name)), Duration::ZERO));
        println!(
            "== step: {}: {} in {:.1} s",
            self.name,
            if result.is_ok() { "done" } else { "FAILED" },
            took.as_secs_f64()
        );
        steps.done.push((self.name, took, result.is_ok()));
        result
    }
}

#[derive(Default)]
pub struct Steps {
    started: Option<Instant>,
    done: Vec<(String, Duration, bool)>,
}

impl Steps {
    pub fn new() -> Steps {
        Steps {
            started: Some(Instant::now()),
            done: vec![],
        }
    }

    /// Runs `step`, timing it under `name`.
    pub fn run<T>(
        &mut self,
        name: &str,
        step: impl FnOnce() -> Result<T, String>,
    ) -> Result<T, String> {
        println!("== step: {name}");
        let start = Instant::now();
        let result = step();
        let took = start.elapsed();
        println!(
            "== step: {name}: {} in {:.1} s",
            if result.is_ok() { "done" } else { "FAILED" },
            took.as_secs_f64()
        );
        self.done.push((name.to_string(), took, result.is_ok()));
        result
    }

    /// Runs `step` on a thread of its own, alongside what the caller does
    /// next; [`Alongside::finish`] waits for it and records its time.
    pub fn alongside<T: Send + 'static>(
        name: &str,
        step: impl FnOnce() -> Result<T, String> + Send + 'static,
    ) -> Alongside<T> {
        println!("== step: {name} (alongside the next)");
        let thread = std::thread::spawn(move || {
            let start = Instant::now();
            let result = step();
            (result, start.elapsed())
        });
        Alongside {
            name: name.to_string(),
            thread,
        }
    }

    /// The table of every step run so far, and the total.
    pub fn print_table(&self) {
        let width = self
            .done
            .iter()
            .map(|(name, _, _)| name.len())
            .max()
            .unwrap_or(0)
            .max(5);
        println!("== steps");
        for (name, took, ok) in &self.done {
            println!(
                "   {name:<width$}  {:>8.1} s{}",
                took.as_secs_f64(),
                if *ok { "" } else { "  FAILED" }
            );
        }
        if let Some(started) = self.started {
            println!(
                "   {:<width$}  {:>8.1} s",
                "total",
                started.elapsed().as_secs_f64()
            );
        }
    }
}
