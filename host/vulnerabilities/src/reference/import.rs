//! `cairn vuln import PATH...`: offline loads for air-gapped instances and
//! first loads. Each file's kind is sniffed from its content (gzip and zip
//! are opened first): NVD JSON 2.0 (yearly/modified feeds, API pages), CVE
//! JSON 5 records, OSV advisories of Linux distributions (one record, or an
//! ecosystem's `all.zip`), the KEV catalog, the EPSS CSV, the CWE XML, an
//! NVD CPE dictionary. Large files stream: a reader thread parses and hands
//! batches to the database writer, so memory stays flat.

use std::fmt;
use std::io::{BufRead, BufReader, Read};
use std::path::Path;

use serde::de::{DeserializeSeed, IgnoredAny, MapAccess, SeqAccess, Visitor};
use serde_json::Value;
use tokio::sync::mpsc;

use crate::reference::cpe::ProductKey;
use crate::reference::feeds;
use crate::reference::osv;
use crate::reference::records::{self, CveRecord};
use crate::reference::store;
use cairn_core::db::Db;

/// CVE records per database write.
const BATCH: usize = 10_000;

#[derive(Debug, thiserror::Error)]
pub enum ImportError {
    #[error("{path}: {source}")]
    Io {
        path: String,
        source: std::io::Error,
    },
    #[error("{path}: {reason}")]
    Format { path: String, reason: String },
    #[error("database: {0}")]
    Db(#[from] sqlx::Error),
}

/// What importing one file (or one zip entry) did.
#[derive(Debug, Clone, serde::Serialize)]
pub struct ImportReport {
    pub file: String,
    pub kind: &'static str,
    /// Records read.
    pub records: u64,
    /// Records stored (new or newer than what was stored).
    pub written: u64,
    /// Records older than (or as old as) the stored ones.
    pub unchanged: u64,
    /// Records that could not be read, with the first reasons.
    pub skipped: u64,
    pub errors: Vec<String>,
    /// Every record that could not be read, counted by why (`names no
    /// CVE`, `not JSON`...).
    pub skipped_by_reason: std::collections::BTreeMap<String, u64>,
}

impl ImportReport {
    fn new(file: &str, kind: &'static str) -> ImportReport {
        ImportReport {
            file: file.to_string(),
            kind,
            records: 0,
            written: 0,
            unchanged: 0,
            skipped: 0,
            errors: vec![],
            skipped_by_reason: Default::default(),
        }
    }

    /// Counts one more record read and left out for `why` (see
    /// [`ImportReport::skip`]).
    fn refuse(&mut self, why: &str, reason: String) {
        self.records += 1;
        self.skip(why, reason);
    }

    /// Counts a record left out for `why` (a short phrase, the key of
    /// [`ImportReport::skipped_by_reason`]); the first ten `reason`s, which
    /// name the record, are kept and logged.
    fn skip(&mut self, why: &str, reason: String) {
        self.skipped += 1;
        *self.skipped_by_reason.entry(why.to_string()).or_default() += 1;
        if self.errors.len() < 10 {
            tracing::warn!(file = %self.file, kind = self.kind, reason = %reason, "import skipped a record");
            self.errors.push(reason);
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    Nvd,
    Cve5,
    Kev,
    Epss,
    Cwe,
    CpeDictionary,
    Osv,
    /// A JSON object none of the feeds' marks names in its first bytes:
    /// read whole and told by its structure ([`json_kind`]). An OSV record
    /// may write `modified` after an `affected` list of 80 KB (AlmaLinux's
    /// glibc advisories), so no prefix can tell one.
    Json,
}

/// Reads the kind from the first bytes of (decompressed) content.
fn sniff(head: &[u8]) -> Option<Kind> {
    let text = String::from_utf8_lossy(head);
    let trimmed = text.trim_start_matches('\u{feff}').trim_start();
    if trimmed.starts_with('<') {
        return Some(Kind::Cwe);
    }
    if trimmed.starts_with("#model_version") || trimmed.starts_with("cve,epss") {
        return Some(Kind::Epss);
    }
    if !trimmed.starts_with('{') {
        return None;
    }
    if text.contains("\"catalogVersion\"") || text.contains("\"knownRansomwareCampaignUse\"") {
        Some(Kind::Kev)
    } else if text.contains("\"cveMetadata\"") {
        Some(Kind::Cve5)
    } else if text.contains("\"cpeName\"") {
        Some(Kind::CpeDictionary)
    } else if text.contains("\"vulnerabilities\"") {
        Some(Kind::Nvd)
    } else {
        Some(Kind::Json)
    }
}

/// The kind of a parsed JSON object that [`sniff`] could not name: an OSV
/// record has a string `id` and an `affected` list or a `modified` time
/// (OSV schema 1.x); `None` for anything else.
fn json_kind(value: &Value) -> Option<Kind> {
    let osv =
        value["id"].is_string() && (value["affected"].is_array() || value["modified"].is_string());
    osv.then_some(Kind::Osv)
}

/// Why content of no importable kind was refused.
const NOT_IMPORTABLE: &str = "not a file cairn can import (NVD JSON 2.0, CVE JSON 5, OSV JSON, KEV JSON, EPSS CSV, CWE XML, CPE dictionary JSON; plain, .gz or .zip)";

/// Imports every path (files; a directory's files in name order).
pub async fn import_paths(
    db: &Db,
    paths: &[std::path::PathBuf],
) -> Result<Vec<ImportReport>, ImportError> {
    let mut files = vec![];
    for path in paths {
        if path.is_dir() {
            let mut entries: Vec<_> = std::fs::read_dir(path)
                .map_err(|source| ImportError::Io {
                    path: path.display().to_string(),
                    source,
                })?
                .filter_map(|e| e.ok().map(|e| e.path()))
                .filter(|p| p.is_file())
                .collect();
            entries.sort();
            files.extend(entries);
        } else {
            files.push(path.clone());
        }
    }
    let mut reports = vec![];
    for file in files {
        match import_file(db, &file).await {
            Ok(more) => reports.extend(more),
            // One unreadable file (not JSON, an unknown kind, a record
            // without an id) is reported and the rest still load; a
            // missing file or a database error stops the import.
            Err(ImportError::Format { path, reason }) => {
                let mut report = ImportReport::new(&path, "unreadable");
                report.records = 1;
                report.skip("unreadable file", reason);
                reports.push(report);
            }
            Err(other) => return Err(other),
        }
    }
    // An imported feed counts as that source loaded (offline, by hand).
    for source in [
        crate::reference::sources::NVD,
        crate::reference::sources::KEV,
        crate::reference::sources::EPSS,
    ] {
        let loaded = reports.iter().any(|r| {
            r.records > 0
                && match source {
                    crate::reference::sources::NVD => matches!(r.kind, "nvd" | "cve5"),
                    other => r.kind == other,
                }
        });
        if loaded {
            crate::reference::attempts::imported(db, source).await?;
        }
    }
    crate::reference::sources::record_gauges(db).await;
    Ok(reports)
}

/// Imports one file; a zip gives one report per entry kind.
pub async fn import_file(db: &Db, path: &Path) -> Result<Vec<ImportReport>, ImportError> {
    let name = path.display().to_string();
    let io = |source| ImportError::Io {
        path: name.clone(),
        source,
    };
    let mut head = [0u8; 4];
    let read = std::fs::File::open(path)
        .and_then(|mut f| f.read(&mut head))
        .map_err(io)?;
    if read == 4 && head == *b"PK\x03\x04" {
        return import_zip(db, path).await;
    }
    let path_owned = path.to_path_buf();
    let open = move || -> std::io::Result<Box<dyn BufRead + Send>> {
        let file = std::fs::File::open(&path_owned)?;
        let mut reader = BufReader::with_capacity(1 << 20, file);
        let gz = reader.fill_buf()?.starts_with(&[0x1f, 0x8b]);
        Ok(if gz {
            Box::new(BufReader::with_capacity(
                1 << 20,
                flate2::read::MultiGzDecoder::new(reader),
            ))
        } else {
            Box::new(reader)
        })
    };
    let report = import_stream(db, &name, open).await?;
    Ok(vec![report])
}

/// A zip (the CVE List, a CWE download): each entry is sniffed; CVE 5
/// records are written in batches across entries.
async fn import_zip(db: &Db, path: &Path) -> Result<Vec<ImportReport>, ImportError> {
    let name = path.display().to_string();
    let (sender, mut receiver) = mpsc::channel::<ZipBatch>(2);
    let path = path.to_path_buf();
    let file_name = name.clone();
    type ZipRead = (
        ImportReport,
        ImportReport,
        ImportReport,
        Vec<(String, Kind, Vec<u8>)>,
    );
    let reader = tokio::task::spawn_blocking(move || -> Result<ZipRead, ImportError> {
        let format = |reason: String| ImportError::Format {
            path: file_name.clone(),
            reason,
        };
        let file = std::fs::File::open(&path).map_err(|source| ImportError::Io {
            path: file_name.clone(),
            source,
        })?;
        let mut archive = zip::ZipArchive::new(file).map_err(|e| format(e.to_string()))?;
        let mut cve5 = ImportReport::new(&file_name, "cve5");
        let mut advisories = ImportReport::new(&file_name, "osv");
        // Entries of no kind Cairn reads: counted and named, never dropped
        // without a word.
        let mut unrecognized = ImportReport::new(&file_name, "unrecognized");
        let mut catalogs = vec![];
        let mut batch = Vec::with_capacity(BATCH);
        let mut osv_batch = Vec::with_capacity(BATCH);
        for index in 0..archive.len() {
            let mut entry = archive.by_index(index).map_err(|e| format(e.to_string()))?;
            if entry.is_dir() {
                continue;
            }
            let entry_name = entry.name().map(|n| n.to_string()).unwrap_or_default();
            // Entries are small records or one catalog; the cap keeps a
            // hostile archive from filling memory.
            const MAX_ENTRY: u64 = 512 * 1024 * 1024;
            let mut bytes = Vec::new();
            (&mut entry)
                .take(MAX_ENTRY + 1)
                .read_to_end(&mut bytes)
                .map_err(|e| format(format!("{entry_name}: {e}")))?;
            if bytes.len() as u64 > MAX_ENTRY {
                return Err(format(format!("{entry_name}: entry larger than 512 MiB")));
            }
            match sniff(&bytes[..bytes.len().min(65_536)]) {
                Some(Kind::Cve5) => {
                    if let Some(record) =
                        read_entry(&mut cve5, &entry_name, &bytes, records::from_cve5)
                    {
                        batch.push(record);
                    }
                    if batch.len() >= BATCH
                        && sender
                            .blocking_send(ZipBatch::Cves(std::mem::take(&mut batch)))
                            .is_err()
                    {
                        break;
                    }
                }
                Some(Kind::Json | Kind::Osv) => {
                    let value = match serde_json::from_slice::<Value>(&bytes) {
                        Ok(value) => value,
                        Err(e) => {
                            unrecognized
                                .refuse("not JSON", format!("{entry_name}: not JSON ({e})"));
                            continue;
                        }
                    };
                    if json_kind(&value) != Some(Kind::Osv) {
                        unrecognized.refuse(
                            "not a record cairn reads",
                            format!("{entry_name}: {NOT_IMPORTABLE}"),
                        );
                        continue;
                    }
                    advisories.records += 1;
                    match osv::parse(&value) {
                        Ok(advisory) => osv_batch.push(advisory),
                        Err(e) => advisories.skip(e.kind(), format!("{entry_name}: {e}")),
                    }
                    if osv_batch.len() >= BATCH
                        && sender
                            .blocking_send(ZipBatch::Advisories(std::mem::take(&mut osv_batch)))
                            .is_err()
                    {
                        break;
                    }
                }
                Some(kind) => catalogs.push((format!("{file_name}:{entry_name}"), kind, bytes)),
                None => unrecognized.refuse(
                    "not a record cairn reads",
                    format!("{entry_name}: {NOT_IMPORTABLE}"),
                ),
            }
        }
        if !batch.is_empty() {
            let _ = sender.blocking_send(ZipBatch::Cves(batch));
        }
        if !osv_batch.is_empty() {
            let _ = sender.blocking_send(ZipBatch::Advisories(osv_batch));
        }
        Ok((cve5, advisories, unrecognized, catalogs))
    });
    let mut written = store::CveWrite::default();
    let mut advisories_written = osv::OsvWrite::default();
    while let Some(batch) = receiver.recv().await {
        match batch {
            ZipBatch::Cves(records) => {
                let w = store::write_cves(db, &records).await?;
                written.written += w.written;
                written.unchanged += w.unchanged;
            }
            ZipBatch::Advisories(advisories) => {
                let w = osv::write_advisories(db, &advisories).await?;
                advisories_written.written += w.written;
                advisories_written.unchanged += w.unchanged;
            }
        }
    }
    let (mut cve5, mut advisories, unrecognized, catalogs) =
        reader.await.map_err(|e| ImportError::Format {
            path: name.clone(),
            reason: e.to_string(),
        })??;
    cve5.written = written.written;
    cve5.unchanged = written.unchanged;
    advisories.written = advisories_written.written;
    advisories.unchanged = advisories_written.unchanged;
    let mut reports = vec![];
    if cve5.records > 0 {
        reports.push(cve5);
    }
    if advisories.records > 0 {
        reports.push(advisories);
    }
    if unrecognized.records > 0 {
        reports.push(unrecognized);
    }
    for (entry, kind, bytes) in catalogs {
        reports.push(match kind {
            Kind::Nvd | Kind::CpeDictionary => {
                import_stream(db, &entry, move || {
                    Ok(Box::new(std::io::Cursor::new(bytes)) as Box<dyn BufRead + Send>)
                })
                .await?
            }
            _ => import_small(db, &entry, kind, &bytes).await?,
        });
    }
    Ok(reports)
}

fn kind_name(kind: Kind) -> &'static str {
    match kind {
        Kind::Nvd => "nvd",
        Kind::Cve5 => "cve5",
        Kind::Kev => "kev",
        Kind::Epss => "epss",
        Kind::Cwe => "cwe",
        Kind::CpeDictionary => "cpe_dictionary",
        Kind::Osv => "osv",
        Kind::Json => "json",
    }
}

/// Imports content opened by `open` (called on the reader thread).
pub async fn import_stream(
    db: &Db,
    name: &str,
    open: impl FnOnce() -> std::io::Result<Box<dyn BufRead + Send>> + Send + 'static,
) -> Result<ImportReport, ImportError> {
    let (sender, mut receiver) = mpsc::channel::<Batch>(2);
    let file = name.to_string();
    let reader = tokio::task::spawn_blocking(
        move || -> Result<(Kind, ImportReport, Vec<u8>), ImportError> {
            let io = |source| ImportError::Io {
                path: file.clone(),
                source,
            };
            let mut reader = open().map_err(io)?;
            let head = reader.fill_buf().map_err(io)?;
            let head = head[..head.len().min(65_536)].to_vec();
            let kind = sniff(&head).ok_or_else(|| ImportError::Format {
                path: file.clone(),
                reason: NOT_IMPORTABLE.into(),
            })?;
            let mut report = ImportReport::new(&file, kind_name(kind));
            match kind {
                Kind::Nvd | Kind::CpeDictionary => {
                    let key = if kind == Kind::Nvd {
                        "vulnerabilities"
                    } else {
                        "products"
                    };
                    stream_array(reader, key, kind, &sender, &mut report).map_err(|reason| {
                        ImportError::Format {
                            path: file.clone(),
                            reason,
                        }
                    })?;
                    Ok((kind, report, vec![]))
                }
                _ => {
                    let mut bytes = vec![];
                    reader.read_to_end(&mut bytes).map_err(io)?;
                    Ok((kind, report, bytes))
                }
            }
        },
    );
    let mut written = store::CveWrite::default();
    let mut products = 0u64;
    while let Some(batch) = receiver.recv().await {
        match batch {
            Batch::Cves(records) => {
                let w = store::write_cves(db, &records).await?;
                written.written += w.written;
                written.unchanged += w.unchanged;
            }
            Batch::Products(keys) => {
                products += store::write_cpe_products(db, &keys).await?;
            }
        }
    }
    let (kind, mut report, bytes) = reader.await.map_err(|e| ImportError::Format {
        path: name.to_string(),
        reason: e.to_string(),
    })??;
    match kind {
        Kind::Nvd => {
            report.written = written.written;
            report.unchanged = written.unchanged;
        }
        Kind::CpeDictionary => report.written = products,
        _ => report = import_small(db, name, kind, &bytes).await?,
    }
    Ok(report)
}

/// KEV, EPSS, CWE and single CVE 5 records: read whole.
async fn import_small(
    db: &Db,
    name: &str,
    kind: Kind,
    bytes: &[u8],
) -> Result<ImportReport, ImportError> {
    let format = |reason: String| ImportError::Format {
        path: name.to_string(),
        reason,
    };
    let mut report = ImportReport::new(name, kind_name(kind));
    match kind {
        Kind::Kev => {
            let entries = feeds::parse_kev(bytes).map_err(|e| format(e.to_string()))?;
            report.records = entries.len() as u64;
            report.written = store::write_kev(db, &entries).await?;
        }
        Kind::Epss => {
            let today = chrono::Utc::now().format("%Y-%m-%d").to_string();
            let (date, scores) =
                feeds::parse_epss(bytes, &today).map_err(|e| format(e.to_string()))?;
            report.records = scores.len() as u64;
            report.written = store::write_epss(db, &date, &scores).await?;
        }
        Kind::Cwe => {
            let cwes = feeds::parse_cwe(bytes).map_err(|e| format(e.to_string()))?;
            report.records = cwes.len() as u64;
            report.written = store::write_cwes(db, &cwes).await?;
        }
        Kind::Cve5 => {
            let value: Value = serde_json::from_slice(bytes).map_err(|e| format(e.to_string()))?;
            let record = records::from_cve5(&value).map_err(|e| format(e.to_string()))?;
            report.records = 1;
            let w = store::write_cves(db, &[record]).await?;
            report.written = w.written;
            report.unchanged = w.unchanged;
        }
        Kind::Osv | Kind::Json => {
            let value: Value = serde_json::from_slice(bytes).map_err(|e| format(e.to_string()))?;
            if json_kind(&value) != Some(Kind::Osv) {
                return Err(format(NOT_IMPORTABLE.into()));
            }
            report.kind = kind_name(Kind::Osv);
            let advisory = osv::parse(&value).map_err(|e| format(e.to_string()))?;
            report.records = 1;
            let w = osv::write_advisories(db, &[advisory]).await?;
            report.written = w.written;
            report.unchanged = w.unchanged;
        }
        Kind::Nvd | Kind::CpeDictionary => {}
    }
    Ok(report)
}

/// One zip entry as a record: counted in `report`, or skipped with the
/// reason (not JSON, or not a record `parse` reads).
fn read_entry<T, E: fmt::Display>(
    report: &mut ImportReport,
    entry: &str,
    bytes: &[u8],
    parse: impl FnOnce(&Value) -> Result<T, E>,
) -> Option<T> {
    report.records += 1;
    let read = serde_json::from_slice::<Value>(bytes)
        .map_err(|e| e.to_string())
        .and_then(|value| parse(&value).map_err(|e| e.to_string()));
    match read {
        Ok(record) => Some(record),
        Err(reason) => {
            report.skip("unreadable record", format!("{entry}: {reason}"));
            None
        }
    }
}

/// What a zip's reader hands the writer.
enum ZipBatch {
    Cves(Vec<CveRecord>),
    Advisories(Vec<osv::Advisory>),
}

enum Batch {
    Cves(Vec<CveRecord>),
    Products(Vec<(ProductKey, Option<String>)>),
}

/// Streams the array under `key` of a top-level object, one element at a
/// time, sending batches to the writer.
fn stream_array(
    reader: Box<dyn BufRead + Send>,
    key: &'static str,
    kind: Kind,
    sender: &mpsc::Sender<Batch>,
    report: &mut ImportReport,
) -> Result<(), String> {
    let mut sink = Sink {
        kind,
        sender,
        report,
        cves: Vec::with_capacity(BATCH),
        products: Vec::new(),
        closed: false,
    };
    let mut deserializer = serde_json::Deserializer::from_reader(reader);
    TopLevel {
        key,
        sink: &mut sink,
    }
    .deserialize(&mut deserializer)
    .map_err(|e| e.to_string())?;
    sink.flush();
    Ok(())
}

struct Sink<'a> {
    kind: Kind,
    sender: &'a mpsc::Sender<Batch>,
    report: &'a mut ImportReport,
    cves: Vec<CveRecord>,
    products: Vec<(ProductKey, Option<String>)>,
    closed: bool,
}

impl Sink<'_> {
    fn take(&mut self, mut element: Value) {
        self.report.records += 1;
        match self.kind {
            Kind::Nvd => match records::from_nvd(element["cve"].take()) {
                Ok(record) => self.cves.push(record),
                Err(e) => self.report.skip("unreadable record", e.to_string()),
            },
            _ => {
                let cpe = &element["cpe"];
                let parsed = cpe["cpeName"]
                    .as_str()
                    .and_then(crate::reference::cpe::Cpe::parse);
                match parsed {
                    Some(parsed) if cpe["deprecated"] != Value::Bool(true) => {
                        let title = cpe["titles"]
                            .as_array()
                            .and_then(|t| t.iter().find(|t| t["lang"] == "en"))
                            .and_then(|t| t["title"].as_str())
                            .map(str::to_string);
                        self.products.push((
                            ProductKey {
                                vendor: parsed.vendor,
                                product: parsed.product,
                            },
                            title,
                        ));
                    }
                    Some(_) => {}
                    None => self.report.skip(
                        "no readable cpeName",
                        "entry without a readable cpeName".into(),
                    ),
                }
            }
        }
        if self.cves.len() >= BATCH || self.products.len() >= 5 * BATCH {
            self.flush();
        }
    }

    fn flush(&mut self) {
        if self.closed {
            return;
        }
        let batch = if !self.cves.is_empty() {
            Batch::Cves(std::mem::take(&mut self.cves))
        } else if !self.products.is_empty() {
            self.products.sort();
            self.products.dedup_by(|a, b| a.0 == b.0);
            Batch::Products(std::mem::take(&mut self.products))
        } else {
            return;
        };
        // The writer hung up (a database error it will report).
        if self.sender.blocking_send(batch).is_err() {
            self.closed = true;
        }
    }
}

struct TopLevel<'s, 'a> {
    key: &'static str,
    sink: &'s mut Sink<'a>,
}

impl<'de> DeserializeSeed<'de> for TopLevel<'_, '_> {
    type Value = ();
    fn deserialize<D: serde::Deserializer<'de>>(self, deserializer: D) -> Result<(), D::Error> {
        deserializer.deserialize_map(self)
    }
}

impl<'de> Visitor<'de> for TopLevel<'_, '_> {
    type Value = ();
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        write!(f, "an object with a `{}` array", self.key)
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<(), A::Error> {
        while let Some(key) = map.next_key::<String>()? {
            if key == self.key {
                map.next_value_seed(Elements {
                    sink: &mut *self.sink,
                })?;
            } else {
                map.next_value::<IgnoredAny>()?;
            }
        }
        Ok(())
    }
}

struct Elements<'s, 'a> {
    sink: &'s mut Sink<'a>,
}

impl<'de> DeserializeSeed<'de> for Elements<'_, '_> {
    type Value = ();
    fn deserialize<D: serde::Deserializer<'de>>(self, deserializer: D) -> Result<(), D::Error> {
        deserializer.deserialize_seq(self)
    }
}

impl<'de> Visitor<'de> for Elements<'_, '_> {
    type Value = ();
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        write!(f, "an array")
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<(), A::Error> {
        while let Some(element) = seq.next_element::<Value>()? {
            self.sink.take(element);
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sniffing() {
        assert_eq!(
            sniff(b"{\"resultsPerPage\":1,\"vulnerabilities\":[{\"cve\":{}}]}"),
            Some(Kind::Nvd)
        );
        assert_eq!(
            sniff(b"{\"dataType\":\"CVE_RECORD\",\"cveMetadata\":{}}"),
            Some(Kind::Cve5)
        );
        assert_eq!(
            sniff(b"{\"title\":\"x\",\"catalogVersion\":\"1\",\"vulnerabilities\":[]}"),
            Some(Kind::Kev)
        );
        assert_eq!(
            sniff(b"#model_version:v1,score_date:2026-01-01\ncve,epss,percentile\n"),
            Some(Kind::Epss)
        );
        assert_eq!(
            sniff(b"<?xml version=\"1.0\"?><Weakness_Catalog>"),
            Some(Kind::Cwe)
        );
        assert_eq!(
            sniff(b"{\"products\":[{\"cpe\":{\"cpeName\":\"cpe:2.3:a:x:y\"}}]}"),
            Some(Kind::CpeDictionary)
        );
        assert_eq!(sniff(b"MZ\x90\x00"), None);
    }
}
