//! Rows a connector maps records to, in the host's own types (converted from
//! the WIT types at this edge).

use serde_json::Value;

use super::runtime::connector_world::cairn::plugin::types as wit;

/// A text of a mapped row: a name, version, id or key. Such texts are short,
/// and up to 24 bytes are held inline, so reading a page of rows does not
/// allocate per field (a computer's 25 applications are about 250 texts).
pub type RowText = compact_str::CompactString;

#[derive(Debug, Clone, PartialEq)]
pub struct InventoryRow {
    pub device_name: Option<RowText>,
    pub device_id: Option<RowText>,
    pub os_platform: Option<RowText>,
    pub os_version: Option<RowText>,
    /// The OS's name and edition apart from its version (SDK 0.3.2).
    pub os_name: Option<RowText>,
    /// The OS's build apart from its version (SDK 0.3.2).
    pub os_build: Option<RowText>,
    pub user_email: Option<RowText>,
    pub user_name: Option<RowText>,
    pub application_name: Option<RowText>,
    pub vendor: Option<RowText>,
    pub version: Option<RowText>,
    pub publisher: Option<RowText>,
    pub client_id: Option<RowText>,
    pub group_ids: Vec<RowText>,
}

#[derive(Debug, Clone, PartialEq)]
pub struct RecordRow {
    /// The declared collection it belongs to.
    pub collection: RowText,
    /// The collection's record type (`device`, `threat`, ...): set from the
    /// descriptor by the sync; the collection's name until then.
    pub record_type: RowText,
    pub key: RowText,
    pub device_name: Option<RowText>,
    pub client_id: Option<RowText>,
    pub group_ids: Vec<RowText>,
    /// The collection's normalized fields (a JSON object).
    pub fields: Value,
    /// The upstream record as JSON text, kept as the plugin sent it (it is
    /// only checked to be JSON): detail views return it, nothing queries it.
    pub body: String,
}

#[derive(Debug, Clone, PartialEq)]
pub enum MappedRow {
    Inventory(InventoryRow),
    Record(RecordRow),
}

impl From<wit::Row> for MappedRow {
    fn from(row: wit::Row) -> Self {
        let text = |t: Option<String>| t.map(RowText::from);
        let texts = |t: Vec<String>| t.into_iter().map(RowText::from).collect();
        match row {
            wit::Row::Inventory(i) => MappedRow::Inventory(InventoryRow {
                device_name: text(i.device_name),
                device_id: text(i.device_id),
                os_platform: text(i.os_platform),
                os_version: text(i.os_version),
                // The typed rows of contracts 0.1 and 0.2 have no OS detail.
                os_name: None,
                os_build: None,
                user_email: text(i.user_email),
                user_name: text(i.user_name),
                application_name: text(i.application_name),
                vendor: text(i.vendor),
                version: text(i.version),
                publisher: text(i.publisher),
                client_id: text(i.client_id),
                group_ids: texts(i.group_ids),
            }),
            wit::Row::Record(r) => MappedRow::Record(RecordRow::from_plugin(
                r.collection.into(),
                r.key.into(),
                text(r.device_name),
                text(r.client_id),
                texts(r.group_ids),
                &r.fields,
                r.body,
            )),
        }
    }
}

impl RecordRow {
    /// A plugin's record, its fields and body as the plugin sent them: the
    /// fields are parsed, the body kept as sent when it is JSON.
    pub(super) fn from_plugin(
        collection: RowText,
        key: RowText,
        device_name: Option<RowText>,
        client_id: Option<RowText>,
        group_ids: Vec<RowText>,
        fields: &str,
        body: String,
    ) -> RecordRow {
        RecordRow {
            record_type: collection.clone(),
            collection,
            key,
            device_name,
            client_id,
            group_ids,
            fields: record_fields(fields),
            body: json_text(body),
        }
    }
}

/// A record's fields from their JSON text: an object, else empty.
fn record_fields(text: &str) -> Value {
    match serde_json::from_str(text) {
        Ok(Value::Object(mut fields)) => {
            // PostgreSQL's jsonb refuses NUL, and views read fields as jsonb.
            for value in fields.values_mut() {
                strip_nul(value);
            }
            Value::Object(fields)
        }
        _ => Value::Object(Default::default()),
    }
}

/// `text` when it is JSON, else `text` as a JSON string. Checking does not
/// build the value: a body is stored as sent.
fn json_text(text: String) -> String {
    match serde_json::from_str::<serde::de::IgnoredAny>(&text) {
        Ok(_) => text,
        Err(_) => Value::String(text).to_string(),
    }
}

fn strip_nul(value: &mut Value) {
    match value {
        Value::String(s) if s.contains('\0') => *s = s.replace('\0', ""),
        Value::Array(items) => items.iter_mut().for_each(strip_nul),
        Value::Object(map) => map.values_mut().for_each(strip_nul),
        _ => {}
    }
}

/// How large one mapped row may be. A plugin's answer is only bounded by its
/// memory cap; without these a single 50 MB name would be stored and then
/// served in every page that lists it.
#[derive(Debug, Clone, Copy)]
pub struct RowCaps {
    /// Characters of one text field (a name, version, key or id).
    pub field_chars: usize,
    /// Bytes of a record's JSON body.
    pub body_bytes: usize,
    /// Group ids of one row.
    pub group_ids: usize,
}

impl RowCaps {
    /// Refuses a record whose body and fields, as the plugin sent them, are
    /// over the cap, before either is parsed.
    pub(super) fn check_record_size(
        &self,
        collection: &str,
        fields: &str,
        body: &str,
    ) -> Result<(), String> {
        let size = body.len() + fields.len();
        if size > self.body_bytes {
            return Err(format!(
                "the {collection} record's body and fields are {size} bytes, over the cap of {}",
                self.body_bytes
            ));
        }
        Ok(())
    }
}

impl MappedRow {
    /// Converts a plugin's row, or says why it is over `caps`. A record's
    /// body is measured as the plugin sent it, before it is parsed.
    pub(crate) fn from_plugin(row: wit::Row, caps: RowCaps) -> Result<MappedRow, String> {
        if let wit::Row::Record(r) = &row {
            caps.check_record_size(&r.collection, &r.fields, &r.body)?;
        }
        MappedRow::from(row).within(caps)
    }

    /// This row, or why it is over `caps`.
    pub(super) fn within(self, caps: RowCaps) -> Result<MappedRow, String> {
        match self.oversized(caps) {
            Some(reason) => Err(reason),
            None => Ok(self),
        }
    }

    /// Why this row's fields are over `caps`, naming the first that is.
    fn oversized(&self, caps: RowCaps) -> Option<String> {
        let over = |field: &str, value: Option<&RowText>| -> Option<String> {
            let value = value?;
            // Bytes bound characters from above: count only when needed.
            if value.len() <= caps.field_chars {
                return None;
            }
            let chars = value.chars().count();
            (chars > caps.field_chars).then(|| {
                format!(
                    "{field} is {chars} characters long, over the cap of {}",
                    caps.field_chars
                )
            })
        };
        let group_ids = match self {
            MappedRow::Inventory(i) => &i.group_ids,
            MappedRow::Record(r) => &r.group_ids,
        };
        if group_ids.len() > caps.group_ids {
            return Some(format!(
                "{} group ids, over the cap of {}",
                group_ids.len(),
                caps.group_ids
            ));
        }
        let field = match self {
            MappedRow::Inventory(i) => [
                ("device_name", &i.device_name),
                ("device_id", &i.device_id),
                ("os_platform", &i.os_platform),
                ("os_version", &i.os_version),
                ("os_name", &i.os_name),
                ("os_build", &i.os_build),
                ("user_email", &i.user_email),
                ("user_name", &i.user_name),
                ("application_name", &i.application_name),
                ("vendor", &i.vendor),
                ("version", &i.version),
                ("publisher", &i.publisher),
                ("client_id", &i.client_id),
            ]
            .into_iter()
            .find_map(|(field, value)| over(field, value.as_ref())),
            MappedRow::Record(r) => [
                ("key", Some(&r.key)),
                ("device_name", r.device_name.as_ref()),
                ("client_id", r.client_id.as_ref()),
            ]
            .into_iter()
            .find_map(|(field, value)| over(field, value)),
        };
        field.or_else(|| group_ids.iter().find_map(|g| over("group_ids", Some(g))))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const CAPS: RowCaps = RowCaps {
        field_chars: 8,
        body_bytes: 32,
        group_ids: 2,
    };

    fn item(name: &str) -> MappedRow {
        MappedRow::Inventory(InventoryRow {
            device_name: Some("WS-01".into()),
            device_id: None,
            os_platform: None,
            os_version: None,
            os_name: None,
            os_build: None,
            user_email: None,
            user_name: None,
            application_name: Some(name.into()),
            vendor: None,
            version: None,
            publisher: None,
            client_id: None,
            group_ids: vec![],
        })
    }

    #[test]
    fn a_field_over_the_cap_is_named() {
        assert_eq!(item("7-Zip").oversized(CAPS), None);
        // Characters, not bytes: eight accented letters are sixteen bytes.
        assert_eq!(item("éééééééé").oversized(CAPS), None);
        assert_eq!(
            item("ééééééééé").oversized(CAPS).as_deref(),
            Some("application_name is 9 characters long, over the cap of 8")
        );
    }

    #[test]
    fn record_bodies_and_group_lists_are_capped() {
        let record = |body: String, groups: usize| {
            MappedRow::from_plugin(
                wit::Row::Record(wit::SourceRecord {
                    collection: "devices".into(),
                    key: "d1".into(),
                    device_name: None,
                    client_id: None,
                    group_ids: vec!["g".into(); groups],
                    fields: "{}".into(),
                    body,
                }),
                CAPS,
            )
        };
        assert!(record(serde_json::json!({"a": 1}).to_string(), 2).is_ok());
        let big = record(serde_json::json!({"a": "x".repeat(40)}).to_string(), 0);
        assert!(big.unwrap_err().contains("are 50 bytes"));
        assert!(record("null".into(), 3)
            .unwrap_err()
            .contains("3 group ids"));
    }

    #[test]
    fn a_body_is_stored_as_sent_when_it_is_json() {
        let sent = r#"{"Id": 7,  "Name":"WS-01"}"#;
        assert_eq!(json_text(sent.to_string()), sent);
        // Not JSON: kept, as a JSON string, so the detail view still answers.
        assert_eq!(json_text("WS-01 {".to_string()), r#""WS-01 {""#);
    }
}
