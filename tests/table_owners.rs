//! One owner per table: every table is written by one host crate, and no
//! other crate's SQL names it, neither to write nor to read; an area that
//! needs another's data calls the owner's functions. This reads the
//! tables the migrations create and the SQL of every host crate's sources
//! (test modules left out), takes a table's owner to be the crate whose
//! SQL writes it, and fails on a table written by several crates or named
//! by a crate that does not own it, unless `CROSSINGS_LEFT` lists that
//! crossing, and on a listed crossing that is gone (the list may only
//! shrink). It reads SQL as written in this code base (keywords in
//! capitals, the table's name after them); a table name put into SQL
//! through `format!` escapes it, so write table names in the SQL text.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

use cairn_tests::sources::{host_crate_dirs, rust_files};

/// Crossings the host still has: `table: crate writes` for a second
/// writer, `table: crate reads` for a reader that is not the owner.
/// Remove a line when its crossing is gone; never add one.
const CROSSINGS_LEFT: &[&str] = &[];

/// The tables the SQLite migrations create (the PostgreSQL ones create
/// the same).
fn tables(root: &Path) -> BTreeSet<String> {
    let mut tables = BTreeSet::new();
    for entry in std::fs::read_dir(root.join("migrations/sqlite")).expect("migrations") {
        let text = std::fs::read_to_string(entry.expect("an entry").path()).expect("readable");
        for line in text.lines() {
            let line = line.trim();
            let Some(rest) = line.strip_prefix("CREATE TABLE ") else {
                continue;
            };
            let rest = rest.strip_prefix("IF NOT EXISTS ").unwrap_or(rest);
            let name: String = rest
                .chars()
                .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
                .collect();
            if !name.is_empty() {
                tables.insert(name);
            }
        }
    }
    tables
}

/// A source file's text without comments and its test module.
fn code_of(text: &str) -> String {
    let text = match text.find("#[cfg(test)]\nmod tests") {
        Some(at) => &text[..at],
        None => text,
    };
    text.lines()
        .filter(|line| !line.trim_start().starts_with("//"))
        .collect::<Vec<_>>()
        .join("\n")
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Access {
    Writes,
    Reads,
}

/// The tables a piece of SQL names, and how. Keywords are matched in
/// capitals, as this code base writes SQL.
fn named_tables(code: &str, tables: &BTreeSet<String>) -> BTreeSet<(String, Access)> {
    let words: Vec<&str> = code
        .split(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
        .filter(|w| !w.is_empty())
        .collect();
    let mut found = BTreeSet::new();
    for pair in words.windows(2) {
        let access = match pair[0] {
            "INTO" | "UPDATE" => Access::Writes,
            "FROM" | "JOIN" => Access::Reads,
            _ => continue,
        };
        if tables.contains(pair[1]) {
            found.insert((pair[1].to_string(), access));
        }
    }
    // `DELETE FROM t` writes.
    for triple in words.windows(3) {
        if triple[0] == "DELETE" && triple[1] == "FROM" && tables.contains(triple[2]) {
            found.insert((triple[2].to_string(), Access::Writes));
        }
    }
    // A table's name as a string of its own (`"inventory_items"`) is put
    // into SQL through `format!`: it names the table at least. Only names
    // with an underscore, which no route, tag or label spells.
    for table in tables.iter().filter(|t| t.contains('_')) {
        if code.contains(&format!("\"{table}\"")) && !found.iter().any(|(t, _)| t == table) {
            found.insert((table.clone(), Access::Reads));
        }
    }
    found
}

/// Each crate's accesses, by crate name (its folder under `host/`).
fn accesses(
    root: &Path,
    tables: &BTreeSet<String>,
) -> BTreeMap<String, BTreeSet<(String, Access)>> {
    let host = root.join("host");
    let mut out = BTreeMap::new();
    for dir in host_crate_dirs(root) {
        let files = rust_files(&dir.join("src"));
        let name = if dir == host {
            "cairn".to_string()
        } else {
            dir.file_name().unwrap().to_string_lossy().into_owned()
        };
        let found: &mut BTreeSet<(String, Access)> = out.entry(name).or_default();
        for file in files {
            let text = std::fs::read_to_string(&file).expect("readable");
            found.extend(named_tables(&code_of(&text), tables));
        }
    }
    out
}

/// Every crossing, as `CROSSINGS_LEFT` writes them. A table one crate
/// writes is that crate's, and any other crate naming it crosses; a table
/// several crates write has no owner yet, so every writer and reader
/// crosses. A table only the database's triggers write is not judged.
fn crossings(accesses: &BTreeMap<String, BTreeSet<(String, Access)>>) -> BTreeSet<String> {
    let mut writers: BTreeMap<&str, BTreeSet<&str>> = BTreeMap::new();
    for (krate, found) in accesses {
        for (table, access) in found {
            if *access == Access::Writes {
                writers.entry(table).or_default().insert(krate);
            }
        }
    }
    let mut out = BTreeSet::new();
    for (krate, found) in accesses {
        for (table, access) in found {
            let Some(owners) = writers.get(table.as_str()) else {
                continue;
            };
            let crossing = match access {
                Access::Writes if owners.len() > 1 => "writes",
                Access::Writes => continue,
                Access::Reads if owners.contains(krate.as_str()) => continue,
                Access::Reads => "reads",
            };
            out.insert(format!("{table}: {krate} {crossing}"));
        }
    }
    out
}

#[test]
fn each_table_is_named_only_by_its_owner() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let tables = tables(&root);
    assert!(tables.len() > 40, "found the tables: {}", tables.len());
    let found = crossings(&accesses(&root, &tables));
    let allowed: BTreeSet<String> = CROSSINGS_LEFT.iter().map(|s| s.to_string()).collect();
    let new: Vec<&str> = found.difference(&allowed).map(String::as_str).collect();
    let gone: Vec<&str> = allowed.difference(&found).map(String::as_str).collect();
    assert!(
        new.is_empty(),
        "SQL names another crate's table (call the owner's functions instead):\n{}",
        new.join("\n")
    );
    assert!(
        gone.is_empty(),
        "these crossings are gone; remove them from CROSSINGS_LEFT:\n{}",
        gone.join("\n")
    );
}

#[test]
fn a_crossing_is_found() {
    let tables: BTreeSet<String> = ["assets", "inventory_items", "vuln_findings"]
        .iter()
        .map(|t| t.to_string())
        .collect();
    assert_eq!(
        named_tables(
            "SELECT a.x FROM assets a JOIN inventory_items i ON ... \
             DELETE FROM vuln_findings WHERE x; -- from assets (lowercase: prose)",
            &tables
        ),
        [
            ("assets".to_string(), Access::Reads),
            ("inventory_items".to_string(), Access::Reads),
            ("vuln_findings".to_string(), Access::Reads),
            ("vuln_findings".to_string(), Access::Writes),
        ]
        .into_iter()
        .collect()
    );
    // A name put into SQL through `format!` is seen as named.
    assert_eq!(
        named_tables(
            r#"for table in ["inventory_items"] { format!("DELETE FROM {table}") }"#,
            &tables
        ),
        [("inventory_items".to_string(), Access::Reads)]
            .into_iter()
            .collect()
    );
    let mut accesses = BTreeMap::new();
    let set = |items: &[(&str, Access)]| -> BTreeSet<(String, Access)> {
        items.iter().map(|(t, a)| (t.to_string(), *a)).collect()
    };
    accesses.insert(
        "inventory".to_string(),
        set(&[
            ("assets", Access::Writes),
            ("inventory_items", Access::Writes),
        ]),
    );
    accesses.insert(
        "integrations".to_string(),
        set(&[("inventory_items", Access::Writes)]),
    );
    accesses.insert(
        "reporting".to_string(),
        set(&[
            ("assets", Access::Reads),
            ("inventory_items", Access::Reads),
        ]),
    );
    let expected: BTreeSet<String> = [
        "assets: reporting reads",
        "inventory_items: reporting reads",
        "inventory_items: integrations writes",
        "inventory_items: inventory writes",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    assert_eq!(crossings(&accesses), expected);
}
