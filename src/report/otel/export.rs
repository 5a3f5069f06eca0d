//! Where spans go, off the run's path: the SDK's batch processors (a
//! thread of their own each) hand them to an OTLP HTTP/protobuf exporter
//! on the reqwest (rustls) client toolgauge has, or to a file of OTLP JSON
//! lines, each exporter counted. A collector that is down, slow or
//! refuses loses spans, never a trial: the count says how many (in
//! summary.md and one notice as the run ends), and the shutdown at the
//! run's end is bounded.

use std::io::Write;
use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use opentelemetry_otlp::{WithExportConfig, WithHttpConfig};
use opentelemetry_proto::tonic::collector::trace::v1::ExportTraceServiceRequest;
use opentelemetry_proto::transform::common::tonic::ResourceAttributesWithSchema;
use opentelemetry_proto::transform::trace::tonic::group_spans_by_resource_and_scope;
use opentelemetry_sdk::error::{OTelSdkError, OTelSdkResult};
use opentelemetry_sdk::trace::{
    BatchConfigBuilder, BatchSpanProcessor, SdkTracerProvider, SpanData, SpanExporter,
};

use super::Semconv;

/// How long one export may take before it counts as lost, unless
/// `OTEL_EXPORTER_OTLP_TRACES_TIMEOUT` or `OTEL_EXPORTER_OTLP_TIMEOUT`
/// (milliseconds) say otherwise.
const EXPORT_TIMEOUT: Duration = Duration::from_secs(5);
/// How long the run's end waits for the spans still queued.
const SHUTDOWN_TIMEOUT: Duration = Duration::from_secs(10);

/// `--otlp`, `--otlp-file`, `--otlp-content`, and the conventions' version.
#[derive(Debug, Clone, Default)]
pub struct OtlpOptions {
    /// A collector's base URL (as `OTEL_EXPORTER_OTLP_ENDPOINT`; the
    /// traces path is added) or its traces URL (`.../v1/traces`).
    pub endpoint: Option<String>,
    /// OTLP JSON lines, one export request a line.
    pub file: Option<PathBuf>,
    /// Message contents and call arguments and results too.
    pub content: bool,
    pub semconv: Option<Semconv>,
    /// How long one export may take (default 5 s).
    pub timeout: Option<Duration>,
}

impl OtlpOptions {
    pub fn wanted(&self) -> bool {
        self.endpoint.is_some() || self.file.is_some()
    }
}

/// Why the export could not be set up.
#[derive(Debug, thiserror::Error)]
pub enum OtlpSetupError {
    #[error("--otlp-file {}: {source}", path.display())]
    File {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("--otlp {endpoint}: {problem}")]
    Endpoint { endpoint: String, problem: String },
}

/// What became of the spans: how many were ended, and how many each
/// destination took.
#[derive(Debug, Default)]
pub struct ExportTally {
    ended: AtomicU64,
    /// By destination: its name (the URL, the file) and the spans it took.
    taken: Mutex<Vec<(String, Arc<AtomicU64>)>>,
    /// The first failure, said once.
    first_failure: Mutex<Option<String>>,
}

impl ExportTally {
    pub(super) fn ended(&self, spans: u64) {
        self.ended.fetch_add(spans, Ordering::Relaxed);
    }

    /// Spans ended but not taken, at the destination that took fewest:
    /// and which.
    pub fn lost(&self) -> Option<(u64, String)> {
        let ended = self.ended.load(Ordering::Relaxed);
        let taken = self.taken.lock().expect("never poisoned");
        taken
            .iter()
            .map(|(name, n)| {
                (
                    ended.saturating_sub(n.load(Ordering::Relaxed)),
                    name.clone(),
                )
            })
            .filter(|(lost, _)| *lost > 0)
            .max_by_key(|(lost, _)| *lost)
    }

    /// summary.md's words on the export.
    pub fn markdown(&self) -> String {
        let ended = self.ended.load(Ordering::Relaxed);
        match self.lost() {
            None => format!("\n## OTLP export\n\nAll {ended} spans exported.\n"),
            Some((lost, to)) => format!(
                "\n## OTLP export\n\n{lost} of {ended} spans lost on the way to {to} (no trial was: export never costs one){}.\n",
                self.first_failure()
                    .map(|f| format!("; the first failure: {f}"))
                    .unwrap_or_default()
            ),
        }
    }

    /// The first export failure, if any.
    pub fn first_failure(&self) -> Option<String> {
        self.first_failure.lock().expect("never poisoned").clone()
    }

    fn failed(&self, what: String) {
        let mut first = self.first_failure.lock().expect("never poisoned");
        first.get_or_insert(what);
    }

    /// The notice a run with lost spans ends with (`None`: none lost).
    pub fn notice(&self) -> Option<crate::report::Notice> {
        let (lost, to) = self.lost()?;
        Some(crate::report::Notice::SpansLost {
            to,
            lost,
            ended: self.ended.load(Ordering::Relaxed),
            first_failure: self.first_failure(),
        })
    }
}

/// An exporter counted: the spans it took, the first failure said once.
#[derive(Debug)]
struct Counted<E> {
    inner: E,
    name: String,
    taken: Arc<AtomicU64>,
    tally: Arc<ExportTally>,
}

impl<E: SpanExporter> SpanExporter for Counted<E> {
    async fn export(&self, batch: Vec<SpanData>) -> OTelSdkResult {
        let spans = batch.len() as u64;
        let result = self.inner.export(batch).await;
        match &result {
            Ok(()) => {
                self.taken.fetch_add(spans, Ordering::Relaxed);
            }
            Err(error) => self.tally.failed(format!("{}: {error}", self.name)),
        }
        result
    }

    fn shutdown_with_timeout(&self, timeout: Duration) -> OTelSdkResult {
        self.inner.shutdown_with_timeout(timeout)
    }

    fn set_resource(&mut self, resource: &opentelemetry_sdk::Resource) {
        self.inner.set_resource(resource);
    }
}

/// OTLP JSON lines: each batch one `ExportTraceServiceRequest`, as a
/// collector's file exporter writes them.
#[derive(Debug)]
struct JsonLines {
    file: Mutex<std::io::BufWriter<std::fs::File>>,
    resource: ResourceAttributesWithSchema,
}

impl SpanExporter for JsonLines {
    async fn export(&self, batch: Vec<SpanData>) -> OTelSdkResult {
        let request = ExportTraceServiceRequest {
            resource_spans: group_spans_by_resource_and_scope(batch, &self.resource),
        };
        let mut file = self
            .file
            .lock()
            .map_err(|_| OTelSdkError::InternalFailure("poisoned".into()))?;
        let io = |e: std::io::Error| OTelSdkError::InternalFailure(e.to_string());
        serde_json::to_writer(&mut *file, &request).map_err(|e| io(e.into()))?;
        file.write_all(b"\n").map_err(io)?;
        // Whole lines only: a killed run leaves what was exported readable.
        file.flush().map_err(io)
    }

    fn set_resource(&mut self, resource: &opentelemetry_sdk::Resource) {
        self.resource = resource.into();
    }
}

/// The traces URL of `endpoint`: a base URL gets `/v1/traces`.
fn traces_url(endpoint: &str) -> String {
    let trimmed = endpoint.trim_end_matches('/');
    if trimmed.ends_with("/v1/traces") {
        trimmed.to_owned()
    } else {
        format!("{trimmed}/v1/traces")
    }
}

/// A tracer provider exporting to what `options` name, and its tally.
pub(super) fn provider(
    options: &OtlpOptions,
    semconv: Semconv,
) -> Result<(SdkTracerProvider, Arc<ExportTally>), OtlpSetupError> {
    let tally = Arc::new(ExportTally::default());
    let resource = opentelemetry_sdk::Resource::builder()
        .with_service_name("toolgauge")
        .with_schema_url(
            [opentelemetry::KeyValue::new(
                "service.version",
                env!("CARGO_PKG_VERSION"),
            )],
            semconv.schema_url(),
        )
        .build();
    let mut builder = SdkTracerProvider::builder().with_resource(resource);
    let counted = |name: String, tally: &Arc<ExportTally>| {
        let taken = Arc::new(AtomicU64::new(0));
        tally
            .taken
            .lock()
            .expect("never poisoned")
            .push((name.clone(), taken.clone()));
        (name, taken)
    };
    if let Some(endpoint) = &options.endpoint {
        let url = traces_url(endpoint);
        let fail = |problem: String| OtlpSetupError::Endpoint {
            endpoint: endpoint.clone(),
            problem,
        };
        crate::transport::tls_ready();
        let timeout = options.timeout.unwrap_or(EXPORT_TIMEOUT);
        let client = reqwest::blocking::Client::builder()
            .timeout(timeout)
            .build()
            .map_err(|e| fail(e.to_string()))?;
        let exporter = opentelemetry_otlp::SpanExporter::builder()
            .with_http()
            .with_http_client(client)
            .with_endpoint(url.clone())
            .with_timeout(timeout)
            .with_retry_policy(opentelemetry_otlp::RetryPolicy::disabled())
            .build()
            .map_err(|e| fail(e.to_string()))?;
        let (name, taken) = counted(crate::transport::redact_url(&url), &tally);
        builder = builder.with_span_processor(batched(Counted {
            inner: exporter,
            name,
            taken,
            tally: tally.clone(),
        }));
    }
    if let Some(path) = &options.file {
        let file = std::fs::File::create(path).map_err(|source| OtlpSetupError::File {
            path: path.clone(),
            source,
        })?;
        let exporter = JsonLines {
            file: Mutex::new(std::io::BufWriter::new(file)),
            resource: ResourceAttributesWithSchema::default(),
        };
        let (name, taken) = counted(path.display().to_string(), &tally);
        builder = builder.with_span_processor(batched(Counted {
            inner: exporter,
            name,
            taken,
            tally: tally.clone(),
        }));
    }
    Ok((builder.build(), tally))
}

/// A batch processor on its own thread: a queue large enough for a long
/// trial's spans between exports.
fn batched<E: SpanExporter + 'static>(exporter: E) -> BatchSpanProcessor {
    BatchSpanProcessor::builder(exporter)
        .with_batch_config(
            BatchConfigBuilder::default()
                .with_max_queue_size(65_536)
                .with_max_export_batch_size(512)
                .with_scheduled_delay(Duration::from_millis(500))
                .build(),
        )
        .build()
}

/// End the export: what is queued is sent, within a bound.
pub(super) fn shut_down(provider: &SdkTracerProvider) {
    // Spans not sent by then are counted lost; the run goes on.
    let _ = provider.shutdown_with_timeout(SHUTDOWN_TIMEOUT);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_base_url_gets_the_traces_path_once() {
        assert_eq!(traces_url("http://c:4318"), "http://c:4318/v1/traces");
        assert_eq!(traces_url("http://c:4318/"), "http://c:4318/v1/traces");
        assert_eq!(
            traces_url("http://c:4318/v1/traces"),
            "http://c:4318/v1/traces"
        );
    }
}
