//! Reading an uploaded file as rows of text cells: xlsx when it starts with
//! a zip signature, otherwise CSV. Both read streaming; a row is handed on
//! as soon as it is read, with its row number in the file.

mod excel;
pub mod header;
mod text;

use std::path::Path;

/// Leading bytes of a zip archive, hence of an xlsx workbook.
const ZIP_SIGNATURE: [u8; 4] = [0x50, 0x4B, 0x03, 0x04];

/// A row longer than this is refused: no real export has one, and a file
/// that is one endless line must not be buffered whole.
pub const MAX_ROW_BYTES: usize = 1024 * 1024;
/// Widest row accepted.
pub const MAX_COLUMNS: usize = 1000;

/// Why a file could not be read. Messages are shown to the operator and say
/// what to fix.
#[derive(Debug, thiserror::Error)]
pub enum ParseError {
    #[error("row {row} is longer than {} KB; is this really a CSV export?", MAX_ROW_BYTES / 1024)]
    RowTooLong { row: u64 },
    #[error("row {row} has more than {MAX_COLUMNS} columns")]
    TooManyColumns { row: u64 },
    #[error("not a readable CSV file: {0}")]
    Csv(String),
    #[error("not a readable Excel workbook: {0}")]
    Excel(String),
    #[error("the workbook has no sheet named {0:?}")]
    NoSuchSheet(String),
    #[error(
        "the archive would expand to {expanded_mb} MB ({ratio}:1); refusing it as a likely zip bomb"
    )]
    ZipBomb { expanded_mb: u64, ratio: u64 },
    #[error("no header row found in the first {searched} rows: expected columns {expected}")]
    NoHeader { searched: usize, expected: String },
    #[error("reading the file failed: {0}")]
    Io(#[from] std::io::Error),
}

/// Which reader a file needs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    Csv,
    Xlsx,
}

impl Format {
    /// Every [`Format::as_str`].
    pub const NAMES: [&'static str; 2] = ["csv", "xlsx"];

    pub fn as_str(self) -> &'static str {
        match self {
            Format::Csv => "csv",
            Format::Xlsx => "xlsx",
        }
    }
}

/// Detects the format from the leading bytes, as the spec says: the zip
/// signature means xlsx, anything else is read as CSV.
pub fn detect(path: &Path) -> std::io::Result<Format> {
    use std::io::Read;
    let mut head = [0u8; 4];
    let mut file = std::fs::File::open(path)?;
    let mut read = 0;
    while read < head.len() {
        match file.read(&mut head[read..])? {
            0 => break,
            n => read += n,
        }
    }
    Ok(if read == 4 && head == ZIP_SIGNATURE {
        Format::Xlsx
    } else {
        Format::Csv
    })
}

/// Calls `on_row(row_number, cells)` for every row of the file, in order;
/// `on_row` returns `false` to stop early. Blocking: run it off the async
/// runtime.
pub fn read_rows(
    path: &Path,
    format: Format,
    sheet: Option<&str>,
    on_row: &mut dyn FnMut(u64, Vec<String>) -> bool,
) -> Result<(), ParseError> {
    match format {
        Format::Csv => text::read_rows(path, on_row),
        Format::Xlsx => excel::read_rows(path, sheet, on_row),
    }
}

/// Refuses a row that is too wide or too long.
fn check_row(row: u64, cells: &[String]) -> Result<(), ParseError> {
    if cells.len() > MAX_COLUMNS {
        return Err(ParseError::TooManyColumns { row });
    }
    if cells.iter().map(String::len).sum::<usize>() > MAX_ROW_BYTES {
        return Err(ParseError::RowTooLong { row });
    }
    Ok(())
}
