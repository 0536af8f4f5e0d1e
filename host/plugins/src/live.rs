//! The plugin set a process serves with, swapped whole when the connectors
//! directory is read again. A call holds the set (and the module) it
//! started with, so a sync under way ends on the module it began on.

use std::path::Path;
use std::sync::Arc;

use arc_swap::ArcSwap;
use serde::Serialize;
use utoipa::ToSchema;

use super::loader::Plugins;

/// The current plugin set.
pub struct LivePlugins {
    current: ArcSwap<Plugins>,
}

impl LivePlugins {
    pub fn new(plugins: Plugins) -> LivePlugins {
        LivePlugins {
            current: ArcSwap::from_pointee(plugins),
        }
    }

    /// The set serving now; hold it for the whole of one piece of work.
    pub fn current(&self) -> Arc<Plugins> {
        self.current.load_full()
    }

    /// Serves `plugins` from now on.
    pub fn replace(&self, plugins: Arc<Plugins>) {
        self.current.store(plugins);
    }
}

/// One module named in a reload's changes.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, ToSchema)]
pub struct ChangedModule {
    /// The `.wasm` file's name in the connectors directory.
    pub file: String,
    /// The connector id or CSV provider key.
    pub id: String,
    /// The connector's version; CSV providers declare none.
    pub version: Option<String>,
    /// SHA-256 of the file now serving (of the removed file, for `removed`).
    pub sha256: String,
}

/// What a reload changed, by file.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, ToSchema)]
pub struct PluginChanges {
    pub added: Vec<ChangedModule>,
    pub replaced: Vec<ChangedModule>,
    pub removed: Vec<ChangedModule>,
}

impl PluginChanges {
    /// What serves differently in `after` than in `before`.
    pub fn between(before: &Plugins, after: &Plugins) -> PluginChanges {
        let modules = |plugins: &Plugins| -> Vec<(ChangedModule, String)> {
            let connectors = plugins.connectors.iter().map(|c| {
                module(
                    &c.file,
                    &c.descriptor.id,
                    Some(&c.descriptor.version),
                    &c.sha256,
                )
            });
            let providers = plugins
                .csv_providers
                .iter()
                .map(|p| module(&p.file, &p.descriptor.key, None, &p.sha256));
            connectors.chain(providers).collect()
        };
        let (before, after) = (modules(before), modules(after));
        let mut changes = PluginChanges::default();
        for (now, path) in &after {
            match before.iter().find(|(_, p)| p == path) {
                None => changes.added.push(now.clone()),
                Some((was, _)) if was.sha256 != now.sha256 || was.id != now.id => {
                    changes.replaced.push(now.clone())
                }
                Some(_) => {}
            }
        }
        for (was, path) in before {
            if !after.iter().any(|(_, p)| *p == path) {
                changes.removed.push(was);
            }
        }
        changes
    }

    pub fn is_empty(&self) -> bool {
        self.added.is_empty() && self.replaced.is_empty() && self.removed.is_empty()
    }
}

fn module(file: &Path, id: &str, version: Option<&str>, sha256: &str) -> (ChangedModule, String) {
    let name = file
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    (
        ChangedModule {
            file: name,
            id: id.to_string(),
            version: version.map(str::to_string),
            sha256: sha256.to_string(),
        },
        file.display().to_string(),
    )
}
