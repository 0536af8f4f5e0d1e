//! The process-wide Prometheus recorder and its histogram buckets. A leaf:
//! the app state holds its handle, and the metrics routes render it.

use std::sync::OnceLock;

use metrics_exporter_prometheus::{Matcher, PrometheusBuilder, PrometheusHandle};

const LATENCY_BUCKETS: &[f64] = &[
    0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0,
];

const JOB_BUCKETS: &[f64] = &[
    0.05, 0.25, 1.0, 5.0, 15.0, 60.0, 300.0, 900.0, 3600.0, 14400.0,
];
const PLUGIN_BUCKETS: &[f64] = &[0.005, 0.025, 0.1, 0.5, 1.0, 5.0, 15.0, 60.0, 120.0];

/// The process-wide recorder; installed once, shared by every app instance
/// (tests run several in one process).
pub fn handle() -> PrometheusHandle {
    static HANDLE: OnceLock<PrometheusHandle> = OnceLock::new();
    HANDLE
        .get_or_init(|| {
            let recorder = PrometheusBuilder::new()
                .set_buckets_for_metric(
                    Matcher::Full("http_request_duration_seconds".into()),
                    LATENCY_BUCKETS,
                )
                .expect("static buckets are valid")
                .set_buckets_for_metric(
                    Matcher::Full(cairn_core::telemetry::JOB_RUN_DURATION.into()),
                    JOB_BUCKETS,
                )
                .expect("static buckets are valid")
                .set_buckets_for_metric(
                    Matcher::Full(cairn_core::telemetry::PLUGIN_CALL_DURATION.into()),
                    PLUGIN_BUCKETS,
                )
                .expect("static buckets are valid")
                .build_recorder();
            let handle = recorder.handle();
            // Fails only if another recorder was installed first, in which
            // case our handle renders nothing but the service still runs.
            let _ = metrics::set_global_recorder(recorder);
            cairn_core::telemetry::describe();
            process_collector().describe();
            handle
        })
        .clone()
}

pub(crate) fn process_collector() -> &'static metrics_process::Collector {
    static COLLECTOR: OnceLock<metrics_process::Collector> = OnceLock::new();
    COLLECTOR.get_or_init(metrics_process::Collector::default)
}
