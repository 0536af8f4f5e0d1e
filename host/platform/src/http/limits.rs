//! Request rate limits and their counts: the spec's per-route limits and a
//! default per-minute limit, counted in this process, or in the database
//! or Redis, which several processes share (`rate_limit_store`). The
//! middleware that applies them is `rate_limit`.

use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::num::NonZeroU32;

use axum::extract::{ConnectInfo, Request};
use governor::clock::{Clock, DefaultClock};
use governor::{DefaultKeyedRateLimiter, Quota, RateLimiter};
use ipnet::IpNet;
use redis::aio::ConnectionManager;

use cairn_core::db::Db;
use cairn_core::http::error::ApiError;
use cairn_core::settings::Settings;

/// Routes with a limit of their own.
#[derive(Debug, Clone, Copy)]
pub enum RouteLimit {
    /// 5 per minute per client address.
    Register,
    /// 10 per minute per client address.
    Login,
    /// 20 per hour per user.
    InviteCreate,
}

/// A limit: its name (part of a shared count's key), and how many hits
/// per period it allows.
#[derive(Debug, Clone, Copy)]
struct Allowance {
    name: &'static str,
    hits: u32,
    period_secs: u64,
}

impl RouteLimit {
    fn allowance(self) -> Allowance {
        match self {
            RouteLimit::Register => Allowance {
                name: "register",
                hits: 5,
                period_secs: 60,
            },
            RouteLimit::Login => Allowance {
                name: "login",
                hits: 10,
                period_secs: 60,
            },
            RouteLimit::InviteCreate => Allowance {
                name: "invite",
                hits: 20,
                period_secs: 3600,
            },
        }
    }
}

pub struct RateLimits {
    default: Option<Allowance>,
    counts: Counts,
    trusted_proxies: Vec<IpNet>,
}

/// Where the limits count.
enum Counts {
    /// In this process (GCRA, smooth): every process allows the full rate.
    Local(Box<LocalLimiters>),
    /// Fixed windows counted in a store every process shares.
    Shared(SharedCounts),
}

struct LocalLimiters {
    default: Option<DefaultKeyedRateLimiter<String>>,
    register: DefaultKeyedRateLimiter<String>,
    login: DefaultKeyedRateLimiter<String>,
    invite_create: DefaultKeyedRateLimiter<String>,
}

impl LocalLimiters {
    /// The limiter of `route`, or the default one for `None`.
    fn of(&self, route: Option<RouteLimit>) -> Option<&DefaultKeyedRateLimiter<String>> {
        match route {
            None => self.default.as_ref(),
            Some(RouteLimit::Register) => Some(&self.register),
            Some(RouteLimit::Login) => Some(&self.login),
            Some(RouteLimit::InviteCreate) => Some(&self.invite_create),
        }
    }
}

fn quota(allowance: Allowance) -> Quota {
    let hits = NonZeroU32::new(allowance.hits).expect("non-zero quota");
    match allowance.period_secs {
        3600 => Quota::per_hour(hits),
        _ => Quota::per_minute(hits),
    }
}

/// The shared stores of `rate_limit_store`.
enum SharedCounts {
    Database(Db),
    Redis(ConnectionManager),
}

impl SharedCounts {
    /// Counts one hit on `key` in the window that began at `window_start`
    /// (epoch seconds); the window's hits so far.
    async fn hit(&self, key: &str, window_start: i64, period_secs: u64) -> anyhow::Result<u64> {
        match self {
            // One statement: a row of an earlier window starts over.
            SharedCounts::Database(db) => {
                let _turn = db.write_turn().await;
                let hits: i64 = sqlx::query_scalar(
                    "INSERT INTO rate_limit_windows (key, window_start, hits) VALUES ($1, $2, 1) \
                     ON CONFLICT (key) DO UPDATE SET \
                     hits = CASE WHEN rate_limit_windows.window_start = excluded.window_start \
                     THEN rate_limit_windows.hits + 1 ELSE 1 END, \
                     window_start = excluded.window_start RETURNING hits",
                )
                .bind(key)
                .bind(window_start)
                .fetch_one(&db.pool)
                .await?;
                Ok(hits as u64)
            }
            // The window is in the key; it expires with the next window.
            SharedCounts::Redis(redis) => {
                let key = format!("cairn:rate:{key}:{window_start}");
                let (hits, _): (u64, bool) = redis::pipe()
                    .atomic()
                    .incr(&key, 1)
                    .expire(&key, (period_secs * 2) as i64)
                    .query_async(&mut redis.clone())
                    .await?;
                Ok(hits)
            }
        }
    }

    /// Deletes the database's counts of windows that ended.
    async fn forget_before(&self, before: i64) -> sqlx::Result<()> {
        if let SharedCounts::Database(db) = self {
            let _turn = db.write_turn().await;
            sqlx::query("DELETE FROM rate_limit_windows WHERE window_start < $1")
                .bind(before)
                .execute(&db.pool)
                .await?;
        }
        Ok(())
    }
}

/// The longest period of any limit: counts older than two of it are over.
const LONGEST_PERIOD_SECS: i64 = 3600;

impl RateLimits {
    /// The limits `settings` ask for (`rate_limit_per_minute`,
    /// `rate_limit_store`); `db` holds the shared counts of the
    /// `database` store. Redis is connected lazily and reconnected when
    /// it drops.
    pub async fn new(settings: &Settings, db: &Db) -> anyhow::Result<RateLimits> {
        let default = NonZeroU32::new(settings.rate_limit_per_minute).map(|n| Allowance {
            name: "default",
            hits: n.get(),
            period_secs: 60,
        });
        let counts = match settings.rate_limit_store.as_str() {
            "database" => Counts::Shared(SharedCounts::Database(db.clone())),
            "redis" => {
                let client = redis::Client::open(settings.redis_url.as_str())
                    .map_err(|e| anyhow::anyhow!("redis_url: {e}"))?;
                let manager = ConnectionManager::new(client)
                    .await
                    .map_err(|e| anyhow::anyhow!("cannot reach Redis for the rate limits: {e}"))?;
                Counts::Shared(SharedCounts::Redis(manager))
            }
            _ => Counts::Local(Box::new(LocalLimiters {
                default: default.map(|a| RateLimiter::keyed(quota(a))),
                register: RateLimiter::keyed(quota(RouteLimit::Register.allowance())),
                login: RateLimiter::keyed(quota(RouteLimit::Login.allowance())),
                invite_create: RateLimiter::keyed(quota(RouteLimit::InviteCreate.allowance())),
            })),
        };
        Ok(RateLimits {
            default,
            counts,
            trusted_proxies: settings.trusted_proxy_list()?,
        })
    }

    /// Forgets keys that are back to a full allowance, so memory (or the
    /// shared table) stays bounded.
    pub async fn shrink(&self) -> sqlx::Result<()> {
        match &self.counts {
            Counts::Local(local) => {
                if let Some(default) = &local.default {
                    default.retain_recent();
                }
                local.register.retain_recent();
                local.login.retain_recent();
                local.invite_create.retain_recent();
                Ok(())
            }
            Counts::Shared(shared) => {
                let now = cairn_core::db::now_ms() / 1000;
                shared.forget_before(now - 2 * LONGEST_PERIOD_SECS).await
            }
        }
    }

    /// Counts a request of `key` against `allowance`: `RateLimited` with
    /// the wait when it is over. A shared store that cannot be reached
    /// lets the request through (and says so in the log): the limits
    /// guard against abuse, and must not take the service down with them.
    async fn check(
        &self,
        allowance: Allowance,
        route: Option<RouteLimit>,
        key: String,
    ) -> Result<(), ApiError> {
        match &self.counts {
            Counts::Local(limiters) => match limiters.of(route) {
                Some(limiter) => check_local(limiter, key),
                None => Ok(()),
            },
            Counts::Shared(shared) => {
                let now = cairn_core::db::now_ms() / 1000;
                let period = allowance.period_secs as i64;
                let window_start = now - now.rem_euclid(period);
                let counted = format!("{}:{key}", allowance.name);
                match shared
                    .hit(&counted, window_start, allowance.period_secs)
                    .await
                {
                    Ok(hits) if hits > u64::from(allowance.hits) => Err(ApiError::RateLimited {
                        retry_after_secs: (window_start + period - now).max(1) as u64,
                    }),
                    Ok(_) => Ok(()),
                    Err(err) => {
                        tracing::warn!(error = %err, limit = allowance.name,
                            "the shared rate limit count failed; the request is let through");
                        Ok(())
                    }
                }
            }
        }
    }

    pub(super) async fn check_route(&self, route: RouteLimit, key: String) -> Result<(), ApiError> {
        self.check(route.allowance(), Some(route), key).await
    }

    pub(super) async fn check_default(&self, key: String) -> Result<(), ApiError> {
        match self.default {
            Some(allowance) => self.check(allowance, None, key).await,
            None => Ok(()),
        }
    }

    /// The client's address: the peer, or the first `X-Forwarded-For` entry
    /// when the peer is a trusted proxy.
    pub fn client_ip(&self, request: &Request) -> IpAddr {
        let peer = request
            .extensions()
            .get::<ConnectInfo<SocketAddr>>()
            .map(|ConnectInfo(addr)| addr.ip())
            .unwrap_or(IpAddr::V4(Ipv4Addr::UNSPECIFIED));
        if !self.trusted_proxies.iter().any(|net| net.contains(&peer)) {
            return peer;
        }
        request
            .headers()
            .get("x-forwarded-for")
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.split(',').next())
            .and_then(|first| first.trim().parse().ok())
            .unwrap_or(peer)
    }
}

fn check_local(limiter: &DefaultKeyedRateLimiter<String>, key: String) -> Result<(), ApiError> {
    limiter.check_key(&key).map_err(|not_until| {
        let wait = not_until.wait_time_from(DefaultClock::default().now());
        ApiError::RateLimited {
            retry_after_secs: wait.as_secs() + u64::from(wait.subsec_nanos() > 0),
        }
    })
}
