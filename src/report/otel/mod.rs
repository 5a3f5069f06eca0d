//! `run --otlp`: every trial as OpenTelemetry GenAI spans (run ->
//! `invoke_agent` trial -> attempt -> `chat` request and `execute_tool`
//! calls, the simulated user's turns and the probes apart), made from the
//! finished trial's record and session log, exported off the run's path
//! over OTLP HTTP/protobuf or to a file of OTLP JSON lines.

mod export;
mod reporter;
mod semconv;
mod spans;

pub use export::{ExportTally, OtlpOptions, OtlpSetupError};
pub use reporter::OtelReporter;
pub use semconv::Semconv;
pub use spans::{ScenarioContent, SpanRecord, trial_spans};
