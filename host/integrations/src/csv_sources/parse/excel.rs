//! xlsx through calamine's streaming cell reader, after a look at the zip
//! directory: an archive that would expand absurdly is refused before any
//! entry is inflated.

use std::fs::File;
use std::io::BufReader;
use std::path::Path;

use calamine::{open_workbook, DataRef, Reader, Xlsx};

use super::{check_row, ParseError, MAX_COLUMNS};

/// Largest total the archive's entries may expand to.
const MAX_EXPANDED_BYTES: u64 = 2 * 1024 * 1024 * 1024;
/// An entry larger than this must not compress better than
/// [`MAX_ENTRY_RATIO`]:1; real sheets compress 5-30:1.
const LARGE_ENTRY_BYTES: u64 = 64 * 1024 * 1024;
const MAX_ENTRY_RATIO: u64 = 200;

pub fn read_rows(
    path: &Path,
    sheet: Option<&str>,
    on_row: &mut dyn FnMut(u64, Vec<String>) -> bool,
) -> Result<(), ParseError> {
    check_archive(path)?;
    let mut workbook: Xlsx<BufReader<File>> =
        open_workbook(path).map_err(|e: calamine::XlsxError| ParseError::Excel(e.to_string()))?;
    let names = workbook.sheet_names();
    let name = match sheet {
        Some(wanted) => names
            .iter()
            .find(|n| n.eq_ignore_ascii_case(wanted))
            .cloned()
            .ok_or_else(|| ParseError::NoSuchSheet(wanted.to_string()))?,
        None => names
            .first()
            .cloned()
            .ok_or_else(|| ParseError::Excel("the workbook has no sheets".into()))?,
    };
    let mut reader = workbook
        .worksheet_cells_reader(&name)
        .map_err(|e| ParseError::Excel(e.to_string()))?;
    let mut current: Option<u32> = None;
    let mut cells: Vec<String> = vec![];
    while let Some(cell) = reader
        .next_cell()
        .map_err(|e| ParseError::Excel(e.to_string()))?
    {
        let (row, column) = cell.get_position();
        if current != Some(row) {
            if let Some(previous) = current {
                let number = u64::from(previous) + 1;
                check_row(number, &cells)?;
                if !on_row(number, std::mem::take(&mut cells)) {
                    return Ok(());
                }
            }
            current = Some(row);
        }
        let column = column as usize;
        if column >= MAX_COLUMNS {
            return Err(ParseError::TooManyColumns {
                row: u64::from(row) + 1,
            });
        }
        if cells.len() <= column {
            cells.resize(column + 1, String::new());
        }
        cells[column] = cell_text(cell.get_value());
    }
    if let Some(last) = current {
        let number = u64::from(last) + 1;
        check_row(number, &cells)?;
        on_row(number, cells);
    }
    Ok(())
}

/// A cell as the text a user would see for it.
fn cell_text(value: &DataRef<'_>) -> String {
    match value {
        DataRef::String(s) | DataRef::DateTimeIso(s) | DataRef::DurationIso(s) => s.clone(),
        DataRef::SharedString(s) => s.to_string(),
        // Whole numbers (version parts, counts) without a trailing ".0".
        DataRef::Float(f) if f.fract() == 0.0 && f.abs() < 1e15 => format!("{}", *f as i64),
        DataRef::Float(f) => f.to_string(),
        DataRef::Int(i) => i.to_string(),
        DataRef::Bool(b) => b.to_string(),
        DataRef::DateTime(dt) => dt.to_string(),
        DataRef::Error(_) | DataRef::Empty => String::new(),
    }
}

fn check_archive(path: &Path) -> Result<(), ParseError> {
    let file = File::open(path)?;
    let size = file.metadata()?.len().max(1);
    let mut archive =
        zip::ZipArchive::new(BufReader::new(file)).map_err(|e| ParseError::Excel(e.to_string()))?;
    let mut expanded: u64 = 0;
    for index in 0..archive.len() {
        let entry = archive
            .by_index_raw(index)
            .map_err(|e| ParseError::Excel(e.to_string()))?;
        let ratio = entry.size() / entry.compressed_size().max(1);
        if entry.size() > LARGE_ENTRY_BYTES && ratio > MAX_ENTRY_RATIO {
            return Err(ParseError::ZipBomb {
                expanded_mb: entry.size() / (1024 * 1024),
                ratio,
            });
        }
        expanded = expanded.saturating_add(entry.size());
    }
    if expanded > MAX_EXPANDED_BYTES {
        return Err(ParseError::ZipBomb {
            expanded_mb: expanded / (1024 * 1024),
            ratio: expanded / size,
        });
    }
    Ok(())
}
