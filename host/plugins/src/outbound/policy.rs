//! What one call may reach: exact origins (scheme, host and port), never a
//! URL with user information, plain http only to hosts the operator
//! granted, and only addresses the [`AddressRule`] allows.

use serde_json::Value;

use super::addresses::{self, AddressRule};
use crate::ConnectorDescriptor;

/// Scheme, host and port: what a credential is bound to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Origin {
    scheme: String,
    host: String,
    port: u16,
}

impl Origin {
    /// The origin of `url`; `Err` when it carries user information or has
    /// no host.
    pub fn of(url: &url::Url) -> Result<Origin, String> {
        if !url.username().is_empty() || url.password().is_some() {
            return Err("URLs with user information (user@host) are not allowed".into());
        }
        let host = url
            .host_str()
            .ok_or("URL has no host")?
            .to_ascii_lowercase();
        let port = url
            .port_or_known_default()
            .ok_or_else(|| format!("scheme {} has no known port", url.scheme()))?;
        Ok(Origin {
            scheme: url.scheme().to_string(),
            host,
            port,
        })
    }
}

impl std::fmt::Display for Origin {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}://{}:{}", self.scheme, self.host, self.port)
    }
}

/// Origins a call may reach: those the plugin asked for, resolved against
/// the tenant's config.
#[derive(Debug, Clone)]
pub struct HostPolicy {
    pub allowed: Vec<Origin>,
    pub plain_http_hosts: Vec<String>,
    pub addresses: AddressRule,
}

impl HostPolicy {
    /// A policy allowing exactly the origins of `urls` (operator settings).
    pub fn for_urls(
        urls: &[&url::Url],
        plain_http_hosts: &[String],
        addresses: AddressRule,
    ) -> HostPolicy {
        HostPolicy {
            allowed: urls.iter().filter_map(|u| Origin::of(u).ok()).collect(),
            plain_http_hosts: lower(plain_http_hosts),
            addresses,
        }
    }

    /// Resolves the descriptor's `requested_hosts` (literal hosts, reached
    /// over https on the default port, or `{config.field}` for the origin of
    /// a URL in the config) against `config`.
    pub fn for_connector(
        descriptor: &ConnectorDescriptor,
        config: &Value,
        plain_http_hosts: &[String],
        addresses: AddressRule,
    ) -> HostPolicy {
        let allowed = descriptor
            .requested_hosts
            .iter()
            .filter_map(|requested| {
                let url = match config_field(requested) {
                    Some(field) => config[field].as_str()?.to_string(),
                    None => format!("https://{requested}/"),
                };
                Origin::of(&url::Url::parse(&url).ok()?).ok()
            })
            .collect();
        HostPolicy {
            allowed,
            plain_http_hosts: lower(plain_http_hosts),
            addresses,
        }
    }

    /// `Err` with the reason when `url` may not be requested. Names are
    /// checked against the address rule when the request connects.
    pub fn check(&self, url: &url::Url) -> Result<Origin, String> {
        let origin = Origin::of(url)?;
        match origin.scheme.as_str() {
            "https" => {}
            "http" if self.plain_http_hosts.contains(&origin.host) => {}
            "http" => {
                return Err(format!(
                    "plain http to {} is not allowed; use https",
                    origin.host
                ))
            }
            other => return Err(format!("scheme {other} is not allowed")),
        }
        if !self.allowed.contains(&origin) {
            return Err(format!("{origin} is not on this connector's allow-list"));
        }
        if let Some(ip) = literal_ip(url) {
            self.addresses.check(ip)?;
        }
        Ok(origin)
    }

    /// Checks the URLs of a config before it is saved: each config field
    /// the descriptor names as a host must be an http(s) URL without user
    /// information whose host resolves to an allowed address. A name that
    /// does not resolve now is left to the connection test. `Err` names
    /// the field.
    pub async fn check_config(
        descriptor: &ConnectorDescriptor,
        config: &Value,
        addresses: &AddressRule,
    ) -> Result<(), (String, String)> {
        for field in descriptor
            .requested_hosts
            .iter()
            .filter_map(|r| config_field(r))
        {
            let Some(raw) = config[field].as_str() else {
                continue;
            };
            let fail = |reason: String| (field.to_string(), reason);
            let url = url::Url::parse(raw).map_err(|e| fail(format!("not a URL: {e}")))?;
            let origin = Origin::of(&url).map_err(fail)?;
            if origin.scheme != "https" && origin.scheme != "http" {
                return Err(fail(format!("scheme {} is not allowed", origin.scheme)));
            }
            match addresses.resolve(&origin.host, origin.port).await {
                Ok(_) => {}
                Err(addresses::Unreachable::Unresolved(_)) => {}
                Err(addresses::Unreachable::Refused(reason)) => return Err(fail(reason)),
            }
        }
        Ok(())
    }
}

fn config_field(requested: &str) -> Option<&str> {
    requested
        .strip_prefix("{config.")
        .and_then(|r| r.strip_suffix('}'))
}

fn literal_ip(url: &url::Url) -> Option<std::net::IpAddr> {
    match url.host()? {
        url::Host::Ipv4(ip) => Some(ip.into()),
        url::Host::Ipv6(ip) => Some(ip.into()),
        url::Host::Domain(_) => None,
    }
}

fn lower(hosts: &[String]) -> Vec<String> {
    hosts.iter().map(|h| h.to_ascii_lowercase()).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn policy(allowed: &[&str], plain: &[&str]) -> HostPolicy {
        let urls: Vec<url::Url> = allowed
            .iter()
            .map(|u| url::Url::parse(u).unwrap())
            .collect();
        HostPolicy::for_urls(
            &urls.iter().collect::<Vec<_>>(),
            &plain.iter().map(|h| h.to_string()).collect::<Vec<_>>(),
            AddressRule::new(vec!["127.0.0.0/8".parse().unwrap()]),
        )
    }

    fn check(policy: &HostPolicy, url: &str) -> Result<Origin, String> {
        policy.check(&url::Url::parse(url).unwrap())
    }

    #[test]
    fn only_the_exact_origin_passes() {
        let p = policy(&["https://upstream.example:8443/api"], &[]);
        assert!(check(&p, "https://upstream.example:8443/other?q=1").is_ok());
        assert!(check(&p, "https://UPSTREAM.example:8443/").is_ok());
        assert!(check(&p, "https://upstream.example:9000/").is_err());
        assert!(check(&p, "https://upstream.example/").is_err());
        assert!(check(&p, "https://other.example:8443/").is_err());
        let err = check(&p, "https://upstream.example:8443@other.example/").unwrap_err();
        assert!(err.contains("user information"), "{err}");
        assert!(check(&p, "https://user:pw@upstream.example:8443/").is_err());
    }

    #[test]
    fn plain_http_needs_a_grant_and_the_http_origin() {
        let p = policy(&["http://127.0.0.1:8080"], &["127.0.0.1"]);
        assert!(check(&p, "http://127.0.0.1:8080/x").is_ok());
        assert!(check(&p, "https://127.0.0.1:8080/x").is_err());
        let ungranted = policy(&["http://127.0.0.1:8080"], &[]);
        assert!(check(&ungranted, "http://127.0.0.1:8080/x").is_err());
        assert!(check(&p, "file:///etc/passwd").is_err());
    }

    #[test]
    fn literal_private_addresses_need_the_operator() {
        let p = policy(&["https://10.0.0.5"], &[]);
        let err = check(&p, "https://10.0.0.5/").unwrap_err();
        assert!(err.contains("private"), "{err}");
    }
}
