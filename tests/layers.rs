//! The host's crates point one way: each depends only on crates of a lower
//! layer, so the compiler keeps an area from reaching up or across. This
//! reads the manifest of every crate under `host/` and fails on a
//! dependency (normal, dev or build) on a crate of the same or a higher
//! layer, and on a host crate the table below does not place.

use std::path::{Path, PathBuf};

use cairn_tests::sources::host_crate_dirs;

/// The layers, lowest first. A crate may use the crates of the layers below
/// its own and nothing else of the host; crates of one layer are siblings
/// and may not use each other.
const LAYERS: &[&[&str]] = &[
    // The shared vocabulary: settings, database, ids, HTTP errors.
    &["cairn-core"],
    // Infrastructure on the vocabulary: the job queue, the plugin host.
    &["cairn-jobs", "cairn-plugins"],
    // The state handlers share, accounts and tenancy.
    &["cairn-platform"],
    // The areas, each on the ones below it.
    &["cairn-inventory"],
    &["cairn-integrations"],
    &["cairn-vulnerabilities"],
    // Work on findings: tags, projects, tickets.
    &["cairn-workflow"],
    // Siblings on top: none uses another.
    &["cairn-intelligence", "cairn-reporting", "cairn-portal"],
    // The composition root: the binary, the router, the server.
    &["cairn"],
];

fn layer_of(name: &str) -> Option<usize> {
    LAYERS.iter().position(|layer| layer.contains(&name))
}

/// A manifest's package name and the host crates it depends on, by section.
struct Manifest {
    path: PathBuf,
    name: String,
    dependencies: Vec<(String, String)>,
}

fn read_manifest(path: &Path) -> Manifest {
    let text = std::fs::read_to_string(path).expect("manifest readable");
    let mut section = String::new();
    let mut name = String::new();
    let mut dependencies = Vec::new();
    for line in text.lines().map(str::trim) {
        if line.starts_with('[') {
            section = line.trim_matches(|c| c == '[' || c == ']').to_string();
            // `[dependencies.cairn-x]` names the crate in the header.
            if let Some((kind, dependency)) = section.split_once('.') {
                if kind.ends_with("dependencies") && dependency.starts_with("cairn") {
                    dependencies.push((kind.to_string(), dependency.to_string()));
                }
            }
            continue;
        }
        let Some((key, value)) = line.split_once('=') else {
            continue;
        };
        let key = key.trim();
        if section == "package" && key == "name" {
            name = value.trim().trim_matches('"').to_string();
        }
        // `cairn-x = { path = ... }` and `cairn-x.workspace = true`.
        let dependency = key.split('.').next().unwrap_or(key);
        if section.ends_with("dependencies") && dependency.starts_with("cairn") {
            dependencies.push((section.clone(), dependency.to_string()));
        }
    }
    Manifest {
        path: path.to_path_buf(),
        name,
        dependencies,
    }
}

fn host_manifests(root: &Path) -> Vec<Manifest> {
    host_crate_dirs(root)
        .iter()
        .map(|dir| read_manifest(&dir.join("Cargo.toml")))
        .collect()
}

/// Every way a set of manifests breaks the layering, as sentences.
fn violations(manifests: &[Manifest]) -> Vec<String> {
    let mut found = Vec::new();
    for manifest in manifests {
        let Some(own) = layer_of(&manifest.name) else {
            found.push(format!(
                "{} ({}) is in no layer of tests/layers.rs",
                manifest.name,
                manifest.path.display()
            ));
            continue;
        };
        for (section, dependency) in &manifest.dependencies {
            if dependency == "cairn-sdk" || dependency == "cairn-tests" {
                // The SDK is the components' crate, below the whole host;
                // only plugin tests write component buffers with it.
                if dependency == "cairn-tests" || section != "dev-dependencies" {
                    found.push(format!(
                        "{} depends on {dependency} in [{section}]",
                        manifest.name
                    ));
                }
                continue;
            }
            match layer_of(dependency) {
                Some(theirs) if theirs < own => {}
                Some(_) => found.push(format!(
                    "{} (layer {own}) depends on {dependency} (layer {}) in [{section}]: \
                     a dependency must point to a lower layer",
                    manifest.name,
                    layer_of(dependency).unwrap_or_default()
                )),
                None => found.push(format!(
                    "{} depends on {dependency}, which is in no layer",
                    manifest.name
                )),
            }
        }
    }
    found
}

#[test]
fn the_host_crates_depend_only_downward() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let manifests = host_manifests(&root);
    assert!(
        manifests.len() >= 6,
        "found the host's crates: {}",
        manifests.len()
    );
    let found = violations(&manifests);
    assert!(
        found.is_empty(),
        "the layering is broken:\n{}",
        found.join("\n")
    );
}

#[test]
fn an_upward_or_sideways_dependency_is_caught() {
    let manifest = |name: &str, deps: &[&str]| Manifest {
        path: PathBuf::from(format!("host/{name}/Cargo.toml")),
        name: name.to_string(),
        dependencies: deps
            .iter()
            .map(|d| ("dependencies".to_string(), d.to_string()))
            .collect(),
    };
    let cases: &[(&str, &[&str], bool)] = &[
        ("cairn-inventory", &["cairn-core", "cairn-platform"], true),
        ("cairn-inventory", &["cairn-vulnerabilities"], false),
        ("cairn-jobs", &["cairn-plugins"], false),
        ("cairn-core", &["cairn"], false),
        ("cairn-reporting", &["cairn-intelligence"], false),
        ("cairn-intelligence", &["cairn-workflow"], true),
        ("cairn-workflow", &["cairn-reporting"], false),
        ("cairn-unplaced", &["cairn-core"], false),
        ("cairn-core", &["cairn-sdk"], false),
    ];
    for (name, deps, ok) in cases {
        let found = violations(&[manifest(name, deps)]);
        assert_eq!(found.is_empty(), *ok, "{name} -> {deps:?}: {found:?}");
    }
}

/// The `cairn_x::path::area` of every area function in the host's
/// sources: a `pub fn area(` in a crate's `lib.rs` or a module's
/// `mod.rs`/file.
fn area_functions(root: &Path) -> Vec<String> {
    let mut found = vec![];
    for dir in host_crate_dirs(root) {
        let crate_name = read_manifest(&dir.join("Cargo.toml"))
            .name
            .replace('-', "_");
        let src = dir.join("src");
        for file in cairn_tests::sources::rust_files(&src) {
            let text = std::fs::read_to_string(&file).expect("readable");
            if !text.contains("\npub fn area(") {
                continue;
            }
            let relative = file.strip_prefix(&src).expect("under src");
            let mut path: Vec<String> = relative
                .with_extension("")
                .iter()
                .map(|p| p.to_string_lossy().into_owned())
                .collect();
            if matches!(path.last().map(String::as_str), Some("mod" | "lib")) {
                path.pop();
            }
            let mut name = vec![crate_name.clone()];
            name.extend(path);
            name.push("area".into());
            found.push(name.join("::"));
        }
    }
    found.sort();
    found
}

#[test]
fn every_area_is_listed_once() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let listing: String = std::fs::read_to_string(root.join("host/src/areas.rs"))
        .expect("areas.rs")
        .lines()
        .filter(|line| !line.trim_start().starts_with("//"))
        .collect::<Vec<_>>()
        .join("\n");
    let areas = area_functions(&root);
    assert!(areas.len() >= 10, "the host's areas: {areas:?}");
    for area in &areas {
        let named = listing.matches(&format!("{area}(")).count()
            + listing.matches(&format!("{area},")).count();
        assert_eq!(
            named, 1,
            "{area} must be listed exactly once in host/src/areas.rs (found {named})"
        );
    }
}

/// The route attributes (`#[utoipa::path(..., path = "...")]`) of `text`
/// whose path names the API's root instead of being relative to the
/// prefix its area mounts it at.
fn absolute_route_paths(text: &str) -> Vec<String> {
    text.split("#[utoipa::path(")
        .skip(1)
        .filter_map(|attribute| {
            let path = attribute.split("path = \"").nth(1)?.split('"').next()?;
            path.starts_with("/api").then(|| path.to_string())
        })
        .collect()
}

#[test]
fn routes_are_written_relative_to_their_area_prefix() {
    let relative = "#[utoipa::path(get, path = \"/{tag_id}\", tag = \"tags\")]";
    let absolute = "#[utoipa::path(get, path = \"/api/v1/tags/{tag_id}\")]";
    assert!(absolute_route_paths(relative).is_empty());
    assert_eq!(absolute_route_paths(absolute), ["/api/v1/tags/{tag_id}"]);

    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let mut found = vec![];
    for dir in host_crate_dirs(&root) {
        for file in cairn_tests::sources::rust_files(&dir.join("src")) {
            let text = std::fs::read_to_string(&file).expect("readable");
            for path in absolute_route_paths(&text) {
                found.push(format!("{}: {path}", file.display()));
            }
        }
    }
    assert!(
        found.is_empty(),
        "routes name their full path; write them relative to the prefix \
         their area passes to `Area::routes`:\n{}",
        found.join("\n")
    );
}
