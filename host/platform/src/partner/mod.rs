//! Partner accounts: a managed service provider's tenant over its customer
//! tenants.
//!
//! A tenant becomes a partner by creating its first customer
//! (`POST /api/v1/partner/customers`); the customer is an ordinary tenant
//! whose `partner_id` names the partner, so every area keeps reading one
//! tenant at a time. The partner's users reach customers two ways, both
//! through this module: the [`PartnerCaller`] extractor of the
//! `/api/v1/partner` routes (with the customers its role reaches), and
//! acting (`POST /api/v1/auth/act-as`), which makes a request's tenant the
//! customer. Every request re-checks that the customer is still the
//! partner's and, for an analyst, still assigned, so a removed customer or
//! a changed assignment ends access at once. A customer's own users never
//! pass [`PartnerCaller`].

mod audit;
mod routes;
pub mod storage;

use std::collections::HashSet;

use axum::extract::FromRequestParts;
use axum::http::request::Parts;

use crate::app::AppState;
use crate::auth::{Caller, Role};
use cairn_core::db::Db;
use cairn_core::http::error::{ApiError, ApiResult};
use cairn_core::ids::TenantId;

pub use audit::audit_partner_writes;
pub use routes::router;
pub use storage::{BrandingRow, CustomerRow};

/// The customers a partner user reaches.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CustomerScope {
    /// Every customer of the partner (owners, admins, partner admins, and
    /// analysts assigned to all).
    All,
    /// Only these (an analyst's assigned customers and groups).
    Only(HashSet<String>),
}

impl CustomerScope {
    pub fn reaches(&self, customer: &str) -> bool {
        match self {
            CustomerScope::All => true,
            CustomerScope::Only(ids) => ids.contains(customer),
        }
    }
}

/// The role a partner user holds inside a customer it acts in, if its role
/// lets it act at all.
fn role_in_customer(partner_role: Role) -> Option<Role> {
    match partner_role {
        Role::Owner | Role::Admin | Role::PartnerAdmin => Some(Role::Admin),
        Role::PartnerAnalyst => Some(Role::Member),
        Role::Member => None,
    }
}

/// The customers `user_id` with `role` reaches in `partner`; `None` when
/// the role has no partner access.
pub async fn scope_of(
    db: &Db,
    partner: &TenantId,
    user_id: &str,
    role: Role,
) -> sqlx::Result<Option<CustomerScope>> {
    match role {
        Role::Owner | Role::Admin | Role::PartnerAdmin => Ok(Some(CustomerScope::All)),
        Role::Member => Ok(None),
        Role::PartnerAnalyst => {
            let access = storage::analyst_access(db, partner, user_id).await?;
            if access.all_customers {
                return Ok(Some(CustomerScope::All));
            }
            let reached = storage::reached_customers(db, partner, &access).await?;
            Ok(Some(CustomerScope::Only(reached)))
        }
    }
}

/// The role user `user_id`, holding `role` in tenant `partner`, holds
/// acting in `customer`: `None` unless the customer is that partner's and
/// the role reaches it.
pub async fn acting_role(
    db: &Db,
    (partner, user_id, role): (&TenantId, &str, Role),
    customer: &str,
) -> sqlx::Result<Option<Role>> {
    let Some(acting) = role_in_customer(role) else {
        return Ok(None);
    };
    if storage::partner_of(db, customer).await?.as_ref() != Some(partner) {
        return Ok(None);
    }
    if role == Role::PartnerAnalyst {
        let access = storage::analyst_access(db, partner, user_id).await?;
        let reached = access.all_customers
            || access.customer_ids.iter().any(|c| c == customer)
            || storage::in_groups(db, partner, customer, &access.group_ids).await?;
        if !reached {
            return Ok(None);
        }
    }
    Ok(Some(acting))
}

/// The partner of `customer`, if it is one's customer (for areas that let
/// a partner's config serve its customers).
pub async fn partner_of(db: &Db, customer: &TenantId) -> sqlx::Result<Option<TenantId>> {
    storage::partner_of(db, customer.as_str()).await
}

/// Refuses a partner role in a customer tenant: partner roles reach
/// customers, so they exist only in a partner's (or a future partner's)
/// own tenant.
pub async fn check_role_fits(db: &Db, tenant: &TenantId, role: Role) -> ApiResult<()> {
    if !role.is_partner_role() {
        return Ok(());
    }
    let standing = storage::standing(db, tenant).await?;
    if standing.is_some_and(|(partner, _)| partner.is_some()) {
        return Err(ApiError::validation(
            "role",
            "partner roles exist only in a partner's own tenant, not in a customer",
        ));
    }
    Ok(())
}

/// The partner's branding for its reports (defaults when never set).
pub async fn branding(db: &Db, partner: &TenantId) -> sqlx::Result<BrandingRow> {
    Ok(storage::branding(db, partner).await?.unwrap_or_default())
}

/// A partner user on a `/api/v1/partner` route: the partner, the user's
/// role there and the customers it reaches. A user acting in a customer
/// keeps its partner routes (they read the partner, not the customer).
#[derive(Debug, Clone)]
pub struct PartnerCaller {
    pub caller: Caller,
    pub partner: TenantId,
    pub role: Role,
    pub scope: CustomerScope,
}

impl PartnerCaller {
    /// Owners, admins and partner admins manage the partner; analysts read
    /// and triage.
    pub fn is_admin(&self) -> bool {
        self.role != Role::PartnerAnalyst
    }

    pub fn require_admin(&self) -> ApiResult<()> {
        if self.is_admin() {
            Ok(())
        } else {
            Err(ApiError::Forbidden(
                "this action needs role partner_admin, admin or owner".into(),
            ))
        }
    }

    /// The customers of the partner this caller reaches, by name.
    pub async fn customers(&self, db: &Db) -> sqlx::Result<Vec<CustomerRow>> {
        let all = storage::customers(db, &self.partner).await?;
        Ok(all
            .into_iter()
            .filter(|c| self.scope.reaches(&c.id))
            .collect())
    }

    /// The ids of the customers of the partner this caller reaches.
    pub async fn customer_ids(&self, db: &Db) -> sqlx::Result<HashSet<String>> {
        Ok(self
            .customers(db)
            .await?
            .into_iter()
            .map(|c| c.id)
            .collect())
    }

    /// The customer `id` if the caller reaches it; another partner's
    /// customer and an unassigned one are both "not found".
    pub async fn customer(&self, db: &Db, id: &str) -> ApiResult<CustomerRow> {
        if !self.scope.reaches(id) {
            return Err(ApiError::NotFound("customer"));
        }
        storage::customer(db, &self.partner, id)
            .await?
            .ok_or(ApiError::NotFound("customer"))
    }

    /// The reached customers among `ids` (all must be reached), or of the
    /// group `group_id`, or every reached customer when neither is given.
    pub async fn chosen_customers(
        &self,
        db: &Db,
        ids: Option<&[String]>,
        group_id: Option<&str>,
    ) -> ApiResult<Vec<CustomerRow>> {
        let reached = self.customers(db).await?;
        if let Some(group_id) = group_id {
            storage::group(db, &self.partner, group_id)
                .await?
                .ok_or(ApiError::NotFound("group"))?;
            let members: HashSet<String> = storage::group_members(db, &self.partner)
                .await?
                .into_iter()
                .filter(|(g, _)| g == group_id)
                .map(|(_, c)| c)
                .collect();
            return Ok(reached
                .into_iter()
                .filter(|c| members.contains(&c.id))
                .collect());
        }
        let Some(ids) = ids else {
            return Ok(reached);
        };
        let known: HashSet<&str> = reached.iter().map(|c| c.id.as_str()).collect();
        if let Some(missing) = ids.iter().find(|id| !known.contains(id.as_str())) {
            return Err(ApiError::validation(
                "customer_ids",
                format!("{missing} is not one of your customers"),
            ));
        }
        Ok(reached
            .into_iter()
            .filter(|c| ids.contains(&c.id))
            .collect())
    }
}

impl FromRequestParts<AppState> for PartnerCaller {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, state: &AppState) -> ApiResult<Self> {
        let caller = Caller::from_request_parts(parts, state).await?;
        let (partner, role) = match &caller.acting {
            Some(acting) => (acting.partner_id.clone(), acting.partner_role),
            None => (caller.tenant_id.clone(), caller.role),
        };
        let (own_partner, _) = storage::standing(&state.db, &partner)
            .await?
            .ok_or_else(|| ApiError::Unauthorized("account no longer exists".into()))?;
        if own_partner.is_some() {
            return Err(ApiError::Forbidden(
                "partner routes are for a partner's own users; this organization is a customer"
                    .into(),
            ));
        }
        let scope = scope_of(&state.db, &partner, caller.user_id.as_str(), role)
            .await?
            .ok_or_else(|| {
                ApiError::Forbidden(
                    "partner routes need role partner_admin, partner_analyst, admin or owner"
                        .into(),
                )
            })?;
        Ok(PartnerCaller {
            caller,
            partner,
            role,
            scope,
        })
    }
}
