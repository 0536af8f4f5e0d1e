//! A fake identity platform and resource API on 127.0.0.1: the OAuth 2.0
//! client-credentials token endpoint at `/{tenant}/oauth2/v2.0/token`
//! (client secret, or an RS256 client assertion checked against the public
//! key and the `x5t` thumbprint) and a Graph-shaped `GET /users`.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use axum::extract::{Path, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::Form;
use base64::Engine;
use serde_json::json;

pub const CLIENT_ID: &str = "11111111-2222-3333-4444-555555555555";
pub const CLIENT_SECRET: &str = "oauth-client-secret-value";
pub const DIRECTORY_TENANT: &str = "contoso.example";
/// Hex SHA-1 thumbprint of the (notional) certificate of the test key.
pub const THUMBPRINT: &str = "0123456789ABCDEF0123456789ABCDEF01234567";
/// Hex SHA-256 thumbprint of the same certificate (PS256 assertions).
pub const THUMBPRINT_SHA256: &str =
    "00112233445566778899AABBCCDDEEFF00112233445566778899AABBCCDDEEFF";
pub const PRIVATE_KEY: &str = include_str!("keys/oauth-test.key");
const PUBLIC_KEY: &str = include_str!("keys/oauth-test.pub");

#[derive(Default)]
pub struct OauthState {
    pub base_url: String,
    tokens: Vec<String>,
    /// Every client assertion presented, verified or not.
    pub assertions: Vec<String>,
    pub token_requests: u32,
    pub assertions_verified: u32,
}

#[derive(Clone)]
pub struct FakeOauth {
    pub base_url: String,
    pub state: Arc<Mutex<OauthState>>,
}

impl FakeOauth {
    pub async fn start() -> FakeOauth {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let base_url = format!("http://{}", listener.local_addr().unwrap());
        let state = Arc::new(Mutex::new(OauthState {
            base_url: base_url.clone(),
            ..OauthState::default()
        }));
        let app = axum::Router::new()
            .route("/{tenant}/oauth2/v2.0/token", post(token))
            .route("/users", get(users))
            .with_state(state.clone());
        tokio::spawn(async move { axum::serve(listener, app).await });
        FakeOauth { base_url, state }
    }

    pub fn token_requests(&self) -> u32 {
        self.state.lock().unwrap().token_requests
    }

    /// Every access token issued so far.
    pub fn issued_tokens(&self) -> Vec<String> {
        self.state.lock().unwrap().tokens.clone()
    }

    /// Whether `authorization` is a bearer token this platform issued.
    pub fn issued(&self, authorization: Option<&str>) -> bool {
        let token = authorization
            .and_then(|v| v.strip_prefix("Bearer "))
            .unwrap_or_default();
        self.state.lock().unwrap().tokens.iter().any(|t| t == token)
    }
}

fn refuse(description: &str) -> Response {
    (
        StatusCode::UNAUTHORIZED,
        axum::Json(json!({"error": "invalid_client", "error_description": description})),
    )
        .into_response()
}

async fn token(
    State(state): State<Arc<Mutex<OauthState>>>,
    Path(tenant): Path<String>,
    Form(form): Form<HashMap<String, String>>,
) -> Response {
    let mut state = state.lock().unwrap();
    state.token_requests += 1;
    if tenant != DIRECTORY_TENANT
        || form.get("grant_type").map(String::as_str) != Some("client_credentials")
        || !form.get("scope").is_some_and(|s| s.ends_with("/.default"))
        || form.get("client_id").map(String::as_str) != Some(CLIENT_ID)
    {
        return (
            StatusCode::BAD_REQUEST,
            axum::Json(json!({"error": "invalid_request"})),
        )
            .into_response();
    }
    if let Some(secret) = form.get("client_secret") {
        if secret != CLIENT_SECRET {
            return refuse("AADSTS7000215: Invalid client secret provided.");
        }
    } else if let Some(assertion) = form.get("client_assertion") {
        state.assertions.push(assertion.clone());
        let token_url = format!("{}/{DIRECTORY_TENANT}/oauth2/v2.0/token", state.base_url);
        // RS256 with a SHA-1 `x5t`, or PS256 with a SHA-256 `x5t#S256`.
        let mut validation = jsonwebtoken::Validation::new(jsonwebtoken::Algorithm::RS256);
        validation.algorithms = vec![
            jsonwebtoken::Algorithm::RS256,
            jsonwebtoken::Algorithm::PS256,
        ];
        validation.set_audience(&[token_url]);
        validation.set_issuer(&[CLIENT_ID]);
        let key = jsonwebtoken::DecodingKey::from_rsa_pem(PUBLIC_KEY.as_bytes()).unwrap();
        let Ok(decoded) = jsonwebtoken::decode::<serde_json::Value>(assertion, &key, &validation)
        else {
            return refuse("AADSTS700027: Client assertion contains an invalid signature.");
        };
        let encoded = |hex_digits: &str| {
            base64::engine::general_purpose::URL_SAFE_NO_PAD
                .encode(hex::decode(hex_digits).unwrap())
        };
        let thumbprint_matches = match decoded.header.alg {
            jsonwebtoken::Algorithm::PS256 => {
                decoded.header.x5t_s256.as_deref() == Some(encoded(THUMBPRINT_SHA256).as_str())
            }
            _ => decoded.header.x5t.as_deref() == Some(encoded(THUMBPRINT).as_str()),
        };
        if !thumbprint_matches || decoded.claims["sub"] != CLIENT_ID {
            return refuse("AADSTS700027: the certificate is not registered for this application.");
        }
        state.assertions_verified += 1;
    } else {
        return refuse("AADSTS7000216: client_assertion or client_secret is required.");
    }
    let token = format!(
        "at-{}-{}",
        state.token_requests,
        uuid::Uuid::new_v4().simple()
    );
    state.tokens.push(token.clone());
    axum::Json(json!({"token_type": "Bearer", "expires_in": 3599, "access_token": token}))
        .into_response()
}

async fn users(State(state): State<Arc<Mutex<OauthState>>>, headers: HeaderMap) -> Response {
    let state = state.lock().unwrap();
    let token = headers
        .get("authorization")
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.strip_prefix("Bearer "))
        .unwrap_or_default();
    if !state.tokens.iter().any(|t| t == token) {
        return (
            StatusCode::UNAUTHORIZED,
            axum::Json(json!({"error": {"code": "InvalidAuthenticationToken"}})),
        )
            .into_response();
    }
    axum::Json(json!({"value": [
        {"userPrincipalName": "ada@contoso.example", "mail": "ada@contoso.example",
         "proxyAddresses": ["SMTP:ada@contoso.example", "smtp:a.lovelace@contoso.example"]}
    ]}))
    .into_response()
}
