//! A service ticket to a ticket record, and a bulk-pulled ticket to its
//! record and its notes' records.

use cairn_sdk::records::{RecordType, Ticket, TicketNote};
use cairn_sdk::{text_of as text, Row, SourceRecord, Value};

/// What syncs keep: the tickets updated lately.
pub const TICKETS: &str = "tickets";
/// What bulk pulls keep: whole boards, and their tickets' notes.
pub const BULK_TICKETS: &str = "bulk-tickets";
pub const BULK_NOTES: &str = "bulk-notes";
/// Where a pulled ticket carries its notes (added by the pull, not
/// ConnectWise's).
pub const NOTES_KEY: &str = "_notes";

/// The name of a reference (`{"id": 1, "name": "..."}`).
fn name_of(reference: &Value) -> Option<String> {
    text(&reference["name"]).or_else(|| text(&reference["identifier"]))
}

pub fn map_ticket(ticket: &Value) -> Result<Vec<Row>, String> {
    ticket_row(TICKETS, ticket).map(|row| vec![row])
}

/// A pulled ticket's record and one record per note, keyed
/// `{ticket}:{note}` so a page pulled again overwrites them.
pub fn map_pulled_ticket(pulled: &Value) -> Result<Vec<Row>, String> {
    let mut ticket = pulled.clone();
    let notes = ticket
        .as_object_mut()
        .and_then(|t| t.remove(NOTES_KEY))
        .unwrap_or(Value::Null);
    let mut rows = vec![ticket_row(BULK_TICKETS, &ticket)?];
    let ticket_id = text(&ticket["id"]).unwrap_or_default();
    for note in notes.as_array().into_iter().flatten() {
        let Some(note_id) = text(&note["id"]) else {
            continue;
        };
        let flag = |name: &str| note[name].as_bool();
        let fields = TicketNote {
            ticket_id: Some(ticket_id.clone()),
            note_id: Some(note_id.clone()),
            text: text(&note["text"]),
            author: name_of(&note["member"])
                .or_else(|| name_of(&note["contact"]))
                .or_else(|| text(&note["createdBy"])),
            created_at: text(&note["dateCreated"]),
            internal: flag("internalAnalysisFlag").or(flag("internalFlag")),
            resolution: flag("resolutionFlag"),
        };
        rows.push(Row::Record(SourceRecord {
            collection: BULK_NOTES.into(),
            key: format!("{ticket_id}:{note_id}"),
            device_name: None,
            client_id: text(&ticket["company"]["id"]),
            group_ids: vec![],
            fields: fields.to_fields(),
            body: note.clone(),
        }));
    }
    Ok(rows)
}

fn ticket_row(collection: &str, ticket: &Value) -> Result<Row, String> {
    let id = text(&ticket["id"]).ok_or("ticket without an id")?;
    let fields = Ticket {
        ticket_id: Some(id.clone()),
        summary: text(&ticket["summary"]),
        status: name_of(&ticket["status"]),
        board: name_of(&ticket["board"]),
        company: name_of(&ticket["company"]),
        priority: name_of(&ticket["priority"]),
        updated_at: text(&ticket["_info"]["lastUpdated"]),
        created_at: text(&ticket["_info"]["dateEntered"]),
        closed: ticket["closedFlag"].as_bool(),
        owner: name_of(&ticket["owner"]),
    };
    Ok(Row::Record(SourceRecord {
        collection: collection.into(),
        key: id,
        device_name: None,
        client_id: text(&ticket["company"]["id"]),
        group_ids: vec![],
        fields: fields.to_fields(),
        body: ticket.clone(),
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_fixture_ticket_maps() {
        let ticket: Value = serde_json::from_str(include_str!(
            "../../../tests/fixtures/psa/connectwise_service_ticket.json"
        ))
        .unwrap();
        let rows = map_ticket(&ticket).unwrap();
        let Row::Record(record) = &rows[0] else {
            panic!("a record")
        };
        assert_eq!(record.key, ticket["id"].to_string());
        assert_eq!(record.fields["summary"], ticket["summary"]);
        assert_eq!(record.fields["board"], ticket["board"]["name"]);
        assert!(map_ticket(&serde_json::json!({"summary": "x"})).is_err());
    }

    #[test]
    fn a_pulled_ticket_maps_with_its_notes() {
        let mut ticket: Value = serde_json::from_str(include_str!(
            "../../../tests/fixtures/psa/connectwise_service_ticket.json"
        ))
        .unwrap();
        let notes: Value = serde_json::from_str(include_str!(
            "../../../tests/fixtures/psa/connectwise_service_notes.json"
        ))
        .unwrap();
        ticket[NOTES_KEY] = notes.clone();
        let rows = map_pulled_ticket(&ticket).unwrap();
        assert_eq!(rows.len(), 1 + notes.as_array().unwrap().len());
        let Row::Record(first) = &rows[0] else {
            panic!("a record")
        };
        assert_eq!(first.collection, BULK_TICKETS);
        assert!(
            first.body.get(NOTES_KEY).is_none(),
            "notes are records of their own"
        );
        let Row::Record(note) = &rows[1] else {
            panic!("a record")
        };
        assert_eq!(note.collection, BULK_NOTES);
        assert_eq!(note.key, format!("{}:{}", ticket["id"], notes[0]["id"]));
        assert_eq!(note.fields["text"], notes[0]["text"]);
        assert_eq!(note.fields["author"], "User1", "a member by identifier");
    }
}
