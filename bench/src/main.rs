//! `cairn-bench <program> [arguments]`: the benchmark programs `cargo xtask
//! bench` runs, each of which prints its figures. One binary rather than
//! one per program: `cargo xtask test` builds (and lints) it with every
//! test, and thirteen binaries of the whole service cost thirteen links
//! and as many copies of the same generic code.

use std::sync::OnceLock;

mod programs;

/// The program this process runs (the binary's first argument).
static PROGRAM: OnceLock<String> = OnceLock::new();

/// The process's arguments as a program of its own would see them: the
/// binary first, then what follows the program's name.
pub fn args() -> impl Iterator<Item = String> {
    let mut all = std::env::args();
    let binary = all.next();
    all.next();
    binary.into_iter().chain(all)
}

/// This binary started again as the same program, for a benchmark's child
/// process (a fake upstream, a second service); add its arguments.
pub fn again() -> std::io::Result<tokio::process::Command> {
    let mut command = tokio::process::Command::new(std::env::current_exe()?);
    command.arg(PROGRAM.get().map(String::as_str).unwrap_or_default());
    Ok(command)
}

/// A fake upstream in a child process: this program started again with
/// `args`. It prints its URLs, one per line, serves until its stdin closes,
/// then prints its figures (a last line) and exits; it is killed if dropped.
pub struct FakeUpstream {
    child: tokio::process::Child,
    lines: tokio::io::Lines<tokio::io::BufReader<tokio::process::ChildStdout>>,
}

impl FakeUpstream {
    pub async fn start(args: &[&str]) -> anyhow::Result<FakeUpstream> {
        let mut child = again()?
            .args(args)
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .kill_on_drop(true)
            .spawn()?;
        let stdout = child.stdout.take().expect("the child's stdout is piped");
        let lines = tokio::io::AsyncBufReadExt::lines(tokio::io::BufReader::new(stdout));
        Ok(FakeUpstream { child, lines })
    }

    /// The next line the fake printed (its URLs come first).
    pub async fn line(&mut self) -> anyhow::Result<String> {
        self.lines
            .next_line()
            .await?
            .ok_or_else(|| anyhow::anyhow!("the fake upstream ended before printing its URLs"))
    }

    /// Closes the fake's stdin and waits for it; answers the figures it
    /// printed last, if any.
    pub async fn stop(mut self) -> anyhow::Result<Option<String>> {
        drop(self.child.stdin.take());
        let figures = self.lines.next_line().await?;
        self.child.wait().await?;
        Ok(figures)
    }
}

fn main() -> anyhow::Result<()> {
    let program = std::env::args().nth(1).unwrap_or_default();
    let mut runtime = tokio::runtime::Builder::new_multi_thread();
    runtime.enable_all();
    if matches!(program.as_str(), "dashboards" | "partner") {
        // Two workers whatever the machine: the figures compare runs on
        // machines of different sizes.
        runtime.worker_threads(2);
    }
    PROGRAM.get_or_init(|| program.clone());
    // The services a benchmark starts in this process log as `cairn` does
    // when asked (`CAIRN_LOG=warn`): a failing request says why.
    if std::env::var_os("CAIRN_LOG").is_some() {
        cairn::logging::init("text");
    }
    runtime.build()?.block_on(async {
        use programs::*;
        match program.as_str() {
            "csv" => csv::main().await,
            "dashboards" => dashboards::main().await,
            "edr" => edr::main().await,
            "inventory" => inventory::main().await,
            "jobs" => jobs::main().await,
            "load" => load::main().await,
            "mdm" => mdm::main().await,
            "partner" => partner::main().await,
            "portal" => portal::main().await,
            "psa" => psa::main().await,
            "remediation" => remediation::main().await,
            "scanner" => scanner::main().await,
            "sync" => sync::main().await,
            "vuln" => vuln::main().await,
            other => anyhow::bail!(
                "unknown benchmark program {other:?}: csv, dashboards, edr, inventory, jobs, \
                 load, mdm, partner, portal, psa, remediation, scanner, sync or vuln"
            ),
        }
    })
}
