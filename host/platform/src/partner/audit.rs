//! The partner's audit trail: every write a partner user makes while acting
//! in a customer, and every write on the partner's own routes, recorded
//! with the partner user's identity once the answer is known.

use axum::extract::{Request, State};
use axum::http::Method;
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};

use super::storage::{self, AuditRow};
use crate::app::AppState;
use crate::auth::{caller_of, Role};
use cairn_core::db::now_ms;
use cairn_core::http::error::ApiError;
use cairn_core::ids::TenantId;

const PARTNER_ROUTES: &str = "/api/v1/partner/";

/// Middleware (inside identity resolution): refuses an acting analyst's
/// writes other than triage, and records partner users' writes.
pub async fn audit_partner_writes(
    State(state): State<AppState>,
    request: Request,
    next: Next,
) -> Response {
    let path = request.uri().path().to_string();
    let writes = !matches!(
        *request.method(),
        Method::GET | Method::HEAD | Method::OPTIONS
    ) && !reads_by_post(&path);
    let Some(caller) = caller_of(&request).filter(|_| writes).cloned() else {
        return next.run(request).await;
    };
    let on_partner_routes = path.starts_with(PARTNER_ROUTES);
    let (partner, customer) = match &caller.acting {
        // The partner routes read the partner even while acting.
        Some(acting) if on_partner_routes => (acting.partner_id.clone(), customer_in_path(&path)),
        Some(acting) => {
            if acting.partner_role == Role::PartnerAnalyst && !analyst_may_write(&path) {
                return ApiError::Forbidden(
                    "a partner analyst may read and triage in a customer, not change it".into(),
                )
                .into_response();
            }
            (acting.partner_id.clone(), Some(caller.tenant_id.0.clone()))
        }
        None if on_partner_routes => (caller.tenant_id.clone(), customer_in_path(&path)),
        None => return next.run(request).await,
    };
    let method = request.method().to_string();
    let response = next.run(request).await;
    // Refused partner routes (403 for a customer's user) are not the
    // partner's activity.
    if on_partner_routes && response.status() == axum::http::StatusCode::FORBIDDEN {
        return response;
    }
    let row = AuditRow {
        id: uuid::Uuid::now_v7().to_string(),
        customer_id: customer,
        user_id: caller.user_id.0.clone(),
        user_email: caller.email.clone(),
        method,
        path,
        status: i64::from(response.status().as_u16()),
        at: now_ms(),
    };
    if let Err(err) = storage::record_audit(&state.db, &TenantId(partner.0), &row).await {
        tracing::error!(error = %err, path = %row.path, "could not record a partner audit row");
    }
    response
}

/// POST routes that only read (a query too large for a URL): neither
/// recorded as a partner's write nor refused to an acting analyst.
fn reads_by_post(path: &str) -> bool {
    const READS: [&str; 4] = [
        "/api/v1/dashboards/widgets/preview",
        "/api/v1/inventory/applications/search",
        "/api/v1/devices/devices/search",
        "/api/v1/advisories/affected-users",
    ];
    let path = path.trim_end_matches('/');
    let widget_data = path
        .strip_prefix("/api/v1/dashboards/widgets/")
        .and_then(|rest| rest.strip_suffix("/data"))
        .is_some_and(|id| !id.is_empty() && !id.contains('/'));
    READS.contains(&path) || widget_data
}

/// What an acting analyst may change: triage, and its own session.
fn analyst_may_write(path: &str) -> bool {
    let triage = path
        .strip_prefix("/api/v1/vulnerabilities/cve/")
        .is_some_and(|rest| rest.ends_with("/triage") && rest.matches('/').count() == 1);
    triage || path.starts_with("/api/v1/auth/")
}

/// The customer id a partner route names (`/partner/customers/{id}...`).
fn customer_in_path(path: &str) -> Option<String> {
    let rest = path.strip_prefix("/api/v1/partner/customers/")?;
    let id = rest.split('/').next()?;
    (!id.is_empty()).then(|| id.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn analysts_write_only_triage() {
        for (path, allowed) in [
            ("/api/v1/vulnerabilities/cve/CVE-2024-1/triage", true),
            ("/api/v1/auth/act-as", true),
            ("/api/v1/vulnerabilities/cve/CVE-2024-1/triage/x", false),
            ("/api/v1/vulnerabilities/scan", false),
            ("/api/v1/integrations/rmm/config", false),
            ("/api/v1/tenant/me", false),
        ] {
            assert_eq!(analyst_may_write(path), allowed, "{path}");
        }
    }

    #[test]
    fn reads_sent_as_posts_are_not_writes() {
        for (path, read) in [
            ("/api/v1/dashboards/widgets/w-1/data", true),
            ("/api/v1/dashboards/widgets/preview", true),
            ("/api/v1/devices/devices/search", true),
            ("/api/v1/inventory/applications/search/", true),
            ("/api/v1/dashboards/widgets//data", false),
            ("/api/v1/dashboards/widgets/w-1/data/x", false),
            ("/api/v1/dashboards/d-1/widgets", false),
            ("/api/v1/vulnerabilities/scan", false),
        ] {
            assert_eq!(reads_by_post(path), read, "{path}");
        }
    }

    #[test]
    fn customer_named_by_path() {
        assert_eq!(
            customer_in_path("/api/v1/partner/customers/abc/integrations/rmm"),
            Some("abc".into())
        );
        assert_eq!(customer_in_path("/api/v1/partner/customers"), None);
        assert_eq!(customer_in_path("/api/v1/partner/groups/x"), None);
    }
}
