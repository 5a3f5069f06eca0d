//! Record and replay. `--record DIR` saves every exchange (request and
//! response, with model, scenario, trial and attempt) in a file named by a
//! hash of the canonical request, secrets redacted. `--replay DIR` answers
//! from those files; a request the recording does not hold is an error
//! that shows the closest recorded request and a diff of the two.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::transport::{ApiRequest, SECRET_HEADERS, redact_url};

/// Where an exchange happened in a run. Two positions are equal when they
/// name the same model, scenario, trial and attempt: what a recording
/// holds, whatever order and seed the run that asks has.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Position {
    pub model: String,
    pub scenario: String,
    pub trial: u32,
    pub attempt: u32,
    /// The trial's place in the run's report order: a model's waiting
    /// requests are sent lowest first. Not part of a recording.
    #[serde(skip)]
    pub order: u64,
    /// The trial's seed shared by every model (sent where a model's
    /// `seed` is `"trial"`). Not part of a recording: the request holds it.
    #[serde(skip)]
    pub trial_seed: u64,
}

impl PartialEq for Position {
    fn eq(&self, other: &Position) -> bool {
        (&self.model, &self.scenario, self.trial, self.attempt)
            == (&other.model, &other.scenario, other.trial, other.attempt)
    }
}

impl Eq for Position {}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Exchange {
    #[serde(flatten)]
    pub position: Position,
    pub status: u16,
    /// The response body: JSON when it parses, else text (a stream: its
    /// events as received).
    pub response: Value,
    /// A stream: when its first byte and each event came, in
    /// milliseconds from the send.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub first_byte_ms: Option<f64>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub arrivals_ms: Vec<f64>,
}

/// One file: a request and every response it got.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Recorded {
    pub request: RecordedRequest,
    pub exchanges: Vec<Exchange>,
}

/// A request with its secrets redacted: what is stored and compared.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RecordedRequest {
    pub url: String,
    pub headers: BTreeMap<String, String>,
    pub body: Value,
}

impl RecordedRequest {
    pub fn of(request: &ApiRequest) -> RecordedRequest {
        RecordedRequest {
            url: redact_url(&request.url),
            headers: request
                .headers
                .iter()
                .map(|(name, value)| {
                    let value = if SECRET_HEADERS.contains(name) {
                        "[REDACTED]".to_owned()
                    } else {
                        value.clone()
                    };
                    ((*name).to_owned(), value)
                })
                .collect(),
            body: request.body.clone(),
        }
    }

    /// The hash that names the file: URL and body, not headers (keys differ
    /// between machines; the body is what the model answers).
    pub fn key(&self) -> String {
        let canonical = serde_json::to_string(&(&self.url, &self.body)).expect("serializes");
        let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
        for byte in canonical.bytes() {
            hash = (hash ^ u64::from(byte)).wrapping_mul(0x0000_0100_0000_01b3);
        }
        format!("{hash:016x}")
    }

    fn pretty(&self) -> String {
        serde_json::to_string_pretty(&serde_json::json!({"url": self.url, "body": self.body}))
            .expect("serializes")
    }
}

/// A recording that cannot be replayed.
#[derive(Debug, thiserror::Error)]
pub enum RecordingError {
    #[error("{}: {source}", path.display())]
    Io {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("{}: not a recording: {source}", path.display())]
    NotARecording {
        path: PathBuf,
        source: serde_json::Error,
    },
    #[error("{}: no recorded exchanges", .0.display())]
    Empty(PathBuf),
}

/// A request the recording does not hold: where it was asked, and the
/// closest recorded request with a diff of the two.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("{0}")]
pub struct NotRecorded(pub String);

/// Writes exchanges as they happen.
#[derive(Debug)]
pub struct Recorder {
    dir: PathBuf,
    lock: std::sync::Mutex<()>,
}

impl Recorder {
    pub fn new(dir: &Path) -> std::io::Result<Recorder> {
        std::fs::create_dir_all(dir)?;
        Ok(Recorder {
            dir: dir.to_owned(),
            lock: std::sync::Mutex::new(()),
        })
    }

    /// Keep `exchange` with the others of its request.
    pub fn record(&self, request: &ApiRequest, exchange: Exchange) -> Result<(), RecordingError> {
        self.write(request, exchange)
            .map_err(|source| RecordingError::Io {
                path: self.dir.clone(),
                source,
            })
    }

    fn write(&self, request: &ApiRequest, exchange: Exchange) -> std::io::Result<()> {
        let request = RecordedRequest::of(request);
        let path = self.dir.join(format!("{}.json", request.key()));
        let _guard = self.lock.lock().unwrap_or_else(|e| e.into_inner());
        let mut recorded = match std::fs::read(&path) {
            Ok(bytes) => serde_json::from_slice(&bytes).map_err(std::io::Error::other)?,
            Err(_) => Recorded {
                request,
                exchanges: Vec::new(),
            },
        };
        recorded
            .exchanges
            .retain(|e| e.position != exchange.position);
        recorded.exchanges.push(exchange);
        let text = serde_json::to_vec_pretty(&recorded).map_err(std::io::Error::other)?;
        // Whole files only: a run killed mid-write leaves the old version.
        // A key the server quoted back is not kept.
        let partial = path.with_extension("json.partial");
        std::fs::write(&partial, crate::secret::redact_bytes(&text))?;
        std::fs::rename(partial, path)
    }
}

/// Answers from a recording.
#[derive(Debug)]
pub struct Replayer {
    dir: PathBuf,
    recorded: BTreeMap<String, Recorded>,
}

impl Replayer {
    pub fn load(dir: &Path) -> Result<Replayer, RecordingError> {
        let io = |path: &Path| {
            let path = path.to_owned();
            move |source| RecordingError::Io { path, source }
        };
        let entries = std::fs::read_dir(dir).map_err(io(dir))?;
        let mut recorded = BTreeMap::new();
        for entry in entries {
            let path = entry.map_err(io(dir))?.path();
            if path.extension().is_none_or(|e| e != "json") {
                continue;
            }
            let bytes = crate::source::read_input(&path).map_err(io(&path))?;
            let file: Recorded = serde_json::from_slice(&bytes)
                .map_err(|source| RecordingError::NotARecording { path, source })?;
            recorded.insert(file.request.key(), file);
        }
        if recorded.is_empty() {
            return Err(RecordingError::Empty(dir.to_owned()));
        }
        Ok(Replayer {
            dir: dir.to_owned(),
            recorded,
        })
    }

    /// The recorded answer to `request` at `position` (or, when that
    /// position was not recorded, the first answer the request got).
    pub fn answer(
        &self,
        request: &ApiRequest,
        position: &Position,
    ) -> Result<&Exchange, NotRecorded> {
        let request = RecordedRequest::of(request);
        if let Some(file) = self.recorded.get(&request.key()) {
            return file
                .exchanges
                .iter()
                .find(|e| &e.position == position)
                .or_else(|| file.exchanges.first())
                .ok_or_else(|| {
                    NotRecorded(format!("recording {} holds no response", request.key()))
                });
        }
        Err(NotRecorded(self.miss(&request, position)))
    }

    fn miss(&self, request: &RecordedRequest, position: &Position) -> String {
        let wanted = request.pretty();
        let closest = self
            .recorded
            .values()
            .map(|file| {
                let text = file.request.pretty();
                let ratio = similar::TextDiff::from_lines(&text, &wanted).ratio();
                (ratio, text, file)
            })
            .max_by(|a, b| a.0.total_cmp(&b.0));
        let mut message = format!(
            "the recording in {} holds no request like the one for model {:?}, scenario {:?}, trial {}, attempt {}",
            self.dir.display(),
            position.model,
            position.scenario,
            position.trial,
            position.attempt
        );
        if let Some((_, text, file)) = closest {
            message.push_str(&format!(
                "; the closest recorded request ({}) differs so (- recorded, + now):\n",
                file.request.key()
            ));
            let diff = similar::TextDiff::from_lines(&text, &wanted);
            for group in diff.grouped_ops(2) {
                for op in group {
                    for change in diff.iter_changes(&op) {
                        let sign = match change.tag() {
                            similar::ChangeTag::Delete => '-',
                            similar::ChangeTag::Insert => '+',
                            similar::ChangeTag::Equal => ' ',
                        };
                        message.push(sign);
                        message.push_str(change.value());
                        if !change.value().ends_with('\n') {
                            message.push('\n');
                        }
                    }
                }
                message.push_str("...\n");
            }
        }
        message
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(trial: u32, order: u64) -> Position {
        Position {
            model: "m".into(),
            scenario: "s".into(),
            trial,
            attempt: 1,
            order,
            trial_seed: order * 7,
        }
    }

    fn exchange(position: Position, text: &str) -> Exchange {
        Exchange {
            position,
            status: 200,
            response: serde_json::json!({ "said": text }),
            first_byte_ms: None,
            arrivals_ms: Vec::new(),
        }
    }

    #[test]
    fn a_recording_answers_by_trial_and_attempt_whatever_the_runs_order() {
        let dir = tempfile::tempdir().unwrap();
        let request = ApiRequest {
            url: "http://127.0.0.1:1/v1/chat/completions".into(),
            headers: Vec::new(),
            body: serde_json::json!({ "messages": [] }),
        };
        let recorder = Recorder::new(dir.path()).unwrap();
        recorder
            .record(&request, exchange(at(0, 3), "first"))
            .unwrap();
        recorder
            .record(&request, exchange(at(1, 4), "second"))
            .unwrap();
        // The same place recorded again replaces what it held.
        recorder
            .record(&request, exchange(at(1, 8), "again"))
            .unwrap();

        let replayer = Replayer::load(dir.path()).unwrap();
        let file = replayer.recorded.values().next().unwrap();
        assert_eq!(file.exchanges.len(), 2, "one exchange per place");
        let answer = replayer.answer(&request, &at(1, 9)).unwrap();
        assert_eq!(answer.response["said"], "again");
        let answer = replayer.answer(&request, &at(0, 5)).unwrap();
        assert_eq!(answer.response["said"], "first");
    }
}
