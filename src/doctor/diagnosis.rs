//! A diagnosis: one finding per probe, its verdict and evidence, and the
//! doctor's entry points.

use std::fmt::Write as _;

use serde::{Deserialize, Serialize};

/// What a probe found.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, strum::IntoStaticStr)]
#[serde(rename_all = "lowercase")]
#[strum(serialize_all = "lowercase")]
pub enum Verdict {
    Yes,
    No,
    /// The probe could not tell (the evidence says why).
    Unknown,
}

impl Verdict {
    pub fn as_str(self) -> &'static str {
        self.into()
    }
}

/// One line of the diagnosis.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Finding {
    pub probe: Probe,
    pub verdict: Verdict,
    pub evidence: String,
}

impl Finding {
    /// The finding as a line of the table, printed as its probe ends.
    pub fn line(&self) -> String {
        let width = Probe::all().map(|p| p.as_str().len()).max().unwrap_or(0);
        format!(
            "  {:width$}  {:7}  {}\n",
            self.probe.as_str(),
            self.verdict.as_str(),
            self.evidence
        )
    }
}

/// What doctor found of one model's endpoint (doctor's `--json`, and
/// `doctor-<model>.json` in a run folder).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Diagnosis {
    pub model: String,
    pub endpoint: String,
    /// The model asks for streamed replies: then a run needs streaming
    /// too, and a stream that fails is a reason not to trust the run.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub streams: bool,
    pub findings: Vec<Finding>,
}

/// A property of the endpoint one probe asks about, named as the table
/// and `doctor-<model>.json` show it; in the order they are sent.
#[derive(
    Debug,
    Clone,
    Copy,
    PartialEq,
    Eq,
    Serialize,
    Deserialize,
    strum::EnumIter,
    strum::IntoStaticStr,
    strum::EnumString,
    strum::Display,
)]
#[serde(into = "&'static str", try_from = "String")]
pub enum Probe {
    #[strum(serialize = "tool call")]
    ToolCall,
    #[strum(serialize = "tool results shown")]
    ResultsShown,
    #[strum(serialize = "error results shown")]
    ErrorsShown,
    #[strum(serialize = "parallel calls")]
    Parallel,
    #[strum(serialize = "tool_choice required")]
    ChoiceRequired,
    #[strum(serialize = "tool_choice none")]
    ChoiceNone,
    #[strum(serialize = "finish reason on truncation")]
    Truncation,
    #[strum(serialize = "usage reported")]
    Usage,
    #[strum(serialize = "streaming")]
    Streaming,
}

impl Probe {
    /// Every probe, in the order they are sent and shown.
    pub fn all() -> impl Iterator<Item = Probe> {
        <Probe as strum::IntoEnumIterator>::iter()
    }

    pub fn as_str(self) -> &'static str {
        self.into()
    }

    /// One a self-correction run cannot do without.
    pub fn is_essential(self) -> bool {
        matches!(
            self,
            Probe::ToolCall | Probe::ResultsShown | Probe::ErrorsShown
        )
    }
}

impl TryFrom<String> for Probe {
    type Error = UnknownProbe;

    fn try_from(name: String) -> Result<Probe, UnknownProbe> {
        name.parse().map_err(|_| UnknownProbe(name))
    }
}

/// A probe's name toolgauge does not know (in a cached diagnosis).
#[derive(Debug, thiserror::Error)]
#[error("unknown probe {0:?}")]
pub struct UnknownProbe(String);

/// The evidence of a probe not sent: an earlier request got no answer.
pub(crate) const NO_ANSWER: &str = "the endpoint did not answer an earlier probe";

impl Diagnosis {
    pub fn verdict(&self, probe: Probe) -> Option<Verdict> {
        self.findings
            .iter()
            .find(|f| f.probe == probe)
            .map(|f| f.verdict)
    }

    /// The essential probes that did not say yes (streaming too, for a
    /// model that streams): a self-correction run against this endpoint
    /// would not measure what it claims.
    pub fn missing(&self) -> Vec<&Finding> {
        self.findings
            .iter()
            .filter(|f| {
                let essential =
                    f.probe.is_essential() || (self.streams && f.probe == Probe::Streaming);
                essential && f.verdict != Verdict::Yes
            })
            .collect()
    }

    /// The endpoint answered no probe: the first request got no answer,
    /// and the rest were not sent.
    pub fn unanswered(&self) -> bool {
        self.findings.len() > 1 && self.findings[1..].iter().all(|f| f.evidence == NO_ANSWER)
    }

    /// The table's first line, printed before the probes run.
    pub fn heading(model: &str, endpoint: &str) -> String {
        format!("doctor: {model} at {endpoint}\n")
    }

    /// What the findings add up to, in one line.
    pub fn conclusion(&self) -> String {
        let mut text = String::new();
        if self.unanswered() {
            text.push_str("Nothing was learnt: the endpoint did not answer.\n");
            return text;
        }
        match self.missing().as_slice() {
            [] => text.push_str("A self-correction run against this endpoint can be trusted.\n"),
            missing => {
                let names: Vec<&str> = missing.iter().map(|f| f.probe.as_str()).collect();
                let _ = writeln!(
                    text,
                    "A self-correction run against this endpoint would not measure what it claims: {} not confirmed.",
                    names.join(", ")
                );
            }
        }
        text
    }

    /// Write the findings as JSON to `path`.
    pub fn save(&self, path: &std::path::Path) -> Result<(), DoctorError> {
        let text = serde_json::to_string_pretty(self).expect("a diagnosis serializes");
        crate::whole_file::write(path, text + "\n").map_err(|source| DoctorError::Io {
            path: path.to_owned(),
            source,
        })
    }

    /// A warning for each probe that says a self-correction run against
    /// this endpoint would not measure what it claims.
    /// `streams`: the model asks for streamed replies, which the endpoint
    /// may not give.
    pub fn warnings(&self, streams: bool) -> Vec<String> {
        let mut warnings: Vec<String> = self
            .missing()
            .into_iter()
            .map(|finding| {
                format!(
                    "model {:?}: doctor says {}: {} ({}); its self-correction figures are not feedback the model saw",
                    self.model,
                    finding.probe,
                    finding.verdict.as_str(),
                    finding.evidence
                )
            })
            .collect();
        let streaming = self.findings.iter().find(|f| f.probe == Probe::Streaming);
        if let Some(finding) =
            streaming.filter(|f| streams && !self.streams && f.verdict == Verdict::No)
        {
            warnings.push(format!(
                "model {:?} asks for streamed replies (\"stream\": true), and doctor says streaming: no ({}); expect lost trials",
                self.model, finding.evidence
            ));
        }
        warnings
    }
}

/// Why doctor could not probe at all.
#[derive(Debug, thiserror::Error)]
pub enum DoctorError {
    #[error(
        "model {model:?}: doctor probes live models (kind openai, openai-responses, anthropic or gemini)"
    )]
    NotLive { model: String },
    #[error("model {model:?}: {problem}")]
    Setup { model: String, problem: String },
    #[error("{}: {source}", path.display())]
    Io {
        path: std::path::PathBuf,
        source: std::io::Error,
    },
    #[error("{}: not a doctor result: {source}", path.display())]
    NotADiagnosis {
        path: std::path::PathBuf,
        source: serde_json::Error,
    },
}

pub(crate) fn finding(probe: Probe, verdict: Verdict, evidence: impl Into<String>) -> Finding {
    Finding {
        probe,
        verdict,
        evidence: evidence.into(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_model_that_streams_is_warned_when_its_endpoint_does_not() {
        let diagnosis = Diagnosis {
            model: "m".into(),
            endpoint: "http://x".into(),
            streams: false,
            findings: vec![
                finding(Probe::ToolCall, Verdict::Yes, "f()"),
                finding(Probe::ResultsShown, Verdict::Yes, "-"),
                finding(Probe::ErrorsShown, Verdict::Yes, "-"),
                finding(Probe::Streaming, Verdict::No, "HTTP 200: 0 bytes"),
            ],
        };
        assert!(diagnosis.warnings(false).is_empty());
        let warnings = diagnosis.warnings(true);
        assert_eq!(warnings.len(), 1);
        assert!(
            warnings[0].contains("streaming: no (HTTP 200: 0 bytes)"),
            "{warnings:?}"
        );
    }

    #[test]
    fn a_streaming_model_whose_streams_fail_is_not_trusted() {
        let diagnosis = Diagnosis {
            model: "m".into(),
            endpoint: "http://x".into(),
            streams: true,
            findings: vec![
                finding(Probe::ToolCall, Verdict::Yes, "f()"),
                finding(Probe::ResultsShown, Verdict::Yes, "-"),
                finding(Probe::ErrorsShown, Verdict::Yes, "-"),
                finding(
                    Probe::Streaming,
                    Verdict::No,
                    "HTTP 200: the stream ended before its last event",
                ),
            ],
        };
        let said = diagnosis.conclusion();
        assert!(!said.contains("can be trusted"), "{said}");
        assert!(said.contains("streaming not confirmed"), "{said}");
        assert_eq!(diagnosis.warnings(true).len(), 1);
    }
}
