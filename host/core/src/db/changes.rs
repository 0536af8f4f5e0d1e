//! Change stamps: what lets a process keep an answer derived from a
//! tenant's rows until those rows are written again, without a round trip
//! to ask whether they were.
//!
//! The area that owns the rows counts each committed write of a topic
//! ("findings") for a tenant: [`written`] after its commit in this process,
//! and, on PostgreSQL, [`announce`] inside its transaction, which reaches
//! every other process on the database as a `NOTIFY` delivered at commit
//! (their [`spawn_listener`] counts it there). A reader takes the
//! [`stamp`] before it reads and keeps what it read with it; the kept
//! answer is current while the stamp is unchanged.
//!
//! `stamp` answers `None` when this process cannot see every write: on
//! PostgreSQL while its listener is not connected (then nothing may be
//! kept). A SQLite database has one serving process (docs: deployment),
//! so its own counts are all the writes. Another process's write reaches
//! a PostgreSQL reader when the notification arrives (within milliseconds);
//! a listener that loses its connection ends every stamp taken before.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, OnceLock, Weak};
use std::time::Duration;

use sqlx::postgres::PgListener;
use sqlx::{Any, Transaction};
use tokio_util::sync::CancellationToken;

use super::{Backend, Db};

/// The `NOTIFY` channel; a payload is the topic, the tenant id and the
/// sender (see [`sender`]), `\n` between.
const CHANNEL: &str = "cairn_changes";

/// Who announced a write: this process and database handle. A listener
/// skips its own handle's announcements, which [`written`] counted already
/// (counted twice, a kept answer would be read again for nothing).
fn sender(instance: u64) -> String {
    static PROCESS: OnceLock<String> = OnceLock::new();
    let process = PROCESS.get_or_init(|| uuid::Uuid::new_v4().simple().to_string());
    format!("{process}-{instance}")
}

/// What a reader keeps beside a derived answer. Two stamps of one topic and
/// tenant are equal only if no write was counted between them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Stamp {
    writes: u64,
    /// Moves when the counts start over.
    epoch: u64,
    /// Moves when this database's listener (re)connects or drops: writes
    /// it may have missed. Another database's listener leaves it alone.
    connects: u64,
}

#[derive(Default)]
struct Counts {
    /// Per (database instance, topic, tenant).
    writes: Mutex<HashMap<(u64, String, String), u64>>,
    /// Per database instance: listener connected, and its connects and
    /// drops so far.
    listening: Mutex<HashMap<u64, (bool, u64)>>,
    epoch: AtomicU64,
}

fn counts() -> &'static Counts {
    static COUNTS: OnceLock<Counts> = OnceLock::new();
    COUNTS.get_or_init(Counts::default)
}

/// Tenants' counts kept at most; past it they start over (every kept
/// answer is then read again once).
const MAX_COUNTED: usize = 200_000;

/// The current stamp of `topic` for `tenant`, or `None` when writes of
/// other processes could go unseen.
pub fn stamp(db: &Db, topic: &str, tenant: &str) -> Option<Stamp> {
    let counts = counts();
    let connects = match db.backend {
        Backend::Postgres => {
            let listening = counts.listening.lock().unwrap_or_else(|e| e.into_inner());
            match listening.get(&db.instance()) {
                Some(&(true, connects)) => connects,
                _ => return None,
            }
        }
        Backend::Sqlite => 0,
    };
    let writes = counts.writes.lock().unwrap_or_else(|e| e.into_inner());
    Some(Stamp {
        writes: writes
            .get(&(db.instance(), topic.to_string(), tenant.to_string()))
            .copied()
            .unwrap_or(0),
        epoch: counts.epoch.load(Ordering::SeqCst),
        connects,
    })
}

/// Counts a committed write of `topic` for `tenant` in this process. Call
/// it after the commit: a reader that read before the commit then sees its
/// stamp move.
pub fn written(db: &Db, topic: &str, tenant: &str) {
    count(db.instance(), topic, tenant);
}

fn count(instance: u64, topic: &str, tenant: &str) {
    let counts = counts();
    let mut writes = counts.writes.lock().unwrap_or_else(|e| e.into_inner());
    if writes.len() >= MAX_COUNTED {
        writes.clear();
        counts.epoch.fetch_add(1, Ordering::SeqCst);
    }
    *writes
        .entry((instance, topic.to_string(), tenant.to_string()))
        .or_default() += 1;
}

/// On PostgreSQL, tells the other processes at commit that `tx` wrote
/// `topic` for `tenant`; nothing on SQLite.
pub async fn announce(
    tx: &mut Transaction<'_, Any>,
    db: &Db,
    topic: &str,
    tenant: &str,
) -> sqlx::Result<()> {
    if db.backend == Backend::Postgres {
        sqlx::query("SELECT pg_notify($1, $2)")
            .bind(CHANNEL)
            .bind(format!("{topic}\n{tenant}\n{}", sender(db.instance())))
            .execute(&mut **tx)
            .await?;
    }
    Ok(())
}

/// On PostgreSQL, counts the writes other processes announce for `db`,
/// reconnecting on errors; stamps are `None` while it is not connected.
pub fn spawn_listener(
    db: &Db,
    url: String,
    shutdown: CancellationToken,
) -> tokio::task::JoinHandle<()> {
    let instance = db.instance();
    let own = sender(instance);
    let set_listening = move |on: bool| {
        let counts = counts();
        // Whatever was kept before may have missed a write meanwhile.
        let mut listening = counts.listening.lock().unwrap_or_else(|e| e.into_inner());
        let entry = listening.entry(instance).or_default();
        *entry = (on, entry.1 + 1);
    };
    tokio::spawn(async move {
        loop {
            let listened = async {
                let mut listener = PgListener::connect(&url).await?;
                listener.listen(CHANNEL).await?;
                set_listening(true);
                // `try_recv`, not `recv`: `recv` reconnects by itself and
                // drops what was sent meanwhile without saying so.
                while let Some(notification) = listener.try_recv().await? {
                    let mut parts = notification.payload().split('\n');
                    if let (Some(topic), Some(tenant), Some(from)) =
                        (parts.next(), parts.next(), parts.next())
                    {
                        if from != own {
                            count(instance, topic, tenant);
                        }
                    }
                }
                Err::<(), _>(sqlx::Error::Protocol("the connection was lost".into()))
            };
            let ended = tokio::select! {
                result = listened => result.err(),
                _ = shutdown.cancelled() => None,
            };
            set_listening(false);
            match ended {
                Some(err) => {
                    tracing::warn!(error = %err, "change listener failed; reconnecting")
                }
                None => return,
            }
            tokio::select! {
                _ = tokio::time::sleep(Duration::from_secs(1)) => {}
                _ = shutdown.cancelled() => return,
            }
        }
    })
}

/// Answers derived from a tenant's rows of one topic, kept per database,
/// tenant and question (`K`: `()` when a tenant has one answer, a page's
/// bounds when it has many) while the topic's [`stamp`] is unchanged and
/// for at most `max_age` (for what moves without a write, such as an
/// expiry). Bounded by the sum of the answers' weights: past `max_weight`
/// it starts over.
pub struct Kept<V, K = ()> {
    topic: &'static str,
    max_age: Duration,
    max_weight: usize,
    entries: Mutex<Option<KeptEntries<V, K>>>,
    /// The turn to read each answer, while someone holds it.
    turns: Mutex<Option<Turns<K>>>,
}

type Turns<K> = HashMap<(u64, String, K), Weak<tokio::sync::Mutex<()>>>;

struct KeptEntries<V, K> {
    answers: HashMap<(u64, String, K), KeptAnswer<V>>,
    weight: usize,
}

struct KeptAnswer<V> {
    stamp: Stamp,
    at: std::time::Instant,
    weight: usize,
    value: V,
}

impl<V: Clone, K: Eq + std::hash::Hash + Clone> Kept<V, K> {
    pub const fn new(topic: &'static str, max_age: Duration, max_weight: usize) -> Self {
        Kept {
            topic,
            max_age,
            max_weight,
            entries: Mutex::new(None),
            turns: Mutex::new(None),
        }
    }

    /// [`Kept::get`], and on a miss the turn to read the answer too: who
    /// misses waits for the requests that missed before, then asks again,
    /// so that many requests missing the same answer at once read it once.
    /// Hold the turn until the answer read is kept.
    pub async fn get_or_turn(
        &self,
        db: &Db,
        tenant: &str,
        question: &K,
    ) -> Result<V, Option<(Stamp, tokio::sync::OwnedMutexGuard<()>)>> {
        match self.get(db, tenant, question) {
            Err(Some(_)) => {}
            kept_or_not => return kept_or_not.map_err(|_| None),
        }
        let turn = self.read_turn(db, tenant, question).await;
        self.get(db, tenant, question)
            .map_err(|stamp| stamp.map(|stamp| (stamp, turn)))
    }

    /// The turn to read the answer to `question` for `tenant`, one for all
    /// who miss it at once.
    async fn read_turn(
        &self,
        db: &Db,
        tenant: &str,
        question: &K,
    ) -> tokio::sync::OwnedMutexGuard<()> {
        let turn = {
            let mut turns = self.turns.lock().unwrap_or_else(|e| e.into_inner());
            let turns = turns.get_or_insert_with(HashMap::new);
            let key = (db.instance(), tenant.to_string(), question.clone());
            match turns.get(&key).and_then(Weak::upgrade) {
                Some(turn) => turn,
                None => {
                    turns.retain(|_, turn| turn.strong_count() > 0);
                    let turn = Arc::new(tokio::sync::Mutex::new(()));
                    turns.insert(key, Arc::downgrade(&turn));
                    turn
                }
            }
        };
        turn.lock_owned().await
    }

    /// The kept answer to `question` for `tenant`, if still current; else
    /// the stamp to keep a fresh answer with (`None`: do not keep it).
    pub fn get(&self, db: &Db, tenant: &str, question: &K) -> Result<V, Option<Stamp>> {
        let stamp = stamp(db, self.topic, tenant).ok_or(None)?;
        let entries = self.entries.lock().unwrap_or_else(|e| e.into_inner());
        match entries.as_ref().and_then(|e| {
            e.answers
                .get(&(db.instance(), tenant.to_string(), question.clone()))
        }) {
            Some(kept) if kept.stamp == stamp && kept.at.elapsed() < self.max_age => {
                Ok(kept.value.clone())
            }
            _ => Err(Some(stamp)),
        }
    }

    /// Keeps `value`, the answer to `question` read after `stamp` was
    /// taken, for `tenant`.
    pub fn keep(&self, db: &Db, tenant: &str, question: K, stamp: Stamp, value: V, weight: usize) {
        let weight = weight.max(1);
        if weight > self.max_weight {
            return;
        }
        let mut entries = self.entries.lock().unwrap_or_else(|e| e.into_inner());
        let entries = entries.get_or_insert_with(|| KeptEntries {
            answers: HashMap::new(),
            weight: 0,
        });
        if entries.weight + weight > self.max_weight {
            entries.answers.clear();
            entries.weight = 0;
        }
        let answer = KeptAnswer {
            stamp,
            at: std::time::Instant::now(),
            weight,
            value,
        };
        if let Some(old) = entries
            .answers
            .insert((db.instance(), tenant.to_string(), question), answer)
        {
            entries.weight -= old.weight;
        }
        entries.weight += weight;
    }
}
