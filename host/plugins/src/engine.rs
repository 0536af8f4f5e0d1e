//! The wasmtime engine and the compiled-artifact cache.

use std::hash::{Hash, Hasher};
use std::path::{Path, PathBuf};
use std::time::Duration;

use sha2::{Digest, Sha256};
use wasmtime::component::Component;
use wasmtime::{Config, Engine};

/// How often the epoch advances: a running guest yields its thread this often.
const EPOCH_TICK: Duration = Duration::from_millis(10);

/// The engine; with `perf_map`, compiled guest code is listed in
/// `/tmp/perf-<pid>.map`, so `perf` names a component's functions.
pub fn new_engine(perf_map: bool) -> anyhow::Result<Engine> {
    let mut config = Config::new();
    config.wasm_component_model(true);
    config.epoch_interruption(true);
    if perf_map {
        config.profiler(wasmtime::ProfilingStrategy::PerfMap);
    }
    let engine = Engine::new(&config)?;
    // Advance the epoch for as long as the engine lives; a weak handle lets
    // the thread end with it.
    let weak = engine.weak();
    std::thread::Builder::new()
        .name("cairn-wasm-epoch".into())
        .spawn(move || {
            while let Some(engine) = weak.upgrade() {
                engine.increment_epoch();
                drop(engine);
                std::thread::sleep(EPOCH_TICK);
            }
        })?;
    Ok(engine)
}

/// The hex SHA-256 of a module's bytes: what names it in listings and in the
/// artifact cache.
pub fn sha256(bytes: &[u8]) -> String {
    hex::encode(Sha256::digest(bytes))
}

/// Compiles `bytes` (whose [`sha256`] is `sha256`), or loads the artifact
/// cached under `cache_dir` for this engine and this exact file.
pub fn compile_cached(
    engine: &Engine,
    cache_dir: &Path,
    bytes: &[u8],
    sha256: &str,
) -> anyhow::Result<Component> {
    let mut hasher = std::collections::hash_map::DefaultHasher::new();
    engine.precompile_compatibility_hash().hash(&mut hasher);
    let artifact: PathBuf = cache_dir.join(format!("{sha256}-{:016x}.cwasm", hasher.finish()));
    // One compiler per artifact: loaders that start together (several
    // processes on one cache, or many services in one test run) wait for
    // the first to write it instead of each compiling the same module. The
    // lock is advisory and released when the file closes; without it (a
    // read-only cache) everyone compiles, as before.
    let _compiling = lock_artifact(cache_dir, &artifact);
    if artifact.is_file() {
        // SAFETY: the artifact was written by `Component::serialize` of an
        // engine with the same compatibility hash (it is in the file name),
        // into a directory only this service writes.
        match unsafe { Component::deserialize_file(engine, &artifact) } {
            Ok(component) => return Ok(component),
            Err(err) => {
                tracing::warn!(path = %artifact.display(), error = %err, "discarding unreadable cached artifact")
            }
        }
    }
    // Binary only: a text (WAT) file is not a plugin.
    let component = Component::from_binary(engine, bytes)?;
    if std::fs::create_dir_all(cache_dir).is_ok() {
        // A name of its own, so processes sharing the cache never write
        // into one file; the rename makes the artifact appear whole.
        let tmp = artifact.with_extension(format!(
            "{}.{}.tmp",
            std::process::id(),
            uuid::Uuid::new_v4().simple()
        ));
        if let Ok(serialized) = component.serialize() {
            if std::fs::write(&tmp, serialized).is_ok() {
                let _ = std::fs::rename(&tmp, &artifact);
            }
        }
    }
    Ok(component)
}

/// Holds an exclusive lock on `<artifact>.lock` until dropped, or `None`
/// where the cache directory cannot hold one.
fn lock_artifact(cache_dir: &Path, artifact: &Path) -> Option<std::fs::File> {
    std::fs::create_dir_all(cache_dir).ok()?;
    let file = std::fs::OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .open(artifact.with_extension("lock"))
        .ok()?;
    file.lock().ok()?;
    Some(file)
}
