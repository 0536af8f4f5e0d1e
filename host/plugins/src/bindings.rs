//! The host's side of every contract version, generated from the SDK's
//! WIT files. A leaf: the runtime and the outbound path both speak these
//! types, and neither should have to reach through the other for them.

/// The contract `cairn:plugin@0.2.0`. Its types and host interface are
/// also the current contract's, so the host serves one set of imports.
pub mod connector_world {
    wasmtime::component::bindgen!({
        path: "../../sdk/wit/v0.2",
        world: "connector",
        imports: { default: async },
        exports: { default: async },
    });
}

pub(crate) mod csv_world {
    wasmtime::component::bindgen!({
        path: "../../sdk/wit/v0.2",
        world: "csv-provider",
        imports: { default: async },
        exports: { default: async },
        with: {
            "cairn:plugin/types": super::connector_world::cairn::plugin::types,
            "cairn:plugin/host": super::connector_world::cairn::plugin::host,
        },
    });
}

/// The current contract, `cairn:plugin@0.4.0`: v0.3's, and remediation
/// (`remediate`, `remediation-status`). Its csv-provider world is v0.3's,
/// so CSV providers load through [`v03`].
pub(crate) mod v04 {
    pub(crate) mod connector_world {
        wasmtime::component::bindgen!({
            path: "../../sdk/wit/v0.4",
            world: "connector",
            imports: { default: async },
            exports: { default: async },
            with: {
                "cairn:plugin/types@0.2.0": super::super::connector_world::cairn::plugin::types,
                "cairn:plugin/host@0.2.0": super::super::connector_world::cairn::plugin::host,
            },
        });
    }

    pub(crate) use connector_world::cairn::plugin0_4_0::remediation_types as wit;
}

/// The contract `cairn:plugin@0.3.0`: v0.2's imports and types, and mapped
/// rows as one buffer (`super::row_page`).
pub(crate) mod v03 {
    pub(crate) mod connector_world {
        wasmtime::component::bindgen!({
            path: "../../sdk/wit/v0.3",
            world: "connector",
            imports: { default: async },
            exports: { default: async },
            with: {
                "cairn:plugin/types@0.2.0": super::super::connector_world::cairn::plugin::types,
                "cairn:plugin/host@0.2.0": super::super::connector_world::cairn::plugin::host,
            },
        });
    }

    pub(crate) mod csv_world {
        wasmtime::component::bindgen!({
            path: "../../sdk/wit/v0.3",
            world: "csv-provider",
            imports: { default: async },
            exports: { default: async },
            with: {
                "cairn:plugin/types@0.2.0": super::super::connector_world::cairn::plugin::types,
                "cairn:plugin/host@0.2.0": super::super::connector_world::cairn::plugin::host,
            },
        });
    }
}

/// The frozen contract `cairn:plugin@0.1.0`; its components are adapted to
/// v0.2's types, which the current contract shares, in `super::v01`.
pub(crate) mod v01 {
    pub(crate) mod connector_world {
        wasmtime::component::bindgen!({
            path: "../../sdk/wit/v0.1",
            world: "connector",
            imports: { default: async },
            exports: { default: async },
        });
    }

    pub(crate) mod csv_world {
        wasmtime::component::bindgen!({
            path: "../../sdk/wit/v0.1",
            world: "csv-provider",
            imports: { default: async },
            exports: { default: async },
            with: {
                "cairn:plugin/types": super::connector_world::cairn::plugin::types,
                "cairn:plugin/host": super::connector_world::cairn::plugin::host,
            },
        });
    }

    pub(crate) use connector_world::cairn::plugin::types as wit;
}
