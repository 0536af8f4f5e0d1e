//! `/api/v1/advisories`: search, draft, find the affected users, send,
//! and read back what was sent to whom.

use axum::extract::State;
use axum::http::StatusCode;
use axum::Extension;
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};
use utoipa::{IntoParams, ToSchema};
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use super::affected::{self, Affected, Target};
use super::draft::{self, Draft};
use super::send::SEND_KIND;
use super::storage::{self, AdvisoryView, NewAdvisory, NewRecipient};
use cairn_core::http::error::{ApiError, ApiResult, ErrorBody};
use cairn_core::http::json::{Json, Path, Query};
use cairn_inventory::exposure::Exposure;
use cairn_inventory::search::{Page, PageParams};
use cairn_inventory::storage::{app_names, AppName};
use cairn_platform::app::AppState;
use cairn_platform::auth::Caller;
use cairn_vulnerabilities::findings::views::open_device_counts;
use cairn_vulnerabilities::reference::store::{search_cves, CveHit};

/// Most recipients of one advisory.
const MAX_RECIPIENTS: usize = 5_000;

pub fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .routes(routes!(search_advisory_cves))
        .routes(routes!(search_advisory_apps))
        .routes(routes!(draft_advisory))
        .routes(routes!(affected_users))
        .routes(routes!(send_advisory))
        .routes(routes!(list_advisories))
        .routes(routes!(one_advisory))
}

#[derive(Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct SearchQuery {
    /// At least two characters, matched anywhere, ignoring case.
    q: String,
    /// Default 20, at most 100.
    #[param(minimum = 1, maximum = 100)]
    limit: Option<i64>,
}

fn search_terms(query: &SearchQuery) -> ApiResult<(&str, i64)> {
    let q = query.q.trim();
    if q.chars().count() < 2 {
        return Err(ApiError::validation("q", "give at least two characters"));
    }
    let limit = query.limit.unwrap_or(20);
    if !(1..=100).contains(&limit) {
        return Err(ApiError::validation("limit", "must be between 1 and 100"));
    }
    Ok((q, limit))
}

#[derive(Serialize, ToSchema)]
pub struct CveSearchHit {
    #[serde(flatten)]
    cve: CveHit,
    /// The tenant's devices with an open finding of it.
    affected_devices: i64,
}

/// CVEs of the knowledge base whose id or description contains `q`, with
/// the tenant's affected device counts.
#[utoipa::path(get, path = "/search/cves", tag = "advisories",
    params(SearchQuery),
    responses((status = 200, body = Vec<CveSearchHit>), (status = 422, body = ErrorBody)))]
async fn search_advisory_cves(
    State(state): State<AppState>,
    caller: Caller,
    Query(query): Query<SearchQuery>,
) -> ApiResult<Json<Vec<CveSearchHit>>> {
    let (q, limit) = search_terms(&query)?;
    let hits = search_cves(&state.db, q, limit).await?;
    let ids: Vec<String> = hits.iter().map(|h| h.cve_id.clone()).collect();
    let counts = open_device_counts(&state.db, &caller.tenant_id, &ids).await?;
    Ok(Json(
        hits.into_iter()
            .map(|cve| CveSearchHit {
                affected_devices: counts.get(&cve.cve_id).copied().unwrap_or(0),
                cve,
            })
            .collect(),
    ))
}

/// The tenant's applications whose name contains `q` (those starting with
/// it first), with device and open CVE counts.
#[utoipa::path(get, path = "/search/apps", tag = "advisories",
    params(SearchQuery),
    responses((status = 200, body = Vec<AppName>), (status = 422, body = ErrorBody)))]
async fn search_advisory_apps(
    State(state): State<AppState>,
    Extension(exposure): Extension<Exposure>,
    caller: Caller,
    Query(query): Query<SearchQuery>,
) -> ApiResult<Json<Vec<AppName>>> {
    let (q, limit) = search_terms(&query)?;
    Ok(Json(
        app_names(&state.db, &exposure, &caller.tenant_id, Some(q), 0, limit).await?,
    ))
}

#[derive(Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct TargetRequest {
    /// A CVE id (any case); or give `application`.
    cve_id: Option<String>,
    /// An application of the tenant's inventory (its rolled-up name).
    application: Option<String>,
    /// With `application`: only these installed versions.
    versions: Option<Vec<String>>,
}

impl TargetRequest {
    fn target(self) -> ApiResult<Target> {
        Target::of(
            self.cve_id.as_deref(),
            self.application.as_deref(),
            self.versions,
        )
    }
}

#[derive(Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct DraftRequest {
    cve_id: Option<String>,
    application: Option<String>,
    versions: Option<Vec<String>>,
    /// The version to tell people to update to, when the findings know
    /// none.
    fix_version: Option<String>,
}

/// Draft an advisory for a CVE or an application: through the configured
/// model endpoint (`drafted_by: model`), else from a template
/// (`drafted_by: template`, with `model_note` saying why the model was
/// not used). Nothing is sent or stored.
#[utoipa::path(post, path = "/draft", tag = "advisories",
    request_body = DraftRequest,
    responses((status = 200, body = Draft),
              (status = 404, body = ErrorBody, description = "Unknown CVE or application"),
              (status = 422, body = ErrorBody)))]
async fn draft_advisory(
    State(state): State<AppState>,
    caller: Caller,
    Json(request): Json<DraftRequest>,
) -> ApiResult<Json<Draft>> {
    let target = Target::of(
        request.cve_id.as_deref(),
        request.application.as_deref(),
        request.versions,
    )?;
    let affected = affected::affected(&state, &caller.tenant_id, &target).await?;
    let fix = request
        .fix_version
        .as_deref()
        .map(str::trim)
        .filter(|f| !f.is_empty());
    let facts = draft::facts(&state.db, &target, &affected, fix).await?;
    Ok(Json(draft::draft(&state.settings, facts).await))
}

/// The devices running the affected software (open findings of the CVE,
/// or the application in the versions given) and their users: inventory
/// rows' users and device records' users (an MDM's primary user), with
/// the directory's record of each when a directory is synced.
#[utoipa::path(post, path = "/affected-users", tag = "advisories",
    request_body = TargetRequest,
    responses((status = 200, body = Affected),
              (status = 404, body = ErrorBody, description = "Unknown CVE or application"),
              (status = 422, body = ErrorBody)))]
async fn affected_users(
    State(state): State<AppState>,
    caller: Caller,
    Json(request): Json<TargetRequest>,
) -> ApiResult<Json<Affected>> {
    let target = request.target()?;
    Ok(Json(
        affected::affected(&state, &caller.tenant_id, &target).await?,
    ))
}

#[derive(Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct SendRequest {
    #[schema(min_length = 1, max_length = 200)]
    subject: String,
    #[schema(min_length = 1, max_length = 50000)]
    body: String,
    cve_id: Option<String>,
    application: Option<String>,
    versions: Option<Vec<String>>,
    /// Only these affected users (their addresses); default every affected
    /// user. An address outside the affected set is refused.
    recipients: Option<Vec<String>>,
    /// Addresses added on purpose although not affected (a customer's IT
    /// contact).
    extra_recipients: Option<Vec<String>>,
    /// Makes a repeated request the same advisory. Without it, the same
    /// subject, body, target and recipients are.
    idempotency_key: Option<String>,
}

/// Send an advisory by e-mail to the affected users (and the extra
/// recipients named). The advisory and its recipients are recorded and a
/// job sends each message once, at the operator's rate limit; follow
/// each recipient's status at `GET /advisories/{advisory_id}`. Repeating
/// the request returns the same advisory (200) and sends nothing again.
#[utoipa::path(post, path = "/send", tag = "advisories",
    request_body = SendRequest,
    responses((status = 202, body = AdvisoryView, description = "Recorded; the messages are being sent"),
              (status = 200, body = AdvisoryView, description = "The same request was made before; nothing new is sent"),
              (status = 404, body = ErrorBody, description = "Unknown CVE or application"),
              (status = 409, body = ErrorBody, description = "Mail is not configured on this service"),
              (status = 422, body = ErrorBody, description = "No recipients, an address outside the affected set, or a bad field")))]
async fn send_advisory(
    State(state): State<AppState>,
    caller: Caller,
    Json(request): Json<SendRequest>,
) -> ApiResult<(StatusCode, Json<AdvisoryView>)> {
    let tenant = &caller.tenant_id;
    let subject = request.subject.trim();
    if subject.is_empty() || subject.chars().count() > 200 || subject.contains(['\r', '\n']) {
        return Err(ApiError::validation(
            "subject",
            "give one line of 1 to 200 characters",
        ));
    }
    let body = request.body.trim();
    if body.is_empty() || body.chars().count() > 50_000 {
        return Err(ApiError::validation("body", "give 1 to 50,000 characters"));
    }
    let target = Target::of(
        request.cve_id.as_deref(),
        request.application.as_deref(),
        request.versions,
    )?;
    if !state.mailer.enabled() {
        return Err(ApiError::Conflict(
            "mail is not configured on this service (smtp_host); nothing was sent".into(),
        ));
    }
    let affected = affected::affected(&state, tenant, &target).await?;
    let recipients = recipients(&affected, request.recipients, request.extra_recipients)?;
    let key = match request.idempotency_key.as_deref().map(str::trim) {
        Some(key) if !key.is_empty() => format!("key:{key}"),
        _ => {
            let emails: Vec<&str> = recipients.iter().map(|r| r.email.as_str()).collect();
            let material = serde_json::json!([
                subject,
                body,
                target.cve_id(),
                target.application(),
                target.versions(),
                emails
            ]);
            format!(
                "content:{}",
                hex::encode(Sha256::digest(material.to_string()))
            )
        }
    };
    let (id, created) = storage::create(
        &state.db,
        tenant,
        NewAdvisory {
            request_key: &key,
            subject,
            body,
            cve_id: target.cve_id(),
            application: target.application(),
            versions: target.versions(),
            created_by: caller.user_id.as_str(),
            recipients,
        },
    )
    .await?;
    if created {
        state
            .jobs
            .enqueue(tenant, SEND_KIND, &serde_json::json!({}))
            .await?;
    }
    let view = storage::one(&state.db, tenant, &id)
        .await?
        .ok_or(ApiError::NotFound("advisory"))?;
    let status = if created {
        StatusCode::ACCEPTED
    } else {
        StatusCode::OK
    };
    Ok((status, Json(view)))
}

/// The recipients of a send: the affected users (or those of them named),
/// then the extra addresses, each once; never an unaffected address the
/// caller did not add as extra.
fn recipients(
    affected: &Affected,
    chosen: Option<Vec<String>>,
    extra: Option<Vec<String>>,
) -> ApiResult<Vec<NewRecipient>> {
    let mut out: Vec<NewRecipient> = vec![];
    let mut push = |recipient: NewRecipient| {
        if !out.iter().any(|r| r.email == recipient.email) {
            out.push(recipient);
        }
    };
    let affected_user = |user: &affected::AffectedUser| NewRecipient {
        email: user.email.clone(),
        name: user.name.clone(),
        devices: user.devices.clone(),
        explicit: false,
    };
    match chosen {
        Some(addresses) => {
            for address in addresses {
                let user = affected.user(&address).ok_or_else(|| {
                    ApiError::validation(
                        "recipients",
                        format!("{address} is not among the affected users; add it to extra_recipients to send anyway"),
                    )
                })?;
                push(affected_user(user));
            }
        }
        None => affected.users.iter().map(affected_user).for_each(&mut push),
    }
    for address in extra.unwrap_or_default() {
        let email = address.trim().to_lowercase();
        if email.parse::<lettre::Address>().is_err() {
            return Err(ApiError::validation(
                "extra_recipients",
                format!("{address} is not an e-mail address"),
            ));
        }
        let known = affected.user(&email);
        push(NewRecipient {
            name: known.and_then(|u| u.name.clone()),
            devices: known.map(|u| u.devices.clone()).unwrap_or_default(),
            explicit: known.is_none(),
            email,
        });
    }
    if out.is_empty() {
        return Err(ApiError::validation(
            "recipients",
            "no recipients: no affected user has an e-mail address, and no extra_recipients were given",
        ));
    }
    if out.len() > MAX_RECIPIENTS {
        return Err(ApiError::validation(
            "recipients",
            format!("at most {MAX_RECIPIENTS} recipients per advisory"),
        ));
    }
    Ok(out)
}

/// The tenant's advisories, newest first, with their delivery counts.
#[utoipa::path(get, path = "/", tag = "advisories",
    params(PageParams),
    responses((status = 200, body = Page<AdvisoryView>), (status = 422, body = ErrorBody)))]
async fn list_advisories(
    State(state): State<AppState>,
    caller: Caller,
    Query(page): Query<PageParams>,
) -> ApiResult<Json<Page<AdvisoryView>>> {
    let bounds = page.bounds()?;
    let (items, total) = storage::list(&state.db, &caller.tenant_id, bounds.0, bounds.1).await?;
    Ok(Json(Page::new(items, total, bounds)))
}

/// One advisory with each recipient's delivery status.
#[utoipa::path(get, path = "/{advisory_id}", tag = "advisories",
    params(("advisory_id" = String, Path)),
    responses((status = 200, body = AdvisoryView), (status = 404, body = ErrorBody)))]
async fn one_advisory(
    State(state): State<AppState>,
    caller: Caller,
    Path(advisory_id): Path<String>,
) -> ApiResult<Json<AdvisoryView>> {
    storage::one(&state.db, &caller.tenant_id, &advisory_id)
        .await?
        .map(Json)
        .ok_or(ApiError::NotFound("advisory"))
}
