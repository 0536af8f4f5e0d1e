//! Finding the header row and matching its cells to a provider's columns.
//! Matching ignores case, spaces and punctuation: "Device Name",
//! "device_name" and "DEVICE-NAME" are one spelling.

use std::collections::HashMap;

use cairn_plugins::ColumnAlias;

/// Rows searched for the header before the file is refused.
pub const MAX_PREAMBLE_ROWS: usize = 50;

/// A header cell reduced to lower-case letters and digits.
pub fn normalize(cell: &str) -> String {
    cell.chars()
        .filter(|c| c.is_alphanumeric())
        .flat_map(char::to_lowercase)
        .collect()
}

/// A provider's columns and their spellings, ready for matching.
#[derive(Debug, Clone)]
pub struct Columns {
    /// Normalized spelling -> canonical column.
    by_spelling: HashMap<String, String>,
    /// Canonical columns that must all appear in the header row.
    signals: Vec<String>,
}

impl Columns {
    pub fn new(signals: &[String], aliases: &[ColumnAlias]) -> Columns {
        let mut by_spelling = HashMap::new();
        for ColumnAlias { column, aliases } in aliases {
            for spelling in std::iter::once(column).chain(aliases) {
                by_spelling
                    .entry(normalize(spelling))
                    .or_insert_with(|| column.clone());
            }
        }
        for signal in signals {
            by_spelling
                .entry(normalize(signal))
                .or_insert_with(|| signal.clone());
        }
        Columns {
            by_spelling,
            signals: signals.to_vec(),
        }
    }

    fn canonical(&self, cell: &str) -> Option<&String> {
        self.by_spelling.get(&normalize(cell))
    }

    /// True when every signal column is found in `row`.
    pub fn is_header(&self, row: &[String]) -> bool {
        !self.signals.is_empty()
            && self
                .signals
                .iter()
                .all(|signal| row.iter().any(|cell| self.canonical(cell) == Some(signal)))
    }

    /// The header cells as the provider sees them: a matched cell becomes
    /// its canonical column (the first cell to claim a column wins); any
    /// other keeps its text, or `column_<n>` when blank.
    pub fn match_header(&self, row: &[String]) -> Vec<String> {
        let mut claimed = std::collections::HashSet::new();
        row.iter()
            .enumerate()
            .map(|(i, cell)| match self.canonical(cell) {
                Some(column) if claimed.insert(column.clone()) => column.clone(),
                _ if cell.trim().is_empty() => format!("column_{}", i + 1),
                _ => cell.trim().to_string(),
            })
            .collect()
    }

    /// What the header must contain, for the error message.
    pub fn expected(&self) -> String {
        self.signals.join(", ")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cells(list: &[&str]) -> Vec<String> {
        list.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn headers_match_ignoring_case_spaces_and_punctuation() {
        let columns = Columns::new(
            &cells(&["device_name", "application_name"]),
            &[
                ColumnAlias {
                    column: "device_name".into(),
                    aliases: cells(&["Computer Name"]),
                },
                ColumnAlias {
                    column: "application_name".into(),
                    aliases: cells(&["Software"]),
                },
            ],
        );
        assert!(!columns.is_header(&cells(&["Software report", "", ""])));
        let header = cells(&["COMPUTER-NAME", "  Software ", "Seen On", ""]);
        assert!(columns.is_header(&header));
        assert_eq!(
            columns.match_header(&header),
            cells(&["device_name", "application_name", "Seen On", "column_4"])
        );
        assert!(columns.is_header(&cells(&["Device_Name", "application name"])));
    }
}
