//! `parse_webhook`: reads a Stripe event whose signature the host has
//! already verified (the descriptor's `webhook`), and says which invoice it
//! pays, if any.

use cairn_sdk::{json, Error, Value};

/// Event types that report a paid Checkout Session: `completed` (cards and
/// other immediate methods), and `async_payment_succeeded` (delayed methods
/// such as bank debits, whose `completed` event arrives still unpaid).
const PAID_EVENTS: [&str; 2] = [
    "checkout.session.completed",
    "checkout.session.async_payment_succeeded",
];

fn text(value: &Value) -> Option<&str> {
    value.as_str().map(str::trim).filter(|s| !s.is_empty())
}

fn ignored(event_id: &str, reason: String) -> Value {
    json!({"event_id": event_id, "ignored": true, "reason": reason})
}

/// Maps the raw event body. A paid Checkout Session gives
/// `{event_id, invoice_id, session_id, paid_at}` (`invoice_id` from
/// `metadata.invoice_id`, else `client_reference_id`; `paid_at` the event's
/// `created`, Unix seconds); anything else gives `{event_id, ignored: true,
/// reason}`. A body that is not a JSON event object is an error.
pub fn parse_event(body: &str) -> Result<Value, Error> {
    let event: Value = serde_json::from_str(body)
        .map_err(|e| Error::Upstream(format!("webhook body is not JSON: {e}")))?;
    if !event.is_object() {
        return Err(Error::Upstream("webhook body is not a JSON object".into()));
    }
    let event_id =
        text(&event["id"]).ok_or_else(|| Error::Upstream("webhook event without an id".into()))?;
    let kind = text(&event["type"])
        .ok_or_else(|| Error::Upstream(format!("webhook event {event_id} without a type")))?;
    if !PAID_EVENTS.contains(&kind) {
        return Ok(ignored(event_id, format!("event type {kind}")));
    }
    let session = &event["data"]["object"];
    let payment_status = session["payment_status"].as_str().unwrap_or_default();
    if payment_status != "paid" {
        return Ok(ignored(
            event_id,
            format!("payment_status {payment_status:?}, not paid"),
        ));
    }
    let Some(invoice_id) =
        text(&session["metadata"]["invoice_id"]).or_else(|| text(&session["client_reference_id"]))
    else {
        // A session someone else created on the same account.
        return Ok(ignored(
            event_id,
            "session without an invoice reference".into(),
        ));
    };
    let session_id = text(&session["id"]).ok_or_else(|| {
        Error::Upstream(format!("webhook event {event_id}: session without an id"))
    })?;
    let paid_at = event["created"]
        .as_i64()
        .ok_or_else(|| Error::Upstream(format!("webhook event {event_id} without `created`")))?;
    Ok(json!({
        "event_id": event_id,
        "invoice_id": invoice_id,
        "session_id": session_id,
        "paid_at": paid_at,
    }))
}

/// `parse_webhook`'s input: `{"body": "<raw event JSON>"}`.
pub fn parse_input(input: &Value) -> Result<Value, Error> {
    let body = input["body"].as_str().ok_or_else(|| {
        Error::Config("parse_webhook: `body` (the raw event text) is required".into())
    })?;
    parse_event(body)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn event(kind: &str, session: Value) -> String {
        json!({"id": "evt_1PqR", "object": "event", "type": kind, "created": 1717200000,
               "livemode": false, "data": {"object": session}})
        .to_string()
    }

    fn paid_session() -> Value {
        json!({"id": "cs_test_a1", "object": "checkout.session", "payment_status": "paid", "status": "complete",
               "client_reference_id": "ref-from-client", "metadata": {"invoice_id": "inv-42"}})
    }

    #[test]
    fn a_paid_completed_session_names_its_invoice() {
        assert_eq!(
            parse_event(&event("checkout.session.completed", paid_session())).unwrap(),
            json!({"event_id": "evt_1PqR", "invoice_id": "inv-42", "session_id": "cs_test_a1", "paid_at": 1717200000})
        );
        assert_eq!(
            parse_event(&event(
                "checkout.session.async_payment_succeeded",
                paid_session()
            ))
            .unwrap()["invoice_id"],
            "inv-42"
        );
    }

    #[test]
    fn client_reference_id_stands_in_for_missing_metadata() {
        let mut session = paid_session();
        session["metadata"] = json!({});
        let parsed = parse_event(&event("checkout.session.completed", session)).unwrap();
        assert_eq!(parsed["invoice_id"], "ref-from-client");
    }

    #[test]
    fn other_events_are_ignored() {
        let mut unpaid = paid_session();
        unpaid["payment_status"] = json!("unpaid");
        let mut foreign = paid_session();
        foreign["metadata"] = json!({});
        foreign["client_reference_id"] = Value::Null;
        for body in [
            event("checkout.session.completed", unpaid),
            event("checkout.session.completed", foreign),
            event("checkout.session.expired", paid_session()),
            event("payment_intent.succeeded", json!({"id": "pi_1"})),
        ] {
            let parsed = parse_event(&body).unwrap();
            assert_eq!(parsed["event_id"], "evt_1PqR", "{body}");
            assert_eq!(parsed["ignored"], true, "{body}");
            assert!(parsed.get("invoice_id").is_none(), "{body}");
        }
    }

    #[test]
    fn malformed_events_are_errors() {
        for body in [
            "",
            "not json",
            "[1, 2]",
            r#"{"type": "checkout.session.completed"}"#,
            r#"{"id": "evt_1"}"#,
        ] {
            assert!(
                matches!(parse_event(body), Err(Error::Upstream(_))),
                "{body}"
            );
        }
        let mut no_created: Value =
            serde_json::from_str(&event("checkout.session.completed", paid_session())).unwrap();
        no_created.as_object_mut().unwrap().remove("created");
        assert!(parse_event(&no_created.to_string()).is_err());
    }

    #[test]
    fn the_input_carries_the_raw_body() {
        let body = event("checkout.session.completed", paid_session());
        assert_eq!(
            parse_input(&json!({"body": body})).unwrap()["invoice_id"],
            "inv-42"
        );
        assert!(matches!(
            parse_input(&json!({"raw": "{}"})),
            Err(Error::Config(_))
        ));
    }
}
