//! Reads the buffer of mapped rows a v0.3 component answers `map-records`
//! and `map-rows` with (`sdk/wit/v0.3/plugin.wit` documents the encoding;
//! the SDK's `row_page` writes it) straight into the host's rows. A
//! component is untrusted: every length is checked against what is left,
//! and a malformed buffer is an error, never a panic.

use super::rows::{InventoryRow, MappedRow, RecordRow, RowCaps, RowText};

/// The length word of an absent optional text.
const ABSENT: u32 = u32::MAX;

/// One result per input: its rows, or why it could not be mapped (the
/// component's reason, or the first row over the caps).
pub type Results = Vec<Result<Vec<MappedRow>, String>>;

/// Decodes `buffer`, which must hold exactly `inputs` results, checking
/// each row against `caps`.
pub fn decode(buffer: &[u8], inputs: usize, caps: RowCaps) -> Result<Results, String> {
    let mut reader = Reader { rest: buffer };
    let mut results = Vec::with_capacity(inputs);
    while !reader.rest.is_empty() {
        if results.len() == inputs {
            return Err(format!("more than {inputs} results"));
        }
        results.push(match reader.byte()? {
            0 => {
                let count = reader.count(ROW_MIN_BYTES)?;
                let mut rows = Vec::with_capacity(count);
                let mut refused = None;
                // Every row is read, even past one over the caps, so the
                // next result starts where it should.
                for _ in 0..count {
                    match reader.row(caps)? {
                        Ok(row) => rows.push(row),
                        Err(reason) => {
                            refused.get_or_insert(reason);
                        }
                    }
                }
                refused.map_or(Ok(rows), Err)
            }
            1 => Err(reader.str()?.to_owned()),
            tag => return Err(format!("unknown result tag {tag}")),
        });
    }
    if results.len() != inputs {
        return Err(format!("{} results for {inputs} inputs", results.len()));
    }
    Ok(results)
}

/// The fewest bytes a row takes (a record row of empty texts: its tag and
/// seven length words; an inventory row takes at least twelve), so a count
/// can be checked against the bytes left before anything is reserved.
const ROW_MIN_BYTES: usize = 1 + 7 * 4;

struct Reader<'a> {
    rest: &'a [u8],
}

impl<'a> Reader<'a> {
    fn byte(&mut self) -> Result<u8, String> {
        let (&first, rest) = self.rest.split_first().ok_or(ENDS_EARLY)?;
        self.rest = rest;
        Ok(first)
    }

    fn u32(&mut self) -> Result<u32, String> {
        let (word, rest) = self.rest.split_first_chunk::<4>().ok_or(ENDS_EARLY)?;
        self.rest = rest;
        Ok(u32::from_le_bytes(*word))
    }

    /// A count of items of at least `item_bytes` each.
    fn count(&mut self, item_bytes: usize) -> Result<usize, String> {
        let count = self.u32()? as usize;
        if count > self.rest.len() / item_bytes {
            return Err(format!(
                "{count} items announced, more than the buffer holds"
            ));
        }
        Ok(count)
    }

    /// The next `len` bytes as text, borrowed from the buffer.
    fn str_of(&mut self, len: u32) -> Result<&'a str, String> {
        let len = len as usize;
        if len > self.rest.len() {
            return Err(ENDS_EARLY.into());
        }
        let (text, rest) = self.rest.split_at(len);
        self.rest = rest;
        std::str::from_utf8(text).map_err(|_| "a text is not UTF-8".into())
    }

    fn str(&mut self) -> Result<&'a str, String> {
        let len = self.u32()?;
        self.str_of(len)
    }

    fn text(&mut self) -> Result<RowText, String> {
        self.str().map(RowText::from)
    }

    fn optional(&mut self) -> Result<Option<RowText>, String> {
        match self.u32()? {
            ABSENT => Ok(None),
            len => self.str_of(len).map(|text| Some(text.into())),
        }
    }

    fn list(&mut self) -> Result<Vec<RowText>, String> {
        let count = self.count(4)?;
        (0..count).map(|_| self.text()).collect()
    }

    /// The next row: an error of the buffer fails the whole answer, a row
    /// over `caps` only its input.
    fn row(&mut self, caps: RowCaps) -> Result<Result<MappedRow, String>, String> {
        let row = match self.byte()? {
            kind @ (0 | 2) => {
                let mut row = InventoryRow {
                    device_name: self.optional()?,
                    device_id: self.optional()?,
                    os_platform: self.optional()?,
                    os_version: self.optional()?,
                    os_name: None,
                    os_build: None,
                    user_email: self.optional()?,
                    user_name: self.optional()?,
                    application_name: self.optional()?,
                    vendor: self.optional()?,
                    version: self.optional()?,
                    publisher: self.optional()?,
                    client_id: self.optional()?,
                    group_ids: self.list()?,
                };
                // 2: SDK 0.3.2's row with the OS detail after the rest.
                if kind == 2 {
                    row.os_name = self.optional()?;
                    row.os_build = self.optional()?;
                }
                MappedRow::Inventory(row)
            }
            1 => {
                let collection = self.text()?;
                let key = self.text()?;
                let device_name = self.optional()?;
                let client_id = self.optional()?;
                let group_ids = self.list()?;
                let (fields, body) = (self.str()?, self.str()?);
                if let Err(reason) = caps.check_record_size(&collection, fields, body) {
                    return Ok(Err(reason));
                }
                MappedRow::Record(RecordRow::from_plugin(
                    collection,
                    key,
                    device_name,
                    client_id,
                    group_ids,
                    fields,
                    body.to_owned(),
                ))
            }
            tag => return Err(format!("unknown row tag {tag}")),
        };
        Ok(row.within(caps))
    }
}

const ENDS_EARLY: &str = "the buffer ends early";

#[cfg(test)]
mod tests {
    use super::*;
    use crate::runtime::connector_world::cairn::plugin::types as wit;
    use cairn_sdk::row_page::RowPageWriter;
    use cairn_sdk::{json, InventoryItem, Row, SourceRecord, Value};
    use proptest::prelude::*;

    const CAPS: RowCaps = RowCaps {
        field_chars: 64,
        body_bytes: 4096,
        group_ids: 8,
    };

    fn item(application: &str) -> InventoryItem {
        InventoryItem {
            device_name: Some("WS-Ürümqi-01".into()),
            device_id: Some("101".into()),
            os_platform: Some("windows".into()),
            os_version: None,
            user_email: Some(String::new()),
            user_name: Some("ACME\\jdoe".into()),
            application_name: Some(application.into()),
            vendor: None,
            version: Some("23.01".into()),
            publisher: Some("Igor Pavlov".into()),
            client_id: Some("7".into()),
            group_ids: vec!["3".into(), "群组".into()],
            ..InventoryItem::default()
        }
    }

    fn record(fields: Value) -> SourceRecord {
        SourceRecord {
            collection: "threats".into(),
            key: "t-1".into(),
            device_name: None,
            client_id: Some("7".into()),
            group_ids: vec![],
            fields,
            body: json!({"id": "t-1", "name": "Emotet \u{1F41B}", "nested": {"a": [1, null]}}),
        }
    }

    /// Inputs as a component maps them: two mapped, one refused, one with
    /// no rows.
    fn sample() -> (Vec<u8>, Vec<Vec<Row>>) {
        let mapped = vec![
            vec![
                Row::Record(record(json!({"name": "Emotet"}))),
                Row::Inventory(item("7-Zip 23.01 (x64)")),
                Row::Inventory(item("Firefox")),
            ],
            vec![Row::Record(record(Value::Null))],
            vec![],
        ];
        let mut writer = RowPageWriter::with_input_bytes(0);
        writer.rows(&mapped[0]);
        writer.failed("record is not JSON: expected value at line 1 — ligne 1");
        writer.rows(&mapped[1]);
        writer.rows(&mapped[2]);
        (writer.finish(), mapped)
    }

    fn expected(row: &Row) -> wit::Row {
        match row.clone() {
            Row::Inventory(i) => wit::Row::Inventory(wit::InventoryItem {
                device_name: i.device_name,
                device_id: i.device_id,
                os_platform: i.os_platform,
                os_version: i.os_version,
                user_email: i.user_email,
                user_name: i.user_name,
                application_name: i.application_name,
                vendor: i.vendor,
                version: i.version,
                publisher: i.publisher,
                client_id: i.client_id,
                group_ids: i.group_ids,
            }),
            Row::Record(r) => wit::Row::Record(wit::SourceRecord {
                collection: r.collection,
                key: r.key,
                device_name: r.device_name,
                client_id: r.client_id,
                group_ids: r.group_ids,
                fields: match r.fields {
                    Value::Null => "{}".into(),
                    fields => fields.to_string(),
                },
                body: r.body.to_string(),
            }),
        }
    }

    #[test]
    fn what_the_sdk_writes_reads_back_whole() {
        let (buffer, mapped) = sample();
        // Compared as the host's rows: the generated types have no `==`.
        let results = decode(&buffer, 4, CAPS).unwrap();
        assert_eq!(results.len(), 4);
        let rows = |index: usize| -> Vec<MappedRow> {
            mapped[index]
                .iter()
                .map(|row| MappedRow::from(expected(row)))
                .collect()
        };
        assert_eq!(results[0], Ok(rows(0)));
        assert_eq!(
            results[1],
            Err("record is not JSON: expected value at line 1 — ligne 1".into())
        );
        assert_eq!(results[2], Ok(rows(1)));
        assert_eq!(results[3], Ok(vec![]));
    }

    #[test]
    fn the_os_detail_reads_back_and_rows_without_it_keep_their_bytes() {
        let plain = item("Firefox");
        let detailed = InventoryItem {
            os_name: Some("Windows 11 Pro".into()),
            os_build: Some("22631.2861".into()),
            ..item("Firefox")
        };
        let only_build = InventoryItem {
            os_build: Some("14393".into()),
            ..item("Firefox")
        };
        let mut writer = RowPageWriter::with_input_bytes(0);
        writer.rows(&[
            Row::Inventory(plain.clone()),
            Row::Inventory(detailed),
            Row::Inventory(only_build),
        ]);
        let buffer = writer.finish();
        let results = decode(&buffer, 1, CAPS).unwrap();
        let rows = results[0].as_ref().unwrap();
        let os = |row: &MappedRow| match row {
            MappedRow::Inventory(i) => (i.os_name.clone(), i.os_build.clone()),
            MappedRow::Record(_) => panic!("an inventory row"),
        };
        assert_eq!(os(&rows[0]), (None, None));
        assert_eq!(
            os(&rows[1]),
            (Some("Windows 11 Pro".into()), Some("22631.2861".into()))
        );
        assert_eq!(os(&rows[2]), (None, Some("14393".into())));
        assert_eq!(
            rows[0],
            MappedRow::from(expected(&Row::Inventory(plain))),
            "the rest of a row reads as before"
        );
        // A row without the detail is 0.3.0's: tag 0 after the result's
        // tag and count.
        assert_eq!(buffer[5], 0);
    }

    #[test]
    fn a_row_over_the_caps_fails_its_input_and_the_next_reads_on() {
        let long = "ü".repeat(65);
        let mut writer = RowPageWriter::with_input_bytes(0);
        writer.rows(&[Row::Inventory(item(&long)), Row::Inventory(item("Firefox"))]);
        writer.rows(&[Row::Inventory(item("Firefox"))]);
        let results = decode(&writer.finish(), 2, CAPS).unwrap();
        assert_eq!(
            results[0],
            Err("application_name is 65 characters long, over the cap of 64".into())
        );
        assert_eq!(
            results[1],
            Ok(vec![MappedRow::from(expected(&Row::Inventory(item(
                "Firefox"
            ))))])
        );
        let big = record(json!({"name": "x".repeat(5000)}));
        let mut writer = RowPageWriter::with_input_bytes(0);
        writer.rows(&[Row::Record(big)]);
        let results = decode(&writer.finish(), 1, CAPS).unwrap();
        assert!(results[0]
            .as_ref()
            .unwrap_err()
            .contains("over the cap of 4096"));
    }

    #[test]
    fn a_page_of_the_smallest_records_reads_back() {
        let tiny = SourceRecord {
            collection: "c".into(),
            key: "k".into(),
            device_name: None,
            client_id: None,
            group_ids: vec![],
            fields: json!({}),
            body: json!(0),
        };
        let rows = vec![Row::Record(tiny); 100];
        let mut writer = RowPageWriter::with_input_bytes(0);
        writer.rows(&rows);
        let results = decode(&writer.finish(), 1, CAPS).unwrap();
        assert_eq!(results[0].as_ref().map(Vec::len), Ok(100));
    }

    #[test]
    fn a_buffer_with_another_count_of_results_is_refused() {
        let (buffer, _) = sample();
        assert_eq!(
            decode(&buffer, 5, CAPS).unwrap_err(),
            "4 results for 5 inputs"
        );
        assert_eq!(decode(&buffer, 3, CAPS).unwrap_err(), "more than 3 results");
        assert_eq!(decode(&[], 1, CAPS).unwrap_err(), "0 results for 1 inputs");
    }

    #[test]
    fn every_truncation_is_an_error() {
        let (buffer, _) = sample();
        // Cutting at a result's end leaves a shorter, well-formed buffer.
        for end in 0..buffer.len() {
            assert!(decode(&buffer[..end], 4, CAPS).is_err(), "cut at {end}");
        }
    }

    #[test]
    fn bad_tags_lengths_and_text_are_named() {
        assert_eq!(decode(&[7], 1, CAPS).unwrap_err(), "unknown result tag 7");
        assert_eq!(
            decode(&[0, 1, 0, 0, 0, 9], 1, CAPS).unwrap_err(),
            "1 items announced, more than the buffer holds"
        );
        let mut bad_row = vec![0, 1, 0, 0, 0, 9];
        bad_row.extend([0; ROW_MIN_BYTES]);
        assert_eq!(decode(&bad_row, 1, CAPS).unwrap_err(), "unknown row tag 9");
        let huge_count = [0, 0xff, 0xff, 0xff, 0x7f];
        assert!(decode(&huge_count, 1, CAPS)
            .unwrap_err()
            .contains("announced"));
        let not_utf8 = [1, 2, 0, 0, 0, 0xc3, 0x28];
        assert_eq!(
            decode(&not_utf8, 1, CAPS).unwrap_err(),
            "a text is not UTF-8"
        );
        let too_long = [1, 9, 0, 0, 0, b'a'];
        assert_eq!(decode(&too_long, 1, CAPS).unwrap_err(), ENDS_EARLY);
    }

    proptest! {
        /// A component is untrusted: whatever it writes, reading answers
        /// rows or an error, and never panics.
        #[test]
        fn a_corrupted_buffer_never_panics(
            edits in proptest::collection::vec((any::<usize>(), any::<u8>()), 1..8)
        ) {
            let (mut buffer, _) = sample();
            for (at, byte) in edits {
                let at = at % buffer.len();
                buffer[at] = byte;
            }
            let _ = decode(&buffer, 4, CAPS);
        }
    }
}
