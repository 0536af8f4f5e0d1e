//! Progress of long CLI commands: a bar (or a spinner) on a terminal, a
//! plain line per step otherwise, so a log file stays readable.

use std::io::IsTerminal;
use std::time::Duration;

use async_trait::async_trait;
use indicatif::{ProgressBar, ProgressStyle};
use serde_json::Value;
use tokio_util::sync::CancellationToken;

use cairn_vulnerabilities::reference::sources::{Progress, SourceError};

pub struct Bar {
    bar: Option<ProgressBar>,
    label: String,
}

impl Bar {
    /// A bar counting toward a total the first step reports.
    pub fn new(label: &'static str) -> Bar {
        let bar = std::io::stderr().is_terminal().then(|| {
            let bar = ProgressBar::new(0);
            bar.set_style(
                ProgressStyle::with_template(
                    "{msg} [{bar:40}] {pos}/{len} ({percent}%, {eta} left)",
                )
                .unwrap_or_else(|_| ProgressStyle::default_bar())
                .progress_chars("=> "),
            );
            bar.set_message(label);
            bar
        });
        Bar {
            bar,
            label: label.to_string(),
        }
    }

    /// A spinner for a step without a count (one download).
    pub fn spinner(label: &'static str) -> Bar {
        Bar::spinner_for(label.to_string())
    }

    /// [`Bar::spinner`] with a label made at run time (a file's name).
    pub fn spinner_for(label: String) -> Bar {
        let bar = std::io::stderr().is_terminal().then(|| {
            let bar = ProgressBar::new_spinner();
            bar.set_message(label.clone());
            bar.enable_steady_tick(Duration::from_millis(120));
            bar
        });
        if bar.is_none() {
            eprintln!("{label} ...");
        }
        Bar { bar, label }
    }

    pub fn finish(&self) {
        if let Some(bar) = &self.bar {
            bar.finish_and_clear();
        }
    }
}

#[async_trait]
impl Progress for Bar {
    async fn page(&self, done: u64, total: u64, _: &Value) -> Result<(), SourceError> {
        match &self.bar {
            Some(bar) => {
                bar.set_length(total.max(done));
                bar.set_position(done);
            }
            None => eprintln!("{}: {done} / {total}", self.label),
        }
        Ok(())
    }

    fn resume_from(&self) -> Option<Value> {
        None
    }

    fn stop_token(&self) -> CancellationToken {
        CancellationToken::new()
    }
}
