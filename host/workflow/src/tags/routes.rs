//! `/api/v1/tags`: a tenant's tags and their assignments. Any member may
//! tag; tags are the tenant's, shared by its members.

use axum::extract::State;
use axum::http::StatusCode;
use serde::{Deserialize, Serialize};
use utoipa::{IntoParams, ToSchema};
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use super::storage::{self, Entity, EntityType, TagFields, TagView, TaggedEntity};
use cairn_core::db::NamedUpdate;
use cairn_core::http::error::{ApiError, ApiResult, ErrorBody};
use cairn_core::http::json::{Json, Path, Query};
use cairn_platform::app::AppState;
use cairn_platform::auth::Caller;
use cairn_vulnerabilities::reference::research::cve_id;

pub fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .routes(routes!(list_tags, create_tag))
        .routes(routes!(update_tag, delete_tag))
        .routes(routes!(assign_to_cve))
        .routes(routes!(unassign_from_cve))
        .routes(routes!(bulk_assignments))
        .routes(routes!(assign_to_entity))
        .routes(routes!(unassign_from_entity))
        .routes(routes!(tags_of_entity))
        .routes(routes!(tags_of_cve))
}

const DEFAULT_COLOR: &str = "#6b7280";
const MAX_NAME: usize = 64;
const MAX_DESCRIPTION: usize = 1000;
const MAX_ENTITY_NAME: usize = 200;

/// The entity `name` of `kind` names, checked: a CVE id (any case), or a
/// vendor or product name (compared ignoring case and runs of spaces).
pub fn entity(kind: EntityType, name: &str, field: &str) -> Result<Entity, ApiError> {
    let name = name.trim();
    let key = match kind {
        EntityType::Cve => cve_id(name).ok_or_else(|| {
            ApiError::validation(field, format!("{name:?} is not a CVE id (CVE-YYYY-NNNN)"))
        })?,
        EntityType::Vendor | EntityType::Product => {
            if name.is_empty() || name.chars().count() > MAX_ENTITY_NAME {
                return Err(ApiError::validation(
                    field,
                    format!("must be 1 to {MAX_ENTITY_NAME} characters"),
                ));
            }
            cairn_core::db::lower(&name.split_whitespace().collect::<Vec<_>>().join(" "))
        }
    };
    let name = match kind {
        EntityType::Cve => key.clone(),
        _ => name.to_string(),
    };
    Ok(Entity { kind, name, key })
}

fn entity_type(text: &str, field: &str) -> Result<EntityType, ApiError> {
    EntityType::parse(text)
        .ok_or_else(|| ApiError::validation(field, "must be cve, vendor or product"))
}

/// The tenant's tags, by name, with how many entities each is on.
#[utoipa::path(get, path = "/", tag = "tags",
    responses((status = 200, body = Vec<TagView>)))]
async fn list_tags(State(state): State<AppState>, caller: Caller) -> ApiResult<Json<Vec<TagView>>> {
    Ok(Json(storage::tags(&state.db, &caller.tenant_id).await?))
}

#[derive(Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct NewTag {
    /// 1 to 64 characters, unique in the tenant ignoring case.
    name: String,
    /// `#rrggbb`; default `#6b7280`.
    color: Option<String>,
    /// At most 1,000 characters.
    description: Option<String>,
}

/// A tag's fields checked; `current` fills what an update leaves out.
fn checked<'a>(
    name: Option<&'a str>,
    color: Option<&'a str>,
    description: Option<&'a str>,
    current: Option<&'a TagView>,
) -> Result<TagFields<'a>, ApiError> {
    let name = name
        .map(str::trim)
        .or(current.map(|c| c.name.as_str()))
        .unwrap_or_default();
    if name.is_empty() || name.chars().count() > MAX_NAME || name.chars().any(char::is_control) {
        return Err(ApiError::validation(
            "name",
            format!("must be 1 to {MAX_NAME} printable characters"),
        ));
    }
    let color = color
        .map(str::trim)
        .or(current.map(|c| c.color.as_str()))
        .unwrap_or(DEFAULT_COLOR);
    let hex = color.strip_prefix('#').unwrap_or("");
    if hex.len() != 6 || !hex.bytes().all(|b| b.is_ascii_hexdigit()) {
        return Err(ApiError::validation("color", "must be #rrggbb"));
    }
    let description = description
        .map(str::trim)
        .or(current.map(|c| c.description.as_str()))
        .unwrap_or("");
    if description.chars().count() > MAX_DESCRIPTION {
        return Err(ApiError::validation(
            "description",
            format!("must be at most {MAX_DESCRIPTION} characters"),
        ));
    }
    Ok(TagFields {
        name,
        color,
        description,
    })
}

/// Create a tag.
#[utoipa::path(post, path = "/", tag = "tags",
    request_body = NewTag,
    responses((status = 201, body = TagView),
              (status = 409, body = ErrorBody, description = "The tenant has a tag of that name"),
              (status = 422, body = ErrorBody)))]
async fn create_tag(
    State(state): State<AppState>,
    caller: Caller,
    Json(request): Json<NewTag>,
) -> ApiResult<(StatusCode, Json<TagView>)> {
    let tenant = &caller.tenant_id;
    let fields = checked(
        Some(&request.name),
        request.color.as_deref(),
        request.description.as_deref(),
        None,
    )?;
    let id = storage::create(&state.db, tenant, &fields)
        .await?
        .ok_or_else(|| ApiError::Conflict(format!("a tag named {:?} exists", fields.name)))?;
    let tag = storage::tag(&state.db, tenant, &id)
        .await?
        .ok_or(ApiError::NotFound("tag"))?;
    Ok((StatusCode::CREATED, Json(tag)))
}

#[derive(Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct TagChange {
    name: Option<String>,
    color: Option<String>,
    description: Option<String>,
}

/// Change a tag's name, color or description; what is left out stays.
#[utoipa::path(put, path = "/{tag_id}", tag = "tags",
    params(("tag_id" = String, Path)),
    request_body = TagChange,
    responses((status = 200, body = TagView), (status = 404, body = ErrorBody),
              (status = 409, body = ErrorBody, description = "Another tag has that name"),
              (status = 422, body = ErrorBody)))]
async fn update_tag(
    State(state): State<AppState>,
    caller: Caller,
    Path(tag_id): Path<String>,
    Json(request): Json<TagChange>,
) -> ApiResult<Json<TagView>> {
    let tenant = &caller.tenant_id;
    let current = storage::tag(&state.db, tenant, &tag_id)
        .await?
        .ok_or(ApiError::NotFound("tag"))?;
    let fields = checked(
        request.name.as_deref(),
        request.color.as_deref(),
        request.description.as_deref(),
        Some(&current),
    )?;
    match storage::update(&state.db, tenant, &tag_id, &fields).await? {
        NamedUpdate::Done => {}
        NamedUpdate::NoSuchRow => return Err(ApiError::NotFound("tag")),
        NamedUpdate::NameTaken => {
            return Err(ApiError::Conflict(format!(
                "a tag named {:?} exists",
                fields.name
            )))
        }
    }
    let tag = storage::tag(&state.db, tenant, &tag_id)
        .await?
        .ok_or(ApiError::NotFound("tag"))?;
    Ok(Json(tag))
}

/// Delete a tag and every assignment of it.
#[utoipa::path(delete, path = "/{tag_id}", tag = "tags",
    params(("tag_id" = String, Path)),
    responses((status = 204), (status = 404, body = ErrorBody)))]
async fn delete_tag(
    State(state): State<AppState>,
    caller: Caller,
    Path(tag_id): Path<String>,
) -> ApiResult<StatusCode> {
    if storage::delete(&state.db, &caller.tenant_id, &tag_id).await? {
        Ok(StatusCode::NO_CONTENT)
    } else {
        Err(ApiError::NotFound("tag"))
    }
}

#[derive(Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct CveAssignment {
    /// A CVE id; it need not be in the CVE store yet.
    cve_id: String,
}

#[derive(Serialize, ToSchema)]
pub struct Assigned {
    tag_id: String,
    entity_type: EntityType,
    entity_name: String,
    /// False when the tag was on the entity already.
    created: bool,
}

async fn assign(
    state: &AppState,
    caller: &Caller,
    tag_id: String,
    entity: Entity,
) -> ApiResult<(StatusCode, Json<Assigned>)> {
    let created = storage::assign(
        &state.db,
        &caller.tenant_id,
        &tag_id,
        &entity,
        caller.user_id.as_str(),
    )
    .await?
    .ok_or(ApiError::NotFound("tag"))?;
    let status = if created {
        StatusCode::CREATED
    } else {
        StatusCode::OK
    };
    Ok((
        status,
        Json(Assigned {
            tag_id,
            entity_type: entity.kind,
            entity_name: entity.name,
            created,
        }),
    ))
}

/// Put a tag on a CVE (201; 200 when it was there already).
#[utoipa::path(post, path = "/{tag_id}/assign", tag = "tags",
    params(("tag_id" = String, Path)),
    request_body = CveAssignment,
    responses((status = 201, body = Assigned), (status = 200, body = Assigned),
              (status = 404, body = ErrorBody), (status = 422, body = ErrorBody)))]
async fn assign_to_cve(
    State(state): State<AppState>,
    caller: Caller,
    Path(tag_id): Path<String>,
    Json(request): Json<CveAssignment>,
) -> ApiResult<(StatusCode, Json<Assigned>)> {
    let entity = entity(EntityType::Cve, &request.cve_id, "cve_id")?;
    assign(&state, &caller, tag_id, entity).await
}

/// Take a tag off a CVE.
#[utoipa::path(delete, path = "/{tag_id}/assign/{cve_id}", tag = "tags",
    params(("tag_id" = String, Path), ("cve_id" = String, Path)),
    responses((status = 204), (status = 404, body = ErrorBody, description = "No such tag, or not on that CVE"),
              (status = 422, body = ErrorBody)))]
async fn unassign_from_cve(
    State(state): State<AppState>,
    caller: Caller,
    Path((tag_id, cve)): Path<(String, String)>,
) -> ApiResult<StatusCode> {
    let entity = entity(EntityType::Cve, &cve, "cve_id")?;
    if storage::unassign(&state.db, &caller.tenant_id, &tag_id, &entity).await? {
        Ok(StatusCode::NO_CONTENT)
    } else {
        Err(ApiError::NotFound("tag assignment"))
    }
}

#[derive(Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct BulkQuery {
    /// `cve`, `vendor` or `product`.
    entity_type: String,
}

#[derive(Serialize, ToSchema)]
pub struct BulkAssignments {
    entity_type: EntityType,
    /// Each tagged entity with its tags, by name.
    entities: Vec<TaggedEntity>,
}

/// Every entity of one type the tenant tagged, with its tags: one call to
/// show tags beside a whole list.
#[utoipa::path(get, path = "/entity/bulk", tag = "tags",
    params(BulkQuery),
    responses((status = 200, body = BulkAssignments), (status = 422, body = ErrorBody)))]
async fn bulk_assignments(
    State(state): State<AppState>,
    caller: Caller,
    Query(query): Query<BulkQuery>,
) -> ApiResult<Json<BulkAssignments>> {
    let kind = entity_type(&query.entity_type, "entity_type")?;
    let entities = storage::assignments_of_type(&state.db, &caller.tenant_id, kind).await?;
    Ok(Json(BulkAssignments {
        entity_type: kind,
        entities,
    }))
}

#[derive(Deserialize, ToSchema, IntoParams)]
#[serde(deny_unknown_fields)]
#[into_params(parameter_in = Query)]
pub struct EntityAssignment {
    tag_id: String,
    /// `cve`, `vendor` or `product`.
    entity_type: String,
    /// A CVE id, or a vendor or product name (compared ignoring case and
    /// runs of spaces).
    entity_name: String,
}

/// Put a tag on a vendor, a product or a CVE by name (201; 200 when it
/// was there already).
#[utoipa::path(post, path = "/entity/assign", tag = "tags",
    request_body = EntityAssignment,
    responses((status = 201, body = Assigned), (status = 200, body = Assigned),
              (status = 404, body = ErrorBody), (status = 422, body = ErrorBody)))]
async fn assign_to_entity(
    State(state): State<AppState>,
    caller: Caller,
    Json(request): Json<EntityAssignment>,
) -> ApiResult<(StatusCode, Json<Assigned>)> {
    let kind = entity_type(&request.entity_type, "entity_type")?;
    let entity = entity(kind, &request.entity_name, "entity_name")?;
    assign(&state, &caller, request.tag_id, entity).await
}

/// Take a tag off a vendor, a product or a CVE (parameters in the query).
#[utoipa::path(delete, path = "/entity/unassign", tag = "tags",
    params(EntityAssignment),
    responses((status = 204), (status = 404, body = ErrorBody, description = "No such tag, or not on that entity"),
              (status = 422, body = ErrorBody)))]
async fn unassign_from_entity(
    State(state): State<AppState>,
    caller: Caller,
    Query(request): Query<EntityAssignment>,
) -> ApiResult<StatusCode> {
    let kind = entity_type(&request.entity_type, "entity_type")?;
    let entity = entity(kind, &request.entity_name, "entity_name")?;
    if storage::unassign(&state.db, &caller.tenant_id, &request.tag_id, &entity).await? {
        Ok(StatusCode::NO_CONTENT)
    } else {
        Err(ApiError::NotFound("tag assignment"))
    }
}

/// The tags on a vendor, a product or a CVE.
#[utoipa::path(get, path = "/entity/{entity_type}/{entity_name}", tag = "tags",
    params(("entity_type" = String, Path, description = "`cve`, `vendor` or `product`"),
           ("entity_name" = String, Path)),
    responses((status = 200, body = Vec<TagView>), (status = 422, body = ErrorBody)))]
async fn tags_of_entity(
    State(state): State<AppState>,
    caller: Caller,
    Path((kind, name)): Path<(String, String)>,
) -> ApiResult<Json<Vec<TagView>>> {
    let kind = entity_type(&kind, "entity_type")?;
    let entity = entity(kind, &name, "entity_name")?;
    Ok(Json(
        storage::tags_of(&state.db, &caller.tenant_id, kind, &entity.key).await?,
    ))
}

/// The tags on a CVE.
#[utoipa::path(get, path = "/cve/{cve_id}", tag = "tags",
    params(("cve_id" = String, Path)),
    responses((status = 200, body = Vec<TagView>), (status = 422, body = ErrorBody)))]
async fn tags_of_cve(
    State(state): State<AppState>,
    caller: Caller,
    Path(cve): Path<String>,
) -> ApiResult<Json<Vec<TagView>>> {
    let entity = entity(EntityType::Cve, &cve, "cve_id")?;
    Ok(Json(
        storage::tags_of(&state.db, &caller.tenant_id, EntityType::Cve, &entity.key).await?,
    ))
}
