use serde_json::{Map, Value};

/// One data row of an uploaded file, its cells looked up by column.
///
/// The host has already found the header row and matched each header cell
/// to the provider's canonical columns (ignoring case, spaces and
/// punctuation, through [`crate::CsvDescriptor::column_aliases`]); a header
/// that matched no column keeps its text as written in the file.
#[derive(Debug, Clone, Copy)]
pub struct CsvRow<'a> {
    headers: &'a [String],
    cells: &'a [String],
}

impl<'a> CsvRow<'a> {
    pub fn new(headers: &'a [String], cells: &'a [String]) -> CsvRow<'a> {
        CsvRow { headers, cells }
    }

    /// The trimmed cell of `column`, or `None` when the file has no such
    /// column or the cell is blank.
    pub fn get(&self, column: &str) -> Option<&'a str> {
        let index = self.headers.iter().position(|h| h == column)?;
        let cell = self.cells.get(index)?.trim();
        (!cell.is_empty()).then_some(cell)
    }

    /// As [`CsvRow::get`], owned.
    pub fn string(&self, column: &str) -> Option<String> {
        self.get(column).map(str::to_string)
    }

    /// The cell read as a yes/no flag: `yes`, `y`, `true`, `1`, `x` and
    /// `admin` are true; `no`, `n`, `false`, `0` are false; anything else
    /// (or blank) is `None`.
    pub fn flag(&self, column: &str) -> Option<bool> {
        match self.get(column)?.to_ascii_lowercase().as_str() {
            "yes" | "y" | "true" | "1" | "x" | "admin" => Some(true),
            "no" | "n" | "false" | "0" => Some(false),
            _ => None,
        }
    }

    /// The cell read as a number (thousands separators allowed).
    pub fn number(&self, column: &str) -> Option<f64> {
        self.get(column)?.replace(',', "").parse().ok()
    }

    /// Every non-blank cell as a JSON object keyed by column; what a record
    /// provider usually stores as the record's body.
    pub fn to_json(&self) -> Value {
        let mut object = Map::new();
        for (header, cell) in self.headers.iter().zip(self.cells) {
            let cell = cell.trim();
            if !cell.is_empty() && !header.is_empty() {
                object.insert(header.clone(), Value::String(cell.to_string()));
            }
        }
        Value::Object(object)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cells_are_found_by_column_and_trimmed() {
        let headers = vec!["device_name".to_string(), "admin".to_string()];
        let cells = vec!["  PC-1 ".to_string(), "Yes".to_string()];
        let row = CsvRow::new(&headers, &cells);
        assert_eq!(row.get("device_name"), Some("PC-1"));
        assert_eq!(row.flag("admin"), Some(true));
        assert_eq!(row.get("missing"), None);
        assert_eq!(row.to_json()["device_name"], "PC-1");
    }
}
