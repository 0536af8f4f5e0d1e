//! Finding, compiling and checking plugins at start.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use serde::Serialize;
use serde_json::value::RawValue;
use serde_json::Value;
use utoipa::ToSchema;
use wasmtime::component::{InstancePre, Linker};
use wasmtime::{Engine, Store};

use super::descriptor::{sdk_supported, ConnectorDescriptor, CsvDescriptor};
use super::instances::{ConnectorInstance, ConnectorPre, CsvPre, Mapped};
use super::outbound::{AddressRule, Credentials, HostPolicy, Outbound, TokenCache};
use super::rows::{MappedRow, RowCaps};
use super::runtime::connector_world::cairn::plugin::types as wit;
use super::runtime::{
    self, connector_world, csv_world, v01, v03, v04, CallError, CallLimits, CallScope, PluginState,
};
use cairn_core::settings::Settings;

/// A call of a live action: its name, path parameters, query and body.
#[derive(Debug, Clone, Default)]
pub struct ActionCall {
    pub action: String,
    pub path_params: Vec<(String, String)>,
    pub query: Vec<(String, String)>,
    pub body: Value,
}

impl ActionCall {
    /// A call the host makes itself, with a JSON body and nothing else.
    pub fn with_body(action: &str, body: Value) -> ActionCall {
        ActionCall {
            action: action.into(),
            body,
            ..ActionCall::default()
        }
    }
}

/// A remediation to start on one upstream device.
#[derive(Debug, Clone)]
pub struct RemediationCall {
    /// The declared remediation's name.
    pub action: String,
    /// The device's key in the connector's device collection.
    pub device: String,
    pub inputs: Value,
}

/// Where an upstream remediation job stands, as the connector reports it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RemediationStatus {
    Pending,
    Running,
    /// The upstream's own words.
    Succeeded(String),
    Failed(String),
}

/// A file that was not loaded, and why.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct Skipped {
    pub file: String,
    pub reason: String,
}

pub struct LoadedConnector {
    pub descriptor: ConnectorDescriptor,
    pub file: PathBuf,
    pub sha256: String,
    pre: ConnectorPre,
}

pub struct LoadedCsvProvider {
    pub descriptor: CsvDescriptor,
    pub file: PathBuf,
    pub sha256: String,
    pre: CsvPre,
}

/// Every plugin this process loaded.
pub struct Plugins {
    engine: Engine,
    pub connectors: Vec<Arc<LoadedConnector>>,
    pub csv_providers: Vec<Arc<LoadedCsvProvider>>,
    pub skipped: Vec<Skipped>,
    limits: CallLimits,
    row_caps: RowCaps,
    plain_http_hosts: Vec<String>,
    pub addresses: AddressRule,
    max_response_bytes: usize,
    http_timeout: Duration,
    tokens: Arc<TokenCache>,
    /// The operator's cap on a connector's concurrent requests.
    max_concurrency: usize,
}

impl Plugins {
    /// Loads every `.wasm` file of `settings.connectors_dir`. Problems with a
    /// file skip that file; only an unusable engine is an error.
    pub async fn load(settings: &Settings) -> anyhow::Result<Plugins> {
        let engine = super::engine::new_engine(settings.plugin_perf_map)?;
        Plugins::load_beside(engine, Arc::default(), settings, None).await
    }

    /// The connectors directory read again, on this set's engine: a file
    /// whose bytes did not change keeps its loaded module (no compile, no
    /// `describe`), a changed or new file is loaded, a removed file is
    /// gone, and a file that no longer loads keeps the module loaded from
    /// it before, listed in `skipped` with the reason. Calls under way keep
    /// the set they started with.
    pub async fn reload(&self, settings: &Settings) -> anyhow::Result<Plugins> {
        Plugins::load_beside(
            self.engine.clone(),
            self.tokens.clone(),
            settings,
            Some(self),
        )
        .await
    }

    async fn load_beside(
        engine: Engine,
        tokens: Arc<TokenCache>,
        settings: &Settings,
        before: Option<&Plugins>,
    ) -> anyhow::Result<Plugins> {
        let linker = runtime::linker(&engine)?;
        let mut plugins = Plugins {
            engine,
            connectors: vec![],
            csv_providers: vec![],
            skipped: vec![],
            limits: CallLimits {
                memory_bytes: settings.plugin_memory_mb * 1024 * 1024,
                deadline: Duration::from_secs(settings.plugin_call_timeout_secs.max(1)),
            },
            row_caps: RowCaps {
                field_chars: settings.plugin_max_field_chars.max(1),
                body_bytes: settings.plugin_max_record_kb.max(1) * 1024,
                group_ids: 1024,
            },
            plain_http_hosts: settings.plugin_plain_http_host_list(),
            addresses: AddressRule::new(settings.outbound_private_network_list()?),
            max_response_bytes: settings.plugin_max_response_mb * 1024 * 1024,
            http_timeout: Duration::from_secs(settings.plugin_http_timeout_secs.max(1)),
            tokens,
            max_concurrency: settings.plugin_max_concurrent_requests.max(1),
        };
        let cache_dir = &settings.plugin_cache_dir;
        for file in wasm_files(&settings.connectors_dir) {
            let loaded = match std::fs::read(&file) {
                Ok(bytes) => {
                    let sha256 = super::engine::sha256(&bytes);
                    if before.is_some_and(|before| plugins.keep_unchanged(before, &file, &sha256)) {
                        continue;
                    }
                    plugins
                        .load_file(&linker, cache_dir, &file, &bytes, sha256)
                        .await
                }
                Err(e) => Err(format!("unreadable: {e}")),
            };
            if let Err(mut reason) = loaded {
                if before.is_some_and(|before| plugins.keep_previous(before, &file)) {
                    reason.push_str("; the module loaded from it before keeps serving");
                }
                tracing::warn!(file = %file.display(), %reason, "plugin skipped");
                plugins.skipped.push(Skipped {
                    file: file.display().to_string(),
                    reason,
                });
            }
        }
        let pins = settings.connector_pin_list()?;
        let connectors = std::mem::take(&mut plugins.connectors);
        plugins.connectors = one_file_per_id(
            connectors,
            &pins,
            &mut plugins.skipped,
            "connector id",
            |c| (&c.descriptor.id, &c.sha256, &c.file),
        );
        let connectors = std::mem::take(&mut plugins.connectors);
        plugins.connectors = routes_agree_per_area(connectors, &mut plugins.skipped);
        let providers = std::mem::take(&mut plugins.csv_providers);
        plugins.csv_providers = one_file_per_id(
            providers,
            &pins,
            &mut plugins.skipped,
            "CSV provider key",
            |p| (&p.descriptor.key, &p.sha256, &p.file),
        );
        tracing::info!(
            connectors = plugins.connectors.len(),
            csv_providers = plugins.csv_providers.len(),
            skipped = plugins.skipped.len(),
            dir = %settings.connectors_dir.display(),
            "plugins loaded"
        );
        // Alert rules read these as 0 before the first throttled answer.
        for connector in &plugins.connectors {
            for status in ["429", "503"] {
                metrics::counter!(
                    cairn_core::telemetry::OUTBOUND_THROTTLED,
                    "caller" => connector.descriptor.id.clone(),
                    "status" => status
                )
                .increment(0);
            }
        }
        Ok(plugins)
    }

    /// Keeps what `before` loaded from `file` when it is the same module.
    fn keep_unchanged(&mut self, before: &Plugins, file: &Path, sha256: &str) -> bool {
        self.keep(before, file, |loaded| loaded == sha256)
    }

    /// Keeps what `before` loaded from `file`, whatever the file holds now.
    fn keep_previous(&mut self, before: &Plugins, file: &Path) -> bool {
        self.keep(before, file, |_| true)
    }

    /// Keeps the module `before` loaded from `file` if `wanted` takes its
    /// SHA-256.
    fn keep(&mut self, before: &Plugins, file: &Path, wanted: impl Fn(&str) -> bool) -> bool {
        let from = |loaded: &Path, sha256: &str| loaded == file && wanted(sha256);
        if let Some(c) = before.connectors.iter().find(|c| from(&c.file, &c.sha256)) {
            self.connectors.push(c.clone());
            return true;
        }
        if let Some(p) = before
            .csv_providers
            .iter()
            .find(|p| from(&p.file, &p.sha256))
        {
            self.csv_providers.push(p.clone());
            return true;
        }
        false
    }

    async fn load_file(
        &mut self,
        linker: &Linker<PluginState>,
        cache_dir: &Path,
        file: &Path,
        bytes: &[u8],
        sha256: String,
    ) -> Result<(), String> {
        let component = super::engine::compile_cached(&self.engine, cache_dir, bytes, &sha256)
            .map_err(|e| format!("not a valid component: {e:#}"))?;
        let pre: InstancePre<PluginState> = linker
            .instantiate_pre(&component)
            .map_err(|e| format!("imports something the host does not provide: {e:#}"))?;
        let scope = CallScope {
            plugin: file.display().to_string(),
            ..CallScope::default()
        };
        let connector = v04::connector_world::ConnectorPre::new(pre.clone())
            .map(ConnectorPre::Current)
            .or_else(|_| {
                v03::connector_world::ConnectorPre::new(pre.clone()).map(ConnectorPre::V03)
            })
            .or_else(|_| connector_world::ConnectorPre::new(pre.clone()).map(ConnectorPre::V02))
            .or_else(|_| {
                v01::connector_world::ConnectorPre::new(pre.clone()).map(ConnectorPre::V01)
            });
        if let Ok(connector) = connector {
            let raw = runtime::bounded(self.limits, &scope.plugin.clone(), "describe", async {
                let mut store = runtime::new_store(&self.engine, scope, None, self.limits);
                let instance = connector
                    .instantiate(&mut store)
                    .await
                    .map_err(|e| runtime::classify_trap(&store, e, self.limits))?;
                instance
                    .describe(&mut store)
                    .await
                    .map_err(|e| runtime::classify_trap(&store, e, self.limits))
            })
            .await
            .map_err(|e| format!("describe failed: {e}"))?;
            let mut raw: Value =
                serde_json::from_str(&raw).map_err(|e| format!("unreadable descriptor: {e}"))?;
            if matches!(connector, ConnectorPre::V01(_)) {
                raw = super::v01::upgrade_descriptor(raw);
            }
            let descriptor: ConnectorDescriptor =
                serde_json::from_value(raw).map_err(|e| format!("unreadable descriptor: {e}"))?;
            check_sdk(&descriptor.sdk_version)?;
            check_connector_id("connector id", &descriptor.id)?;
            check_connector_id("area", &descriptor.area)?;
            descriptor.check_secret_fields()?;
            descriptor.check_declarations()?;
            if !descriptor.remediations.is_empty() && !matches!(connector, ConnectorPre::Current(_))
            {
                return Err(
                    "declares remediations but was built against a contract before 0.4, which cannot run them".into(),
                );
            }
            tracing::info!(id = %descriptor.id, area = %descriptor.area, version = %descriptor.version, sdk = %descriptor.sdk_version, "connector loaded");
            self.connectors.push(Arc::new(LoadedConnector {
                descriptor,
                file: file.to_path_buf(),
                sha256,
                pre: connector,
            }));
            return Ok(());
        }
        let provider = v03::csv_world::CsvProviderPre::new(pre.clone())
            .map(CsvPre::Current)
            .or_else(|_| csv_world::CsvProviderPre::new(pre.clone()).map(CsvPre::V02))
            .or_else(|_| v01::csv_world::CsvProviderPre::new(pre).map(CsvPre::V01));
        if let Ok(provider) = provider {
            let raw = runtime::bounded(self.limits, &scope.plugin.clone(), "describe", async {
                let mut store = runtime::new_store(&self.engine, scope, None, self.limits);
                let instance = provider
                    .instantiate(&mut store)
                    .await
                    .map_err(|e| runtime::classify_trap(&store, e, self.limits))?;
                instance
                    .describe(&mut store)
                    .await
                    .map_err(|e| runtime::classify_trap(&store, e, self.limits))
            })
            .await
            .map_err(|e| format!("describe failed: {e}"))?;
            let descriptor: CsvDescriptor =
                serde_json::from_str(&raw).map_err(|e| format!("unreadable descriptor: {e}"))?;
            check_sdk(&descriptor.sdk_version)?;
            check_csv_descriptor(&descriptor)?;
            self.csv_providers.push(Arc::new(LoadedCsvProvider {
                descriptor,
                file: file.to_path_buf(),
                sha256,
                pre: provider,
            }));
            return Ok(());
        }
        Err("exports neither the connector nor the csv-provider world".into())
    }

    pub fn connector(&self, id: &str) -> Option<&Arc<LoadedConnector>> {
        self.connectors.iter().find(|c| c.descriptor.id == id)
    }

    /// The connectors serving `area`, in load order.
    pub fn area_connectors(&self, area: &str) -> Vec<&Arc<LoadedConnector>> {
        self.connectors
            .iter()
            .filter(|c| c.descriptor.area == area)
            .collect()
    }

    /// Every area some loaded connector serves, sorted.
    pub fn areas(&self) -> Vec<&str> {
        let mut areas: Vec<&str> = self
            .connectors
            .iter()
            .map(|c| c.descriptor.area.as_str())
            .collect();
        areas.sort_unstable();
        areas.dedup();
        areas
    }

    /// The outbound gate of a call for `connector`: `config` is the tenant's
    /// full config, secrets included, which stays in the host.
    pub fn outbound(
        &self,
        connector: &LoadedConnector,
        scope: &CallScope,
        config: &Value,
    ) -> Outbound {
        let policy = HostPolicy::for_connector(
            &connector.descriptor,
            config,
            &self.plain_http_hosts,
            self.addresses.clone(),
        );
        let credentials = Credentials {
            scheme: connector.descriptor.auth.clone(),
            config: config.clone(),
            cache: self.tokens.clone(),
            // Keyed by the config too: a token obtained for one base URL
            // or account never goes to another after the config changes.
            cache_key: format!(
                "{}/{}/{}",
                scope.tenant_id.as_deref().unwrap_or("-"),
                connector.descriptor.id,
                hex::encode(<sha2::Sha256 as sha2::Digest>::digest(config.to_string()))
            ),
        };
        Outbound::new(
            policy,
            Some(credentials),
            self.http_timeout,
            self.max_response_bytes,
            Duration::from_millis(500),
        )
        .with_concurrency(
            (connector.descriptor.max_concurrent_requests as usize).min(self.max_concurrency),
        )
    }

    /// The config a component sees: the tenant's config without its secrets.
    pub fn component_config(connector: &LoadedConnector, config: &Value) -> Value {
        let mut visible = config.clone();
        if let Some(object) = visible.as_object_mut() {
            for field in &connector.descriptor.secret_fields {
                object.remove(field);
            }
        }
        visible
    }

    /// A fresh sandboxed instance of `connector` for one call: a trap or a
    /// timeout can never leave a broken instance for the next call.
    async fn instance(
        &self,
        connector: &LoadedConnector,
        scope: CallScope,
        outbound: Option<Outbound>,
    ) -> Result<(Store<PluginState>, ConnectorInstance), CallError> {
        let mut store = runtime::new_store(&self.engine, scope, outbound, self.limits);
        let instance = connector
            .pre
            .instantiate(&mut store)
            .await
            .map_err(|e| runtime::classify_trap(&store, e, self.limits))?;
        Ok((store, instance))
    }

    /// One page of `stream`: the raw records and the next cursor.
    pub async fn fetch(
        &self,
        connector: &LoadedConnector,
        scope: CallScope,
        config: &Value,
        stream: &str,
        cursor: Option<&str>,
    ) -> Result<(Vec<String>, Option<String>), CallError> {
        let outbound = self.outbound(connector, &scope, config);
        let visible = Self::component_config(connector, config);
        let (records, next) =
            runtime::bounded(self.limits, &scope.plugin.clone(), "fetch", async {
                let (mut store, instance) = self.instance(connector, scope, Some(outbound)).await?;
                let result = instance
                    .fetch(&mut store, &visible.to_string(), stream, cursor)
                    .await
                    .map_err(|e| runtime::classify_trap(&store, e, self.limits))?;
                result.map_err(CallError::from)
            })
            .await?;
        // Each record's text is sliced out, not parsed into a value: the
        // connector's `map` is the one that reads it.
        let records: Vec<&RawValue> = serde_json::from_str(&records)
            .map_err(|e| CallError::Protocol(format!("fetch did not return a JSON array: {e}")))?;
        Ok((
            records.into_iter().map(|r| r.get().to_string()).collect(),
            next,
        ))
    }

    /// Maps raw records of `stream` (each one's JSON text, as fetched); one
    /// result per record. No HTTP: mapping is pure.
    pub async fn map_records(
        &self,
        connector: &LoadedConnector,
        scope: CallScope,
        stream: &str,
        records: &[String],
    ) -> Result<Vec<Result<Vec<MappedRow>, String>>, CallError> {
        runtime::bounded(self.limits, &scope.plugin.clone(), "map_records", async {
            let (mut store, instance) = self.instance(connector, scope, None).await?;
            let mut results = Vec::with_capacity(records.len());
            for batch in batches(records, String::len) {
                let mapped = instance
                    .map_records(&mut store, stream, batch)
                    .await
                    .map_err(|e| runtime::classify_trap(&store, e, self.limits))?;
                results.extend(one_result_per_input(
                    mapped,
                    batch.len(),
                    self.row_caps,
                    "map-records",
                    "records",
                )?);
            }
            Ok(results)
        })
        .await
    }

    pub fn csv_provider(&self, key: &str) -> Option<&Arc<LoadedCsvProvider>> {
        self.csv_providers.iter().find(|p| p.descriptor.key == key)
    }

    /// Maps a batch of CSV data rows (cells in `headers` order) through
    /// `provider`, in a fresh sandboxed instance with no network.
    pub async fn map_rows(
        &self,
        provider: &LoadedCsvProvider,
        scope: CallScope,
        headers: &[String],
        rows: &[Vec<String>],
    ) -> Result<Vec<Result<Vec<MappedRow>, String>>, CallError> {
        runtime::bounded(self.limits, &scope.plugin.clone(), "map_rows", async {
            let mut store = runtime::new_store(&self.engine, scope, None, self.limits);
            let instance = provider
                .pre
                .instantiate(&mut store)
                .await
                .map_err(|e| runtime::classify_trap(&store, e, self.limits))?;
            let row_bytes = |cells: &Vec<String>| cells.iter().map(String::len).sum();
            let mut results = Vec::with_capacity(rows.len());
            for batch in batches(rows, row_bytes) {
                let mapped = instance
                    .map_rows(&mut store, headers, batch)
                    .await
                    .map_err(|e| runtime::classify_trap(&store, e, self.limits))?;
                results.extend(one_result_per_input(
                    mapped,
                    batch.len(),
                    self.row_caps,
                    "map-rows",
                    "rows",
                )?);
            }
            Ok(results)
        })
        .await
    }

    /// Runs a live action (`invoke`).
    pub async fn invoke(
        &self,
        connector: &LoadedConnector,
        scope: CallScope,
        config: &Value,
        request: &ActionCall,
    ) -> Result<Value, CallError> {
        let outbound = self.outbound(connector, &scope, config);
        let visible = Self::component_config(connector, config);
        let pairs = |params: &[(String, String)]| -> Vec<wit::Param> {
            params
                .iter()
                .map(|(name, value)| wit::Param {
                    name: name.clone(),
                    value: value.clone(),
                })
                .collect()
        };
        let request = wit::ActionRequest {
            action: request.action.clone(),
            path_params: pairs(&request.path_params),
            query: pairs(&request.query),
            body: request.body.to_string(),
        };
        let answer = runtime::bounded(self.limits, &scope.plugin.clone(), "invoke", async {
            let (mut store, instance) = self.instance(connector, scope, Some(outbound)).await?;
            instance
                .invoke(&mut store, &visible.to_string(), &request)
                .await
                .map_err(|e| runtime::classify_trap(&store, e, self.limits))?
                .map_err(CallError::from)
        })
        .await?;
        runtime::parse_json(&answer)
    }

    /// Starts a remediation upstream; answers the upstream job's handle.
    /// The caller checked the inputs against the declaration.
    pub async fn remediate(
        &self,
        connector: &LoadedConnector,
        scope: CallScope,
        config: &Value,
        call: &RemediationCall,
    ) -> Result<String, CallError> {
        check_remediation(connector, call)?;
        let outbound = self.outbound(connector, &scope, config);
        let visible = Self::component_config(connector, config);
        let request = v04::wit::RemediationRequest {
            action: call.action.clone(),
            device: call.device.clone(),
            inputs: call.inputs.to_string(),
        };
        runtime::bounded(self.limits, &scope.plugin.clone(), "remediate", async {
            let (mut store, instance) = self.instance(connector, scope, Some(outbound)).await?;
            instance
                .remediate(&mut store, &visible.to_string(), &request)
                .await
                .map_err(|e| runtime::classify_trap(&store, e, self.limits))?
                .ok_or_else(not_remediating)?
                .map_err(CallError::from)
        })
        .await
    }

    /// Asks where the upstream job `handle` stands.
    pub async fn remediation_status(
        &self,
        connector: &LoadedConnector,
        scope: CallScope,
        config: &Value,
        handle: &str,
    ) -> Result<RemediationStatus, CallError> {
        let outbound = self.outbound(connector, &scope, config);
        let visible = Self::component_config(connector, config);
        let state = runtime::bounded(
            self.limits,
            &scope.plugin.clone(),
            "remediation_status",
            async {
                let (mut store, instance) = self.instance(connector, scope, Some(outbound)).await?;
                instance
                    .remediation_status(&mut store, &visible.to_string(), handle)
                    .await
                    .map_err(|e| runtime::classify_trap(&store, e, self.limits))?
                    .ok_or_else(not_remediating)?
                    .map_err(CallError::from)
            },
        )
        .await?;
        use v04::wit::RemediationState as Wit;
        Ok(match state {
            Wit::Pending => RemediationStatus::Pending,
            Wit::Running => RemediationStatus::Running,
            Wit::Succeeded(words) => RemediationStatus::Succeeded(words),
            Wit::Failed(words) => RemediationStatus::Failed(words),
        })
    }

    /// Runs `check` (test connection).
    pub async fn check(
        &self,
        connector: &LoadedConnector,
        scope: CallScope,
        config: &Value,
    ) -> Result<(), CallError> {
        let outbound = self.outbound(connector, &scope, config);
        let visible = Self::component_config(connector, config);
        runtime::bounded(self.limits, &scope.plugin.clone(), "check", async {
            let (mut store, instance) = self.instance(connector, scope, Some(outbound)).await?;
            instance
                .check(&mut store, &visible.to_string())
                .await
                .map_err(|e| runtime::classify_trap(&store, e, self.limits))?
                .map_err(CallError::from)
        })
        .await
    }
}

/// How many input bytes one mapping call takes at most (one input may be
/// larger). A page is mapped in several calls on one instance: the
/// component's memory is then reused while it is in cache, where one call
/// for a page of 1,000 records touched tens of megabytes of fresh memory.
const MAP_BATCH_BYTES: usize = 256 * 1024;

/// `items` in runs of at most [`MAP_BATCH_BYTES`] (by `bytes`), each of at
/// least one item.
fn batches<T>(items: &[T], bytes: impl Fn(&T) -> usize) -> impl Iterator<Item = &[T]> {
    let mut rest = items;
    std::iter::from_fn(move || {
        if rest.is_empty() {
            return None;
        }
        let mut total = 0;
        let end = rest
            .iter()
            .position(|item| {
                total += bytes(item);
                total > MAP_BATCH_BYTES
            })
            .unwrap_or(rest.len())
            .max(1);
        let (batch, after) = rest.split_at(end);
        rest = after;
        Some(batch)
    })
}

/// A mapping's answer, which must hold exactly one result per input: a
/// short answer would silently drop inputs (and a sync would then prune
/// their rows), so it fails the call instead. An input mapped to a row over
/// `caps` is rejected with the reason, like one the plugin rejected itself.
fn one_result_per_input(
    mapped: Mapped,
    inputs: usize,
    caps: RowCaps,
    function: &str,
    what: &str,
) -> Result<Vec<Result<Vec<MappedRow>, String>>, CallError> {
    let typed = match mapped {
        Mapped::Page(page) => {
            return super::row_page::decode(&page, inputs, caps).map_err(|reason| {
                CallError::Protocol(format!(
                    "{function} answered a malformed row buffer: {reason}"
                ))
            })
        }
        Mapped::Typed(typed) => typed,
    };
    if typed.len() != inputs {
        return Err(CallError::Protocol(format!(
            "{function} returned {} results for {inputs} {what}",
            typed.len()
        )));
    }
    Ok(typed
        .into_iter()
        .map(|result| {
            result?
                .into_iter()
                .map(|row| MappedRow::from_plugin(row, caps))
                .collect()
        })
        .collect())
}

/// Path segments of `/api/v1/...` that the host serves itself (and the
/// names it keeps for areas it will serve); a connector id becomes such a
/// segment and a job kind, so it may never be one of these.
pub const RESERVED_IDS: &[&str] = &[
    "auth",
    "tenant",
    "tenants",
    "invites",
    "partner",
    "jobs",
    "integrations",
    "inventory",
    "devices",
    "csv-sources",
    "vulnerabilities",
    "portal",
    "research",
    "news",
    "news-feeds",
    "advisories",
    "reports",
    "dashboards",
    "tags",
    "projects",
    "sla",
    "automation",
    "remediation",
    "subscriptions",
    "threat-intel",
    "versions",
    "weaknesses",
    "search",
    "users",
    "admin",
    "health",
    "metrics",
    "docs",
    "openapi",
];

/// A connector id is a route segment and part of a job kind: lower-case
/// letters, digits and inner dashes, 2 to 40 characters, never a segment
/// the host serves.
fn check_connector_id(what: &str, id: &str) -> Result<(), String> {
    let shaped = (2..=40).contains(&id.len())
        && id.starts_with(|c: char| c.is_ascii_lowercase())
        && !id.ends_with('-')
        && id
            .chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-');
    if !shaped {
        return Err(format!(
            "{what} {id:?} must be 2 to 40 lower-case letters, digits and inner dashes, starting with a letter"
        ));
    }
    if RESERVED_IDS.contains(&id) {
        return Err(format!("{what} {id:?} is a route the host serves itself"));
    }
    Ok(())
}

/// Keeps one file per id. When several files declare an id, the one the
/// operator pinned (`connector_pins`, `id=sha256`) serves it; without a pin
/// none does, so a file dropped into the directory can never take over an
/// id (and the configs, credentials and data stored under it).
fn one_file_per_id<T>(
    loaded: Vec<Arc<T>>,
    pins: &[(String, String)],
    skipped: &mut Vec<Skipped>,
    what: &str,
    identity: impl Fn(&T) -> (&String, &String, &PathBuf),
) -> Vec<Arc<T>> {
    let mut kept: Vec<Arc<T>> = Vec::new();
    for item in &loaded {
        let (id, sha256, file) = identity(item);
        let claimants: Vec<&Arc<T>> = loaded.iter().filter(|o| identity(o).0 == id).collect();
        if claimants.len() == 1 {
            kept.push(item.clone());
            continue;
        }
        let pinned = pins.iter().find(|(pin_id, _)| pin_id == id);
        let served = kept.iter().any(|k| identity(k).0 == id);
        let reason = match pinned {
            Some((_, pin)) if pin.eq_ignore_ascii_case(sha256) && !served => {
                kept.push(item.clone());
                continue;
            }
            Some((_, pin)) if pin.eq_ignore_ascii_case(sha256) => {
                format!("{what} {id} is already served by an identical pinned file")
            }
            Some((_, pin)) => format!("{what} {id} is pinned to another file (sha256 {pin})"),
            None => {
                let files: Vec<String> = claimants
                    .iter()
                    .map(|c| {
                        let file = identity(c).2;
                        file.file_name()
                            .unwrap_or(file.as_os_str())
                            .to_string_lossy()
                            .to_string()
                    })
                    .collect();
                format!(
                    "{what} {id} is declared by several files ({}); none is loaded until \
                     connector_pins names the sha256 of the one to use",
                    files.join(", ")
                )
            }
        };
        tracing::warn!(file = %file.display(), %reason, "plugin skipped");
        skipped.push(Skipped {
            file: file.display().to_string(),
            reason,
        });
    }
    kept
}

/// Connectors of one area share its routes, so their paths must fit in
/// one router beside the lifecycle routes: a route of one shape names its
/// parameters alike everywhere (the router cannot hold `device/{agent_id}`
/// and `device/{id}` at once). A connector whose routes do not fit with
/// those already kept is skipped, so a plugin can never make the router
/// refuse to start.
fn routes_agree_per_area(
    connectors: Vec<Arc<LoadedConnector>>,
    skipped: &mut Vec<Skipped>,
) -> Vec<Arc<LoadedConnector>> {
    let mut kept: Vec<Arc<LoadedConnector>> = vec![];
    for connector in connectors {
        let area = &connector.descriptor.area;
        let mut paths: Vec<&str> = super::descriptor::LIFECYCLE_PATHS.to_vec();
        for other in kept.iter().filter(|k| &k.descriptor.area == area) {
            paths.extend(other.descriptor.routes().into_iter().map(|(_, p)| p));
        }
        paths.extend(connector.descriptor.routes().into_iter().map(|(_, p)| p));
        paths.sort_unstable();
        paths.dedup();
        let mut router = matchit::Router::new();
        let clash = paths
            .iter()
            .find_map(|path| router.insert(format!("/{path}"), ()).err());
        match clash {
            Some(err) => {
                let reason = format!("its routes clash with another {area} connector's: {err}");
                tracing::warn!(file = %connector.file.display(), %reason, "plugin skipped");
                skipped.push(Skipped {
                    file: connector.file.display().to_string(),
                    reason,
                });
            }
            None => kept.push(connector),
        }
    }
    kept
}

fn check_sdk(version: &str) -> Result<(), String> {
    if sdk_supported(version) {
        Ok(())
    } else {
        Err(format!(
            "built with cairn-sdk {version}; this host supports {}",
            super::SUPPORTED_SDK.join(", ")
        ))
    }
}

fn wasm_files(dir: &Path) -> Vec<PathBuf> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(dir)
        .map(|entries| {
            entries
                .flatten()
                .map(|e| e.path())
                .filter(|p| p.extension().is_some_and(|e| e == "wasm"))
                .collect()
        })
        .unwrap_or_default();
    files.sort();
    files
}

/// A CSV provider's key is a route segment and its target picks the table
/// its rows go to; refuse what the host could not serve.
fn check_csv_descriptor(descriptor: &CsvDescriptor) -> Result<(), String> {
    let key_ok = !descriptor.key.is_empty()
        && descriptor
            .key
            .chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-');
    if !key_ok {
        return Err(format!(
            "CSV provider key {:?} must be lower-case letters, digits and dashes",
            descriptor.key
        ));
    }
    if !["software", "records", "device", "user"].contains(&descriptor.target.as_str()) {
        return Err(format!(
            "CSV provider target {:?} is not software, records, device or user",
            descriptor.target
        ));
    }
    if descriptor.header_signals.is_empty() {
        return Err("a CSV provider needs at least one header signal".into());
    }
    Ok(())
}

/// A remediation call the connector declared, with inputs its schema
/// accepts; else the problem, naming the field.
fn check_remediation(connector: &LoadedConnector, call: &RemediationCall) -> Result<(), CallError> {
    let declared = connector
        .descriptor
        .remediations
        .iter()
        .find(|r| r.name == call.action)
        .ok_or_else(|| {
            CallError::NotFound(format!(
                "connector {} declares no remediation {}",
                connector.descriptor.id, call.action
            ))
        })?;
    let validator = jsonschema::validator_for(&declared.input_schema)
        .map_err(|e| CallError::Protocol(format!("the declared inputs schema is invalid: {e}")))?;
    if let Some(error) = validator.iter_errors(&call.inputs).next() {
        use jsonschema::error::ValidationErrorKind;
        let named = match error.kind() {
            ValidationErrorKind::Required { property } => property.as_str().map(String::from),
            ValidationErrorKind::AdditionalProperties { unexpected } => unexpected.first().cloned(),
            _ => serde_json::to_value(error.instance_path())
                .ok()
                .and_then(|p| {
                    p.as_str()
                        .map(|p| p.trim_start_matches('/').replace('/', "."))
                })
                .filter(|p| !p.is_empty()),
        };
        return Err(CallError::InvalidInput {
            field: named.map_or_else(|| "inputs".into(), |f| format!("inputs.{f}")),
            message: error.to_string(),
        });
    }
    Ok(())
}

fn not_remediating() -> CallError {
    CallError::Config("this connector was built before contract 0.4 and cannot remediate".into())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn connector_ids_are_route_segments_the_host_does_not_serve() {
        for good in ["rmm", "edr-one", "backup2"] {
            assert!(check_connector_id("id", good).is_ok(), "{good}");
        }
        for bad in [
            "../auth",
            "auth",
            "inventory",
            "csv-sources",
            "a",
            "Rmm",
            "rmm_sync",
            "-x",
            "x-",
            "9lives",
            "",
            "rmm/..",
            "rmm%2f",
        ] {
            assert!(check_connector_id("id", bad).is_err(), "{bad:?}");
        }
    }

    const CAPS: RowCaps = RowCaps {
        field_chars: 1024,
        body_bytes: 1024,
        group_ids: 16,
    };

    #[test]
    fn inputs_are_mapped_in_runs_of_bounded_size_in_order() {
        let sizes = [100_000, 100_000, 100_000, 1_000_000, 10, 10];
        let runs: Vec<Vec<usize>> = batches(&sizes, |size| *size)
            .map(<[usize]>::to_vec)
            .collect();
        // An input over the bound goes alone; none is left out or reordered.
        assert_eq!(
            runs,
            vec![
                vec![100_000, 100_000],
                vec![100_000],
                vec![1_000_000],
                vec![10, 10]
            ]
        );
        assert_eq!(batches(&[] as &[usize], |size| *size).count(), 0);
    }

    #[test]
    fn a_malformed_row_buffer_fails_the_call() {
        // A result tag, then nothing where its row count should be.
        let err =
            one_result_per_input(Mapped::Page(vec![0]), 1, CAPS, "map-rows", "rows").unwrap_err();
        assert_eq!(
            err.to_string(),
            CallError::Protocol(
                "map-rows answered a malformed row buffer: the buffer ends early".into()
            )
            .to_string()
        );
    }

    #[test]
    fn a_short_mapping_answer_fails_the_call() {
        let answer: Vec<Result<Vec<wit::Row>, String>> = vec![Ok(vec![]), Err("bad".into())];
        let err = one_result_per_input(
            Mapped::Typed(answer.clone()),
            3,
            CAPS,
            "map-records",
            "records",
        )
        .unwrap_err();
        assert_eq!(
            err.to_string(),
            CallError::Protocol("map-records returned 2 results for 3 records".into()).to_string()
        );
        assert_eq!(
            one_result_per_input(Mapped::Typed(answer), 2, CAPS, "map-records", "records")
                .unwrap()
                .len(),
            2
        );
    }
}
