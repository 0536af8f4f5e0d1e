//! What operators are handed besides the binary: the reference book
//! (`docs/`, built with mdBook, its links checked), the Grafana dashboard
//! and the Prometheus alert rules (`contrib/`, the rules checked by
//! `promtool`).

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use crate::process;

const RULES: &str = "contrib/prometheus/cairn-alerts.yml";
const DASHBOARD: &str = "contrib/grafana/cairn-dashboard.json";
/// The mdBook release the book is built with.
const MDBOOK_VERSION: &str = "0.5.4";

/// The book, its links, the dashboard and the rules; commands' output
/// goes to `log` (the step runs beside others). The book is rendered
/// where mdBook is installed; a fresh machine (CI's) checks its links and
/// table of contents without compiling mdBook from source, which took six
/// minutes of a core the builds beside it wanted.
pub fn check_all(log: &Path) -> Result<(), String> {
    let mut failures = vec![];
    let book = if process::succeeds("mdbook", &["--version"]) {
        build_book(Some(log))
    } else {
        check_book_sources().map(|()| {
            say(
                Some(log),
                "== mdbook not installed: the book's links and table of contents checked, \
                 the book not rendered (`cargo xtask docs` installs mdBook and renders it)",
            )
        })
    };
    failures.extend(book.err());
    failures.extend(check_dashboard(Some(log)).err());
    failures.extend(check_rules(Some(log)).err());
    if failures.is_empty() {
        Ok(())
    } else {
        Err(failures.join("; "))
    }
}

/// `cargo xtask docs`: the book into `target/book`, links checked.
pub fn book() -> Result<(), String> {
    build_book(None)
}

fn say(log: Option<&Path>, line: &str) {
    match log {
        Some(log) => {
            use std::io::Write;
            if let Ok(mut file) = std::fs::OpenOptions::new()
                .create(true)
                .append(true)
                .open(log)
            {
                let _ = writeln!(file, "{line}");
            }
        }
        None => println!("{line}"),
    }
}

/// The book's sources as mdBook would read them: every relative link
/// resolves, and every chapter is in the table of contents.
fn check_book_sources() -> Result<(), String> {
    check_links(Path::new("docs/src"))?;
    check_links(Path::new("."))?;
    check_contents(Path::new("docs/src"))
}

/// Every chapter file of `dir` is linked from its `SUMMARY.md`: mdBook
/// renders only the chapters listed there, so a file left out would be
/// lost without a word.
fn check_contents(dir: &Path) -> Result<(), String> {
    let summary = std::fs::read_to_string(dir.join("SUMMARY.md"))
        .map_err(|e| format!("{}: {e}", dir.join("SUMMARY.md").display()))?;
    let listed: BTreeSet<String> = links(&summary)
        .into_iter()
        .map(|l| l.split('#').next().unwrap_or_default().to_string())
        .collect();
    let mut missing = vec![];
    for entry in std::fs::read_dir(dir).map_err(|e| format!("{}: {e}", dir.display()))? {
        let name = entry
            .map_err(|e| format!("{}: {e}", dir.display()))?
            .file_name()
            .to_string_lossy()
            .into_owned();
        if name.ends_with(".md") && name != "SUMMARY.md" && !listed.contains(&name) {
            missing.push(name);
        }
    }
    missing.sort();
    if missing.is_empty() {
        Ok(())
    } else {
        Err(format!(
            "chapters not in docs/src/SUMMARY.md, so never rendered: {}",
            missing.join(", ")
        ))
    }
}

fn build_book(log: Option<&Path>) -> Result<(), String> {
    check_book_sources()?;
    if !process::succeeds("mdbook", &["--version"]) {
        say(
            log,
            &format!("== mdbook not found; installing mdBook {MDBOOK_VERSION} with cargo"),
        );
        process::run_logged(
            "cargo",
            &[
                "install",
                "--locked",
                "--quiet",
                "--no-default-features",
                "--features",
                "search",
                "--version",
                MDBOOK_VERSION,
                "mdbook",
            ],
            &[],
            log,
        )?;
    }
    process::run_logged("mdbook", &["build", "docs"], &[], log)?;
    say(
        log,
        "== the book is in target/book/index.html, its links checked",
    );
    Ok(())
}

/// Every relative link of the Markdown files directly in `dir` names a
/// file that exists and, with a `#fragment`, a heading of that file.
fn check_links(dir: &Path) -> Result<(), String> {
    let mut broken = vec![];
    let mut files: Vec<PathBuf> = std::fs::read_dir(dir)
        .map_err(|e| format!("{}: {e}", dir.display()))?
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|x| x == "md"))
        .collect();
    files.sort();
    for file in &files {
        let text = std::fs::read_to_string(file).map_err(|e| format!("{}: {e}", file.display()))?;
        for target in links(&text) {
            if target.contains("://") || target.starts_with("mailto:") {
                continue;
            }
            let (path, fragment) = match target.split_once('#') {
                Some((path, fragment)) => (path, Some(fragment)),
                None => (target.as_str(), None),
            };
            let linked = if path.is_empty() {
                file.clone()
            } else {
                dir.join(path)
            };
            if !linked.exists() {
                broken.push(format!("{}: {target} does not exist", file.display()));
                continue;
            }
            if let Some(fragment) = fragment {
                let headings = std::fs::read_to_string(&linked)
                    .map(|t| heading_ids(&t))
                    .unwrap_or_default();
                if !headings.contains(fragment) {
                    broken.push(format!(
                        "{}: no heading #{fragment} in {path}",
                        file.display()
                    ));
                }
            }
        }
    }
    if broken.is_empty() {
        Ok(())
    } else {
        Err(format!("broken links: {}", broken.join("; ")))
    }
}

/// The targets of `[text](target)` links outside code.
fn links(markdown: &str) -> Vec<String> {
    let mut out = vec![];
    let mut fenced = false;
    for line in markdown.lines() {
        if line.trim_start().starts_with("```") {
            fenced = !fenced;
            continue;
        }
        if fenced {
            continue;
        }
        let mut rest = line;
        while let Some(at) = rest.find("](") {
            let after = &rest[at + 2..];
            match after.find(')') {
                Some(end) => {
                    out.push(after[..end].trim().to_string());
                    rest = &after[end..];
                }
                None => break,
            }
        }
    }
    out
}

/// The ids mdBook gives a file's headings: lower case, spaces as dashes,
/// other punctuation dropped.
fn heading_ids(markdown: &str) -> BTreeSet<String> {
    markdown
        .lines()
        .filter(|l| l.starts_with('#'))
        .map(|l| {
            l.trim_start_matches('#')
                .trim()
                .to_lowercase()
                .chars()
                .filter_map(|c| match c {
                    ' ' => Some('-'),
                    c if c.is_alphanumeric() || c == '-' || c == '_' => Some(c),
                    _ => None,
                })
                .collect()
        })
        .collect()
}

/// The dashboard is JSON whose every panel queries something.
fn check_dashboard(log: Option<&Path>) -> Result<(), String> {
    let text = std::fs::read_to_string(DASHBOARD).map_err(|e| format!("{DASHBOARD}: {e}"))?;
    let dashboard: serde_json::Value =
        serde_json::from_str(&text).map_err(|e| format!("{DASHBOARD} is not JSON: {e}"))?;
    let panels = dashboard["panels"].as_array().cloned().unwrap_or_default();
    if panels.is_empty() {
        return Err(format!("{DASHBOARD} has no panels"));
    }
    for panel in &panels {
        let queries = panel["targets"].as_array().cloned().unwrap_or_default();
        if queries.is_empty()
            || queries
                .iter()
                .any(|q| q["expr"].as_str().is_none_or(str::is_empty))
        {
            return Err(format!(
                "{DASHBOARD}: panel {} has no query",
                panel["title"]
            ));
        }
    }
    say(
        log,
        &format!(
            "== {DASHBOARD}: {} panels, each with its query",
            panels.len()
        ),
    );
    Ok(())
}

/// `promtool check rules`, from Debian's `prometheus` package.
fn check_rules(log: Option<&Path>) -> Result<(), String> {
    process::ensure_debian_package("promtool", "--version", "prometheus")?;
    process::run_logged("promtool", &["check", "rules", RULES], &[], log)
}
