//! Files as operators' tools write them, built in the tests: CSV with
//! title rows, UTF-16 exports, xlsx workbooks with a preamble, and
//! hostile files (a zip bomb, one endless line); plus the calls that upload
//! them to a CSV source and wait for the parse.

use std::io::Write;

use serde_json::Value;

use crate::{Account, Resp, TestApp};

/// `text` as UTF-16LE with its byte-order mark (Excel's "Unicode text").
pub fn utf16le(text: &str) -> Vec<u8> {
    let mut bytes = vec![0xFF, 0xFE];
    for unit in text.encode_utf16() {
        bytes.extend_from_slice(&unit.to_le_bytes());
    }
    bytes
}

/// An xlsx workbook whose first sheet holds `rows` (all cells text).
pub fn xlsx(rows: &[Vec<&str>]) -> Vec<u8> {
    let mut workbook = rust_xlsxwriter::Workbook::new();
    let sheet = workbook.add_worksheet();
    for (r, row) in rows.iter().enumerate() {
        for (c, cell) in row.iter().enumerate() {
            if !cell.is_empty() {
                sheet
                    .write_string(r as u32, c as u16, *cell)
                    .expect("write cell");
            }
        }
    }
    workbook.save_to_buffer().expect("xlsx")
}

/// A small zip that inflates to `inflated_mb` MB of zeros: a zip bomb.
pub fn zip_bomb(inflated_mb: usize) -> Vec<u8> {
    let mut out = std::io::Cursor::new(Vec::new());
    {
        let mut zip = zip::ZipWriter::new(&mut out);
        let options = zip::write::SimpleFileOptions::default()
            .compression_method(zip::CompressionMethod::Deflated)
            .large_file(true);
        zip.start_file("xl/worksheets/sheet1.xml", options)
            .expect("zip entry");
        let block = vec![0u8; 1024 * 1024];
        for _ in 0..inflated_mb {
            zip.write_all(&block).expect("zip write");
        }
        zip.finish().expect("zip finish");
    }
    out.into_inner()
}

impl TestApp {
    /// Uploads `bytes` as `name` to `path` (a CSV source's upload route).
    pub async fn upload_file(
        &self,
        account: &Account,
        path: &str,
        name: &str,
        bytes: Vec<u8>,
    ) -> Resp {
        let part = reqwest::multipart::Part::bytes(bytes).file_name(name.to_string());
        let form = reqwest::multipart::Form::new().part("file", part);
        let response = self
            .http
            .post(format!("{}{path}", self.url))
            .bearer_auth(&account.access_token)
            .multipart(form)
            .send()
            .await
            .expect("upload");
        Resp::from(response).await
    }

    /// Polls an upload of `source` until it succeeds or fails (60 s at
    /// most) and returns it.
    pub async fn wait_for_upload(&self, account: &Account, source: &str, upload_id: &str) -> Value {
        // With the whole suite on two cores an upload has waited its turn
        // for over a minute.
        let limit = std::time::Duration::from_secs(180);
        crate::wait_until(&format!("upload {upload_id}"), limit, async || {
            let upload = self
                .get(
                    &format!("/api/v1/csv-sources/{source}/uploads/{upload_id}"),
                    &account.bearer(),
                )
                .await;
            assert_eq!(upload.status, 200, "{}", upload.text);
            if ["success", "error"].contains(&upload.body["status"].as_str().unwrap_or("")) {
                Ok(upload.body)
            } else {
                Err(upload.text)
            }
        })
        .await
    }

    /// Uploads to `source` and waits for the parse; returns the upload.
    pub async fn ingest(
        &self,
        account: &Account,
        source: &str,
        name: &str,
        bytes: Vec<u8>,
    ) -> Value {
        let accepted = self
            .upload_file(
                account,
                &format!("/api/v1/csv-sources/{source}/upload"),
                name,
                bytes,
            )
            .await;
        assert_eq!(accepted.status, 202, "{}", accepted.text);
        let id = accepted.body["id"].as_str().expect("upload id").to_string();
        self.wait_for_upload(account, source, &id).await
    }
}
