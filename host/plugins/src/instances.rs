//! Instances of connectors and CSV providers by the contract each was
//! built against: every call answers in v0.2's types (which v0.3 and v0.4
//! share), except that v0.3 and v0.4 components map to one buffer of rows
//! (`super::row_page`); a v0.1 component answers through its adapter
//! (`super::v01`). Only a v0.4 connector can remediate.

use wasmtime::Store;

use super::runtime::connector_world::cairn::plugin::types as wit;
use super::runtime::{connector_world, csv_world, v01, v03, v04, PluginState};

/// A component's answer to `map-records` or `map-rows`, by its contract.
pub enum Mapped {
    /// v0.3: one buffer of encoded rows (`super::row_page` reads it).
    Page(Vec<u8>),
    /// v0.1 and v0.2: rows per input, typed.
    Typed(Vec<Result<Vec<wit::Row>, String>>),
}

/// A connector ready to instantiate, by the contract it was built against.
pub enum ConnectorPre {
    Current(v04::connector_world::ConnectorPre<PluginState>),
    V03(v03::connector_world::ConnectorPre<PluginState>),
    V02(connector_world::ConnectorPre<PluginState>),
    V01(v01::connector_world::ConnectorPre<PluginState>),
}

/// One instance of a connector; calls answer in v0.2's types, which v0.3
/// shares.
pub enum ConnectorInstance {
    Current(v04::connector_world::Connector),
    V03(v03::connector_world::Connector),
    V02(connector_world::Connector),
    V01(v01::connector_world::Connector),
}

type Fetched = Result<(String, Option<String>), wit::PluginError>;

impl ConnectorInstance {
    pub async fn describe(&self, store: &mut Store<PluginState>) -> wasmtime::Result<String> {
        match self {
            ConnectorInstance::Current(i) => i.call_describe(store).await,
            ConnectorInstance::V03(i) => i.call_describe(store).await,
            ConnectorInstance::V02(i) => i.call_describe(store).await,
            ConnectorInstance::V01(i) => i.call_describe(store).await,
        }
    }

    pub async fn check(
        &self,
        store: &mut Store<PluginState>,
        config: &str,
    ) -> wasmtime::Result<Result<(), wit::PluginError>> {
        Ok(match self {
            ConnectorInstance::Current(i) => i.call_check(store, config).await?,
            ConnectorInstance::V03(i) => i.call_check(store, config).await?,
            ConnectorInstance::V02(i) => i.call_check(store, config).await?,
            ConnectorInstance::V01(i) => i
                .call_check(store, config)
                .await?
                .map_err(super::v01::error),
        })
    }

    pub async fn fetch(
        &self,
        store: &mut Store<PluginState>,
        config: &str,
        stream: &str,
        cursor: Option<&str>,
    ) -> wasmtime::Result<Fetched> {
        Ok(match self {
            ConnectorInstance::Current(i) => i.call_fetch(store, config, stream, cursor).await?,
            ConnectorInstance::V03(i) => i.call_fetch(store, config, stream, cursor).await?,
            ConnectorInstance::V02(i) => i.call_fetch(store, config, stream, cursor).await?,
            ConnectorInstance::V01(i) => i
                .call_fetch(store, config, stream, cursor)
                .await?
                .map_err(super::v01::error),
        })
    }

    pub async fn map_records(
        &self,
        store: &mut Store<PluginState>,
        stream: &str,
        records: &[String],
    ) -> wasmtime::Result<Mapped> {
        Ok(match self {
            ConnectorInstance::Current(i) => {
                Mapped::Page(i.call_map_records(store, stream, records).await?)
            }
            ConnectorInstance::V03(i) => {
                Mapped::Page(i.call_map_records(store, stream, records).await?)
            }
            ConnectorInstance::V02(i) => {
                Mapped::Typed(i.call_map_records(store, stream, records).await?)
            }
            ConnectorInstance::V01(i) => Mapped::Typed(super::v01::rows(
                i.call_map_records(store, stream, records).await?,
            )),
        })
    }

    pub async fn invoke(
        &self,
        store: &mut Store<PluginState>,
        config: &str,
        request: &wit::ActionRequest,
    ) -> wasmtime::Result<Result<String, wit::PluginError>> {
        Ok(match self {
            ConnectorInstance::Current(i) => i.call_invoke(store, config, request).await?,
            ConnectorInstance::V03(i) => i.call_invoke(store, config, request).await?,
            ConnectorInstance::V02(i) => i.call_invoke(store, config, request).await?,
            // v0.1 actions took one JSON input and no path or query.
            ConnectorInstance::V01(i) => {
                let input = if request.body == "null" {
                    "{}"
                } else {
                    &request.body
                };
                i.call_invoke(store, config, &request.action, input)
                    .await?
                    .map_err(super::v01::error)
            }
        })
    }
}

pub enum CsvPre {
    Current(v03::csv_world::CsvProviderPre<PluginState>),
    V02(csv_world::CsvProviderPre<PluginState>),
    V01(v01::csv_world::CsvProviderPre<PluginState>),
}

pub enum CsvInstance {
    Current(v03::csv_world::CsvProvider),
    V02(csv_world::CsvProvider),
    V01(v01::csv_world::CsvProvider),
}

impl CsvInstance {
    pub async fn describe(&self, store: &mut Store<PluginState>) -> wasmtime::Result<String> {
        match self {
            CsvInstance::Current(i) => i.call_describe(store).await,
            CsvInstance::V02(i) => i.call_describe(store).await,
            CsvInstance::V01(i) => i.call_describe(store).await,
        }
    }

    pub async fn map_rows(
        &self,
        store: &mut Store<PluginState>,
        headers: &[String],
        rows: &[Vec<String>],
    ) -> wasmtime::Result<Mapped> {
        Ok(match self {
            CsvInstance::Current(i) => Mapped::Page(i.call_map_rows(store, headers, rows).await?),
            CsvInstance::V02(i) => Mapped::Typed(i.call_map_rows(store, headers, rows).await?),
            CsvInstance::V01(i) => Mapped::Typed(super::v01::rows(
                i.call_map_rows(store, headers, rows).await?,
            )),
        })
    }
}

impl CsvPre {
    pub async fn instantiate(
        &self,
        store: &mut Store<PluginState>,
    ) -> wasmtime::Result<CsvInstance> {
        Ok(match self {
            CsvPre::Current(pre) => CsvInstance::Current(pre.instantiate_async(store).await?),
            CsvPre::V02(pre) => CsvInstance::V02(pre.instantiate_async(store).await?),
            CsvPre::V01(pre) => CsvInstance::V01(pre.instantiate_async(store).await?),
        })
    }
}

impl ConnectorPre {
    pub async fn instantiate(
        &self,
        store: &mut Store<PluginState>,
    ) -> wasmtime::Result<ConnectorInstance> {
        Ok(match self {
            ConnectorPre::Current(pre) => {
                ConnectorInstance::Current(pre.instantiate_async(store).await?)
            }
            ConnectorPre::V03(pre) => ConnectorInstance::V03(pre.instantiate_async(store).await?),
            ConnectorPre::V02(pre) => ConnectorInstance::V02(pre.instantiate_async(store).await?),
            ConnectorPre::V01(pre) => ConnectorInstance::V01(pre.instantiate_async(store).await?),
        })
    }
}

/// A remediation answered in the current contract's types.
pub type RemediationState = v04::wit::RemediationState;

impl ConnectorInstance {
    /// Starts a remediation; `None` from a component built before v0.4,
    /// which cannot remediate.
    pub async fn remediate(
        &self,
        store: &mut Store<PluginState>,
        config: &str,
        request: &v04::wit::RemediationRequest,
    ) -> wasmtime::Result<Option<Result<String, wit::PluginError>>> {
        match self {
            ConnectorInstance::Current(i) => {
                Ok(Some(i.call_remediate(store, config, request).await?))
            }
            _ => Ok(None),
        }
    }

    /// Where a remediation stands; `None` as for [`Self::remediate`].
    pub async fn remediation_status(
        &self,
        store: &mut Store<PluginState>,
        config: &str,
        handle: &str,
    ) -> wasmtime::Result<Option<Result<RemediationState, wit::PluginError>>> {
        match self {
            ConnectorInstance::Current(i) => Ok(Some(
                i.call_remediation_status(store, config, handle).await?,
            )),
            _ => Ok(None),
        }
    }
}
