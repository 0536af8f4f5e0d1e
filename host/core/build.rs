//! Embeds `migrations/` into the binary: writes `$OUT_DIR/migrations.rs`,
//! one table per engine of each file's version, description and text
//! (`include_str!`), read by `db::migrations`.
//!
//! Not `sqlx::migrate!`: that macro made a release build compile sqlx's
//! SQLite and PostgreSQL drivers, and SQLite's C code, a second time for
//! the proc-macro (docs: benchmarks, "First build"). Version and
//! description are read from the file name as sqlx reads them
//! (`<version>_<description>.sql`, `_` read as a space), so a database
//! migrated by either finds the same versions and checksums.
use std::fmt::Write as _;
use std::path::Path;
use std::{env, fs};

fn main() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../migrations");
    // A directory is watched with everything under it: a file added,
    // changed or removed in either engine's folder rebuilds the table.
    println!("cargo:rerun-if-changed={}", root.display());
    let mut out = String::new();
    for engine in ["sqlite", "postgres"] {
        let dir = root.join(engine);
        let mut files: Vec<(i64, String, String)> = fs::read_dir(&dir)
            .unwrap_or_else(|e| panic!("cannot read {}: {e}", dir.display()))
            .filter_map(|entry| {
                let path = entry.expect("a directory entry").path();
                let name = path.file_name()?.to_str()?.to_owned();
                let (version, rest) = name.split_once('_')?;
                let description = rest.strip_suffix(".sql")?;
                // sqlx would read these as one half of a reversible pair.
                assert!(
                    !description.ends_with(".up") && !description.ends_with(".down"),
                    "{name}: reversible migrations are not supported"
                );
                let description = description.replace('_', " ");
                let version = version
                    .parse()
                    .unwrap_or_else(|_| panic!("{name}: the version before `_` is not a number"));
                let path = path.canonicalize().expect("a migration's path");
                Some((version, description, path.display().to_string()))
            })
            .collect();
        files.sort();
        for pair in files.windows(2) {
            assert_ne!(
                pair[0].0, pair[1].0,
                "two {engine} migrations share a version"
            );
        }
        writeln!(
            out,
            "pub(super) static {}: &[Embedded] = &[",
            engine.to_uppercase()
        )
        .unwrap();
        for (version, description, path) in files {
            writeln!(
                out,
                "    Embedded {{ version: {version}, description: {description:?}, sql: include_str!({path:?}) }},"
            )
            .unwrap();
        }
        out.push_str("];\n");
    }
    let target = Path::new(&env::var("OUT_DIR").expect("OUT_DIR")).join("migrations.rs");
    fs::write(target, out).expect("migrations.rs written");
}
