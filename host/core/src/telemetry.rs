//! The names of the Prometheus series every area records, with their help
//! texts: the one list `contrib/grafana` and `contrib/prometheus` are
//! written against. An area records with `metrics::counter!(NAME, ...)`;
//! the assembly calls [`describe`] once so `/metrics` carries HELP lines.

pub const HTTP_REQUESTS: &str = "http_requests_total";
pub const HTTP_DURATION: &str = "http_request_duration_seconds";
/// Gauge, labels `kind`, `status` (`queued`, `running`).
pub const JOBS: &str = "cairn_jobs";
/// Gauge, label `kind`: how long the oldest queued job of a kind has waited.
pub const JOBS_OLDEST_QUEUED_AGE: &str = "cairn_jobs_oldest_queued_age_seconds";
/// Counter, labels `kind`, `outcome`.
pub const JOB_RUNS: &str = "cairn_job_runs_total";
/// Histogram, labels `kind`, `outcome`.
pub const JOB_RUN_DURATION: &str = "cairn_job_run_duration_seconds";
/// Counter, label `kind`.
pub const JOB_RETRIES: &str = "cairn_job_retries_total";
/// Counter, label `kind`.
pub const JOB_LEASE_LOSSES: &str = "cairn_job_lease_losses_total";
/// Counter, labels `via` (`sync`, `upload`), `area`, `connector`.
pub const ROWS_WRITTEN: &str = "cairn_rows_written_total";
/// Counter, labels `via`, `area`, `connector`.
pub const ROWS_REJECTED: &str = "cairn_rows_rejected_total";
/// Histogram, labels `plugin`, `operation`, `outcome`.
pub const PLUGIN_CALL_DURATION: &str = "cairn_plugin_call_duration_seconds";
/// Counter, labels `plugin`, `operation`, `outcome` (`ok`, `error`,
/// `timeout`, `trap`, `memory`).
pub const PLUGIN_CALLS: &str = "cairn_plugin_calls_total";
/// Counter, labels `caller` (a connector, or the host feature such as
/// `vulnerabilities`), `status` (`2xx` ... `5xx`, or `failed`: no answer).
pub const OUTBOUND_REQUESTS: &str = "cairn_outbound_requests_total";
/// Counter, labels `caller`, `status` (`429`, `503`): waits an upstream asked for.
pub const OUTBOUND_THROTTLED: &str = "cairn_outbound_throttled_total";
/// Gauge, label `source`: seconds since the source's last successful load.
pub const CVE_SOURCE_AGE: &str = "cairn_cve_source_age_seconds";
/// Gauge, label `source`: records the source holds.
pub const CVE_SOURCE_RECORDS: &str = "cairn_cve_source_records";
/// Gauge, label `source`: 1 while the source's last attempt failed.
pub const CVE_SOURCE_FAILING: &str = "cairn_cve_source_failing";
/// Gauge, labels `pool` (`main`, `bookkeeping`), `state` (`in_use`, `idle`).
pub const DB_CONNECTIONS: &str = "cairn_db_pool_connections";
/// Gauge, label `pool`: the pool's configured maximum.
pub const DB_CONNECTIONS_MAX: &str = "cairn_db_pool_max_connections";
/// Gauge: writers waiting for SQLite's one write turn (0 on PostgreSQL).
pub const DB_WRITE_WAITING: &str = "cairn_db_write_turn_waiting";
/// Counter, label `outcome` (`kept`, `read`, `counted`, `unkept`): how
/// pages of searches that keep their matches were answered.
pub const SEARCH_PAGES: &str = "cairn_search_pages_total";

/// Registers the help text and unit of every series above.
pub fn describe() {
    use metrics::{describe_counter, describe_gauge, describe_histogram, Unit};
    describe_counter!(
        HTTP_REQUESTS,
        "HTTP requests answered, by method, route template and status."
    );
    describe_histogram!(
        HTTP_DURATION,
        Unit::Seconds,
        "Time to answer an HTTP request, by method, route template and status."
    );
    describe_gauge!(
        JOBS,
        "Jobs waiting (queued) and running now, by kind, across all tenants."
    );
    describe_gauge!(
        JOBS_OLDEST_QUEUED_AGE,
        Unit::Seconds,
        "How long the oldest queued job of each kind has been waiting to run."
    );
    describe_counter!(JOB_RUNS, "Job runs ended in this process, by kind and outcome (succeeded, failed, canceled, retried, handed_back, lease_lost).");
    describe_histogram!(
        JOB_RUN_DURATION,
        Unit::Seconds,
        "Duration of job runs in this process, by kind and outcome."
    );
    describe_counter!(
        JOB_RETRIES,
        "Failed job runs sent back to the queue for another attempt, by kind."
    );
    describe_counter!(
        JOB_LEASE_LOSSES,
        "Job runs that lost their lease to another worker (a stalled or paused process), by kind."
    );
    describe_counter!(ROWS_WRITTEN, "Rows written by integration syncs and CSV uploads, by way in, area and connector or provider.");
    describe_counter!(ROWS_REJECTED, "Rows refused by integration syncs and CSV uploads, by way in, area and connector or provider.");
    describe_histogram!(PLUGIN_CALL_DURATION, Unit::Seconds, "Duration of calls into connector and CSV provider components, by plugin, operation and outcome.");
    describe_counter!(PLUGIN_CALLS, "Calls into components, by plugin, operation and outcome (ok, error, timeout, trap, memory).");
    describe_counter!(OUTBOUND_REQUESTS, "Outbound HTTP requests through the one outbound path, by caller and status class (failed: no answer).");
    describe_counter!(OUTBOUND_THROTTLED, "Upstream answers asking to wait (429, 503) that the outbound path waited out, by caller and status.");
    describe_gauge!(CVE_SOURCE_AGE, Unit::Seconds, "Seconds since each CVE source (nvd, kev, epss) last loaded successfully, or, if it never has, since the database was set up.");
    describe_gauge!(CVE_SOURCE_RECORDS, "Records each CVE source holds.");
    describe_gauge!(
        CVE_SOURCE_FAILING,
        "1 while a CVE source's last attempt failed, else 0."
    );
    describe_gauge!(
        DB_CONNECTIONS,
        "Database pool connections in use and idle, by pool."
    );
    describe_gauge!(
        DB_CONNECTIONS_MAX,
        "The most connections each database pool opens."
    );
    describe_counter!(SEARCH_PAGES, "Pages of device searches by how they were answered: kept (from the matches kept since the tenant's last inventory write), read (the matches read again and kept), counted (too many to keep: only the total was kept), unkept (read as without keeping).");
    describe_gauge!(
        DB_WRITE_WAITING,
        "Writers waiting for SQLite's single write turn (always 0 on PostgreSQL)."
    );
}
