//! A service ticket to a ticket record.

use cairn_sdk::records::{RecordType, Ticket};
use cairn_sdk::{text_of as text, Row, SourceRecord, Value};

pub const TICKETS: &str = "tickets";

/// The name of a reference (`{"id": 1, "name": "..."}`).
fn name_of(reference: &Value) -> Option<String> {
    text(&reference["name"]).or_else(|| text(&reference["identifier"]))
}

pub fn map_ticket(ticket: &Value) -> Result<Vec<Row>, String> {
    let id = text(&ticket["id"]).ok_or("ticket without an id")?;
    let fields = Ticket {
        ticket_id: Some(id.clone()),
        summary: text(&ticket["summary"]),
        status: name_of(&ticket["status"]),
        board: name_of(&ticket["board"]),
        company: name_of(&ticket["company"]),
        priority: name_of(&ticket["priority"]),
        updated_at: text(&ticket["_info"]["lastUpdated"]),
    };
    Ok(vec![Row::Record(SourceRecord {
        collection: TICKETS.into(),
        key: id,
        device_name: None,
        client_id: text(&ticket["company"]["id"]),
        group_ids: vec![],
        fields: fields.to_fields(),
        body: ticket.clone(),
    })])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_fixture_ticket_maps() {
        let ticket: Value = serde_json::from_str(include_str!(
            "../../../../shared/fixtures/psa/connectwise_service_ticket.json"
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
}
