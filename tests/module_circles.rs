//! Files of one crate point one way too: no two modules of a host crate
//! may use each other, directly or around a circle. Cargo keeps crates
//! acyclic (`tests/layers.rs`); inside a crate nothing does, so this reads
//! every source file of every crate under `host/`, follows the paths each
//! names through `crate::`, `super::`, `self::` and its own child modules,
//! and fails on a circle of files that `CIRCLES_LEFT` does not list, and on
//! a listed circle that is gone (the list may only shrink). The same
//! holds one level up: a crate's top-level modules (its folders) may not
//! use each other around a circle either (`TOP_LEVEL_CIRCLES_LEFT`).
//!
//! What counts as a use: any path in code or in a `use` that resolves to
//! an item of another file's module. Two things do not, as they are the
//! module tree rather than a dependency: a module declaring its children
//! (`mod x;`) and re-exporting them (`pub use x::Y`), and a module naming
//! an item of one of its ancestors (the crate's error type at the root, a
//! facade's shared vocabulary). Test modules (`#[cfg(test)]`) are left out.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use cairn_tests::sources::{host_crate_dirs, rust_files};
use syn::visit::Visit;

/// The circles the host still has, each as its files' module paths,
/// sorted, after the crate's name (`vulnerabilities: findings, scan`):
/// none are left. Break a new circle rather than list it here.
const CIRCLES_LEFT: &[&str] = &[];

/// The circles between top-level modules (folders) the host still has, in
/// the same form. Break a new one rather than list it here.
const TOP_LEVEL_CIRCLES_LEFT: &[&str] = &[
    "inventory: assets, rollup",
    "platform: app, auth, http, invites, partner, tenancy",
];

/// One crate's modules: module path (`osv`, `rollup::build`) to its file.
struct Crate {
    name: String,
    modules: BTreeMap<String, PathBuf>,
}

fn module_path(src: &Path, file: &Path) -> String {
    let relative = file.strip_prefix(src).expect("a file of the crate");
    let mut parts: Vec<String> = relative
        .with_extension("")
        .components()
        .map(|c| c.as_os_str().to_string_lossy().into_owned())
        .collect();
    if matches!(
        parts.last().map(String::as_str),
        Some("mod" | "lib" | "main")
    ) {
        parts.pop();
    }
    parts.join("::")
}

fn host_crates(root: &Path) -> Vec<Crate> {
    host_crate_dirs(root)
        .iter()
        .map(|dir| {
            let src = dir.join("src");
            // The binary's own files form a second root beside the library.
            let mut modules: BTreeMap<String, PathBuf> = rust_files(&src)
                .into_iter()
                .filter(|f| !f.ends_with("main.rs") && !f.starts_with(src.join("bin")))
                .map(|f| (module_path(&src, &f), f))
                .collect();
            // A file declared `#[cfg(test)] mod x;` is a test, as its
            // inline form would be.
            let tests: Vec<String> = modules
                .iter()
                .flat_map(|(module, file)| test_children(module, file))
                .collect();
            modules.retain(|module, _| {
                !tests
                    .iter()
                    .any(|t| module == t || module.starts_with(&format!("{t}::")))
            });
            Crate {
                name: dir.file_name().unwrap().to_string_lossy().into_owned(),
                modules,
            }
        })
        .collect()
}

/// The child modules `file` (module `module`) declares under `#[cfg(test)]`.
fn test_children(module: &str, file: &Path) -> Vec<String> {
    let text = std::fs::read_to_string(file).expect("a readable file");
    let Ok(parsed) = syn::parse_file(&text) else {
        return vec![];
    };
    parsed
        .items
        .iter()
        .filter_map(|item| match item {
            syn::Item::Mod(m) if m.content.is_none() && is_test_only(&m.attrs) => {
                let name = m.ident.to_string();
                Some(if module.is_empty() {
                    name
                } else {
                    format!("{module}::{name}")
                })
            }
            _ => None,
        })
        .collect()
}

/// The paths one file names, as written (`super::osv::parse`), leaving out
/// test modules, child declarations and re-exports.
#[derive(Default)]
struct Paths {
    found: Vec<Vec<String>>,
}

impl Paths {
    fn use_tree(&mut self, prefix: &mut Vec<String>, tree: &syn::UseTree) {
        match tree {
            syn::UseTree::Path(p) => {
                prefix.push(p.ident.to_string());
                self.use_tree(prefix, &p.tree);
                prefix.pop();
            }
            syn::UseTree::Name(n) => {
                let mut path = prefix.clone();
                path.push(n.ident.to_string());
                self.found.push(path);
            }
            syn::UseTree::Rename(r) => {
                let mut path = prefix.clone();
                path.push(r.ident.to_string());
                self.found.push(path);
            }
            syn::UseTree::Glob(_) => self.found.push(prefix.clone()),
            syn::UseTree::Group(g) => {
                for tree in &g.items {
                    self.use_tree(prefix, tree);
                }
            }
        }
    }
}

fn is_test_only(attrs: &[syn::Attribute]) -> bool {
    attrs.iter().any(|a| {
        a.path().is_ident("cfg")
            && a.parse_args::<syn::Meta>()
                .is_ok_and(|m| m.path().is_ident("test"))
    })
}

impl<'ast> Visit<'ast> for Paths {
    fn visit_item_mod(&mut self, item: &'ast syn::ItemMod) {
        if !is_test_only(&item.attrs) {
            syn::visit::visit_item_mod(self, item);
        }
    }

    fn visit_item_fn(&mut self, item: &'ast syn::ItemFn) {
        if !is_test_only(&item.attrs) {
            syn::visit::visit_item_fn(self, item);
        }
    }

    fn visit_item_use(&mut self, item: &'ast syn::ItemUse) {
        if is_test_only(&item.attrs) {
            return;
        }
        // `pub use` re-exports: the module tree, not a use.
        if !matches!(item.vis, syn::Visibility::Inherited) {
            return;
        }
        self.use_tree(&mut vec![], &item.tree);
    }

    fn visit_path(&mut self, path: &'ast syn::Path) {
        self.found
            .push(path.segments.iter().map(|s| s.ident.to_string()).collect());
        syn::visit::visit_path(self, path);
    }
}

/// The module a path names an item of, from module `here`: the longest
/// prefix that is a module of the crate.
fn target(krate: &Crate, here: &str, path: &[String]) -> Option<String> {
    let mut base: Vec<String> = if here.is_empty() {
        vec![]
    } else {
        here.split("::").map(str::to_string).collect()
    };
    let mut rest = path;
    match rest.first().map(String::as_str) {
        Some("crate") => {
            base.clear();
            rest = &rest[1..];
        }
        Some("self") => rest = &rest[1..],
        Some("super") => {
            while rest.first().map(String::as_str) == Some("super") {
                base.pop()?;
                rest = &rest[1..];
            }
        }
        // A bare path reaches a module only through a child of this one.
        Some(first) => {
            let mut child = base.clone();
            child.push(first.to_string());
            if !krate.modules.contains_key(&child.join("::")) {
                return None;
            }
        }
        None => return None,
    }
    let mut best = None;
    let mut current = base;
    if krate.modules.contains_key(&current.join("::")) {
        best = Some(current.join("::"));
    }
    for segment in rest {
        current.push(segment.clone());
        if krate.modules.contains_key(&current.join("::")) {
            best = Some(current.join("::"));
        }
    }
    best
}

fn is_ancestor(ancestor: &str, of: &str) -> bool {
    ancestor.is_empty() || of.starts_with(&format!("{ancestor}::"))
}

/// Each module's uses of other modules of its crate.
fn edges(krate: &Crate) -> BTreeMap<String, BTreeSet<String>> {
    let mut edges: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for (module, file) in &krate.modules {
        let text = std::fs::read_to_string(file).expect("a readable file");
        let parsed = syn::parse_file(&text)
            .unwrap_or_else(|e| panic!("{} does not parse: {e}", file.display()));
        let mut paths = Paths::default();
        paths.visit_file(&parsed);
        let uses = edges.entry(module.clone()).or_default();
        for path in &paths.found {
            if let Some(to) = target(krate, module, path) {
                if to != *module && !is_ancestor(&to, module) {
                    uses.insert(to);
                }
            }
        }
    }
    edges
}

/// The strongly connected parts of more than one module (Tarjan).
fn circles(edges: &BTreeMap<String, BTreeSet<String>>) -> Vec<Vec<String>> {
    struct State<'a> {
        edges: &'a BTreeMap<String, BTreeSet<String>>,
        index: BTreeMap<&'a str, usize>,
        low: BTreeMap<&'a str, usize>,
        stack: Vec<&'a str>,
        on_stack: BTreeSet<&'a str>,
        next: usize,
        found: Vec<Vec<String>>,
    }
    fn visit<'a>(state: &mut State<'a>, node: &'a str) {
        state.index.insert(node, state.next);
        state.low.insert(node, state.next);
        state.next += 1;
        state.stack.push(node);
        state.on_stack.insert(node);
        let edges = state.edges;
        for next in edges.get(node).into_iter().flatten() {
            let next = next.as_str();
            if !state.index.contains_key(next) {
                visit(state, next);
                let low = state.low[node].min(state.low[next]);
                state.low.insert(node, low);
            } else if state.on_stack.contains(next) {
                let low = state.low[node].min(state.index[next]);
                state.low.insert(node, low);
            }
        }
        if state.low[node] == state.index[node] {
            let mut part = vec![];
            while let Some(top) = state.stack.pop() {
                state.on_stack.remove(top);
                part.push(top.to_string());
                if top == node {
                    break;
                }
            }
            if part.len() > 1 {
                part.sort();
                state.found.push(part);
            }
        }
    }
    let mut state = State {
        edges,
        index: BTreeMap::new(),
        low: BTreeMap::new(),
        stack: vec![],
        on_stack: BTreeSet::new(),
        next: 0,
        found: vec![],
    };
    for node in edges.keys() {
        if !state.index.contains_key(node.as_str()) {
            visit(&mut state, node);
        }
    }
    state.found.sort();
    state.found
}

/// A circle as `CIRCLES_LEFT` writes it: `crate: a, b, c`.
fn line(krate: &str, circle: &[String]) -> String {
    let modules: Vec<&str> = circle
        .iter()
        .map(|m| if m.is_empty() { "(root)" } else { m.as_str() })
        .collect();
    format!("{krate}: {}", modules.join(", "))
}

/// The same edges between a crate's top-level modules (a folder with all
/// under it, or one file): `vulnerabilities`' `reference`, `matching` and
/// `findings` point one way, so a file of one may not use a file of a
/// group that uses it, even where no file-level circle forms. The root
/// (`lib.rs`, the assembly) is left out: it names every group.
fn top_level_edges(
    edges: &BTreeMap<String, BTreeSet<String>>,
) -> BTreeMap<String, BTreeSet<String>> {
    let top = |module: &str| module.split("::").next().unwrap_or("").to_string();
    let mut out: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for (from, uses) in edges {
        let from = top(from);
        if from.is_empty() {
            continue;
        }
        let entry = out.entry(from.clone()).or_default();
        for to in uses.iter().map(|m| top(m)) {
            if !to.is_empty() && to != from {
                entry.insert(to);
            }
        }
    }
    out
}

/// Fails on a circle not in `allowed`, and on an allowed one that is gone.
fn only_allowed(found: BTreeSet<String>, allowed: &[&str], what: &str) {
    let allowed: BTreeSet<String> = allowed.iter().map(|s| s.to_string()).collect();
    let new: Vec<&str> = found.difference(&allowed).map(String::as_str).collect();
    let gone: Vec<&str> = allowed.difference(&found).map(String::as_str).collect();
    assert!(
        new.is_empty(),
        "{what} use each other around a circle (break it: move what \
         both need into a module both use, or pass it in):\n{}",
        new.join("\n")
    );
    assert!(
        gone.is_empty(),
        "these circles are broken; remove them from the allow-list:\n{}",
        gone.join("\n")
    );
}

fn found_circles(of: impl Fn(&Crate) -> BTreeMap<String, BTreeSet<String>>) -> BTreeSet<String> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let crates = host_crates(&root);
    assert!(
        crates.len() >= 6,
        "found the host's crates: {}",
        crates.len()
    );
    let mut found = BTreeSet::new();
    for krate in &crates {
        for circle in circles(&of(krate)) {
            found.insert(line(&krate.name, &circle));
        }
    }
    found
}

#[test]
fn no_new_circle_between_the_files_of_a_crate() {
    only_allowed(found_circles(edges), CIRCLES_LEFT, "files of one crate");
}

#[test]
fn the_top_level_modules_of_a_crate_point_one_way() {
    only_allowed(
        found_circles(|krate| top_level_edges(&edges(krate))),
        TOP_LEVEL_CIRCLES_LEFT,
        "top-level modules of one crate",
    );
}

#[test]
fn a_circle_is_found_and_the_module_tree_is_not_one() {
    let krate = Crate {
        name: "demo".into(),
        modules: ["", "a", "b", "c", "tree", "tree::leaf"]
            .iter()
            .map(|m| (m.to_string(), PathBuf::new()))
            .collect(),
    };
    let path = |p: &str| -> Vec<String> { p.split("::").map(str::to_string).collect() };
    for (here, named, expected) in [
        ("a", "super::b::run", Some("b")),
        ("a", "crate::c::Thing", Some("c")),
        ("tree::leaf", "super::super::a::f", Some("a")),
        ("tree", "leaf::f", Some("tree::leaf")),
        ("a", "serde::Serialize", None),
        ("a", "Thing", None),
        ("", "a::f", Some("a")),
    ] {
        assert_eq!(
            target(&krate, here, &path(named)).as_deref(),
            expected,
            "{named} from {here}"
        );
    }
    assert!(is_ancestor("tree", "tree::leaf") && is_ancestor("", "a"));
    assert!(!is_ancestor("tree", "treetop"));
    let graph = |pairs: &[(&str, &str)]| {
        let mut edges: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
        for (from, to) in pairs {
            edges
                .entry(from.to_string())
                .or_default()
                .insert(to.to_string());
            edges.entry(to.to_string()).or_default();
        }
        edges
    };
    assert_eq!(
        circles(&graph(&[("a", "b"), ("b", "c"), ("c", "a"), ("c", "d")])),
        vec![vec!["a".to_string(), "b".into(), "c".into()]]
    );
    assert!(circles(&graph(&[("a", "b"), ("b", "c"), ("a", "c")])).is_empty());
    // No two files use each other, but their folders do.
    let folders = graph(&[
        ("ref::store", "find::vocab"),
        ("find::views", "ref::store"),
        ("", "ref"),
    ]);
    assert!(circles(&folders).is_empty());
    assert_eq!(
        circles(&top_level_edges(&folders)),
        vec![vec!["find".to_string(), "ref".into()]]
    );
}
