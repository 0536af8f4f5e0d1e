//! `Export` views: every record a list with the same filters matches,
//! streamed as CSV while it is read, so an export of a whole collection
//! holds one chunk in memory, not the collection.

use axum::body::{Body, Bytes};
use axum::http::header;
use axum::response::{IntoResponse, Response};
use futures::StreamExt;
use serde_json::Value;

use super::collections::{FieldFilter, Matching, Scope, StoredRecord};
use cairn_core::db::Db;
use cairn_core::ids::TenantId;

/// A chunk is sent once it holds this much CSV.
const CHUNK_BYTES: usize = 64 * 1024;
/// Chunks written ahead of a slow client.
const CHUNKS_AHEAD: usize = 4;

/// What an export reads, owned so its task outlives the request.
pub struct ExportRequest {
    pub db: Db,
    pub tenant: TenantId,
    pub area: String,
    pub collection: String,
    pub search: Option<(String, Vec<String>)>,
    pub filters: Vec<FieldFilter>,
    pub columns: Vec<String>,
    pub file_name: String,
}

/// The streamed CSV answer. The query runs on a task of its own; a
/// client that goes away closes the channel and the task stops at its
/// next chunk. A database failure midway ends the body with an error, so
/// the client sees a broken download rather than a silently short file.
pub fn respond(request: ExportRequest) -> Response {
    let (tx, rx) = futures::channel::mpsc::channel::<Result<Bytes, std::io::Error>>(CHUNKS_AHEAD);
    let disposition = format!("attachment; filename=\"{}\"", request.file_name);
    tokio::spawn(write_all(request, tx));
    (
        [
            (header::CONTENT_TYPE, "text/csv; charset=utf-8".to_string()),
            (header::CONTENT_DISPOSITION, disposition),
        ],
        Body::from_stream(rx),
    )
        .into_response()
}

async fn write_all(
    request: ExportRequest,
    mut tx: futures::channel::mpsc::Sender<Result<Bytes, std::io::Error>>,
) {
    use futures::SinkExt;
    let scope = Scope {
        tenant: &request.tenant,
        area: &request.area,
        collection: &request.collection,
    };
    let search = request
        .search
        .as_ref()
        .map(|(text, fields)| (text.as_str(), fields.as_slice()));
    let matching = Matching::new(request.db.backend, search, &request.filters);
    let mut rows = matching.rows(&request.db, &scope);
    let mut header = vec!["key".to_string()];
    header.extend(request.columns.iter().cloned());
    let mut chunk = csv_line(&header);
    while let Some(row) = rows.next().await {
        let line = match row {
            Ok(record) => csv_line(&cells(&record, &request.columns)),
            Err(e) => {
                tracing::error!("export of {} stopped: {e}", request.collection);
                let _ = tx.send(Err(std::io::Error::other("export failed"))).await;
                return;
            }
        };
        chunk.extend_from_slice(&line);
        if chunk.len() >= CHUNK_BYTES
            && tx
                .send(Ok(Bytes::from(std::mem::take(&mut chunk))))
                .await
                .is_err()
        {
            return;
        }
    }
    if !chunk.is_empty() {
        let _ = tx.send(Ok(Bytes::from(chunk))).await;
    }
}

/// The record's key and its `columns`' values as text: a string as it is,
/// a list joined with `; `, a number or boolean as JSON writes it, a
/// missing value empty.
fn cells(record: &StoredRecord, columns: &[String]) -> Vec<String> {
    let fields = &record.fields;
    let mut cells = vec![record.record_key.clone()];
    for column in columns {
        cells.push(match &fields[column.as_str()] {
            Value::Null => String::new(),
            Value::String(text) => text.clone(),
            Value::Array(items) => items
                .iter()
                .map(|item| {
                    item.as_str()
                        .map_or_else(|| item.to_string(), str::to_string)
                })
                .collect::<Vec<_>>()
                .join("; "),
            other => other.to_string(),
        });
    }
    cells
}

/// One CSV line, each cell neutralized against formula injection.
fn csv_line(cells: &[String]) -> Vec<u8> {
    let mut writer = csv::WriterBuilder::new()
        .terminator(csv::Terminator::CRLF)
        .from_writer(Vec::with_capacity(256));
    // Writing to a Vec cannot fail.
    let _ = writer.write_record(cells.iter().map(|cell| neutralized(cell).into_owned()));
    writer.into_inner().unwrap_or_default()
}

/// A cell a spreadsheet would run as a formula, prefixed with `'` so it
/// reads as text (OWASP's advice for CSV injection).
pub fn neutralized(cell: &str) -> std::borrow::Cow<'_, str> {
    match cell.chars().next() {
        Some('=' | '+' | '-' | '@' | '\t' | '\r') => format!("'{cell}").into(),
        _ => cell.into(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn formula_cells_are_neutralized_and_others_kept() {
        for (cell, expected) in [
            ("=HYPERLINK(\"http://x\")", "'=HYPERLINK(\"http://x\")"),
            ("+1", "'+1"),
            ("-2+3", "'-2+3"),
            ("@SUM(A1)", "'@SUM(A1)"),
            ("\tcmd", "'\tcmd"),
            ("\rcmd", "'\rcmd"),
            ("Printer offline", "Printer offline"),
            ("", ""),
            ("naïve = ok", "naïve = ok"),
        ] {
            assert_eq!(neutralized(cell), expected);
        }
    }

    #[test]
    fn a_line_quotes_what_csv_needs_quoted() {
        let line = csv_line(&["1".into(), "a, \"b\"".into(), "=cmd".into()]);
        assert_eq!(
            String::from_utf8(line).unwrap(),
            "1,\"a, \"\"b\"\"\",'=cmd\r\n"
        );
    }
}
