//! The reporter that hands each finished trial's spans to the SDK: the
//! run's span opens when the run starts and ends when it finishes; each
//! trial's tree is made under it, its times those the session log says.
//! Ending a span only queues it: the export is the batch threads' work.

use std::sync::Arc;
use std::time::SystemTime;

use opentelemetry::trace::{Span, SpanKind, Status, TraceContextExt, Tracer, TracerProvider};
use opentelemetry::{Context, KeyValue};
use opentelemetry_sdk::trace::{SdkTracer, SdkTracerProvider};

use super::Semconv;
use super::export::{self, ExportTally, OtlpOptions, OtlpSetupError};
use super::spans::{ScenarioContent, SpanContext, SpanRecord, trial_spans};
use crate::metrics::Aggregate;
use crate::report::{FinishedTrial, Reporter, RunInfo};

/// Every trial as GenAI spans, exported as `OtlpOptions` say.
pub struct OtelReporter {
    provider: SdkTracerProvider,
    tracer: SdkTracer,
    tally: Arc<ExportTally>,
    /// The run's span, open while the run goes.
    run: Option<Context>,
    providers: Vec<String>,
    semconv: Semconv,
    content: bool,
    finished: bool,
    /// By scenario, its opening messages and tools (with `content`).
    scenarios: Vec<ScenarioContent>,
}

impl std::fmt::Debug for OtelReporter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("OtelReporter").finish_non_exhaustive()
    }
}

impl OtelReporter {
    /// `providers`: each model's provider in the conventions' words.
    /// `scenarios`: their opening messages and tools, told with the
    /// content (`--otlp-content`).
    pub fn new(
        options: &OtlpOptions,
        providers: Vec<String>,
        scenarios: Vec<ScenarioContent>,
    ) -> Result<OtelReporter, OtlpSetupError> {
        let semconv = options.semconv.unwrap_or(Semconv::V1_36);
        let (provider, tally) = export::provider(options, semconv)?;
        let scope = opentelemetry::InstrumentationScope::builder("toolgauge")
            .with_version(env!("CARGO_PKG_VERSION"))
            .with_schema_url(semconv.schema_url())
            .build();
        let tracer = provider.tracer_with_scope(scope);
        Ok(OtelReporter {
            provider,
            tracer,
            tally,
            run: None,
            providers,
            semconv,
            content: options.content,
            finished: false,
            scenarios,
        })
    }

    /// What became of the spans (read it after the run finishes).
    pub fn tally(&self) -> Arc<ExportTally> {
        self.tally.clone()
    }

    /// Make `record`'s span and its children's under `parent`: how many.
    fn emit(&self, record: SpanRecord, parent: &Context) -> u64 {
        let SpanRecord {
            name,
            kind,
            start,
            end,
            attributes,
            events,
            error,
            children,
        } = record;
        let mut span = self
            .tracer
            .span_builder(name)
            .with_kind(kind)
            .with_start_time(start)
            .with_attributes(attributes)
            .start_with_context(&self.tracer, parent);
        for (name, attributes) in events {
            span.add_event_with_timestamp(name, end, attributes);
        }
        if let Some(error) = error {
            span.set_status(Status::error(error));
        }
        let mut spans = 1;
        if !children.is_empty() {
            let cx = parent.with_remote_span_context(span.span_context().clone());
            for child in children {
                spans += self.emit(child, &cx);
            }
        }
        span.end_with_timestamp(end);
        spans
    }
}

impl Reporter for OtelReporter {
    fn run_started(&mut self, info: &RunInfo, trials: u64) -> std::io::Result<()> {
        let span = self
            .tracer
            .span_builder("toolgauge run")
            .with_kind(SpanKind::Internal)
            .with_start_time(SystemTime::now())
            .with_attributes(vec![
                KeyValue::new("toolgauge.trials", trials as i64),
                KeyValue::new("toolgauge.seed", info.seed as i64),
                KeyValue::new("toolgauge.feedback_style", info.feedback.clone()),
                KeyValue::new("toolgauge.clock", info.clock.clone()),
            ])
            .start(&self.tracer);
        self.run = Some(Context::current_with_span(span));
        Ok(())
    }

    fn trial_finished(&mut self, info: &RunInfo, trial: FinishedTrial<'_>) -> std::io::Result<()> {
        let context = SpanContext {
            info,
            providers: &self.providers,
            semconv: self.semconv,
            content: self.content,
            scenarios: &self.scenarios,
        };
        let record = trial_spans(context, trial);
        let parent = self.run.clone().unwrap_or_default();
        let spans = self.emit(record, &parent);
        self.tally.ended(spans);
        Ok(())
    }

    fn run_finished(&mut self, _info: &RunInfo, _stats: &Aggregate) -> std::io::Result<()> {
        self.finish();
        Ok(())
    }
}

impl OtelReporter {
    /// End the run's span and the export, within its bound (once; a run
    /// stopped early, by a signal or a fault, too).
    pub fn finish(&mut self) {
        if self.finished {
            return;
        }
        self.finished = true;
        if let Some(run) = self.run.take() {
            run.span().end();
            self.tally.ended(1);
        }
        export::shut_down(&self.provider);
    }
}

impl Drop for OtelReporter {
    fn drop(&mut self) {
        self.finish();
    }
}
