//! Metrics as CloudWatch Embedded Metric Format lines on stdout: the recorder the Lambda
//! functions install for the `metrics` facade, written out after each invocation.

use metrics_cloudwatch_embedded::Collector;

/// The EMF recorder in the namespace `VERIFIER_METRICS_NAMESPACE` (unset or empty: `None`, no
/// metrics), each document with the function's name (`AWS_LAMBDA_FUNCTION_NAME`) as the
/// `function` dimension. Installs it as the process's recorder; a second call finds one
/// installed and answers `None` with a warning.
pub fn install() -> Option<&'static Collector> {
    let namespace = std::env::var("VERIFIER_METRICS_NAMESPACE")
        .ok()
        .filter(|v| !v.trim().is_empty())?;
    let function = std::env::var("AWS_LAMBDA_FUNCTION_NAME").unwrap_or_else(|_| "local".into());
    metrics_cloudwatch_embedded::Builder::new()
        .cloudwatch_namespace(namespace)
        .with_dimension("function", function)
        .init()
        .inspect_err(|e| {
            tracing::warn!(error = %e, "the metrics recorder could not be installed: no metrics")
        })
        .ok()
}

/// Write what was recorded since the last flush (one line per set of dimensions) in one
/// write (stdout is line-buffered: unbuffered, each line was a system call of its own); a
/// failure to write is logged, never the caller's problem.
pub fn flush(collector: &Collector) {
    use std::io::Write;
    let mut lines = std::io::BufWriter::with_capacity(8 * 1024, std::io::stdout().lock());
    if let Err(e) = collector.flush(&mut lines).and_then(|()| lines.flush()) {
        tracing::warn!(error = %e, "the metrics could not be written");
    }
}
