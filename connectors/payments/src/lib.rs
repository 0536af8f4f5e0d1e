//! The payments connector: a Stripe-style provider's hosted checkout.
//!
//! It syncs nothing (no streams). Two actions:
//!
//! - `create_checkout`: input `{invoice_id, number, description,
//!   amount_cents, currency}`; POSTs a Checkout Session (`mode=payment`, one
//!   line item, the invoice id as `client_reference_id` and
//!   `metadata[invoice_id]`) and returns `{session_id, url, expires_at}`.
//! - `parse_webhook`: input `{body}` (the raw event text, its signature
//!   already verified by the host); returns `{event_id, invoice_id,
//!   session_id, paid_at}` for a paid Checkout Session, else `{event_id,
//!   ignored: true, reason}`.
//!
//! Credentials: the host sends `Authorization: Bearer <api_key>` and checks
//! the `Stripe-Signature` of webhooks with `webhook_secret`; neither secret
//! reaches this component.

mod checkout;
pub mod form;
mod webhook;

use cairn_sdk::{
    export_connector, http, json, Action, ActionRequest, AuthScheme, Config, Connector, Descriptor,
    Error, Page, Row, Value, WebhookSignature,
};

pub use checkout::{
    error_from_status, form_body, form_fields, parse_input as parse_checkout_input, parse_session,
    CheckoutRequest,
};
pub use webhook::parse_event;

pub struct Payments;

fn base(config: &Config) -> Result<&str, Error> {
    cairn_sdk::base_url(config, "base_url")
}

/// The JSON body of a 2xx answer; anything else as a typed error.
fn json_of(response: &http::Response) -> Result<Value, Error> {
    if !(200..300).contains(&response.status) {
        return Err(error_from_status(
            response.status,
            response.header("retry-after"),
            &response.body,
        ));
    }
    Ok(serde_json::from_slice(&response.body)?)
}

fn create_checkout(config: &Config, input: &Value) -> Result<Value, Error> {
    let request = parse_checkout_input(input)?;
    let url = format!("{}/v1/checkout/sessions", base(config)?);
    let body = form_body(config, &request);
    let response = http::send(
        "POST",
        &url,
        &[
            ("accept", "application/json"),
            ("content-type", "application/x-www-form-urlencoded"),
        ],
        body.as_bytes(),
    )?;
    parse_session(&json_of(&response)?)
}

impl Connector for Payments {
    fn describe() -> Descriptor {
        Descriptor {
            id: "stripe-checkout".into(),
            area: "payments".into(),
            name: "Payments (hosted checkout)".into(),
            version: "0.2.0".into(),
            sdk_version: String::new(),
            config_schema: json!({
                "type": "object",
                "required": ["base_url", "api_key"],
                "properties": {
                    "base_url": {"type": "string", "pattern": "^https?://", "description": "API root, e.g. https://api.stripe.com"},
                    "api_key": {"type": "string", "minLength": 1, "description": "Secret key (sk_...) or restricted key with Checkout Sessions write access"},
                    "success_url": {"type": "string", "description": "Where the payer lands after paying"},
                    "cancel_url": {"type": "string", "description": "Where the payer lands after cancelling"},
                    "webhook_secret": {"type": "string", "description": "Signing secret of the webhook endpoint (whsec_...)"}
                }
            }),
            secret_fields: vec!["api_key".into(), "webhook_secret".into()],
            streams: vec![],
            requested_hosts: vec!["{config.base_url}".into()],
            auth: AuthScheme::StaticHeader {
                header: "Authorization".into(),
                prefix: "Bearer ".into(),
                secret_field: "api_key".into(),
            },
            collections: vec![],
            views: vec![],
            // Called by the host's client portal, not mounted as routes.
            actions: vec![
                host_action(
                    "create_checkout",
                    "A hosted checkout session for one invoice",
                ),
                host_action("parse_webhook", "The invoice a verified webhook event pays"),
            ],
            max_concurrent_requests: 1,
            config_from: None,
            pull: None,
            webhook: Some(WebhookSignature {
                header: "Stripe-Signature".into(),
                secret_field: "webhook_secret".into(),
                tolerance_secs: 300,
            }),
        }
    }

    fn check(config: &Config) -> Result<(), Error> {
        let url = format!("{}/v1/checkout/sessions?limit=1", base(config)?);
        let response = http::send("GET", &url, &[("accept", "application/json")], &[])?;
        json_of(&response).map(|_| ())
    }

    fn fetch(_config: &Config, stream: &str, _cursor: Option<&str>) -> Result<Page, Error> {
        Err(Error::Config(format!(
            "unknown stream {stream}: the payments connector has no streams"
        )))
    }

    fn map_record(stream: &str, _record: &Value) -> Result<Vec<Row>, String> {
        Err(format!(
            "unknown stream {stream}: the payments connector has no streams"
        ))
    }

    fn invoke(config: &Config, request: &ActionRequest) -> Result<Value, Error> {
        match request.action.as_str() {
            "create_checkout" => create_checkout(config, &request.body),
            "parse_webhook" => webhook::parse_input(&request.body),
            other => Err(Error::NotFound(format!("unsupported action: {other}"))),
        }
    }
}

fn host_action(name: &str, summary: &str) -> Action {
    Action {
        name: name.into(),
        method: "POST".into(),
        path: None,
        summary: summary.into(),
        input_schema: Some(json!({"type": "object"})),
        query_schema: None,
        output_schema: None,
        role: "admin".into(),
    }
}

export_connector!(Payments);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_descriptor_declares_auth_actions_and_webhook() {
        let descriptor = serde_json::to_value(Payments::describe()).unwrap();
        assert_eq!(descriptor["area"], "payments");
        assert_eq!(descriptor["streams"], json!([]));
        assert_eq!(
            descriptor["secret_fields"],
            json!(["api_key", "webhook_secret"])
        );
        assert_eq!(
            descriptor["auth"],
            json!({"type": "static_header", "header": "Authorization", "prefix": "Bearer ", "secret_field": "api_key"})
        );
        let actions: Vec<&str> = descriptor["actions"]
            .as_array()
            .unwrap()
            .iter()
            .map(|a| a["name"].as_str().unwrap())
            .collect();
        assert_eq!(actions, ["create_checkout", "parse_webhook"]);
        assert!(descriptor["actions"][0]["path"].is_null(), "not a route");
        assert_eq!(
            descriptor["webhook"],
            json!({"header": "Stripe-Signature", "secret_field": "webhook_secret", "tolerance_secs": 300})
        );
        assert_eq!(
            descriptor["config_schema"]["required"],
            json!(["base_url", "api_key"])
        );
    }

    #[test]
    fn base_url_is_required_and_trimmed() {
        assert_eq!(
            base(&json!({"base_url": "https://api.stripe.com/"})).unwrap(),
            "https://api.stripe.com"
        );
        assert!(matches!(base(&json!({})), Err(Error::Config(_))));
        assert!(matches!(
            base(&json!({"base_url": " "})),
            Err(Error::Config(_))
        ));
    }

    fn call(action: &str, body: Value) -> ActionRequest {
        ActionRequest {
            action: action.into(),
            body,
            ..ActionRequest::default()
        }
    }

    #[test]
    fn actions_fail_before_any_call_on_bad_input() {
        let config = json!({"base_url": "https://api.stripe.com"});
        assert!(matches!(
            Payments::invoke(
                &config,
                &call("create_checkout", json!({"invoice_id": "x"}))
            ),
            Err(Error::Config(_))
        ));
        assert!(matches!(
            Payments::invoke(&config, &call("refund", json!({}))),
            Err(Error::NotFound(m)) if m.contains("refund")
        ));
        assert!(Payments::fetch(&config, "anything", None).is_err());
        assert_eq!(
            Payments::invoke(
                &config,
                &call(
                    "parse_webhook",
                    json!({"body": r#"{"id": "evt_1", "type": "customer.created", "created": 1}"#})
                )
            )
            .unwrap()["ignored"],
            true
        );
    }
}

#[cfg(all(not(target_feature = "atomics"), target_arch = "wasm32"))]
#[global_allocator]
static ALLOCATOR: cairn_sdk::SizeClassAllocator = cairn_sdk::SizeClassAllocator::new();
