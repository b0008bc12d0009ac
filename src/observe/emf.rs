//! The metrics in CloudWatch's Embedded Metric Format, for the Lambda
//! entry: written as JSON lines on standard output, which Lambda sends to
//! the function's log group, where CloudWatch turns them into metrics. No
//! request of its own, nothing to configure but the namespace.

use std::io::Write;
use std::sync::OnceLock;

use metrics_cloudwatch_embedded::Collector;

/// The process's collector of metrics since the last flush.
#[derive(Clone, Copy)]
pub struct Emf(&'static Collector);

impl std::fmt::Debug for Emf {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Emf")
    }
}

impl Emf {
    /// Installs the process's recorder the first time, under `namespace`.
    pub fn install(namespace: &str) -> Result<Self, String> {
        static INSTALLED: OnceLock<&'static Collector> = OnceLock::new();
        if let Some(collector) = INSTALLED.get() {
            return Ok(Self(collector));
        }
        let collector = metrics_cloudwatch_embedded::Builder::new()
            .cloudwatch_namespace(namespace.to_owned())
            .init()
            .map_err(|e| format!("installing the metrics recorder: {e}"))?;
        super::describe();
        Ok(Self(INSTALLED.get_or_init(|| collector)))
    }

    /// Writes what was recorded since the last flush, one document per
    /// label set, and starts over. A failed write loses those metrics only.
    pub fn flush(&self) {
        let mut out = std::io::stdout().lock();
        if let Err(e) = self.0.flush(&mut out).and_then(|()| out.flush()) {
            tracing::warn!(error = %e, "the metrics could not be written to the log");
        }
    }
}
