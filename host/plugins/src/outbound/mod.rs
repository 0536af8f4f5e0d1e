//! The one outbound path: every request a plugin makes (the `send`
//! import) and every reference-data download passes here.
//!
//! - [`policy`]: exact origins, no user information, plain http by grant;
//! - [`addresses`]: no private or loopback address unless the operator
//!   allows it, checked when a name is resolved;
//! - here: credentials, redirects (followed by hand, each hop re-checked,
//!   credentials only on the origin the request started at), response
//!   size cap, 429 and 503 waits.

mod addresses;
mod policy;

pub use addresses::{AddressRule, Unreachable};
pub use policy::{HostPolicy, Origin};

use std::sync::Arc;
use std::time::Duration;

use futures::StreamExt;
use serde_json::Value;

use super::bindings::connector_world::cairn::plugin::types as wit;
use super::AuthScheme;

/// Most redirects one request follows.
const MAX_REDIRECTS: usize = 5;
/// Most times a 429 or 503 is waited out before the error reaches the plugin.
const MAX_RATE_LIMIT_RETRIES: u32 = 4;
/// The longest `Retry-After` the host waits in one go.
const MAX_RETRY_AFTER: Duration = Duration::from_secs(60);

/// Who a call is for, so its logs can say so.
#[derive(Debug, Clone, Default)]
pub struct CallScope {
    pub plugin: String,
    pub tenant_id: Option<String>,
    pub job_id: Option<String>,
}

fn count_request(scope: &CallScope, status: &'static str) {
    metrics::counter!(
        cairn_core::telemetry::OUTBOUND_REQUESTS,
        "caller" => scope.plugin.clone(),
        "status" => status
    )
    .increment(1);
}

fn status_class(status: u16) -> &'static str {
    match status {
        100..=199 => "1xx",
        200..=299 => "2xx",
        300..=399 => "3xx",
        400..=499 => "4xx",
        _ => "5xx",
    }
}

/// A readable reason for an outbound failure.
pub fn describe(error: &wit::PluginError) -> String {
    match error {
        wit::PluginError::Config(m)
        | wit::PluginError::Upstream(m)
        | wit::PluginError::Transient(m)
        | wit::PluginError::NotFound(m) => m.clone(),
        wit::PluginError::RateLimited(secs) => format!("rate limited; retry in {secs} s"),
        wit::PluginError::Auth(a) => format!("refused credentials ({}): {}", a.status, a.message),
        wit::PluginError::InvalidInput(p) => format!("{}: {}", p.field, p.message),
    }
}

/// What one call may reach, and how.
#[derive(Clone)]
pub struct Outbound {
    client: reqwest::Client,
    policy: Arc<HostPolicy>,
    max_response_bytes: usize,
    backoff_base: Duration,
    credentials: Option<Arc<Credentials>>,
    /// Requests of one `send_all` in flight at once.
    concurrency: usize,
}

/// Tokens obtained by token exchange, per tenant and connector, reused
/// across calls until 60 s before they expire.
#[derive(Default)]
pub struct TokenCache(std::sync::Mutex<std::collections::HashMap<String, CachedToken>>);

#[derive(Clone)]
struct CachedToken {
    token: String,
    expires_at_ms: i64,
}

impl TokenCache {
    /// The cached token for `key` unless it expires within the margin.
    fn valid(&self, key: &str) -> Option<String> {
        let now = cairn_core::db::now_ms();
        self.0
            .lock()
            .expect("token cache lock")
            .get(key)
            .filter(|t| t.expires_at_ms - TOKEN_REFRESH_MARGIN_MS > now)
            .map(|t| t.token.clone())
    }

    fn store(&self, key: &str, token: &str, expires_at_ms: i64) {
        self.0.lock().expect("token cache lock").insert(
            key.to_string(),
            CachedToken {
                token: token.to_string(),
                expires_at_ms,
            },
        );
    }
}

/// How long before its expiry a cached token is replaced.
const TOKEN_REFRESH_MARGIN_MS: i64 = 60_000;

/// The connector's auth scheme with the tenant's full config (secrets
/// included). Lives in the host only; the component never sees it.
pub struct Credentials {
    pub scheme: AuthScheme,
    pub config: Value,
    pub cache: Arc<TokenCache>,
    /// `<tenant>/<connector>`.
    pub cache_key: String,
}

/// The HTTP Basic `Authorization` header of `user` and `password`.
fn basic(user: &str, password: &str) -> (String, String) {
    use base64::Engine;
    let pair = format!("{user}:{password}");
    (
        "Authorization".into(),
        format!(
            "Basic {}",
            base64::engine::general_purpose::STANDARD.encode(pair)
        ),
    )
}

/// `template` with each `{name}` replaced by the config field `name`, in
/// one pass, so a value that happens to hold `{name}` is never expanded
/// itself.
fn expand(template: &str, credentials: &Credentials) -> Result<String, wit::PluginError> {
    let mut value = String::with_capacity(template.len() + 64);
    let mut rest = template;
    while let Some((before, after)) = rest.split_once('{') {
        value.push_str(before);
        match after.split_once('}') {
            Some((field, tail)) if !field.is_empty() => {
                value.push_str(credentials.field(field)?);
                rest = tail;
            }
            _ => {
                value.push('{');
                rest = after;
            }
        }
    }
    value.push_str(rest);
    Ok(value)
}

impl Credentials {
    fn field(&self, name: &str) -> Result<&str, wit::PluginError> {
        self.config[name]
            .as_str()
            .filter(|v| !v.is_empty())
            .ok_or_else(|| wit::PluginError::Config(format!("{name} is not set")))
    }
}

impl Outbound {
    pub fn new(
        policy: HostPolicy,
        credentials: Option<Credentials>,
        timeout: Duration,
        max_response_bytes: usize,
        backoff_base: Duration,
    ) -> Outbound {
        // Redirects are followed in `send`, where each hop is checked and
        // credentials stay with their origin; names resolve through the
        // address rule; no proxy from the environment.
        let client = reqwest::Client::builder()
            .timeout(timeout)
            .redirect(reqwest::redirect::Policy::none())
            .no_proxy()
            .dns_resolver(Arc::new(addresses::CheckedResolver(
                policy.addresses.clone(),
            )))
            .build()
            .expect("a plain reqwest client builds");
        let policy = Arc::new(policy);
        Outbound {
            client,
            policy,
            max_response_bytes,
            backoff_base,
            credentials: credentials.map(Arc::new),
            concurrency: 1,
        }
    }

    /// The header that authenticates a request, logging in first if the
    /// scheme needs a token and none is cached (or `fresh` is asked for).
    async fn auth_header(&self, fresh: bool) -> Result<Option<(String, String)>, wit::PluginError> {
        let Some(credentials) = &self.credentials else {
            return Ok(None);
        };
        match &credentials.scheme {
            AuthScheme::None => Ok(None),
            AuthScheme::StaticHeader {
                header,
                prefix,
                secret_field,
            } => Ok(Some((
                header.clone(),
                format!("{prefix}{}", credentials.field(secret_field)?),
            ))),
            AuthScheme::Basic {
                username_field,
                password_field,
            } => Ok(Some(basic(
                credentials.field(username_field)?,
                credentials.field(password_field)?,
            ))),
            AuthScheme::HeaderTemplate { header, template } => {
                Ok(Some((header.clone(), expand(template, credentials)?)))
            }
            AuthScheme::BasicTemplate {
                username,
                password_field,
            } => Ok(Some(basic(
                &expand(username, credentials)?,
                credentials.field(password_field)?,
            ))),
            AuthScheme::TokenExchange { .. }
            | AuthScheme::OauthClientCredentials { .. }
            | AuthScheme::ClientCredentials { .. } => {
                let token = match credentials
                    .cache
                    .valid(&credentials.cache_key)
                    .filter(|_| !fresh)
                {
                    Some(token) => token,
                    None => match &credentials.scheme {
                        AuthScheme::TokenExchange { .. } => {
                            self.exchange_token(credentials).await?
                        }
                        AuthScheme::ClientCredentials { .. } => {
                            self.templated_client_credentials_token(credentials).await?
                        }
                        _ => self.client_credentials_token(credentials).await?,
                    },
                };
                Ok(Some(("Authorization".into(), format!("Bearer {token}"))))
            }
        }
    }

    /// OAuth 2.0 client credentials at `{auth_url}/<tenant>/oauth2/v2.0/token`,
    /// with the client secret, or else a client assertion: a short JWT signed
    /// with the certificate's private key (see [`client_assertion`]).
    async fn client_credentials_token(
        &self,
        credentials: &Credentials,
    ) -> Result<String, wit::PluginError> {
        let AuthScheme::OauthClientCredentials {
            auth_url_field,
            tenant_field,
            client_id_field,
            client_secret_field,
            thumbprint_field,
            private_key_field,
            scope,
        } = &credentials.scheme
        else {
            return Err(wit::PluginError::Config("not an OAuth scheme".into()));
        };
        let auth_url = credentials.field(auth_url_field)?.trim_end_matches('/');
        let directory_tenant = credentials.field(tenant_field)?;
        let client_id = credentials.field(client_id_field)?;
        let token_url = format!("{auth_url}/{directory_tenant}/oauth2/v2.0/token");
        let url = url::Url::parse(&token_url)
            .map_err(|e| wit::PluginError::Config(format!("{auth_url_field} is not a URL: {e}")))?;
        self.policy.check(&url).map_err(wit::PluginError::Config)?;
        let secret = client_secret_field
            .as_deref()
            .and_then(|f| credentials.config[f].as_str())
            .filter(|s| !s.is_empty());
        let mut form: Vec<(&str, String)> = vec![
            ("grant_type", "client_credentials".into()),
            ("client_id", client_id.into()),
            ("scope", scope.clone()),
        ];
        match secret {
            Some(secret) => form.push(("client_secret", secret.into())),
            None => {
                let (Some(thumbprint_field), Some(key_field)) =
                    (thumbprint_field, private_key_field)
                else {
                    return Err(wit::PluginError::Config(
                        "neither a client secret nor a certificate is configured".into(),
                    ));
                };
                let assertion = client_assertion(
                    &token_url,
                    client_id,
                    credentials.field(thumbprint_field)?,
                    credentials.field(key_field)?,
                )?;
                form.push((
                    "client_assertion_type",
                    "urn:ietf:params:oauth:client-assertion-type:jwt-bearer".into(),
                ));
                form.push(("client_assertion", assertion));
            }
        }
        self.request_client_credentials_token(
            credentials,
            url,
            &form,
            "check the app registration's client id, secret or certificate, and that admin consent was granted",
        )
        .await
    }

    /// OAuth 2.0 client credentials with a client secret at the scheme's
    /// `token_url` template (e.g. `{base_url}/oauth/token`).
    async fn templated_client_credentials_token(
        &self,
        credentials: &Credentials,
    ) -> Result<String, wit::PluginError> {
        let AuthScheme::ClientCredentials {
            token_url,
            client_id_field,
            client_secret_field,
            scope,
        } = &credentials.scheme
        else {
            return Err(wit::PluginError::Config("not an OAuth scheme".into()));
        };
        let token_url = expand(token_url, credentials)?;
        let url = url::Url::parse(&token_url).map_err(|e| {
            wit::PluginError::Config(format!("the token URL {token_url} is not a URL: {e}"))
        })?;
        self.policy.check(&url).map_err(wit::PluginError::Config)?;
        let mut form: Vec<(&str, String)> = vec![
            ("grant_type", "client_credentials".into()),
            ("client_id", credentials.field(client_id_field)?.into()),
            (
                "client_secret",
                credentials.field(client_secret_field)?.into(),
            ),
        ];
        if !scope.is_empty() {
            form.push(("scope", scope.clone()));
        }
        self.request_client_credentials_token(
            credentials,
            url,
            &form,
            "check the API client's id and secret, and that it is allowed the client credentials grant and these scopes",
        )
        .await
    }

    /// Posts a client credentials `form` to `url` and keeps the answer's
    /// `access_token` for its `expires_in`.
    async fn request_client_credentials_token(
        &self,
        credentials: &Credentials,
        url: url::Url,
        form: &[(&str, String)],
        permission_hint: &str,
    ) -> Result<String, wit::PluginError> {
        let response = self
            .client
            .post(url)
            .form(form)
            .send()
            .await
            .map_err(transport_error)?;
        let status = response.status().as_u16();
        if status == 400 || status == 401 || status == 403 {
            let body: Value = response.json().await.unwrap_or(Value::Null);
            let reason = body["error_description"]
                .as_str()
                .or(body["error"].as_str())
                .unwrap_or("refused");
            return Err(wit::PluginError::Auth(wit::AuthFailure {
                status: if status == 403 { 403 } else { 401 },
                message: format!(
                    "token request refused: {}",
                    reason.chars().take(300).collect::<String>()
                ),
                permission_hint: permission_hint.into(),
            }));
        }
        if !(200..300).contains(&status) {
            return Err(wit::PluginError::Upstream(format!(
                "token endpoint answered {status}"
            )));
        }
        let (token, answer) = token_answer(response, "access_token").await?;
        let expires_in = answer["expires_in"].as_i64().unwrap_or(3600);
        credentials.cache.store(
            &credentials.cache_key,
            &token,
            cairn_core::db::now_ms() + expires_in * 1000,
        );
        Ok(token)
    }

    /// The path for requests the host makes for a feature of its own (a
    /// news feed, a model endpoint) to exactly `url`'s origin, under the
    /// operator's address rule and plain-http grants, with `bearer` (if
    /// any) sent as `Authorization: Bearer` to that origin only. `Err` says
    /// why `url` may not be reached.
    pub fn for_host_feature(
        settings: &cairn_core::settings::Settings,
        url: &str,
        bearer: Option<&str>,
        timeout: Duration,
        max_response_bytes: usize,
    ) -> Result<(Outbound, url::Url), String> {
        let parsed = url::Url::parse(url).map_err(|e| format!("not a URL: {e}"))?;
        let addresses = AddressRule::new(
            settings
                .outbound_private_network_list()
                .map_err(|e| e.to_string())?,
        );
        let policy = HostPolicy::for_urls(
            &[&parsed],
            &settings.plugin_plain_http_host_list(),
            addresses,
        );
        policy.check(&parsed)?;
        let credentials = bearer.map(|token| Credentials {
            scheme: AuthScheme::StaticHeader {
                header: "Authorization".into(),
                prefix: "Bearer ".into(),
                secret_field: "token".into(),
            },
            config: serde_json::json!({ "token": token }),
            cache: Arc::default(),
            cache_key: String::new(),
        });
        Ok((
            Outbound::new(
                policy,
                credentials,
                timeout,
                max_response_bytes,
                Duration::from_millis(500),
            ),
            parsed,
        ))
    }

    /// One request of a host feature (`feature` names it in the logs),
    /// with `headers` as given; 429 and 503 are waited out as for plugins.
    pub async fn host_request(
        &self,
        feature: &str,
        method: &str,
        url: &url::Url,
        headers: &[(&str, &str)],
        body: Vec<u8>,
    ) -> Result<wit::HttpResponse, wit::PluginError> {
        let scope = CallScope {
            plugin: feature.to_string(),
            tenant_id: None,
            job_id: None,
        };
        let request = wit::HttpRequest {
            method: method.into(),
            url: url.to_string(),
            headers: headers
                .iter()
                .map(|(name, value)| wit::Header {
                    name: name.to_string(),
                    value: value.to_string(),
                })
                .collect(),
            body,
        };
        self.send(&scope, request).await
    }

    /// At most `concurrency` requests of one [`Outbound::send_all`] at once.
    pub fn with_concurrency(mut self, concurrency: usize) -> Outbound {
        self.concurrency = concurrency.max(1);
        self
    }

    /// Sends every request, at most `concurrency` at once, each as
    /// [`Outbound::send`] would (its own 429 waits and redirects), and
    /// answers in the order given. A request is sent as soon as any of
    /// those in flight is answered, not only the oldest: one slow answer
    /// does not hold the others' places. A token scheme logs in once
    /// before the batch, so the requests do not each exchange a token.
    ///
    /// The batch's answers together are held to the cap of one response:
    /// once their bodies pass it, the requests still unanswered are given
    /// up (those not yet sent are never sent) and answer a config error
    /// saying so, so a batch cannot hold more of the host's memory than
    /// one large response.
    pub async fn send_all(
        &self,
        scope: &CallScope,
        requests: Vec<wit::HttpRequest>,
    ) -> Vec<Result<wit::HttpResponse, wit::PluginError>> {
        let count = requests.len();
        if let Err(err) = self.auth_header(false).await {
            return requests.iter().map(|_| Err(err.clone())).collect();
        }
        let mut answers: Vec<Option<Result<wit::HttpResponse, wit::PluginError>>> =
            (0..count).map(|_| None).collect();
        let mut held = 0usize;
        let mut sent = futures::stream::iter(requests.into_iter().enumerate())
            .map(|(index, request)| async move { (index, self.send(scope, request).await) })
            .buffer_unordered(self.concurrency);
        while let Some((index, answer)) = sent.next().await {
            held += answer.as_ref().map_or(0, |r| r.body.len());
            answers[index] = Some(answer);
            if held > self.max_response_bytes {
                break;
            }
        }
        drop(sent);
        answers
            .into_iter()
            .map(|answer| {
                answer.unwrap_or_else(|| {
                    Err(wit::PluginError::Config(format!(
                        "not answered: the batch's answers passed the response cap of {} MiB; \
                         send fewer requests at once",
                        self.max_response_bytes / (1024 * 1024)
                    )))
                })
            })
            .collect()
    }

    /// POST `{base_url}{path}` with the user name and password under the
    /// scheme's keys; caches the answer's token until its expiry.
    async fn exchange_token(&self, credentials: &Credentials) -> Result<String, wit::PluginError> {
        let AuthScheme::TokenExchange {
            base_url_field,
            path,
            username_field,
            password_field,
            client_id_field,
            client_id_header,
            username_key,
            password_key,
            token_key,
            expiry_key,
        } = &credentials.scheme
        else {
            return Err(wit::PluginError::Config(
                "not a token exchange scheme".into(),
            ));
        };
        let base = credentials.field(base_url_field)?.trim_end_matches('/');
        let url = url::Url::parse(&format!("{base}{path}"))
            .map_err(|e| wit::PluginError::Config(format!("{base_url_field} is not a URL: {e}")))?;
        self.policy.check(&url).map_err(wit::PluginError::Config)?;
        let mut body = serde_json::Map::new();
        body.insert(
            username_key.clone(),
            credentials.field(username_field)?.into(),
        );
        body.insert(
            password_key.clone(),
            credentials.field(password_field)?.into(),
        );
        let mut request = self.client.post(url).json(&body);
        if let (Some(field), Some(header)) = (client_id_field, client_id_header) {
            if let Some(client_id) = credentials.config[field].as_str().filter(|v| !v.is_empty()) {
                request = request.header(header.as_str(), client_id);
            }
        }
        let response = request.send().await.map_err(transport_error)?;
        let status = response.status().as_u16();
        if status == 401 || status == 403 {
            return Err(wit::PluginError::Auth(wit::AuthFailure {
                status,
                message: "the upstream refused the username and password".into(),
                permission_hint: "check the integration's username, password and client id".into(),
            }));
        }
        if !(200..300).contains(&status) {
            return Err(wit::PluginError::Upstream(format!(
                "token exchange answered {status}"
            )));
        }
        let (token, answer) = token_answer(response, token_key).await?;
        let expires_at_ms = answer[expiry_key.as_str()]
            .as_str()
            .and_then(parse_expiry)
            .unwrap_or_else(|| cairn_core::db::now_ms() + 15 * 60_000);
        credentials
            .cache
            .store(&credentials.cache_key, &token, expires_at_ms);
        Ok(token)
    }

    pub async fn send(
        &self,
        scope: &CallScope,
        request: wit::HttpRequest,
    ) -> Result<wit::HttpResponse, wit::PluginError> {
        let deny = |url: &url::Url, reason: String| {
            tracing::warn!(plugin = %scope.plugin, host = url.host_str().unwrap_or(""), "outbound request denied: {reason}");
            wit::PluginError::Config(reason)
        };
        let mut url = url::Url::parse(&request.url)
            .map_err(|e| wit::PluginError::Config(format!("not an absolute URL: {e}")))?;
        let origin = self.policy.check(&url).map_err(|r| deny(&url, r))?;
        let mut method = reqwest::Method::from_bytes(request.method.as_bytes())
            .map_err(|_| wit::PluginError::Config(format!("bad method {}", request.method)))?;
        let mut body = request.body;
        let mut attempt = 0;
        let mut redirects = 0;
        let mut auth = self.auth_header(false).await?;
        let mut relogged = false;
        let exchanges_tokens = self
            .credentials
            .as_deref()
            .is_some_and(|c| c.scheme.fetches_tokens());
        loop {
            // A credential goes only to the origin the request started at.
            let same_origin = Origin::of(&url).is_ok_and(|o| o == origin);
            let mut builder = self.client.request(method.clone(), url.clone());
            for header in &request.headers {
                // Credentials are the host's to set.
                let reserved = ["host", "authorization", "cookie"];
                if !reserved.iter().any(|r| header.name.eq_ignore_ascii_case(r)) {
                    builder = builder.header(header.name.as_str(), header.value.as_str());
                }
            }
            if let Some((name, value)) = auth.as_ref().filter(|_| same_origin) {
                builder = builder.header(name.as_str(), value.as_str());
            }
            if !body.is_empty() {
                builder = builder.body(body.clone());
            }
            let response = match builder.send().await {
                Ok(response) => response,
                Err(err) => {
                    count_request(scope, "failed");
                    return Err(transport_error(err));
                }
            };
            let status = response.status();
            count_request(scope, status_class(status.as_u16()));
            if status.is_redirection() {
                let Some(next) = redirect_target(&url, &response) else {
                    return self.read(response).await;
                };
                redirects += 1;
                if redirects > MAX_REDIRECTS {
                    return Err(wit::PluginError::Upstream("too many redirects".into()));
                }
                self.policy
                    .check(&next)
                    .map_err(|r| deny(&next, format!("redirect refused: {r}")))?;
                // 303, and 301/302 after a POST, turn into a GET without a body.
                if status.as_u16() == 303
                    || (matches!(status.as_u16(), 301 | 302) && method == reqwest::Method::POST)
                {
                    method = reqwest::Method::GET;
                    body.clear();
                }
                url = next;
                continue;
            }
            if status.as_u16() == 401 && exchanges_tokens && !relogged && same_origin {
                // The token expired early or was revoked: one re-login, one retry.
                tracing::info!(plugin = %scope.plugin, "upstream 401; logging in again");
                auth = self.auth_header(true).await?;
                relogged = true;
                continue;
            }
            // A 503 is an overloaded upstream asking for the same wait.
            if matches!(status.as_u16(), 429 | 503) && attempt < MAX_RATE_LIMIT_RETRIES {
                metrics::counter!(
                    cairn_core::telemetry::OUTBOUND_THROTTLED,
                    "caller" => scope.plugin.clone(),
                    "status" => status.as_u16().to_string()
                )
                .increment(1);
                let wait = retry_after(&response).unwrap_or(self.backoff_base * 2u32.pow(attempt));
                tracing::info!(plugin = %scope.plugin, status = status.as_u16(), wait_ms = wait.as_millis() as u64, "upstream throttled; waiting");
                tokio::time::sleep(wait.min(MAX_RETRY_AFTER)).await;
                attempt += 1;
                continue;
            }
            if status.as_u16() == 429 {
                let secs = retry_after(&response)
                    .map(|d| d.as_secs() as u32)
                    .unwrap_or(60);
                return Err(wit::PluginError::RateLimited(secs));
            }
            return self.read(response).await;
        }
    }

    async fn read(
        &self,
        response: reqwest::Response,
    ) -> Result<wit::HttpResponse, wit::PluginError> {
        let status = response.status().as_u16();
        let headers = response
            .headers()
            .iter()
            .filter_map(|(name, value)| {
                value.to_str().ok().map(|v| wit::Header {
                    name: name.to_string(),
                    value: v.to_string(),
                })
            })
            .collect();
        let mut body = Vec::new();
        let mut stream = response.bytes_stream();
        while let Some(chunk) = stream.next().await {
            let chunk = chunk.map_err(transport_error)?;
            if body.len() + chunk.len() > self.max_response_bytes {
                return Err(wit::PluginError::Upstream(format!(
                    "response larger than {} MiB",
                    self.max_response_bytes / (1024 * 1024)
                )));
            }
            body.extend_from_slice(&chunk);
        }
        Ok(wit::HttpResponse {
            status,
            headers,
            body,
        })
    }
}

/// The JWT a client presents instead of a secret: issuer and subject the
/// client id, audience the token endpoint, ten minutes of life, signed with
/// the certificate's key (RS256 or PS256, by the thumbprint's length) and
/// naming the certificate by thumbprint.
fn client_assertion(
    token_url: &str,
    client_id: &str,
    thumbprint_hex: &str,
    private_key_pem: &str,
) -> Result<String, wit::PluginError> {
    use base64::Engine;
    let thumbprint = hex::decode(thumbprint_hex.replace([':', ' '], ""))
        .map_err(|_| wit::PluginError::Config("thumbprint must be hex".into()))?;
    let encoded = base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(&thumbprint);
    // Identity platforms take both: a SHA-1 thumbprint as `x5t` with RS256
    // (the older form), a SHA-256 one as `x5t#S256` with PS256 (newer).
    let header = match thumbprint.len() {
        20 => jsonwebtoken::Header {
            x5t: Some(encoded),
            ..jsonwebtoken::Header::new(jsonwebtoken::Algorithm::RS256)
        },
        32 => jsonwebtoken::Header {
            x5t_s256: Some(encoded),
            ..jsonwebtoken::Header::new(jsonwebtoken::Algorithm::PS256)
        },
        _ => {
            return Err(wit::PluginError::Config(
                "the thumbprint must be a SHA-1 (40 hex digits) or SHA-256 (64 hex digits) one"
                    .into(),
            ))
        }
    };
    let now = cairn_core::db::now_ms() / 1000;
    let claims = serde_json::json!({
        "aud": token_url,
        "iss": client_id,
        "sub": client_id,
        "jti": uuid::Uuid::new_v4().to_string(),
        "nbf": now,
        "exp": now + 600,
    });
    let key =
        jsonwebtoken::EncodingKey::from_rsa_pem(private_key_pem.as_bytes()).map_err(|_| {
            wit::PluginError::Config("private_key is not an RSA private key in PEM".into())
        })?;
    jsonwebtoken::encode(&header, &claims, &key)
        .map_err(|e| wit::PluginError::Config(format!("cannot sign the client assertion: {e}")))
}

/// A token's expiry as RFC 3339, or as a naive date-time taken as UTC.
fn parse_expiry(raw: &str) -> Option<i64> {
    if let Ok(at) = chrono::DateTime::parse_from_rfc3339(raw) {
        return Some(at.timestamp_millis());
    }
    chrono::NaiveDateTime::parse_from_str(raw, "%Y-%m-%dT%H:%M:%S%.f")
        .ok()
        .map(|at| at.and_utc().timestamp_millis())
}

/// Where a redirect response points, resolved against the request's URL.
fn redirect_target(from: &url::Url, response: &reqwest::Response) -> Option<url::Url> {
    let location = response
        .headers()
        .get(reqwest::header::LOCATION)?
        .to_str()
        .ok()?;
    from.join(location).ok()
}

fn retry_after(response: &reqwest::Response) -> Option<Duration> {
    response
        .headers()
        .get(reqwest::header::RETRY_AFTER)?
        .to_str()
        .ok()?
        .trim()
        .parse::<f64>()
        .ok()
        // Seconds, possibly with a fraction (`2.128` is seen in the wild).
        .filter(|secs| secs.is_finite() && *secs >= 0.0)
        .map(Duration::from_secs_f64)
}

fn transport_error(err: reqwest::Error) -> wit::PluginError {
    if err.is_connect() {
        // The address rule refuses in the resolver; say why, not just that.
        let mut source: Option<&dyn std::error::Error> = std::error::Error::source(&err);
        while let Some(cause) = source {
            match cause.downcast_ref::<addresses::Unreachable>() {
                Some(addresses::Unreachable::Refused(reason)) => {
                    return wit::PluginError::Config(reason.clone())
                }
                // A connector's host comes from the tenant's config: a name
                // that does not resolve is most often that config's typo.
                // The sentence says what happened either way (the CVE
                // feeds report only the sentence).
                Some(addresses::Unreachable::Unresolved(reason)) => {
                    return wit::PluginError::Config(reason.clone())
                }
                None => {}
            }
            source = cause.source();
        }
    }
    if err.is_timeout() {
        return wit::PluginError::Transient("request timed out".into());
    }
    // The URL may carry query parameters; say what failed without it.
    wit::PluginError::Transient(format!("request failed: {}", err.without_url()))
}

/// A token endpoint's JSON answer and its token, read from `field`.
async fn token_answer(
    response: reqwest::Response,
    field: &str,
) -> Result<(String, Value), wit::PluginError> {
    let answer: Value = response.json().await.map_err(|e| {
        wit::PluginError::Upstream(format!("unreadable token response: {}", e.without_url()))
    })?;
    let token = answer[field]
        .as_str()
        .ok_or_else(|| wit::PluginError::Upstream(format!("token response has no {field}")))?
        .to_string();
    Ok((token, answer))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A server on 127.0.0.1 answering every path with `size` bytes.
    async fn serving(size: usize) -> url::Url {
        serving_app(axum::Router::new().fallback(move || async move { vec![b'x'; size] })).await
    }

    /// `app` served on 127.0.0.1, at the returned base URL.
    async fn serving_app(app: axum::Router) -> url::Url {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        tokio::spawn(async move { axum::serve(listener, app).await });
        url::Url::parse(&format!("http://{addr}/")).unwrap()
    }

    /// A policy that lets requests reach `url` on the loopback network.
    fn loopback_policy(url: &url::Url) -> HostPolicy {
        HostPolicy::for_urls(
            &[url],
            &["127.0.0.1".to_string()],
            AddressRule::new(vec!["127.0.0.0/8".parse().unwrap()]),
        )
    }

    fn get(url: &url::Url, n: usize) -> wit::HttpRequest {
        wit::HttpRequest {
            method: "GET".into(),
            url: format!("{url}item/{n}"),
            headers: vec![],
            body: vec![],
        }
    }

    #[tokio::test]
    async fn a_batch_answers_in_order_and_stops_at_the_response_cap() {
        let url = serving(400).await;
        let policy = loopback_policy(&url);
        // Room for two 400-byte answers and a third that passes the cap.
        let outbound = Outbound::new(policy, None, Duration::from_secs(5), 1000, Duration::ZERO)
            .with_concurrency(1);
        let scope = CallScope::default();
        let answers = outbound
            .send_all(&scope, (0..5).map(|n| get(&url, n)).collect())
            .await;
        assert_eq!(answers.len(), 5, "one answer per request, in order");
        for answer in &answers[..3] {
            assert_eq!(answer.as_ref().unwrap().body.len(), 400);
        }
        for answer in &answers[3..] {
            let Err(wit::PluginError::Config(reason)) = answer else {
                panic!("past the cap: {answer:?}")
            };
            assert!(reason.contains("response cap"), "{reason}");
        }
        // A batch within the cap is whole.
        let answers = outbound
            .send_all(&scope, (0..2).map(|n| get(&url, n)).collect())
            .await;
        assert!(answers.iter().all(Result::is_ok));
    }

    #[tokio::test]
    async fn a_slow_answer_does_not_hold_the_batchs_other_places() {
        // `/item/0` is answered only once every other request of the batch
        // has arrived (or after ten seconds, saying so): with two places, a
        // batch that waited for its oldest answer would send no third.
        const BATCH: usize = 6;
        let arrived = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
        let app = axum::Router::new().route(
            "/item/{n}",
            axum::routing::get({
                let arrived = arrived.clone();
                move |axum::extract::Path(n): axum::extract::Path<usize>| async move {
                    use std::sync::atomic::Ordering;
                    arrived.fetch_add(1, Ordering::SeqCst);
                    if n != 0 {
                        return n.to_string();
                    }
                    for _ in 0..1000 {
                        if arrived.load(Ordering::SeqCst) == BATCH {
                            return "0 after the others".to_string();
                        }
                        tokio::time::sleep(Duration::from_millis(10)).await;
                    }
                    "0 alone".to_string()
                }
            }),
        );
        let url = serving_app(app).await;
        let outbound = Outbound::new(
            loopback_policy(&url),
            None,
            Duration::from_secs(30),
            1 << 20,
            Duration::ZERO,
        )
        .with_concurrency(2);
        let answers = outbound
            .send_all(
                &CallScope::default(),
                (0..BATCH).map(|n| get(&url, n)).collect(),
            )
            .await;
        let bodies: Vec<String> = answers
            .into_iter()
            .map(|a| String::from_utf8(a.unwrap().body).unwrap())
            .collect();
        assert_eq!(
            bodies,
            ["0 after the others", "1", "2", "3", "4", "5"],
            "answers in the order of the requests, the first held until the others came"
        );
    }
}
