//! The model file format (`scenarios/models/*.json`): what each kind of
//! model takes, as one type per kind. A field another kind takes is
//! refused naming both kinds, before any model is built.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use super::{ModelError, Operator};
use crate::bfcl::results::ResultsFormat;
use crate::pipeline::FeedbackStyle;
use crate::pointer::Pointer;
use crate::provider::{ApiSettings, Provider};
use crate::source::{self, FileError};

/// A model file: its name, how its errors are worded, and its kind with
/// the fields that kind takes.
#[derive(Debug, Clone, PartialEq)]
pub struct ModelFile {
    pub name: String,
    /// How this model's errors are worded (`--feedback` otherwise): two
    /// files on one model with different styles pair as two arms.
    pub feedback: Option<FeedbackStyle>,
    pub spec: ModelSpec,
}

/// What a model is, with the fields of its kind.
#[derive(Debug, Clone, PartialEq)]
pub enum ModelSpec {
    Mock(MockKind, MockSpec),
    /// Answers each BFCL entry with a published run's output, once.
    BfclResults(BfclResultsSpec),
    /// Replays a tau2 Results JSON's conversations, both sides.
    Tau2Results(Tau2ResultsSpec),
    /// A live model over HTTP, by wire format.
    Live(LiveSpec),
}

/// `scripted`, `stochastic`, `feedback-aware`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct MockSpec {
    /// The wire format its replies use.
    #[serde(default = "default_provider")]
    pub provider: Provider,
    #[serde(default)]
    pub parameters: Parameters,
}

/// `bfcl-results`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct BfclResultsSpec {
    #[serde(default = "default_provider")]
    pub provider: Provider,
    /// The BFCL result file (JSON Lines), relative to the model file.
    pub results: PathBuf,
    /// How the run's model answered: `fc` (function calling, the default)
    /// or `prompt` (call syntax, decoded as BFCL decodes prompting
    /// models' outputs).
    #[serde(default, skip_serializing_if = "ResultsFormat::is_fc")]
    pub results_format: ResultsFormat,
}

/// `tau2-results`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Tau2ResultsSpec {
    #[serde(default = "default_provider")]
    pub provider: Provider,
    /// A tau2 Results JSON, relative to the model file.
    pub results: PathBuf,
}

/// `openai`, `openai-responses`, `anthropic`, `gemini`: the kind is the
/// wire format.
#[derive(Debug, Clone, PartialEq)]
pub struct LiveSpec {
    pub provider: Provider,
    pub api: ApiSettings,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MockKind {
    Scripted,
    Stochastic,
    /// Corrects itself only when the error it is shown names its mistake.
    FeedbackAware,
}

/// The `kind` a model file names: a mock's, a published run's, or a live
/// model's, which is its wire format by [`Provider`]'s own names.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ModelKind {
    Scripted,
    Stochastic,
    FeedbackAware,
    BfclResults,
    Tau2Results,
    Live(Provider),
}

impl Serialize for ModelKind {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(self.name())
    }
}

impl<'de> Deserialize<'de> for ModelKind {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let name = String::deserialize(deserializer)?;
        ModelKind::all()
            .find(|kind| kind.name() == name)
            .ok_or_else(|| {
                // serde's own words for an unknown variant, over every kind.
                let expected: Vec<String> = ModelKind::all()
                    .map(|k| format!("`{}`", k.name()))
                    .collect();
                serde::de::Error::custom(format!(
                    "unknown variant `{name}`, expected one of {}",
                    expected.join(", ")
                ))
            })
    }
}

/// Every kind takes these.
const COMMON_FIELDS: [&str; 3] = ["name", "kind", "feedback"];

impl ModelKind {
    /// Every kind: the offline ones, then one live kind per wire format.
    pub fn all() -> impl Iterator<Item = ModelKind> {
        [
            ModelKind::Scripted,
            ModelKind::Stochastic,
            ModelKind::FeedbackAware,
            ModelKind::BfclResults,
            ModelKind::Tau2Results,
        ]
        .into_iter()
        .chain(Provider::all().map(ModelKind::Live))
    }

    pub fn name(self) -> &'static str {
        match self {
            ModelKind::Scripted => "scripted",
            ModelKind::Stochastic => "stochastic",
            ModelKind::FeedbackAware => "feedback-aware",
            ModelKind::BfclResults => "bfcl-results",
            ModelKind::Tau2Results => "tau2-results",
            ModelKind::Live(provider) => provider.as_str(),
        }
    }

    /// "a stochastic model", "an openai model".
    fn a_model(self) -> String {
        let name = self.name();
        let article = if name.starts_with(['a', 'e', 'i', 'o', 'u']) {
            "an"
        } else {
            "a"
        };
        format!("{article} {name} model")
    }

    /// The fields this kind takes beyond [`COMMON_FIELDS`].
    fn own_fields(self) -> &'static [&'static str] {
        match self {
            ModelKind::Scripted | ModelKind::Stochastic | ModelKind::FeedbackAware => {
                &["provider", "parameters"]
            }
            ModelKind::BfclResults => &["provider", "results", "results_format"],
            ModelKind::Tau2Results => &["provider", "results"],
            ModelKind::Live(_) => &["api"],
        }
    }

    /// A field this kind cannot do without, and what it is.
    fn needs(self) -> Option<(&'static str, &'static str)> {
        match self {
            ModelKind::BfclResults => Some(("results", "the BFCL result file")),
            ModelKind::Tau2Results => Some(("results", "the Results JSON tau2 saved")),
            ModelKind::Live(_) => Some(("api", "its endpoint block (at least \"model\")")),
            ModelKind::Scripted | ModelKind::Stochastic | ModelKind::FeedbackAware => None,
        }
    }

    /// At most this many attempts per trial, whatever the scenario allows:
    /// a published run has one answer per entry.
    pub fn max_attempts(self) -> Option<u32> {
        (self == ModelKind::BfclResults).then_some(1)
    }
}

fn default_provider() -> Provider {
    Provider::OpenAi
}

/// How a mock behaves.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Parameters {
    /// Probability of a correct turn on the first attempt.
    #[serde(default = "one")]
    pub p_first: f64,
    /// After a failed attempt k, the probability that attempt k+1 is
    /// correct: `p_fix[0]` for the second attempt, `p_fix[1]` for the
    /// third, the last value for any later one. Absent: `p_first`.
    #[serde(
        default,
        deserialize_with = "non_empty_probabilities",
        skip_serializing_if = "Vec::is_empty"
    )]
    pub p_fix: Vec<f64>,
    /// Relative weights of the error operators; missing ones weigh 1.
    #[serde(default)]
    pub operators: BTreeMap<Operator, f64>,
    /// Response latency.
    #[serde(default)]
    pub latency_ms: u64,
    /// Extra latency drawn uniformly from 0..=jitter_ms.
    #[serde(default)]
    pub jitter_ms: u64,
}

fn one() -> f64 {
    1.0
}

/// `p_fix` given empty says nothing: refused, not read as "absent".
fn non_empty_probabilities<'de, D: serde::Deserializer<'de>>(
    deserializer: D,
) -> Result<Vec<f64>, D::Error> {
    let values = Vec::<f64>::deserialize(deserializer)?;
    if values.is_empty() {
        return Err(serde::de::Error::custom(
            "an empty list gives no probability: give one per later attempt ([0.8, 0.5]), or leave p_fix out (later attempts then use p_first)",
        ));
    }
    Ok(values)
}

impl Default for Parameters {
    fn default() -> Self {
        Parameters {
            p_first: 1.0,
            p_fix: Vec::new(),
            operators: BTreeMap::new(),
            latency_ms: 0,
            jitter_ms: 0,
        }
    }
}

/// The model files a run names: `paths` (files, or folders of them), or
/// with none the nearest `models/` folder in `suite` or above it. Names
/// must be unique.
pub fn load_files(paths: &[PathBuf], suite: Option<&Path>) -> Result<Vec<ModelFile>, ModelError> {
    let sources = if paths.is_empty() {
        // The suite's own models/ folder, or a parent's (`run
        // scenarios/bfcl` finds scenarios/models).
        let default = suite
            .unwrap_or(Path::new("."))
            .ancestors()
            .map(|dir| dir.join("models"))
            .find(|models| models.is_dir())
            .unwrap_or_else(|| PathBuf::from("scenarios/models"));
        vec![default]
    } else {
        paths.to_vec()
    };
    let mut files = Vec::new();
    for source in &sources {
        if source.is_dir() {
            let folder = |e: std::io::Error| ModelError::Folder {
                path: source.clone(),
                source: e,
            };
            let mut found: Vec<PathBuf> = std::fs::read_dir(source)
                .map_err(folder)?
                .filter_map(|e| e.ok().map(|e| e.path()))
                .filter(|p| p.extension().is_some_and(|e| e == "json"))
                .collect();
            found.sort();
            files.extend(found);
        } else if source.exists() {
            files.push(source.clone());
        } else {
            return Err(ModelError::Missing(source.clone()));
        }
    }
    if files.is_empty() {
        return Err(ModelError::NoneFound);
    }
    let mut models: Vec<ModelFile> = Vec::new();
    for file in files {
        let model = ModelFile::load(&file)?;
        if models.iter().any(|m| m.name == model.name) {
            return Err(ModelError::NameTwice {
                path: file,
                name: model.name,
            });
        }
        models.push(model);
    }
    Ok(models)
}

impl ModelFile {
    pub fn kind(&self) -> ModelKind {
        match &self.spec {
            ModelSpec::Mock(MockKind::Scripted, _) => ModelKind::Scripted,
            ModelSpec::Mock(MockKind::Stochastic, _) => ModelKind::Stochastic,
            ModelSpec::Mock(MockKind::FeedbackAware, _) => ModelKind::FeedbackAware,
            ModelSpec::BfclResults(_) => ModelKind::BfclResults,
            ModelSpec::Tau2Results(_) => ModelKind::Tau2Results,
            ModelSpec::Live(live) => ModelKind::Live(live.provider),
        }
    }

    /// The wire format its replies use.
    pub fn provider(&self) -> Provider {
        match &self.spec {
            ModelSpec::Mock(_, mock) => mock.provider,
            ModelSpec::BfclResults(bfcl) => bfcl.provider,
            ModelSpec::Tau2Results(tau2) => tau2.provider,
            ModelSpec::Live(live) => live.provider,
        }
    }

    /// A live model's endpoint block.
    pub fn api(&self) -> Option<&ApiSettings> {
        match &self.spec {
            ModelSpec::Live(live) => Some(&live.api),
            ModelSpec::Mock(..) | ModelSpec::BfclResults(_) | ModelSpec::Tau2Results(_) => None,
        }
    }

    pub fn is_live(&self) -> bool {
        matches!(self.spec, ModelSpec::Live(_))
    }

    /// Its `api.images`: images tools return go to it as image parts.
    pub fn takes_images(&self) -> bool {
        self.api().is_some_and(|api| api.images)
    }

    /// Read a model file; a `results` path is relative to it.
    pub fn load(path: &Path) -> Result<ModelFile, ModelError> {
        let text = source::read_input(path).map_err(|source| FileError::Read {
            path: path.to_owned(),
            source,
        })?;
        let fields: Map<String, Value> = source::parse_json(path, &text)?;
        let mut file = ModelFile::from_fields(fields).map_err(|e| match e {
            ModelError::Invalid {
                pointer, problem, ..
            } => FileError::shape_in(path, &text, &pointer, problem).into(),
            other => other,
        })?;
        if let (
            ModelSpec::BfclResults(BfclResultsSpec { results, .. })
            | ModelSpec::Tau2Results(Tau2ResultsSpec { results, .. }),
            Some(dir),
        ) = (&mut file.spec, path.parent())
        {
            // Whole, so that run.json names it from any folder.
            let joined = dir.join(&*results);
            *results = std::path::absolute(&joined).unwrap_or(joined);
        }
        file.check().map_err(|e| e.in_file(path))?;
        Ok(file)
    }

    /// The file's object, read by its `kind`: each field is one that kind
    /// takes, and the kind's needed fields are there.
    fn from_fields(mut fields: Map<String, Value>) -> Result<ModelFile, ModelError> {
        let kind: ModelKind = take(&mut fields, "kind")?.ok_or_else(|| {
            ModelError::invalid(
                Pointer::root().key("kind"),
                format!("missing: one of {}", kind_names(|_| true)),
            )
        })?;
        let name: String = take(&mut fields, "name")?.ok_or_else(|| {
            ModelError::invalid(Pointer::root().key("name"), "missing: the model's name")
        })?;
        let feedback: Option<FeedbackStyle> = take(&mut fields, "feedback")?;
        if let Some(field) = fields
            .keys()
            .find(|f| !kind.own_fields().contains(&f.as_str()))
        {
            return Err(ModelError::invalid(
                Pointer::root().key(field),
                foreign_field(kind, field),
            ));
        }
        if let Some((field, what)) = kind.needs()
            && !fields.contains_key(field)
        {
            return Err(ModelError::invalid(
                Pointer::root().key(field),
                format!("{} needs \"{field}\": {what}", kind.a_model()),
            ));
        }
        let rest = Value::Object(fields);
        let spec = match kind {
            ModelKind::Scripted => ModelSpec::Mock(MockKind::Scripted, read(&rest)?),
            ModelKind::Stochastic => ModelSpec::Mock(MockKind::Stochastic, read(&rest)?),
            ModelKind::FeedbackAware => ModelSpec::Mock(MockKind::FeedbackAware, read(&rest)?),
            ModelKind::BfclResults => ModelSpec::BfclResults(read(&rest)?),
            ModelKind::Tau2Results => ModelSpec::Tau2Results(read(&rest)?),
            ModelKind::Live(provider) => ModelSpec::Live(LiveSpec {
                provider,
                api: read(&rest["api"]).map_err(|e| e.under(&Pointer::root().key("api")))?,
            }),
        };
        Ok(ModelFile {
            name,
            feedback,
            spec,
        })
    }

    /// Problems a person must fix, by JSON pointer into the file.
    pub fn check(&self) -> Result<(), ModelError> {
        // The name names files (doctor-<name>.json) and report rows.
        let name_ok = !self.name.is_empty()
            && self.name.len() <= 128
            && !self.name.starts_with('.')
            && self
                .name
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.' | ':' | '@'));
        if !name_ok {
            return Err(ModelError::invalid(
                Pointer::root().key("name"),
                format!(
                    "{:?} is not a model name: use 1 to 128 letters, digits and - _ . : @, not starting with .",
                    self.name
                ),
            ));
        }
        match &self.spec {
            ModelSpec::Mock(_, mock) => check_parameters(&mock.parameters),
            ModelSpec::Live(live) => live
                .api
                .check()
                .map_err(|e| ModelError::invalid(e.pointer, e.problem)),
            ModelSpec::BfclResults(_) | ModelSpec::Tau2Results(_) => Ok(()),
        }
    }
}

fn check_parameters(p: &Parameters) -> Result<(), ModelError> {
    let parameters = Pointer::root().key("parameters");
    let probabilities = std::iter::once((parameters.clone().key("p_first"), p.p_first)).chain(
        p.p_fix
            .iter()
            .enumerate()
            .map(|(i, x)| (parameters.clone().key("p_fix").index(i), *x)),
    );
    for (pointer, probability) in probabilities {
        if !(0.0..=1.0).contains(&probability) {
            return Err(ModelError::invalid(
                pointer,
                format!("{probability} is outside 0..=1"),
            ));
        }
    }
    p.weights().map(|_| ())
}

/// Why `field` is refused on a `kind` model: which kinds take it, if any,
/// and what this kind takes.
fn foreign_field(kind: ModelKind, field: &str) -> String {
    let takes = COMMON_FIELDS
        .iter()
        .chain(kind.own_fields())
        .map(|f| format!("\"{f}\""))
        .collect::<Vec<_>>()
        .join(", ");
    let owners = kind_names(|other| other.own_fields().contains(&field));
    let whose = if owners.is_empty() {
        "no kind of model takes it".to_owned()
    } else {
        format!("it is for {owners} models")
    };
    format!(
        "{} takes no \"{field}\" ({whose}); it takes {takes}",
        kind.a_model()
    )
}

/// The kinds for which `keep` holds, named as a list.
fn kind_names(keep: impl Fn(ModelKind) -> bool) -> String {
    ModelKind::all()
        .filter(|&k| keep(k))
        .map(ModelKind::name)
        .collect::<Vec<_>>()
        .join(", ")
}

/// Remove `field` and read it; absent is `None`.
fn take<T: serde::de::DeserializeOwned>(
    fields: &mut Map<String, Value>,
    field: &str,
) -> Result<Option<T>, ModelError> {
    fields
        .remove(field)
        .map(|value| read(&value).map_err(|e| e.under(&Pointer::root().key(field))))
        .transpose()
}

fn read<T: serde::de::DeserializeOwned>(value: &Value) -> Result<T, ModelError> {
    source::from_value(value)
        .map_err(|located| ModelError::invalid(located.pointer, located.message))
}

impl<'de> Deserialize<'de> for ModelFile {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let fields = Map::<String, Value>::deserialize(deserializer)?;
        ModelFile::from_fields(fields).map_err(serde::de::Error::custom)
    }
}

/// The fields of a kind's spec, written after `name` and `kind`.
#[derive(Serialize)]
#[serde(untagged)]
enum SpecFields<'a> {
    Mock(&'a MockSpec),
    BfclResults(&'a BfclResultsSpec),
    Tau2Results(&'a Tau2ResultsSpec),
    Live { api: &'a ApiSettings },
}

impl Serialize for ModelFile {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        #[derive(Serialize)]
        struct Written<'a> {
            name: &'a str,
            kind: ModelKind,
            #[serde(flatten)]
            spec: SpecFields<'a>,
            #[serde(skip_serializing_if = "Option::is_none")]
            feedback: Option<FeedbackStyle>,
        }
        let spec = match &self.spec {
            ModelSpec::Mock(_, mock) => SpecFields::Mock(mock),
            ModelSpec::BfclResults(bfcl) => SpecFields::BfclResults(bfcl),
            ModelSpec::Tau2Results(tau2) => SpecFields::Tau2Results(tau2),
            ModelSpec::Live(live) => SpecFields::Live { api: &live.api },
        };
        Written {
            name: &self.name,
            kind: self.kind(),
            spec,
            feedback: self.feedback,
        }
        .serialize(serializer)
    }
}

impl Parameters {
    /// The operators' weights, every operator present; `Err` points at
    /// the weight at fault.
    pub(crate) fn weights(&self) -> Result<Vec<(Operator, f64)>, ModelError> {
        let weights: Vec<(Operator, f64)> = Operator::all()
            .map(|op| (op, self.operators.get(&op).copied().unwrap_or(1.0)))
            .collect();
        if let Some((op, weight)) = weights.iter().find(|(_, w)| *w < 0.0 || !w.is_finite()) {
            let name = serde_json::to_value(op)
                .ok()
                .and_then(|v| v.as_str().map(str::to_owned))
                .unwrap_or_else(|| format!("{op:?}"));
            return Err(ModelError::invalid(
                Pointer::root()
                    .key("parameters")
                    .key("operators")
                    .key(&name),
                format!("weight {weight} must be finite and >= 0"),
            ));
        }
        if weights.iter().all(|(_, w)| *w == 0.0) {
            return Err(ModelError::invalid(
                Pointer::root().key("parameters").key("operators"),
                "at least one operator needs a weight above 0",
            ));
        }
        Ok(weights)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn parse(json: Value) -> Result<ModelFile, String> {
        let Value::Object(fields) = json else {
            panic!("an object")
        };
        ModelFile::from_fields(fields)
            .and_then(|file| file.check().map(|()| file))
            .map_err(|e| e.to_string())
    }

    fn check(parameters: Value) -> Result<(), String> {
        parse(serde_json::json!({"name": "m", "kind": "stochastic", "parameters": parameters}))
            .map(|_| ())
    }

    #[test]
    fn range_errors_in_model_files_name_the_field() {
        let error = |p| check(p).err().unwrap();
        assert_eq!(
            error(serde_json::json!({"p_fix": [0.5, 1.5]})),
            "/parameters/p_fix/1: 1.5 is outside 0..=1"
        );
        assert_eq!(
            error(serde_json::json!({"p_first": -0.1})),
            "/parameters/p_first: -0.1 is outside 0..=1"
        );
        assert_eq!(
            error(serde_json::json!({"operators": {"wrong_type": -1.0}})),
            "/parameters/operators/wrong_type: weight -1 must be finite and >= 0"
        );
        assert!(check(serde_json::json!({"p_fix": [0.0, 1.0]})).is_ok());
    }

    #[test]
    fn a_field_of_another_kind_is_refused_naming_both_kinds() {
        let error = parse(serde_json::json!({
            "name": "m", "kind": "stochastic", "api": {"model": "x"}
        }))
        .unwrap_err();
        assert_eq!(
            error,
            "/api: a stochastic model takes no \"api\" (it is for openai, openai-responses, \
             anthropic, gemini models); it takes \"name\", \"kind\", \"feedback\", \
             \"provider\", \"parameters\""
        );
        let error = parse(serde_json::json!({
            "name": "m", "kind": "openai", "api": {"model": "x"}, "parameters": {}
        }))
        .unwrap_err();
        assert!(
            error.starts_with("/parameters: an openai model takes no \"parameters\" (it is for scripted, stochastic, feedback-aware models)"),
            "{error}"
        );
        let error =
            parse(serde_json::json!({"name": "m", "kind": "scripted", "colour": 1})).unwrap_err();
        assert!(error.contains("no kind of model takes it"), "{error}");
    }

    #[test]
    fn a_kind_without_the_field_it_needs_says_which() {
        let error = parse(serde_json::json!({"name": "m", "kind": "bfcl-results"})).unwrap_err();
        assert_eq!(
            error,
            "/results: a bfcl-results model needs \"results\": the BFCL result file"
        );
        let error = parse(serde_json::json!({"name": "m", "kind": "gemini"})).unwrap_err();
        assert!(
            error.starts_with("/api: a gemini model needs \"api\""),
            "{error}"
        );
    }

    #[test]
    fn errors_inside_a_kinds_fields_keep_their_pointer() {
        let error = parse(serde_json::json!({
            "name": "m", "kind": "openai", "api": {"model": 7}
        }))
        .unwrap_err();
        assert!(error.starts_with("/api/model: "), "{error}");
        let error = check(serde_json::json!({"p_fix": []})).unwrap_err();
        assert!(
            error.starts_with("/parameters/p_fix: an empty list"),
            "{error}"
        );
    }

    #[test]
    fn a_model_file_is_written_as_it_is_read_field_for_field() {
        for json in [
            serde_json::json!({"name": "m", "kind": "stochastic", "provider": "anthropic",
                "parameters": {"p_first": 0.5, "operators": {}, "latency_ms": 0, "jitter_ms": 0}}),
            serde_json::json!({"name": "r", "kind": "bfcl-results", "provider": "openai",
                "results": "/r.jsonl", "results_format": "prompt", "feedback": "bare"}),
            serde_json::json!({"name": "t", "kind": "tau2-results", "provider": "openai",
                "results": "/t.json"}),
        ] {
            let file: ModelFile = serde_json::from_value(json.clone()).unwrap();
            assert_eq!(serde_json::to_value(&file).unwrap(), json);
        }
        let live: ModelFile = serde_json::from_value(serde_json::json!({
            "name": "l", "kind": "anthropic", "api": {"model": "claude"}
        }))
        .unwrap();
        assert_eq!(live.provider(), Provider::Anthropic);
        let written = serde_json::to_value(&live).unwrap();
        assert_eq!(written["kind"], "anthropic");
        assert_eq!(serde_json::from_value::<ModelFile>(written).unwrap(), live);
    }

    #[test]
    fn a_live_kind_is_its_wire_format_by_the_providers_own_name() {
        for kind in ModelKind::all() {
            let written = serde_json::to_value(kind).unwrap();
            assert_eq!(written, json!(kind.name()));
            assert_eq!(serde_json::from_value::<ModelKind>(written).unwrap(), kind);
        }
        for provider in Provider::all() {
            assert_eq!(ModelKind::Live(provider).name(), provider.as_str());
        }
        let error = serde_json::from_value::<ModelKind>(json!("gpt")).unwrap_err();
        assert_eq!(
            error.to_string(),
            "unknown variant `gpt`, expected one of `scripted`, `stochastic`, `feedback-aware`, \
             `bfcl-results`, `tau2-results`, `openai`, `openai-responses`, `anthropic`, `gemini`"
        );
    }
}
