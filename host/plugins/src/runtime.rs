//! One sandboxed call into a plugin.

use std::future::Future;
use std::time::{Duration, Instant};

use serde_json::Value;
use wasmtime::component::{HasSelf, Linker, ResourceTable};
use wasmtime::{Engine, ResourceLimiter, Store, UpdateDeadline};
use wasmtime_wasi::{WasiCtx, WasiCtxBuilder, WasiCtxView, WasiView};

use super::outbound::Outbound;

pub use super::bindings::connector_world;
pub(crate) use super::bindings::{csv_world, v01, v03, v04};
pub use super::outbound::CallScope;

use connector_world::cairn::plugin::types as wit;

/// Limits of one call.
#[derive(Debug, Clone, Copy)]
pub struct CallLimits {
    pub memory_bytes: usize,
    pub deadline: Duration,
}

/// Why a call failed.
#[derive(Debug, Clone, thiserror::Error)]
pub enum CallError {
    #[error("config: {0}")]
    Config(String),
    #[error("upstream authentication failed ({status}): {message}")]
    Auth {
        status: u16,
        message: String,
        permission_hint: String,
    },
    #[error("upstream rate limit; retry in {retry_after_secs} s")]
    RateLimited { retry_after_secs: u32 },
    #[error("transient upstream failure: {0}")]
    Transient(String),
    #[error("upstream failure: {0}")]
    Upstream(String),
    #[error("the plugin ran past its {} s deadline and was stopped", .0.as_secs())]
    Timeout(Duration),
    #[error("the plugin exceeded its memory cap of {0} MiB and was stopped")]
    MemoryExceeded(usize),
    #[error("the plugin crashed: {0}")]
    Crashed(String),
    #[error("the plugin returned something unreadable: {0}")]
    Protocol(String),
    #[error("{field}: {message}")]
    InvalidInput { field: String, message: String },
    #[error("not found upstream: {0}")]
    NotFound(String),
}

impl From<wit::PluginError> for CallError {
    fn from(err: wit::PluginError) -> Self {
        match err {
            wit::PluginError::Config(m) => CallError::Config(m),
            wit::PluginError::Auth(a) => CallError::Auth {
                status: a.status,
                message: a.message,
                permission_hint: a.permission_hint,
            },
            wit::PluginError::RateLimited(s) => CallError::RateLimited {
                retry_after_secs: s,
            },
            wit::PluginError::Transient(m) => CallError::Transient(m),
            wit::PluginError::Upstream(m) => CallError::Upstream(m),
            wit::PluginError::InvalidInput(p) => CallError::InvalidInput {
                field: p.field,
                message: p.message,
            },
            wit::PluginError::NotFound(m) => CallError::NotFound(m),
        }
    }
}

/// A memory cap that remembers it said no, to tell an out-of-memory trap
/// from any other.
struct MemoryCap {
    max_bytes: usize,
    hit: bool,
}

impl ResourceLimiter for MemoryCap {
    fn memory_growing(
        &mut self,
        _current: usize,
        desired: usize,
        _maximum: Option<usize>,
    ) -> wasmtime::Result<bool> {
        let allowed = desired <= self.max_bytes;
        self.hit |= !allowed;
        Ok(allowed)
    }

    fn table_growing(
        &mut self,
        _current: usize,
        desired: usize,
        _maximum: Option<usize>,
    ) -> wasmtime::Result<bool> {
        Ok(desired <= 100_000)
    }
}

pub struct PluginState {
    wasi: WasiCtx,
    table: ResourceTable,
    memory: MemoryCap,
    pub(super) scope: CallScope,
    pub(super) outbound: Option<Outbound>,
    last_panic: Option<String>,
}

impl WasiView for PluginState {
    fn ctx(&mut self) -> WasiCtxView<'_> {
        WasiCtxView {
            ctx: &mut self.wasi,
            table: &mut self.table,
        }
    }
}

impl wit::Host for PluginState {}

impl connector_world::cairn::plugin::host::Host for PluginState {
    async fn send(
        &mut self,
        request: wit::HttpRequest,
    ) -> Result<wit::HttpResponse, wit::PluginError> {
        match &self.outbound {
            Some(outbound) => outbound.send(&self.scope, request).await,
            None => Err(no_requests()),
        }
    }

    async fn send_all(
        &mut self,
        requests: Vec<wit::HttpRequest>,
    ) -> Vec<Result<wit::HttpResponse, wit::PluginError>> {
        match &self.outbound {
            Some(outbound) => outbound.send_all(&self.scope, requests).await,
            None => requests.iter().map(|_| Err(no_requests())).collect(),
        }
    }

    async fn log(&mut self, level: wit::LogLevel, message: String) {
        self.write_log(level, message);
    }

    async fn now_ms(&mut self) -> u64 {
        cairn_core::db::now_ms().max(0) as u64
    }
}

fn no_requests() -> wit::PluginError {
    wit::PluginError::Config("this plugin may not make requests".into())
}

impl PluginState {
    pub(super) fn write_log(&mut self, level: wit::LogLevel, message: String) {
        let scope = &self.scope;
        let tenant = scope.tenant_id.as_deref().unwrap_or("-");
        let job = scope.job_id.as_deref().unwrap_or("-");
        if let Some(panic) = message.strip_prefix("panic: ") {
            self.last_panic = Some(panic.chars().take(2000).collect());
        }
        match level {
            wit::LogLevel::Trace => {
                tracing::trace!(plugin = %scope.plugin, tenant, job, "{message}")
            }
            wit::LogLevel::Debug => {
                tracing::debug!(plugin = %scope.plugin, tenant, job, "{message}")
            }
            wit::LogLevel::Info => tracing::info!(plugin = %scope.plugin, tenant, job, "{message}"),
            wit::LogLevel::Warn => tracing::warn!(plugin = %scope.plugin, tenant, job, "{message}"),
            wit::LogLevel::Error => {
                tracing::error!(plugin = %scope.plugin, tenant, job, "{message}")
            }
        }
    }
}

/// The linker every plugin instance is made with: WASI (with nothing
/// granted) plus the host interface.
pub fn linker(engine: &Engine) -> wasmtime::Result<Linker<PluginState>> {
    let mut linker = Linker::new(engine);
    wasmtime_wasi::p2::add_to_linker_async(&mut linker)?;
    connector_world::Connector::add_to_linker::<_, HasSelf<_>>(&mut linker, |state| state)?;
    v01::connector_world::Connector::add_to_linker::<_, HasSelf<_>>(&mut linker, |state| state)?;
    Ok(linker)
}

/// A store for one call: fresh every time, so a trap or timeout never
/// leaves a broken instance behind.
pub fn new_store(
    engine: &Engine,
    scope: CallScope,
    outbound: Option<Outbound>,
    limits: CallLimits,
) -> Store<PluginState> {
    let wasi = WasiCtxBuilder::new()
        .allow_tcp(false)
        .allow_udp(false)
        .allow_ip_name_lookup(false)
        .build();
    let state = PluginState {
        wasi,
        table: ResourceTable::new(),
        memory: MemoryCap {
            max_bytes: limits.memory_bytes,
            hit: false,
        },
        scope,
        outbound,
        last_panic: None,
    };
    let mut store = Store::new(engine, state);
    store.limiter(|state| &mut state.memory);
    // Every tick the guest gives its worker thread back to the runtime, so
    // a busy guest cannot pin it; past the deadline it is stopped.
    let started = Instant::now();
    let deadline = limits.deadline;
    store.set_epoch_deadline(1);
    store.epoch_deadline_callback(move |_| {
        Ok(if started.elapsed() < deadline {
            UpdateDeadline::Yield(1)
        } else {
            UpdateDeadline::Interrupt
        })
    });
    store
}

/// Runs one plugin call (instantiation included) under its wall-clock
/// deadline. The epoch check stops a guest that computes, but not one parked
/// in a host call (a sleep, a slow upstream): dropping the call's future at
/// the deadline stops both, and its store goes with it.
///
/// Every call is counted and timed by plugin, `operation` and outcome.
pub async fn bounded<T>(
    limits: CallLimits,
    plugin: &str,
    operation: &'static str,
    call: impl Future<Output = Result<T, CallError>>,
) -> Result<T, CallError> {
    use cairn_core::telemetry;
    let started = Instant::now();
    let result = tokio::time::timeout(limits.deadline, call)
        .await
        .unwrap_or(Err(CallError::Timeout(limits.deadline)));
    let outcome = match &result {
        Ok(_) => "ok",
        Err(CallError::Timeout(_)) => "timeout",
        Err(CallError::MemoryExceeded(_)) => "memory",
        Err(CallError::Crashed(_)) => "trap",
        Err(_) => "error",
    };
    let labels = [
        ("plugin", plugin.to_string()),
        ("operation", operation.to_string()),
        ("outcome", outcome.to_string()),
    ];
    metrics::counter!(telemetry::PLUGIN_CALLS, &labels).increment(1);
    metrics::histogram!(telemetry::PLUGIN_CALL_DURATION, &labels)
        .record(started.elapsed().as_secs_f64());
    result
}

/// Turns a trap (or any wasmtime error) of a call into a [`CallError`].
pub fn classify_trap(
    store: &Store<PluginState>,
    err: wasmtime::Error,
    limits: CallLimits,
) -> CallError {
    if store.data().memory.hit {
        return CallError::MemoryExceeded(limits.memory_bytes / (1024 * 1024));
    }
    if let Some(wasmtime::Trap::Interrupt) = err.downcast_ref::<wasmtime::Trap>() {
        return CallError::Timeout(limits.deadline);
    }
    match &store.data().last_panic {
        Some(panic) => CallError::Crashed(format!("panicked: {panic}")),
        None => CallError::Crashed(format!("{err:#}").chars().take(500).collect()),
    }
}

pub fn parse_json(raw: &str) -> Result<Value, CallError> {
    serde_json::from_str(raw).map_err(|e| CallError::Protocol(e.to_string()))
}
