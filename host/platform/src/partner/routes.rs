//! `/api/v1/partner`: customers, groups, analysts' access, the audit trail
//! and branding.

use std::collections::{HashMap, HashSet};

use axum::extract::State;
use axum::http::StatusCode;
use serde::{Deserialize, Deserializer, Serialize};
use utoipa::{IntoParams, ToSchema};
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use super::storage::{self, AnalystAccess, AuditRow, BrandingRow, CustomerRow, GroupChanges};
use super::PartnerCaller;
use crate::app::AppState;
use crate::auth::{storage as users, Role};
use cairn_core::db::{is_unique_violation, to_rfc3339};
use cairn_core::http::error::{ApiError, ApiResult, ErrorBody};
use cairn_core::http::json::{Json, Path, Query};
use cairn_core::http::paging;

pub fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .routes(routes!(list_customers, create_customer))
        .routes(routes!(get_customer, update_customer, remove_customer))
        .routes(routes!(list_groups, create_group))
        .routes(routes!(get_group, update_group, delete_group))
        .routes(routes!(list_access))
        .routes(routes!(get_access, set_access))
        .routes(routes!(list_audit))
        .routes(routes!(get_branding, set_branding))
}

#[derive(Serialize, ToSchema)]
pub struct CustomerView {
    id: String,
    name: String,
    timezone: String,
    /// The customer's own users (the partner's users are not members).
    member_count: i64,
    /// Ids of the partner's groups the customer is in.
    group_ids: Vec<String>,
    created_at: String,
}

fn customer_view(row: &CustomerRow, groups: &HashMap<String, Vec<String>>) -> CustomerView {
    CustomerView {
        id: row.id.clone(),
        name: row.name.clone(),
        timezone: row.timezone.clone(),
        member_count: row.member_count,
        group_ids: groups.get(&row.id).cloned().unwrap_or_default(),
        created_at: to_rfc3339(row.created_at),
    }
}

/// Group ids per customer.
async fn groups_by_customer(
    state: &AppState,
    partner: &PartnerCaller,
) -> ApiResult<HashMap<String, Vec<String>>> {
    let mut by_customer: HashMap<String, Vec<String>> = HashMap::new();
    for (group, customer) in storage::group_members(&state.db, &partner.partner).await? {
        by_customer.entry(customer).or_default().push(group);
    }
    Ok(by_customer)
}

#[derive(Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct NewCustomer {
    /// The customer's name (1 to 200 printable characters).
    name: String,
    /// IANA time zone; default UTC.
    timezone: Option<String>,
    /// Groups to put the customer in.
    #[serde(default)]
    group_ids: Vec<String>,
}

#[derive(Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct CustomerUpdate {
    name: Option<String>,
    timezone: Option<String>,
}

fn checked_name(field: &str, raw: &str) -> ApiResult<String> {
    let name = raw.trim();
    if name.is_empty() || name.chars().count() > 200 || name.chars().any(char::is_control) {
        return Err(ApiError::validation(
            field,
            "must be 1 to 200 printable characters",
        ));
    }
    Ok(name.to_string())
}

fn checked_timezone(raw: &str) -> ApiResult<String> {
    let tz = raw.trim();
    if !crate::tenancy::is_plausible_timezone(tz) {
        return Err(ApiError::validation(
            "timezone",
            "expected an IANA time zone such as Europe/Berlin or UTC",
        ));
    }
    Ok(tz.to_string())
}

/// The customers the caller reaches, by name.
#[utoipa::path(get, path = "/customers", tag = "partner",
    responses(
        (status = 200, body = Vec<CustomerView>),
        (status = 403, body = ErrorBody, description = "Not a partner user (a customer's users, plain members)"),
    ))]
async fn list_customers(
    State(state): State<AppState>,
    partner: PartnerCaller,
) -> ApiResult<Json<Vec<CustomerView>>> {
    let groups = groups_by_customer(&state, &partner).await?;
    let rows = partner.customers(&state.db).await?;
    Ok(Json(
        rows.iter().map(|r| customer_view(r, &groups)).collect(),
    ))
}

/// Create a customer tenant (partner admin). The caller's tenant becomes a
/// partner with its first customer. The customer starts without users: the
/// partner acts in it (`POST /api/v1/auth/act-as`) and may invite its
/// people from there.
#[utoipa::path(post, path = "/customers", tag = "partner", request_body = NewCustomer,
    responses(
        (status = 201, body = CustomerView),
        (status = 403, body = ErrorBody),
        (status = 404, body = ErrorBody, description = "A named group is not the partner's"),
        (status = 422, body = ErrorBody),
    ))]
async fn create_customer(
    State(state): State<AppState>,
    partner: PartnerCaller,
    Json(body): Json<NewCustomer>,
) -> ApiResult<(StatusCode, Json<CustomerView>)> {
    partner.require_admin()?;
    let name = checked_name("name", &body.name)?;
    let timezone = checked_timezone(body.timezone.as_deref().unwrap_or("UTC"))?;
    let groups = storage::groups(&state.db, &partner.partner).await?;
    for id in &body.group_ids {
        if !groups.iter().any(|g| &g.id == id) {
            return Err(ApiError::validation(
                "group_ids",
                format!("{id} is not one of your groups"),
            ));
        }
    }
    let row = storage::create_customer(&state.db, &partner.partner, &name, &timezone).await?;
    if !body.group_ids.is_empty() {
        // Members of every named group, read once, with the new customer.
        let mut members: HashMap<String, Vec<String>> = HashMap::new();
        for (group, customer) in storage::group_members(&state.db, &partner.partner).await? {
            members.entry(group).or_default().push(customer);
        }
        for group in &body.group_ids {
            // Kept in the map: a group named twice keeps its members.
            let ids = members.entry(group.clone()).or_default();
            if !ids.contains(&row.id) {
                ids.push(row.id.clone());
            }
            let changes = GroupChanges {
                name: None,
                description: None,
                customer_ids: Some(ids),
            };
            storage::save_group(&state.db, &partner.partner, group, false, changes).await?;
        }
    }
    tracing::info!(partner_id = %partner.partner.as_str(), customer_id = %row.id, "created a customer tenant");
    let groups = groups_by_customer(&state, &partner).await?;
    Ok((StatusCode::CREATED, Json(customer_view(&row, &groups))))
}

/// One customer.
#[utoipa::path(get, path = "/customers/{customer_id}", tag = "partner",
    params(("customer_id" = String, Path)),
    responses(
        (status = 200, body = CustomerView),
        (status = 403, body = ErrorBody),
        (status = 404, body = ErrorBody, description = "Not a customer the caller reaches"),
    ))]
async fn get_customer(
    State(state): State<AppState>,
    partner: PartnerCaller,
    Path(customer_id): Path<String>,
) -> ApiResult<Json<CustomerView>> {
    let row = partner.customer(&state.db, &customer_id).await?;
    let groups = groups_by_customer(&state, &partner).await?;
    Ok(Json(customer_view(&row, &groups)))
}

/// Rename a customer or change its time zone (partner admin).
#[utoipa::path(patch, path = "/customers/{customer_id}", tag = "partner",
    params(("customer_id" = String, Path)), request_body = CustomerUpdate,
    responses(
        (status = 200, body = CustomerView),
        (status = 403, body = ErrorBody),
        (status = 404, body = ErrorBody),
        (status = 422, body = ErrorBody),
    ))]
async fn update_customer(
    State(state): State<AppState>,
    partner: PartnerCaller,
    Path(customer_id): Path<String>,
    Json(body): Json<CustomerUpdate>,
) -> ApiResult<Json<CustomerView>> {
    partner.customer(&state.db, &customer_id).await?;
    partner.require_admin()?;
    let name = body
        .name
        .as_deref()
        .map(|n| checked_name("name", n))
        .transpose()?;
    let timezone = body.timezone.as_deref().map(checked_timezone).transpose()?;
    storage::rename_customer(
        &state.db,
        &partner.partner,
        &customer_id,
        name.as_deref(),
        timezone.as_deref(),
    )
    .await?;
    let row = partner.customer(&state.db, &customer_id).await?;
    let groups = groups_by_customer(&state, &partner).await?;
    Ok(Json(customer_view(&row, &groups)))
}

/// Remove a customer from the partner (partner admin). The customer's
/// tenant and data stay with its own users; the partner's groups lose it,
/// every session acting in it ends at once, and configs it shared from the
/// partner stop serving it.
#[utoipa::path(delete, path = "/customers/{customer_id}", tag = "partner",
    params(("customer_id" = String, Path)),
    responses(
        (status = 204, description = "Removed from the partner"),
        (status = 403, body = ErrorBody),
        (status = 404, body = ErrorBody),
    ))]
async fn remove_customer(
    State(state): State<AppState>,
    partner: PartnerCaller,
    Path(customer_id): Path<String>,
) -> ApiResult<StatusCode> {
    partner.customer(&state.db, &customer_id).await?;
    partner.require_admin()?;
    if !storage::remove_customer(&state.db, &partner.partner, &customer_id).await? {
        return Err(ApiError::NotFound("customer"));
    }
    tracing::info!(partner_id = %partner.partner.as_str(), customer_id = %customer_id, "removed a customer from its partner");
    Ok(StatusCode::NO_CONTENT)
}

#[derive(Serialize, ToSchema)]
pub struct GroupView {
    id: String,
    name: String,
    description: Option<String>,
    /// The group's customers the caller reaches.
    customer_ids: Vec<String>,
    created_at: String,
    updated_at: String,
}

#[derive(Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct NewGroup {
    name: String,
    description: Option<String>,
    #[serde(default)]
    customer_ids: Vec<String>,
}

#[derive(Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct GroupUpdate {
    name: Option<String>,
    /// Text, or null to clear it.
    #[serde(default, deserialize_with = "present")]
    #[schema(value_type = Option<String>)]
    description: Option<Option<String>>,
    /// Replaces the group's customers.
    customer_ids: Option<Vec<String>>,
}

/// Distinguishes an absent field (outer `None`) from an explicit null.
fn present<'de, D: Deserializer<'de>>(d: D) -> Result<Option<Option<String>>, D::Error> {
    Option::<String>::deserialize(d).map(Some)
}

async fn group_views(state: &AppState, partner: &PartnerCaller) -> ApiResult<Vec<GroupView>> {
    let members = storage::group_members(&state.db, &partner.partner).await?;
    let rows = storage::groups(&state.db, &partner.partner).await?;
    Ok(rows
        .into_iter()
        .map(|g| GroupView {
            customer_ids: members
                .iter()
                .filter(|(group, customer)| *group == g.id && partner.scope.reaches(customer))
                .map(|(_, c)| c.clone())
                .collect(),
            id: g.id,
            name: g.name,
            description: g.description,
            created_at: to_rfc3339(g.created_at),
            updated_at: to_rfc3339(g.updated_at),
        })
        .collect())
}

async fn group_view(state: &AppState, partner: &PartnerCaller, id: &str) -> ApiResult<GroupView> {
    group_views(state, partner)
        .await?
        .into_iter()
        .find(|g| g.id == id)
        .ok_or(ApiError::NotFound("group"))
}

/// Checks that every id is a customer of the partner.
async fn check_customers(
    state: &AppState,
    partner: &PartnerCaller,
    ids: &[String],
) -> ApiResult<()> {
    let known: HashSet<String> = storage::customers(&state.db, &partner.partner)
        .await?
        .into_iter()
        .map(|c| c.id)
        .collect();
    match ids.iter().find(|id| !known.contains(*id)) {
        Some(id) => Err(ApiError::validation(
            "customer_ids",
            format!("{id} is not one of your customers"),
        )),
        None => Ok(()),
    }
}

/// The partner's groups of customers.
#[utoipa::path(get, path = "/groups", tag = "partner",
    responses((status = 200, body = Vec<GroupView>), (status = 403, body = ErrorBody)))]
async fn list_groups(
    State(state): State<AppState>,
    partner: PartnerCaller,
) -> ApiResult<Json<Vec<GroupView>>> {
    Ok(Json(group_views(&state, &partner).await?))
}

/// Create a group of customers (partner admin), e.g. "maintenance contract".
#[utoipa::path(post, path = "/groups", tag = "partner", request_body = NewGroup,
    responses(
        (status = 201, body = GroupView),
        (status = 403, body = ErrorBody),
        (status = 409, body = ErrorBody, description = "A group of that name exists"),
        (status = 422, body = ErrorBody),
    ))]
async fn create_group(
    State(state): State<AppState>,
    partner: PartnerCaller,
    Json(body): Json<NewGroup>,
) -> ApiResult<(StatusCode, Json<GroupView>)> {
    partner.require_admin()?;
    let name = checked_name("name", &body.name)?;
    check_customers(&state, &partner, &body.customer_ids).await?;
    let id = uuid::Uuid::now_v7().to_string();
    let changes = GroupChanges {
        name: Some(&name),
        description: Some(body.description.as_deref()),
        customer_ids: Some(&body.customer_ids),
    };
    saved(storage::save_group(&state.db, &partner.partner, &id, true, changes).await)?;
    Ok((
        StatusCode::CREATED,
        Json(group_view(&state, &partner, &id).await?),
    ))
}

/// A taken group name as 409.
fn saved(result: sqlx::Result<bool>) -> ApiResult<bool> {
    result.map_err(|err| {
        if is_unique_violation(&err) {
            ApiError::Conflict("a group of that name exists".into())
        } else {
            err.into()
        }
    })
}

/// One group.
#[utoipa::path(get, path = "/groups/{group_id}", tag = "partner",
    params(("group_id" = String, Path)),
    responses((status = 200, body = GroupView), (status = 403, body = ErrorBody), (status = 404, body = ErrorBody)))]
async fn get_group(
    State(state): State<AppState>,
    partner: PartnerCaller,
    Path(group_id): Path<String>,
) -> ApiResult<Json<GroupView>> {
    Ok(Json(group_view(&state, &partner, &group_id).await?))
}

/// Rename a group, change its description or replace its customers
/// (partner admin).
#[utoipa::path(patch, path = "/groups/{group_id}", tag = "partner",
    params(("group_id" = String, Path)), request_body = GroupUpdate,
    responses(
        (status = 200, body = GroupView),
        (status = 403, body = ErrorBody),
        (status = 404, body = ErrorBody),
        (status = 409, body = ErrorBody),
        (status = 422, body = ErrorBody),
    ))]
async fn update_group(
    State(state): State<AppState>,
    partner: PartnerCaller,
    Path(group_id): Path<String>,
    Json(body): Json<GroupUpdate>,
) -> ApiResult<Json<GroupView>> {
    group_view(&state, &partner, &group_id).await?;
    partner.require_admin()?;
    let name = body
        .name
        .as_deref()
        .map(|n| checked_name("name", n))
        .transpose()?;
    if let Some(ids) = &body.customer_ids {
        check_customers(&state, &partner, ids).await?;
    }
    let changes = GroupChanges {
        name: name.as_deref(),
        description: body.description.as_ref().map(|d| d.as_deref()),
        customer_ids: body.customer_ids.as_deref(),
    };
    if !saved(storage::save_group(&state.db, &partner.partner, &group_id, false, changes).await)? {
        return Err(ApiError::NotFound("group"));
    }
    Ok(Json(group_view(&state, &partner, &group_id).await?))
}

/// Delete a group (partner admin); its customers stay.
#[utoipa::path(delete, path = "/groups/{group_id}", tag = "partner",
    params(("group_id" = String, Path)),
    responses((status = 204), (status = 403, body = ErrorBody), (status = 404, body = ErrorBody)))]
async fn delete_group(
    State(state): State<AppState>,
    partner: PartnerCaller,
    Path(group_id): Path<String>,
) -> ApiResult<StatusCode> {
    group_view(&state, &partner, &group_id).await?;
    partner.require_admin()?;
    if !storage::delete_group(&state.db, &partner.partner, &group_id).await? {
        return Err(ApiError::NotFound("group"));
    }
    Ok(StatusCode::NO_CONTENT)
}

/// What a partner analyst reaches.
#[derive(Serialize, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct AccessView {
    /// Every customer, now and later.
    #[serde(default)]
    all_customers: bool,
    /// These customers.
    #[serde(default)]
    customer_ids: Vec<String>,
    /// The customers of these groups, as the groups change.
    #[serde(default)]
    group_ids: Vec<String>,
}

#[derive(Serialize, ToSchema)]
pub struct AnalystView {
    user_id: String,
    email: String,
    access: AccessView,
}

fn access_view(access: AnalystAccess) -> AccessView {
    AccessView {
        all_customers: access.all_customers,
        customer_ids: access.customer_ids,
        group_ids: access.group_ids,
    }
}

/// The partner's analysts and what each reaches (partner admin).
#[utoipa::path(get, path = "/access", tag = "partner",
    responses((status = 200, body = Vec<AnalystView>), (status = 403, body = ErrorBody)))]
async fn list_access(
    State(state): State<AppState>,
    partner: PartnerCaller,
) -> ApiResult<Json<Vec<AnalystView>>> {
    partner.require_admin()?;
    let members = crate::tenancy::members(&state.db, &partner.partner).await?;
    let mut views = vec![];
    for member in members.iter().filter(|m| m.role() == Role::PartnerAnalyst) {
        let access = storage::analyst_access(&state.db, &partner.partner, &member.id).await?;
        views.push(AnalystView {
            user_id: member.id.clone(),
            email: member.email.clone(),
            access: access_view(access),
        });
    }
    Ok(Json(views))
}

async fn analyst(state: &AppState, partner: &PartnerCaller, user_id: &str) -> ApiResult<()> {
    let user = users::user_by_id(&state.db, user_id)
        .await?
        .filter(|u| u.tenant_id == partner.partner.as_str())
        .ok_or(ApiError::NotFound("member"))?;
    if user.role() != Role::PartnerAnalyst {
        return Err(ApiError::Conflict(
            "only a partner_analyst has assigned customers; the other roles reach every customer"
                .into(),
        ));
    }
    Ok(())
}

/// What one analyst reaches (partner admin, or the analyst itself).
#[utoipa::path(get, path = "/access/{user_id}", tag = "partner",
    params(("user_id" = String, Path, description = "A partner_analyst of the partner")),
    responses(
        (status = 200, body = AccessView),
        (status = 403, body = ErrorBody),
        (status = 404, body = ErrorBody),
        (status = 409, body = ErrorBody, description = "The member is not a partner_analyst"),
    ))]
async fn get_access(
    State(state): State<AppState>,
    partner: PartnerCaller,
    Path(user_id): Path<String>,
) -> ApiResult<Json<AccessView>> {
    if partner.caller.user_id.as_str() != user_id {
        partner.require_admin()?;
    }
    analyst(&state, &partner, &user_id).await?;
    let access = storage::analyst_access(&state.db, &partner.partner, &user_id).await?;
    Ok(Json(access_view(access)))
}

/// Assign an analyst all customers, or customers and groups (partner
/// admin). It takes effect on the analyst's next request, acting sessions
/// included.
#[utoipa::path(put, path = "/access/{user_id}", tag = "partner",
    params(("user_id" = String, Path, description = "A partner_analyst of the partner")),
    request_body = AccessView,
    responses(
        (status = 200, body = AccessView),
        (status = 403, body = ErrorBody),
        (status = 404, body = ErrorBody),
        (status = 409, body = ErrorBody),
        (status = 422, body = ErrorBody),
    ))]
async fn set_access(
    State(state): State<AppState>,
    partner: PartnerCaller,
    Path(user_id): Path<String>,
    Json(body): Json<AccessView>,
) -> ApiResult<Json<AccessView>> {
    partner.require_admin()?;
    analyst(&state, &partner, &user_id).await?;
    check_customers(&state, &partner, &body.customer_ids).await?;
    let groups = storage::groups(&state.db, &partner.partner).await?;
    if let Some(id) = body
        .group_ids
        .iter()
        .find(|id| !groups.iter().any(|g| &g.id == *id))
    {
        return Err(ApiError::validation(
            "group_ids",
            format!("{id} is not one of your groups"),
        ));
    }
    let access = AnalystAccess {
        all_customers: body.all_customers,
        customer_ids: body.customer_ids,
        group_ids: body.group_ids,
    };
    storage::set_analyst_access(&state.db, &partner.partner, &user_id, &access).await?;
    Ok(Json(access_view(access)))
}

#[derive(Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct AuditQuery {
    /// Only this customer's rows.
    customer_id: Option<String>,
    /// Only this partner user's rows.
    user_id: Option<String>,
    /// Deprecated (use `skip`): only rows older than this id, the
    /// `next_before` of the previous page.
    before: Option<String>,
    /// Rows to skip (default 0).
    #[param(minimum = 0)]
    skip: Option<i64>,
    /// 1 to 500; default 50.
    #[param(minimum = 1, maximum = 500)]
    limit: Option<i64>,
}

#[derive(Serialize, ToSchema)]
pub struct AuditEntry {
    id: String,
    /// The customer the write was made in (null: the partner's own routes).
    customer_id: Option<String>,
    user_id: String,
    user_email: String,
    method: String,
    path: String,
    /// The HTTP status the write was answered with.
    status: i64,
    at: String,
}

#[derive(Serialize, ToSchema)]
pub struct AuditPage {
    items: Vec<AuditEntry>,
    /// Rows the filters keep, over every page.
    total: i64,
    skip: i64,
    limit: i64,
    /// Deprecated (use `skip`): pass as `before` for the next (older)
    /// page; null on the last.
    #[schema(deprecated)]
    next_before: Option<String>,
}

/// Writes made by the partner's users in customers (acting) and on the
/// partner routes, newest first. An analyst sees the rows of the customers
/// it reaches.
#[utoipa::path(get, path = "/audit", tag = "partner", params(AuditQuery),
    responses(
        (status = 200, body = AuditPage),
        (status = 403, body = ErrorBody),
        (status = 404, body = ErrorBody, description = "customer_id is not a customer the caller reaches"),
        (status = 422, body = ErrorBody),
    ))]
async fn list_audit(
    State(state): State<AppState>,
    partner: PartnerCaller,
    Query(query): Query<AuditQuery>,
) -> ApiResult<Json<AuditPage>> {
    let (skip, limit) = paging::bounds(query.skip, query.limit, paging::DEFAULT_LIMIT)?;
    let customers: Option<Vec<String>> = match (&query.customer_id, &partner.scope) {
        (Some(id), _) => {
            partner.customer(&state.db, id).await?;
            Some(vec![id.clone()])
        }
        (None, super::CustomerScope::All) => None,
        (None, super::CustomerScope::Only(ids)) => Some(ids.iter().cloned().collect()),
    };
    let filter = storage::AuditFilter {
        customers: customers.as_deref(),
        user_id: query.user_id.as_deref(),
        before: query.before.as_deref(),
    };
    let (rows, total) = storage::audit(&state.db, &partner.partner, &filter, (skip, limit)).await?;
    let next_before = (skip + (rows.len() as i64) < total)
        .then(|| rows.last().map(|r| r.id.clone()))
        .flatten();
    Ok(Json(AuditPage {
        items: rows.into_iter().map(audit_entry).collect(),
        total,
        skip,
        limit,
        next_before,
    }))
}

fn audit_entry(row: AuditRow) -> AuditEntry {
    AuditEntry {
        id: row.id,
        customer_id: row.customer_id,
        user_id: row.user_id,
        user_email: row.user_email,
        method: row.method,
        path: row.path,
        status: row.status,
        at: to_rfc3339(row.at),
    }
}

/// The partner's name, logo and colours on the reports it makes for its
/// customers.
#[derive(Serialize, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct Branding {
    /// Shown as the author of reports; default the partner tenant's name.
    display_name: Option<String>,
    /// A PNG logo, base64 (at most 256 KiB decoded).
    logo_png_base64: Option<String>,
    /// `#rrggbb`: headings and table headers.
    primary_color: Option<String>,
    /// `#rrggbb`: highlights.
    accent_color: Option<String>,
}

/// The partner's branding.
#[utoipa::path(get, path = "/branding", tag = "partner",
    responses((status = 200, body = Branding), (status = 403, body = ErrorBody)))]
async fn get_branding(
    State(state): State<AppState>,
    partner: PartnerCaller,
) -> ApiResult<Json<Branding>> {
    let row = super::branding(&state.db, &partner.partner).await?;
    Ok(Json(Branding {
        display_name: row.display_name,
        logo_png_base64: row.logo_png,
        primary_color: row.primary_color,
        accent_color: row.accent_color,
    }))
}

/// Set the partner's branding (partner admin); the whole record.
#[utoipa::path(put, path = "/branding", tag = "partner", request_body = Branding,
    responses((status = 200, body = Branding), (status = 403, body = ErrorBody), (status = 422, body = ErrorBody)))]
async fn set_branding(
    State(state): State<AppState>,
    partner: PartnerCaller,
    Json(body): Json<Branding>,
) -> ApiResult<Json<Branding>> {
    partner.require_admin()?;
    let display_name = body
        .display_name
        .as_deref()
        .map(|n| checked_name("display_name", n))
        .transpose()?;
    for (field, color) in [
        ("primary_color", &body.primary_color),
        ("accent_color", &body.accent_color),
    ] {
        if let Some(color) = color {
            if !is_hex_color(color) {
                return Err(ApiError::validation(field, "expected a colour as #rrggbb"));
            }
        }
    }
    if let Some(logo) = &body.logo_png_base64 {
        check_logo(logo)?;
    }
    let row = BrandingRow {
        display_name,
        logo_png: body.logo_png_base64,
        primary_color: body.primary_color.map(|c| c.to_lowercase()),
        accent_color: body.accent_color.map(|c| c.to_lowercase()),
        updated_at: 0,
    };
    storage::set_branding(&state.db, &partner.partner, &row).await?;
    get_branding(State(state), partner).await
}

fn is_hex_color(raw: &str) -> bool {
    raw.len() == 7 && raw.starts_with('#') && raw[1..].chars().all(|c| c.is_ascii_hexdigit())
}

fn check_logo(raw: &str) -> ApiResult<()> {
    use base64::Engine;
    let bytes = base64::engine::general_purpose::STANDARD
        .decode(raw.trim())
        .map_err(|_| ApiError::validation("logo_png_base64", "is not base64"))?;
    if bytes.len() > 256 * 1024 {
        return Err(ApiError::validation(
            "logo_png_base64",
            "must be at most 256 KiB",
        ));
    }
    if !bytes.starts_with(b"\x89PNG\r\n\x1a\n") {
        return Err(ApiError::validation(
            "logo_png_base64",
            "is not a PNG image",
        ));
    }
    Ok(())
}
