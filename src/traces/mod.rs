//! Traces in: an agent's recorded OpenTelemetry GenAI spans (OTLP JSON
//! lines, as Phoenix, a collector's file exporter or `run --otlp-file`
//! write them) turned into scenarios.

mod import;
mod spans;

pub use import::{Imported, TracesError, import};
pub use spans::{ChatSpan, read_chats};
