//! The byte encoding of mapped rows that `map-records` and `map-rows`
//! answer with in contract v0.3 (`wit/v0.3/plugin.wit` documents it). One
//! buffer per call crosses the sandbox boundary instead of a typed list
//! with a string per field: lifting each of those strings cost the host
//! more than mapping the record did.

use crate::{InventoryItem, Row, SourceRecord};

/// The length word of an absent optional text.
pub const ABSENT: u32 = u32::MAX;

/// Writes one result per input into one buffer.
pub struct RowPageWriter {
    buffer: Vec<u8>,
}

impl RowPageWriter {
    /// A writer for rows mapped from `input_bytes` of input: rows take about
    /// as many bytes as their input, and growing the buffer by copies cost
    /// more than the mapping's allocations.
    pub fn with_input_bytes(input_bytes: usize) -> Self {
        Self {
            buffer: Vec::with_capacity(input_bytes),
        }
    }

    /// The next input's rows.
    pub fn rows(&mut self, rows: &[Row]) {
        self.buffer.push(0);
        put_u32(&mut self.buffer, rows.len() as u32);
        for row in rows {
            match row {
                Row::Inventory(item) => self.inventory(item),
                Row::Record(record) => self.record(record),
            }
        }
    }

    /// The next input's failure.
    pub fn failed(&mut self, reason: &str) {
        self.buffer.push(1);
        put_text(&mut self.buffer, reason);
    }

    pub fn finish(self) -> Vec<u8> {
        self.buffer
    }

    fn inventory(&mut self, item: &InventoryItem) {
        let out = &mut self.buffer;
        // Rows without the OS detail keep 0.3.0's bytes, so a connector
        // that does not set it still runs on hosts older than the detail.
        let os_detail = item.os_name.is_some() || item.os_build.is_some();
        out.push(if os_detail { 2 } else { 0 });
        for text in [
            &item.device_name,
            &item.device_id,
            &item.os_platform,
            &item.os_version,
            &item.user_email,
            &item.user_name,
            &item.application_name,
            &item.vendor,
            &item.version,
            &item.publisher,
            &item.client_id,
        ] {
            put_optional(out, text.as_deref());
        }
        put_list(out, &item.group_ids);
        if os_detail {
            put_optional(out, item.os_name.as_deref());
            put_optional(out, item.os_build.as_deref());
        }
    }

    fn record(&mut self, record: &SourceRecord) {
        let out = &mut self.buffer;
        out.push(1);
        put_text(out, &record.collection);
        put_text(out, &record.key);
        put_optional(out, record.device_name.as_deref());
        put_optional(out, record.client_id.as_deref());
        put_list(out, &record.group_ids);
        match &record.fields {
            serde_json::Value::Null => put_text(out, "{}"),
            fields => put_json(out, fields),
        }
        put_json(out, &record.body);
    }
}

fn put_u32(out: &mut Vec<u8>, value: u32) {
    out.extend_from_slice(&value.to_le_bytes());
}

fn put_text(out: &mut Vec<u8>, text: &str) {
    put_u32(out, text.len() as u32);
    out.extend_from_slice(text.as_bytes());
}

fn put_optional(out: &mut Vec<u8>, text: Option<&str>) {
    match text {
        Some(text) => put_text(out, text),
        None => put_u32(out, ABSENT),
    }
}

fn put_list(out: &mut Vec<u8>, texts: &[String]) {
    put_u32(out, texts.len() as u32);
    for text in texts {
        put_text(out, text);
    }
}

/// JSON written in place: its length is patched in once it is known.
fn put_json(out: &mut Vec<u8>, value: &serde_json::Value) {
    let at = out.len();
    put_u32(out, 0);
    // Writing a `Value` into a `Vec` cannot fail.
    let _ = serde_json::to_writer(&mut *out, value);
    let len = (out.len() - at - 4) as u32;
    out[at..at + 4].copy_from_slice(&len.to_le_bytes());
}
