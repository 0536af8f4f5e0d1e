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
