//! The metrics as Prometheus text, for `serve`'s `/metrics`: one recorder
//! per process, installed by the host that serves them.

use std::sync::OnceLock;

use metrics_exporter_prometheus::{Matcher, PrometheusBuilder, PrometheusHandle};

/// Run durations from a millisecond (a stateless `1 + 1`) to the longest
/// timeout, in seconds.
const SECONDS: &[f64] = &[
    0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0, 300.0,
];
/// Heaps from 1 MiB to 4 GiB.
const BYTES: &[f64] = &[
    1_048_576.0,
    4_194_304.0,
    16_777_216.0,
    67_108_864.0,
    268_435_456.0,
    1_073_741_824.0,
    4_294_967_296.0,
];

/// The installed recorder's view: renders what it has recorded.
#[derive(Clone)]
pub struct Scrape(PrometheusHandle);

impl std::fmt::Debug for Scrape {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Scrape")
    }
}

impl Scrape {
    /// Installs the process's recorder the first time, and returns its
    /// view: every host of one process shares it.
    pub fn install() -> Self {
        static INSTALLED: OnceLock<PrometheusHandle> = OnceLock::new();
        let handle = INSTALLED.get_or_init(|| {
            let recorder = PrometheusBuilder::new()
                .set_buckets_for_metric(Matcher::Suffix("_seconds".into()), SECONDS)
                .and_then(|b| b.set_buckets_for_metric(Matcher::Suffix("_bytes".into()), BYTES))
                .expect("the bucket lists are not empty")
                .build_recorder();
            let handle = recorder.handle();
            // Another recorder installed first (a program that embeds the
            // library) keeps the metrics; this view then shows none.
            if metrics::set_global_recorder(recorder).is_err() {
                tracing::warn!("a metrics recorder was installed already: /metrics shows nothing");
            }
            super::describe();
            handle
        });
        Self(handle.clone())
    }

    /// The text format, version 0.0.4.
    pub fn render(&self) -> String {
        self.0.render()
    }
}

/// `GET /metrics`: the text format with its content type.
pub async fn answer(
    axum::extract::State(scrape): axum::extract::State<Scrape>,
) -> impl axum::response::IntoResponse {
    (
        [(
            axum::http::header::CONTENT_TYPE,
            "text/plain; version=0.0.4; charset=utf-8",
        )],
        scrape.render(),
    )
}
