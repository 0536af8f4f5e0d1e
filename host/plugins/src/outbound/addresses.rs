//! Which addresses an outbound request may connect to. Loopback, private,
//! link-local, unique-local, multicast, unspecified and reserved addresses
//! are refused (IPv4, IPv6, and IPv4 inside IPv6) unless the operator lists
//! them in `outbound_private_networks`. The rule runs where names become
//! addresses: in the client's resolver, so a name that changes its answer
//! after a config was saved is still caught when the request connects.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};
use std::sync::Arc;

use ipnet::IpNet;

/// The operator's exceptions to the private-address rule.
#[derive(Debug, Clone, Default)]
pub struct AddressRule {
    allowed: Arc<Vec<IpNet>>,
}

impl AddressRule {
    pub fn new(allowed: Vec<IpNet>) -> AddressRule {
        AddressRule {
            allowed: Arc::new(allowed),
        }
    }

    /// `Err` with the reason when `ip` may not be connected to.
    pub fn check(&self, ip: IpAddr) -> Result<(), String> {
        let Some(kind) = non_public(ip) else {
            return Ok(());
        };
        if self.allowed.iter().any(|net| net.contains(&ip)) {
            return Ok(());
        }
        Err(format!(
            "{ip} is a {kind} address; the operator can allow it in outbound_private_networks"
        ))
    }

    /// Resolves `host` and keeps the addresses this rule allows; `Err` when
    /// it resolves to nothing allowed, or does not resolve at all.
    pub async fn resolve(&self, host: &str, port: u16) -> Result<Vec<SocketAddr>, Unreachable> {
        let host = host.trim_start_matches('[').trim_end_matches(']');
        if let Ok(ip) = host.parse::<IpAddr>() {
            self.check(ip).map_err(Unreachable::Refused)?;
            return Ok(vec![SocketAddr::new(ip, port)]);
        }
        let resolved: Vec<SocketAddr> = tokio::net::lookup_host((host, port))
            .await
            .map_err(|err| {
                tracing::debug!(host, error = %err, "name lookup failed");
                Unreachable::Unresolved(format!("lookup of {host} failed: no DNS answer"))
            })?
            .collect();
        let mut refused = None;
        let allowed: Vec<SocketAddr> = resolved
            .into_iter()
            .filter(|addr| match self.check(addr.ip()) {
                Ok(()) => true,
                Err(reason) => {
                    refused.get_or_insert(reason);
                    false
                }
            })
            .collect();
        match (allowed.is_empty(), refused) {
            (false, _) => Ok(allowed),
            (true, Some(reason)) => {
                Err(Unreachable::Refused(format!("{host} resolves to {reason}")))
            }
            (true, None) => Err(Unreachable::Unresolved(format!(
                "lookup of {host} failed: no address in the answer"
            ))),
        }
    }
}

/// What kind of non-public address `ip` is, or `None` for a public one.
fn non_public(ip: IpAddr) -> Option<&'static str> {
    match ip {
        IpAddr::V4(v4) => non_public_v4(v4),
        IpAddr::V6(v6) => non_public_v6(v6),
    }
}

fn non_public_v4(ip: Ipv4Addr) -> Option<&'static str> {
    let [a, b, ..] = ip.octets();
    if ip.is_loopback() {
        Some("loopback")
    } else if ip.is_private() || (a == 100 && (64..128).contains(&b)) {
        // RFC 1918 and the carrier-grade NAT range.
        Some("private")
    } else if ip.is_link_local() {
        Some("link-local")
    } else if ip.is_multicast() {
        Some("multicast")
    } else if a == 0 {
        Some("unspecified")
    } else if a >= 240 || (a == 192 && b == 0 && ip.octets()[2] == 0) {
        // 240/4 (and broadcast) and the IETF protocol range.
        Some("reserved")
    } else {
        None
    }
}

fn non_public_v6(ip: Ipv6Addr) -> Option<&'static str> {
    // An IPv4 address written as IPv6 reaches the IPv4 host.
    if let Some(v4) = ip.to_ipv4_mapped() {
        return non_public_v4(v4);
    }
    let segments = ip.segments();
    // NAT64 (64:ff9b::/96) embeds the IPv4 target in the last 32 bits.
    if segments[..6] == [0x64, 0xff9b, 0, 0, 0, 0] {
        let [.., hi, lo] = segments;
        return non_public_v4(Ipv4Addr::from((u32::from(hi) << 16) | u32::from(lo)));
    }
    if ip.is_loopback() {
        Some("loopback")
    } else if ip.is_unspecified() {
        Some("unspecified")
    } else if ip.is_multicast() {
        Some("multicast")
    } else if segments[0] & 0xfe00 == 0xfc00 {
        Some("unique-local")
    } else if segments[0] & 0xffc0 == 0xfe80 || segments[0] & 0xffc0 == 0xfec0 {
        // Link-local, and the deprecated site-local range.
        Some("link-local")
    } else if segments[..6] == [0, 0, 0, 0, 0, 0] {
        // IPv4-compatible (deprecated): the IPv4 host it names.
        let [.., hi, lo] = segments;
        non_public_v4(Ipv4Addr::from((u32::from(hi) << 16) | u32::from(lo)))
    } else {
        None
    }
}

/// Why a name cannot be connected to, typed so the request's error can
/// say why rather than only that the connection failed, and whether it is
/// the operator's rule (a configuration matter) or the network (transient).
#[derive(Debug, Clone, thiserror::Error)]
pub enum Unreachable {
    /// The address is not public and the operator did not allow it.
    #[error("{0}")]
    Refused(String),
    /// The name has no answer (no DNS, no network, a typo).
    #[error("{0}")]
    Unresolved(String),
}

/// The client's resolver: every name a request connects to passes the rule.
pub struct CheckedResolver(pub AddressRule);

impl reqwest::dns::Resolve for CheckedResolver {
    fn resolve(&self, name: reqwest::dns::Name) -> reqwest::dns::Resolving {
        let rule = self.0.clone();
        Box::pin(async move {
            let addrs = rule.resolve(name.as_str(), 0).await.map_err(
                |reason| -> Box<dyn std::error::Error + Send + Sync> { Box::new(reason) },
            )?;
            Ok(Box::new(addrs.into_iter()) as reqwest::dns::Addrs)
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn refused(ip: &str) -> bool {
        AddressRule::default().check(ip.parse().unwrap()).is_err()
    }

    #[test]
    fn non_public_addresses_are_refused() {
        for ip in [
            "127.0.0.1",
            "127.8.9.10",
            "10.1.2.3",
            "172.16.0.1",
            "172.31.255.255",
            "192.168.1.1",
            "169.254.169.254",
            "100.64.0.1",
            "224.0.0.1",
            "0.0.0.0",
            "255.255.255.255",
            "::1",
            "::",
            "fe80::1",
            "fc00::1",
            "fd12:3456::1",
            "ff02::1",
            "::ffff:127.0.0.1",
            "::ffff:169.254.169.254",
            "::ffff:10.0.0.1",
            "64:ff9b::a9fe:a9fe",
            "::127.0.0.1",
        ] {
            assert!(refused(ip), "{ip} should be refused");
        }
    }

    #[test]
    fn public_addresses_pass() {
        for ip in [
            "8.8.8.8",
            "1.1.1.1",
            "172.32.0.1",
            "100.128.0.1",
            "2606:4700::1111",
            "::ffff:8.8.8.8",
        ] {
            assert!(!refused(ip), "{ip} should pass");
        }
    }

    #[test]
    fn the_operator_can_allow_a_network() {
        let rule = AddressRule::new(vec!["127.0.0.0/8".parse().unwrap()]);
        assert!(rule.check("127.0.0.1".parse().unwrap()).is_ok());
        assert!(rule.check("10.0.0.1".parse().unwrap()).is_err());
    }

    #[tokio::test]
    async fn names_are_checked_after_resolution() {
        let err = AddressRule::default()
            .resolve("localhost", 80)
            .await
            .unwrap_err();
        assert!(err.to_string().contains("loopback"), "{err}");
        assert!(matches!(err, Unreachable::Refused(_)), "{err}");
    }
}
