//! `/api/v1/projects`: a tenant's projects, their vendors and products,
//! and the CVEs that name them. Any member may manage projects.

use axum::extract::State;
use axum::http::StatusCode;
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use super::storage::{self, NewProject, ProjectView, PRODUCT, VENDOR};
use cairn_core::db::NamedUpdate;
use cairn_core::http::error::{ApiError, ApiResult, ErrorBody};
use cairn_core::http::json::{Json, Path, Query};
use cairn_core::ids::TenantId;
use cairn_inventory::search::{Page, PageParams};
use cairn_platform::app::AppState;
use cairn_platform::auth::Caller;
use cairn_vulnerabilities::findings::views;
use cairn_vulnerabilities::reference::records::cpe_name;
use cairn_vulnerabilities::reference::store::{self, CveHit};

pub fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .routes(routes!(list_projects, create_project))
        .routes(routes!(get_project, update_project, delete_project))
        .routes(routes!(add_vendor, remove_vendor))
        .routes(routes!(add_product, remove_product))
        .routes(routes!(project_vulnerabilities))
}

const MAX_NAME: usize = 100;
const MAX_DESCRIPTION: usize = 2000;
/// Vendors and products of one project at most.
const MAX_ENTRIES: usize = 200;

fn checked_name(name: &str) -> Result<&str, ApiError> {
    let name = name.trim();
    if name.is_empty() || name.chars().count() > MAX_NAME || name.chars().any(char::is_control) {
        return Err(ApiError::validation(
            "name",
            format!("must be 1 to {MAX_NAME} printable characters"),
        ));
    }
    Ok(name)
}

fn checked_description(description: &str) -> Result<&str, ApiError> {
    let description = description.trim();
    if description.chars().count() > MAX_DESCRIPTION {
        return Err(ApiError::validation(
            "description",
            format!("must be at most {MAX_DESCRIPTION} characters"),
        ));
    }
    Ok(description)
}

fn cpe_names(names: &[String], field: &str) -> Result<Vec<String>, ApiError> {
    if names.len() > MAX_ENTRIES {
        return Err(ApiError::validation(
            field,
            format!("at most {MAX_ENTRIES}"),
        ));
    }
    let mut out = names
        .iter()
        .map(|n| cpe_name(n, field))
        .collect::<Result<Vec<_>, _>>()?;
    out.sort();
    out.dedup();
    Ok(out)
}

async fn found(state: &AppState, tenant: &TenantId, id: &str) -> ApiResult<ProjectView> {
    storage::project(&state.db, tenant, id)
        .await?
        .ok_or(ApiError::NotFound("project"))
}

/// The tenant's projects, by name, with their vendors and products.
#[utoipa::path(get, path = "/", tag = "projects",
    responses((status = 200, body = Vec<ProjectView>)))]
async fn list_projects(
    State(state): State<AppState>,
    caller: Caller,
) -> ApiResult<Json<Vec<ProjectView>>> {
    Ok(Json(storage::projects(&state.db, &caller.tenant_id).await?))
}

#[derive(Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct ProjectRequest {
    /// 1 to 100 characters, unique in the tenant ignoring case.
    name: String,
    description: Option<String>,
    /// Vendor names; stored as the CVE store names vendors (lower case,
    /// spaces as `_`, company suffixes such as `Inc.` dropped).
    #[serde(default)]
    vendors: Vec<String>,
    /// Product names, stored the same way (`chrome`, `http_server`).
    #[serde(default)]
    products: Vec<String>,
}

/// Create a project, with its first vendors and products if given.
#[utoipa::path(post, path = "/", tag = "projects",
    request_body = ProjectRequest,
    responses((status = 201, body = ProjectView),
              (status = 409, body = ErrorBody, description = "The tenant has a project of that name"),
              (status = 422, body = ErrorBody)))]
async fn create_project(
    State(state): State<AppState>,
    caller: Caller,
    Json(request): Json<ProjectRequest>,
) -> ApiResult<(StatusCode, Json<ProjectView>)> {
    let tenant = &caller.tenant_id;
    let name = checked_name(&request.name)?;
    let description = checked_description(request.description.as_deref().unwrap_or(""))?;
    let vendors = cpe_names(&request.vendors, "vendors")?;
    let products = cpe_names(&request.products, "products")?;
    let project = NewProject {
        name,
        description,
        vendors: &vendors,
        products: &products,
    };
    let id = storage::create(&state.db, tenant, &project)
        .await?
        .ok_or_else(|| ApiError::Conflict(format!("a project named {name:?} exists")))?;
    Ok((StatusCode::CREATED, Json(found(&state, tenant, &id).await?)))
}

/// One project.
#[utoipa::path(get, path = "/{project_id}", tag = "projects",
    params(("project_id" = String, Path)),
    responses((status = 200, body = ProjectView), (status = 404, body = ErrorBody)))]
async fn get_project(
    State(state): State<AppState>,
    caller: Caller,
    Path(project_id): Path<String>,
) -> ApiResult<Json<ProjectView>> {
    Ok(Json(found(&state, &caller.tenant_id, &project_id).await?))
}

#[derive(Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct ProjectChange {
    name: Option<String>,
    description: Option<String>,
}

/// Rename a project or change its description; what is left out stays.
/// Vendors and products change through their own routes.
#[utoipa::path(put, path = "/{project_id}", tag = "projects",
    params(("project_id" = String, Path)),
    request_body = ProjectChange,
    responses((status = 200, body = ProjectView), (status = 404, body = ErrorBody),
              (status = 409, body = ErrorBody, description = "Another project has that name"),
              (status = 422, body = ErrorBody)))]
async fn update_project(
    State(state): State<AppState>,
    caller: Caller,
    Path(project_id): Path<String>,
    Json(request): Json<ProjectChange>,
) -> ApiResult<Json<ProjectView>> {
    let tenant = &caller.tenant_id;
    let current = found(&state, tenant, &project_id).await?;
    let name = checked_name(request.name.as_deref().unwrap_or(&current.name))?;
    let description = checked_description(
        request
            .description
            .as_deref()
            .unwrap_or(&current.description),
    )?;
    match storage::update(&state.db, tenant, &project_id, name, description).await? {
        NamedUpdate::Done => Ok(Json(found(&state, tenant, &project_id).await?)),
        NamedUpdate::NoSuchRow => Err(ApiError::NotFound("project")),
        NamedUpdate::NameTaken => Err(ApiError::Conflict(format!(
            "a project named {name:?} exists"
        ))),
    }
}

/// Delete a project.
#[utoipa::path(delete, path = "/{project_id}", tag = "projects",
    params(("project_id" = String, Path)),
    responses((status = 204), (status = 404, body = ErrorBody)))]
async fn delete_project(
    State(state): State<AppState>,
    caller: Caller,
    Path(project_id): Path<String>,
) -> ApiResult<StatusCode> {
    if storage::delete(&state.db, &caller.tenant_id, &project_id).await? {
        Ok(StatusCode::NO_CONTENT)
    } else {
        Err(ApiError::NotFound("project"))
    }
}

async fn add_entry(
    state: &AppState,
    caller: &Caller,
    project_id: &str,
    kind: &str,
    name: &str,
) -> ApiResult<(StatusCode, Json<ProjectView>)> {
    let tenant = &caller.tenant_id;
    let name = cpe_name(name, &format!("{kind}_name"))?;
    let project = found(state, tenant, project_id).await?;
    if project.vendors.len() + project.products.len() >= MAX_ENTRIES {
        return Err(ApiError::validation(
            &format!("{kind}_name"),
            format!("a project holds at most {MAX_ENTRIES} vendors and products"),
        ));
    }
    let added = storage::add_entry(&state.db, tenant, project_id, kind, &name).await?;
    let status = if added {
        StatusCode::CREATED
    } else {
        StatusCode::OK
    };
    Ok((status, Json(found(state, tenant, project_id).await?)))
}

async fn remove_entry(
    state: &AppState,
    caller: &Caller,
    project_id: &str,
    kind: &str,
    name: &str,
) -> ApiResult<StatusCode> {
    let name = cpe_name(name, &format!("{kind}_name"))?;
    if storage::remove_entry(&state.db, &caller.tenant_id, project_id, kind, &name).await? {
        Ok(StatusCode::NO_CONTENT)
    } else {
        Err(ApiError::Missing(format!(
            "the project has no {kind} {name:?}"
        )))
    }
}

/// Add a vendor (201; 200 when the project had it). The name is stored
/// as the CVE store names vendors.
#[utoipa::path(post, path = "/{project_id}/vendors/{vendor_name}", tag = "projects",
    params(("project_id" = String, Path), ("vendor_name" = String, Path)),
    responses((status = 201, body = ProjectView), (status = 200, body = ProjectView),
              (status = 404, body = ErrorBody), (status = 422, body = ErrorBody)))]
async fn add_vendor(
    State(state): State<AppState>,
    caller: Caller,
    Path((project_id, name)): Path<(String, String)>,
) -> ApiResult<(StatusCode, Json<ProjectView>)> {
    add_entry(&state, &caller, &project_id, VENDOR, &name).await
}

/// Remove a vendor.
#[utoipa::path(delete, path = "/{project_id}/vendors/{vendor_name}", tag = "projects",
    params(("project_id" = String, Path), ("vendor_name" = String, Path)),
    responses((status = 204), (status = 404, body = ErrorBody), (status = 422, body = ErrorBody)))]
async fn remove_vendor(
    State(state): State<AppState>,
    caller: Caller,
    Path((project_id, name)): Path<(String, String)>,
) -> ApiResult<StatusCode> {
    remove_entry(&state, &caller, &project_id, VENDOR, &name).await
}

/// Add a product (201; 200 when the project had it), stored as the CVE
/// store names products (`chrome`).
#[utoipa::path(post, path = "/{project_id}/products/{product_name}", tag = "projects",
    params(("project_id" = String, Path), ("product_name" = String, Path)),
    responses((status = 201, body = ProjectView), (status = 200, body = ProjectView),
              (status = 404, body = ErrorBody), (status = 422, body = ErrorBody)))]
async fn add_product(
    State(state): State<AppState>,
    caller: Caller,
    Path((project_id, name)): Path<(String, String)>,
) -> ApiResult<(StatusCode, Json<ProjectView>)> {
    add_entry(&state, &caller, &project_id, PRODUCT, &name).await
}

/// Remove a product.
#[utoipa::path(delete, path = "/{project_id}/products/{product_name}", tag = "projects",
    params(("project_id" = String, Path), ("product_name" = String, Path)),
    responses((status = 204), (status = 404, body = ErrorBody), (status = 422, body = ErrorBody)))]
async fn remove_product(
    State(state): State<AppState>,
    caller: Caller,
    Path((project_id, name)): Path<(String, String)>,
) -> ApiResult<StatusCode> {
    remove_entry(&state, &caller, &project_id, PRODUCT, &name).await
}

#[derive(Serialize, ToSchema)]
pub struct ProjectCve {
    #[serde(flatten)]
    cve: CveHit,
    /// The tenant's devices with an open finding of this CVE.
    device_count: i64,
}

/// The CVEs of the CVE store whose affected configurations name one of the
/// project's vendors or products, newest first, each with the number of
/// the tenant's devices with an open finding of it.
#[utoipa::path(get, path = "/{project_id}/vulnerabilities", tag = "projects",
    params(("project_id" = String, Path), PageParams),
    responses((status = 200, body = Page<ProjectCve>), (status = 404, body = ErrorBody),
              (status = 422, body = ErrorBody)))]
async fn project_vulnerabilities(
    State(state): State<AppState>,
    caller: Caller,
    Path(project_id): Path<String>,
    Query(page): Query<PageParams>,
) -> ApiResult<Json<Page<ProjectCve>>> {
    let tenant = &caller.tenant_id;
    let bounds = page.bounds()?;
    let project = found(&state, tenant, &project_id).await?;
    let (hits, total) =
        store::cves_of_products(&state.db, &project.vendors, &project.products, bounds).await?;
    let ids: Vec<String> = hits.iter().map(|h| h.cve_id.clone()).collect();
    let exposure = views::open_device_counts(&state.db, tenant, &ids).await?;
    let items = hits
        .into_iter()
        .map(|cve| ProjectCve {
            device_count: exposure.get(&cve.cve_id).copied().unwrap_or(0),
            cve,
        })
        .collect();
    Ok(Json(Page::new(items, total, bounds)))
}
