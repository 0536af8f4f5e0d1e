//! `create_checkout`: a hosted Checkout Session for one invoice. Pure
//! pieces (input validation, the form body, the response, error mapping)
//! are plain functions; `lib.rs` does the call.

use cairn_sdk::{json, Config, Error, Value};

use crate::form;

/// What to ask for when the key is refused.
pub const PERMISSION_HINT: &str =
    "use a secret key (sk_...) or a restricted key with write access to Checkout Sessions";

/// A validated `create_checkout` input.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CheckoutRequest {
    pub invoice_id: String,
    pub number: String,
    pub description: String,
    pub amount_cents: i64,
    /// Lowercase ISO 4217 code, e.g. `usd`.
    pub currency: String,
}

fn required_text(input: &Value, field: &str) -> Result<String, Error> {
    match &input[field] {
        Value::String(s) if !s.trim().is_empty() => Ok(s.trim().to_string()),
        Value::Null => Err(Error::Config(format!(
            "create_checkout: `{field}` is required"
        ))),
        _ => Err(Error::Config(format!(
            "create_checkout: `{field}` must be a non-empty string"
        ))),
    }
}

/// Checks the input: `invoice_id`, `number` and `currency` non-empty
/// strings, `amount_cents` a positive integer, `currency` three ASCII
/// letters; `description` optional.
pub fn parse_input(input: &Value) -> Result<CheckoutRequest, Error> {
    if !input.is_object() {
        return Err(Error::Config(
            "create_checkout: input must be a JSON object".into(),
        ));
    }
    let invoice_id = required_text(input, "invoice_id")?;
    let number = required_text(input, "number")?;
    let description = match &input["description"] {
        Value::Null => String::new(),
        Value::String(s) => s.trim().to_string(),
        _ => {
            return Err(Error::Config(
                "create_checkout: `description` must be a string".into(),
            ))
        }
    };
    let amount_cents = match &input["amount_cents"] {
        Value::Null => {
            return Err(Error::Config(
                "create_checkout: `amount_cents` is required".into(),
            ))
        }
        value => value.as_i64().filter(|n| *n > 0).ok_or_else(|| {
            Error::Config(format!(
                "create_checkout: `amount_cents` must be a positive integer (the amount in the currency's smallest unit), got {value}"
            ))
        })?,
    };
    let currency = required_text(input, "currency")?;
    if currency.len() != 3 || !currency.bytes().all(|b| b.is_ascii_alphabetic()) {
        return Err(Error::Config(format!(
            "create_checkout: `currency` must be a three-letter ISO 4217 code such as USD, got {currency:?}"
        )));
    }
    Ok(CheckoutRequest {
        invoice_id,
        number,
        description,
        amount_cents,
        currency: currency.to_ascii_lowercase(),
    })
}

/// The line item's product name: `Invoice <number>: <description>`, or
/// `Invoice <number>` without a description.
pub fn product_name(request: &CheckoutRequest) -> String {
    if request.description.is_empty() {
        format!("Invoice {}", request.number)
    } else {
        format!("Invoice {}: {}", request.number, request.description)
    }
}

fn config_text<'a>(config: &'a Config, field: &str) -> Option<&'a str> {
    config[field]
        .as_str()
        .map(str::trim)
        .filter(|s| !s.is_empty())
}

/// The Checkout Session form fields, in Stripe's nested-key syntax.
pub fn form_fields(config: &Config, request: &CheckoutRequest) -> Vec<(String, String)> {
    let mut fields: Vec<(String, String)> = vec![
        ("mode".into(), "payment".into()),
        ("client_reference_id".into(), request.invoice_id.clone()),
        ("metadata[invoice_id]".into(), request.invoice_id.clone()),
        ("line_items[0][quantity]".into(), "1".into()),
        (
            "line_items[0][price_data][currency]".into(),
            request.currency.clone(),
        ),
        (
            "line_items[0][price_data][unit_amount]".into(),
            request.amount_cents.to_string(),
        ),
        (
            "line_items[0][price_data][product_data][name]".into(),
            product_name(request),
        ),
    ];
    for field in ["success_url", "cancel_url"] {
        if let Some(url) = config_text(config, field) {
            fields.push((field.into(), url.into()));
        }
    }
    fields
}

/// The urlencoded request body.
pub fn form_body(config: &Config, request: &CheckoutRequest) -> String {
    form::encode(&form_fields(config, request))
}

/// `{session_id, url, expires_at}` from a Checkout Session object.
pub fn parse_session(session: &Value) -> Result<Value, Error> {
    let id = session["id"]
        .as_str()
        .filter(|s| !s.is_empty())
        .ok_or_else(|| Error::Upstream("checkout session without an id".into()))?;
    let url = session["url"]
        .as_str()
        .filter(|s| !s.is_empty())
        .ok_or_else(|| Error::Upstream(format!("checkout session {id} without a url")))?;
    Ok(json!({
        "session_id": id,
        "url": url,
        "expires_at": session["expires_at"].as_i64(),
    }))
}

/// Stripe's `error.message` from an error body, else a snippet of the body.
pub fn error_message(body: &[u8]) -> String {
    serde_json::from_slice::<Value>(body)
        .ok()
        .and_then(|v| v["error"]["message"].as_str().map(String::from))
        .unwrap_or_else(|| String::from_utf8_lossy(body).chars().take(300).collect())
}

/// A non-2xx answer as an error: 401/403 auth (with a permission hint), 429
/// rate limited (`Retry-After`, else 30 s), 5xx transient, other statuses
/// upstream errors carrying Stripe's message.
pub fn error_from_status(status: u16, retry_after: Option<&str>, body: &[u8]) -> Error {
    let message = error_message(body);
    match status {
        401 | 403 => Error::Auth {
            status,
            message,
            permission_hint: PERMISSION_HINT.into(),
        },
        429 => Error::RateLimited {
            retry_after_secs: retry_after
                .and_then(|s| s.trim().parse::<u32>().ok())
                .unwrap_or(30),
        },
        500..=599 => Error::Transient(format!("payments provider status {status}: {message}")),
        _ => Error::Upstream(format!("payments provider status {status}: {message}")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn input() -> Value {
        json!({"invoice_id": "0190a1b2-c3d4", "number": "INV-0007", "description": "Managed services, May",
               "amount_cents": 125000, "currency": "USD"})
    }

    fn config_error(result: Result<CheckoutRequest, Error>) -> String {
        match result {
            Err(Error::Config(message)) => message,
            other => panic!("expected a config error, got {other:?}"),
        }
    }

    #[test]
    fn a_valid_input_is_parsed_and_the_currency_lowercased() {
        assert_eq!(
            parse_input(&input()).unwrap(),
            CheckoutRequest {
                invoice_id: "0190a1b2-c3d4".into(),
                number: "INV-0007".into(),
                description: "Managed services, May".into(),
                amount_cents: 125000,
                currency: "usd".into(),
            }
        );
    }

    #[test]
    fn missing_and_invalid_fields_are_named() {
        for field in ["invoice_id", "number", "amount_cents", "currency"] {
            let mut bad = input();
            bad.as_object_mut().unwrap().remove(field);
            let message = config_error(parse_input(&bad));
            assert!(message.contains(field), "{message}");
            assert!(message.contains("required"), "{message}");
        }
        for (field, value) in [
            ("invoice_id", json!("  ")),
            ("number", json!(7)),
            ("amount_cents", json!(0)),
            ("amount_cents", json!(-5)),
            ("amount_cents", json!(12.5)),
            ("amount_cents", json!("1000")),
            ("currency", json!("US")),
            ("currency", json!("US1")),
            ("currency", json!("EURO")),
            ("description", json!(["x"])),
        ] {
            let mut bad = input();
            bad[field] = value.clone();
            let message = config_error(parse_input(&bad));
            assert!(message.contains(field), "{field}={value}: {message}");
        }
        assert!(config_error(parse_input(&json!([1]))).contains("object"));
    }

    #[test]
    fn the_description_is_optional() {
        let mut no_description = input();
        no_description
            .as_object_mut()
            .unwrap()
            .remove("description");
        let request = parse_input(&no_description).unwrap();
        assert_eq!(product_name(&request), "Invoice INV-0007");
        assert_eq!(
            product_name(&parse_input(&input()).unwrap()),
            "Invoice INV-0007: Managed services, May"
        );
    }

    #[test]
    fn the_form_is_stripe_shaped() {
        let request = parse_input(&input()).unwrap();
        let config = json!({"base_url": "https://api.stripe.com", "success_url": "https://app.example.com/paid?s={CHECKOUT_SESSION_ID}"});
        assert_eq!(
            form_body(&config, &request),
            "mode=payment\
             &client_reference_id=0190a1b2-c3d4\
             &metadata[invoice_id]=0190a1b2-c3d4\
             &line_items[0][quantity]=1\
             &line_items[0][price_data][currency]=usd\
             &line_items[0][price_data][unit_amount]=125000\
             &line_items[0][price_data][product_data][name]=Invoice+INV-0007%3A+Managed+services%2C+May\
             &success_url=https%3A%2F%2Fapp.example.com%2Fpaid%3Fs%3D%7BCHECKOUT_SESSION_ID%7D"
        );
        let both = json!({"success_url": "https://a/ok", "cancel_url": "https://a/no"});
        let fields = form_fields(&both, &request);
        assert_eq!(fields[fields.len() - 2].0, "success_url");
        assert_eq!(
            fields[fields.len() - 1],
            ("cancel_url".into(), "https://a/no".into())
        );
        let neither = form_fields(&json!({"success_url": ""}), &request);
        assert_eq!(neither.len(), 7);
    }

    #[test]
    fn a_session_maps_to_id_url_and_expiry() {
        let session = json!({"id": "cs_test_a1", "object": "checkout.session",
                             "url": "https://checkout.stripe.com/c/pay/cs_test_a1", "expires_at": 1717243200,
                             "payment_status": "unpaid"});
        assert_eq!(
            parse_session(&session).unwrap(),
            json!({"session_id": "cs_test_a1", "url": "https://checkout.stripe.com/c/pay/cs_test_a1", "expires_at": 1717243200})
        );
        assert!(matches!(
            parse_session(&json!({"id": "cs_1"})),
            Err(Error::Upstream(_))
        ));
        assert!(matches!(
            parse_session(&json!({"url": "https://x"})),
            Err(Error::Upstream(_))
        ));
    }

    #[test]
    fn statuses_map_to_typed_errors() {
        let body = br#"{"error": {"type": "invalid_request_error", "message": "Invalid API Key provided: sk_test_****"}}"#;
        match error_from_status(401, None, body) {
            Error::Auth {
                status,
                message,
                permission_hint,
            } => {
                assert_eq!(status, 401);
                assert_eq!(message, "Invalid API Key provided: sk_test_****");
                assert_eq!(permission_hint, PERMISSION_HINT);
            }
            other => panic!("{other:?}"),
        }
        assert!(matches!(
            error_from_status(403, None, b"{}"),
            Error::Auth { status: 403, .. }
        ));
        assert_eq!(
            error_from_status(429, Some("7"), b""),
            Error::RateLimited {
                retry_after_secs: 7
            }
        );
        assert_eq!(
            error_from_status(429, None, b""),
            Error::RateLimited {
                retry_after_secs: 30
            }
        );
        assert!(matches!(
            error_from_status(503, None, b"down"),
            Error::Transient(m) if m.contains("503") && m.contains("down")
        ));
        let bad =
            br#"{"error": {"type": "invalid_request_error", "message": "Invalid currency: usx"}}"#;
        assert_eq!(
            error_from_status(400, None, bad),
            Error::Upstream("payments provider status 400: Invalid currency: usx".into())
        );
    }
}
