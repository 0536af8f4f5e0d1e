//! Tenable Nessus's CSV scan export ("Export > CSV" of a scan): one row per
//! plugin result per host and port, with Nessus's column names (`Plugin ID`,
//! `CVE`, `Risk`, `Host`, `Port`, ...). Rows become finding records keyed by
//! host, plugin and port, so a host with the same finding on two ports
//! keeps both.

use cairn_sdk::{
    column_aliases, json, CsvDescriptor, CsvProvider, CsvRow, CsvTarget, Row, SourceRecord,
};

struct NessusFindings;

impl CsvProvider for NessusFindings {
    fn describe() -> CsvDescriptor {
        CsvDescriptor {
            key: "nessus-findings".into(),
            name: "Nessus scan export (CSV)".into(),
            category: "vulnerabilities".into(),
            target: CsvTarget::Records,
            sdk_version: String::new(),
            header_signals: vec!["plugin_id".into(), "host".into(), "risk".into()],
            column_aliases: column_aliases(&[
                ("plugin_id", &["Plugin ID", "Plugin"]),
                ("cve", &["CVE"]),
                (
                    "cvss_v2",
                    &["CVSS v2.0 Base Score", "CVSS", "CVSS Base Score"],
                ),
                ("cvss_v3", &["CVSS v3.0 Base Score"]),
                ("vpr", &["VPR Score"]),
                ("epss", &["EPSS Score"]),
                ("risk", &["Risk", "Severity"]),
                ("host", &["Host", "IP Address", "DNS Name"]),
                ("protocol", &["Protocol"]),
                ("port", &["Port"]),
                ("name", &["Name", "Plugin Name"]),
                ("synopsis", &["Synopsis"]),
                ("description", &["Description"]),
                ("solution", &["Solution"]),
                ("see_also", &["See Also"]),
                ("plugin_output", &["Plugin Output"]),
            ]),
        }
    }

    fn map_row(row: &CsvRow) -> Result<Vec<Row>, String> {
        let plugin = row
            .get("plugin_id")
            .ok_or("no plugin id (column Plugin ID)")?;
        let host = row.get("host").ok_or("no host (column Host)")?;
        let protocol = row.get("protocol").unwrap_or("tcp");
        let port = row.get("port").unwrap_or("0");
        let risk = row.get("risk").unwrap_or("None");
        Ok(vec![Row::Record(SourceRecord {
            collection: "finding".into(),
            fields: cairn_sdk::Value::Null,
            key: format!("{}|{plugin}|{protocol}|{port}", host.to_lowercase()),
            device_name: Some(host.to_string()),
            client_id: None,
            group_ids: vec![],
            body: json!({
                "plugin_id": plugin,
                "name": row.get("name"),
                "host": host,
                "protocol": protocol,
                "port": port,
                "risk": risk,
                "cve": row.get("cve"),
                "cvss_v2": row.number("cvss_v2"),
                "cvss_v3": row.number("cvss_v3"),
                "vpr": row.number("vpr"),
                "epss": row.number("epss"),
                "synopsis": row.get("synopsis"),
                "solution": row.get("solution"),
            }),
        })])
    }
}

cairn_sdk::export_csv_provider!(NessusFindings);

#[cfg(all(not(target_feature = "atomics"), target_arch = "wasm32"))]
#[global_allocator]
static ALLOCATOR: cairn_sdk::SizeClassAllocator = cairn_sdk::SizeClassAllocator::new();
