//! The process's log output: `text` (human lines, coloured only on a
//! terminal) or `json` (one JSON object per line, nothing else), to stderr
//! so that commands printing documents keep stdout clean. `CAIRN_LOG`
//! takes an `EnvFilter` directive (`info,sqlx=warn` when unset).

use std::io::IsTerminal;

/// Installs the process-wide subscriber for `format` (`text` or `json`).
pub fn init(format: &str) {
    let filter = tracing_subscriber::EnvFilter::try_from_env("CAIRN_LOG")
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info,sqlx=warn"));
    let builder = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr);
    if format == "json" {
        builder
            .json()
            .flatten_event(true)
            .with_current_span(true)
            .with_span_list(false)
            .init();
    } else {
        builder.with_ansi(std::io::stderr().is_terminal()).init();
    }
}
