//! CSV: UTF-8 (with or without BOM) and UTF-16 (by its BOM) decoded to
//! UTF-8 as the file streams, the delimiter sniffed from the first 64 KB,
//! and a guard that refuses a line longer than [`MAX_ROW_BYTES`] before
//! the csv reader would buffer it.

use std::collections::HashMap;
use std::fs::File;
use std::io::{BufReader, Cursor, Read};
use std::path::Path;

use encoding_rs_io::DecodeReaderBytesBuilder;

use super::{check_row, ParseError, MAX_ROW_BYTES};

/// Bytes the delimiter is sniffed from.
const SNIFF_BYTES: usize = 64 * 1024;
const DELIMITERS: [u8; 4] = [b',', b';', b'\t', b'|'];
const READ_BUFFER: usize = 256 * 1024;

pub fn read_rows(
    path: &Path,
    on_row: &mut dyn FnMut(u64, Vec<String>) -> bool,
) -> Result<(), ParseError> {
    let file = BufReader::with_capacity(READ_BUFFER, File::open(path)?);
    let decoded = DecodeReaderBytesBuilder::new()
        .bom_sniffing(true)
        .strip_bom(true)
        .build(file);
    let mut guarded = LineGuard::new(decoded);
    let mut sample = Vec::with_capacity(SNIFF_BYTES);
    (&mut guarded)
        .take(SNIFF_BYTES as u64)
        .read_to_end(&mut sample)
        .map_err(|e| guard_error(e, 0))?;
    let delimiter = sniff_delimiter(&sample, sample.len() == SNIFF_BYTES);
    let mut reader = csv::ReaderBuilder::new()
        .has_headers(false)
        .flexible(true)
        .delimiter(delimiter)
        .buffer_capacity(READ_BUFFER)
        .from_reader(Cursor::new(sample).chain(guarded));
    let mut record = csv::ByteRecord::new();
    loop {
        match reader.read_byte_record(&mut record) {
            Ok(true) => {}
            Ok(false) => return Ok(()),
            Err(err) => {
                let line = err.position().map(|p| p.line()).unwrap_or(0);
                let message = err.to_string();
                return Err(match err.into_kind() {
                    csv::ErrorKind::Io(io) => guard_error(io, line),
                    _ => ParseError::Csv(message),
                });
            }
        }
        let row = record.position().map(|p| p.line()).unwrap_or(0);
        let cells: Vec<String> = record.iter().map(decode_cell).collect();
        check_row(row, &cells)?;
        if !on_row(row, cells) {
            return Ok(());
        }
    }
}

/// A cell as text: UTF-8 when it is, else Windows-1252 (what Excel on
/// Windows writes when it saves "CSV" without a BOM).
fn decode_cell(bytes: &[u8]) -> String {
    match std::str::from_utf8(bytes) {
        Ok(text) => text.to_string(),
        Err(_) => encoding_rs::WINDOWS_1252
            .decode_without_bom_handling(bytes)
            .0
            .into_owned(),
    }
}

/// Picks the delimiter that splits the most lines into the same number of
/// fields (ties: more fields). Title rows above the header have few or no
/// delimiters, so the data decides.
fn sniff_delimiter(sample: &[u8], truncated: bool) -> u8 {
    let text = String::from_utf8_lossy(sample);
    let mut lines: Vec<&str> = text.lines().filter(|l| !l.trim().is_empty()).collect();
    if truncated && lines.len() > 1 {
        lines.pop();
    }
    let mut best = (b',', 0usize, 0usize);
    for delimiter in DELIMITERS {
        let mut lines_by_count: HashMap<usize, usize> = HashMap::new();
        for line in &lines {
            let count = count_outside_quotes(line, delimiter as char);
            if count > 0 {
                *lines_by_count.entry(count).or_default() += 1;
            }
        }
        let modal = lines_by_count
            .into_iter()
            .max_by_key(|(count, lines)| (*lines, *count));
        if let Some((count, lines)) = modal {
            if (lines, count) > (best.1, best.2) {
                best = (delimiter, lines, count);
            }
        }
    }
    best.0
}

fn count_outside_quotes(line: &str, delimiter: char) -> usize {
    let mut quoted = false;
    let mut count = 0;
    for c in line.chars() {
        if c == '"' {
            quoted = !quoted;
        } else if c == delimiter && !quoted {
            count += 1;
        }
    }
    count
}

/// The marker error of [`LineGuard`].
#[derive(Debug, thiserror::Error)]
#[error("line too long")]
struct LineTooLong;

fn guard_error(err: std::io::Error, line: u64) -> ParseError {
    if err
        .get_ref()
        .is_some_and(|inner| inner.downcast_ref::<LineTooLong>().is_some())
    {
        ParseError::RowTooLong { row: line.max(1) }
    } else {
        ParseError::Io(err)
    }
}

/// Fails the read once a line runs past [`MAX_ROW_BYTES`]: a 50 MB file
/// that is one line is refused after 1 MB instead of being buffered.
struct LineGuard<R> {
    inner: R,
    since_newline: usize,
}

impl<R: Read> LineGuard<R> {
    fn new(inner: R) -> Self {
        LineGuard {
            inner,
            since_newline: 0,
        }
    }
}

impl<R: Read> Read for LineGuard<R> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let n = self.inner.read(buf)?;
        match buf[..n].iter().rposition(|b| *b == b'\n' || *b == b'\r') {
            Some(last) => self.since_newline = n - last - 1,
            None => self.since_newline += n,
        }
        if self.since_newline > MAX_ROW_BYTES {
            return Err(std::io::Error::other(LineTooLong));
        }
        Ok(n)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_delimiter_is_the_one_the_data_agrees_on() {
        let semicolons = b"Software report\nGenerated 2026-11-01\n\nDevice;Application;Version\nPC-1;Office, Pro;16,0\nPC-2;7-Zip;23.01\n";
        assert_eq!(sniff_delimiter(semicolons, false), b';');
        let commas = b"device,application\n\"a;b\",c\nd,e\n";
        assert_eq!(sniff_delimiter(commas, false), b',');
        let tabs = b"device\tapplication\nx\ty\n";
        assert_eq!(sniff_delimiter(tabs, false), b'\t');
        assert_eq!(sniff_delimiter(b"single column\nvalue\n", false), b',');
    }

    #[test]
    fn invalid_utf8_cells_read_as_windows_1252() {
        assert_eq!(decode_cell(b"Caf\xe9"), "Café");
        assert_eq!(decode_cell("Café".as_bytes()), "Café");
    }
}
