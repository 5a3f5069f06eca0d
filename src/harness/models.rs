//! The run's models made ready: the files a run names (or a resumed
//! run's own), built (answered from a recording with `--replay`), the
//! models its simulated users are played by, and which scenarios each
//! can answer.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use super::run_file::RunFile;
use super::settings::{RunRequest, contradiction};
use super::setup_error::SetupError;
use crate::model::{self, LiveOptions, Model, ModelError, ModelFile, Replayer, user_sim};
use crate::scenario::Scenario;
use crate::scenario::user::UserPlayer;

/// The folder of the suite that holds `scenario`: the suite given as a
/// folder that holds it, or a scenario file's own folder.
fn suite_folder_of(scenario: &Path, suites: &[PathBuf]) -> PathBuf {
    let canonical = |p: &Path| std::fs::canonicalize(p).unwrap_or_else(|_| p.to_owned());
    let path = canonical(scenario);
    suites
        .iter()
        .map(|suite| canonical(suite))
        .find(|suite| suite.is_dir() && path.starts_with(suite))
        .unwrap_or_else(|| path.parent().map_or_else(PathBuf::new, Path::to_owned))
}

/// `--batch`'s ledger in the run folder, once the flags that cannot go
/// with batches are ruled out.
fn batch_ledger(
    request: &RunRequest,
    batch: bool,
    out: &Path,
) -> Result<Option<Arc<crate::batch::Ledger>>, SetupError> {
    if !batch {
        return Ok(None);
    }
    let refusals = [
        (
            "--replay",
            request.replay.is_some(),
            "a recording answers without any provider; leave one out",
        ),
        (
            "--max-cost or --max-tokens",
            request.budget.is_set(),
            "a batch's cost is known only once it has ended, so no request \
             could be held back; run without a budget, or without --batch",
        ),
    ];
    if let Some((flag, _, why)) = refusals.into_iter().find(|(_, given, _)| *given) {
        return Err(SetupError::BatchWith { flag, why });
    }
    let ledger = crate::batch::Ledger::open(out).map_err(|source| SetupError::Io {
        path: out.join(crate::batch::ledger::FILE_NAME),
        source,
    })?;
    Ok(Some(Arc::new(ledger)))
}

/// The run's models: their files, made ready (answered from a recording
/// with `--replay`).
pub(super) struct Models {
    pub(super) files: Vec<ModelFile>,
    /// The models the user gave on the command line (`--models`,
    /// `--user-model`): the only ones a suite may name to play its users.
    given: Vec<ModelFile>,
    pub(super) models: Vec<Arc<dyn Model>>,
    /// How live models (simulated users' too) reach their answers.
    live_options: LiveOptions,
    pub(super) replayer: Option<Arc<Replayer>>,
    /// Answered from a recording: no network.
    pub(super) replayed: bool,
    /// Some model talks to a live endpoint over the network.
    pub(super) live_network: bool,
}

impl Models {
    /// `out`: the run folder, where `--batch` keeps its ledger.
    pub(super) fn make(
        request: &RunRequest,
        recorded: Option<&RunFile>,
        out: &Path,
    ) -> Result<Models, SetupError> {
        let batch = request.batch || recorded.is_some_and(|run| run.settings.batch);
        let files = match recorded {
            Some(run) => models_of_run_file(request, run)?,
            None => model::load_files(
                &request.models,
                request.suites.first().map(PathBuf::as_path),
            )?,
        };
        // A flag about live models, on a run of mocks only, would do
        // nothing while seeming to.
        let flags = [
            (
                "--replay",
                request.replay.is_some(),
                "answers live models from a recording",
            ),
            (
                "--record",
                request.record.is_some(),
                "keeps live models' exchanges",
            ),
            ("--doctor", request.doctor, "probes live models' endpoints"),
            ("--batch", batch, "sends live models' requests as batches"),
        ];
        if !files.iter().any(ModelFile::is_live)
            && let Some((flag, _, does)) = flags.into_iter().find(|(_, given, _)| *given)
        {
            return Err(SetupError::NoLiveModel { flag, does });
        }
        let batch = batch_ledger(request, batch, out)?;
        let replayer = request
            .replay
            .as_deref()
            .map(Replayer::load)
            .transpose()
            .map_err(SetupError::Replay)?
            .map(Arc::new);
        let live_options = LiveOptions {
            record: request.record.clone(),
            replay: request.replay.clone(),
            batch,
        };
        let models = files
            .iter()
            .map(|file| model::build(file, &live_options, replayer.clone()))
            .collect::<Result<Vec<_>, _>>()?;
        let mut given = if request.models.is_empty() && recorded.is_none() {
            Vec::new()
        } else {
            files.clone()
        };
        for path in &request.user_models {
            given.push(ModelFile::load(path)?);
        }
        Ok(Models {
            given,
            // Network I/O needs the real clock: on the paused one, every
            // request timeout would fire at once.
            live_network: replayer.is_none() && files.iter().any(ModelFile::is_live),
            replayed: replayer.is_some(),
            files,
            models,
            live_options,
            replayer,
        })
    }

    /// `--batch`'s ledger, when the run sends batches.
    pub(super) fn batch_ledger(&self) -> Option<Arc<crate::batch::Ledger>> {
        self.live_options.batch.clone()
    }

    /// By scenario, the live model that plays its simulated user: one the
    /// user gave on the command line, or a keyless file inside the suite
    /// (`user_sim::user_model_file`).
    pub(super) fn users(
        &self,
        scenarios: &[Scenario],
        suites: &[PathBuf],
    ) -> Result<Vec<Option<Arc<crate::model::live::LiveModel>>>, SetupError> {
        scenarios
            .iter()
            .map(|s| {
                let Some(user) = s.task.as_ref().and_then(|t| t.user.as_ref()) else {
                    return Ok(None);
                };
                let UserPlayer::Model(named) = &user.player else {
                    return Ok(None);
                };
                let dir = s.path.parent().unwrap_or(Path::new("."));
                let in_scenario = |source: ModelError| SetupError::UserModel {
                    scenario: s.path.clone(),
                    source,
                };
                let file = user_sim::user_model_file(
                    named,
                    &self.given,
                    dir,
                    &suite_folder_of(&s.path, suites),
                )
                .map_err(in_scenario)?;
                user_sim::connect(&file, &self.live_options, self.replayer.clone())
                    .map(Some)
                    .map_err(in_scenario)
            })
            .collect()
    }

    /// Every model can answer every scenario (a result file covers it).
    pub(super) fn check_answerable(&self, scenarios: &[Scenario]) -> Result<(), SetupError> {
        for model in &self.models {
            let missing = model.unanswerable(scenarios);
            if let Some(first) = missing.first() {
                return Err(SetupError::Unanswerable {
                    model: model.name().to_owned(),
                    count: missing.len(),
                    first: first.to_string(),
                });
            }
        }
        Ok(())
    }
}

/// The models of the run being resumed: its own, or the same ones again.
fn models_of_run_file(request: &RunRequest, run: &RunFile) -> Result<Vec<ModelFile>, SetupError> {
    if !request.models.is_empty() {
        let given = model::load_files(&request.models, None)?;
        if given != run.models {
            let names = |files: &[ModelFile]| {
                let names: Vec<&str> = files.iter().map(|m| m.name.as_str()).collect();
                names.join(", ")
            };
            return Err(SetupError::Settings(contradiction(
                "--models",
                names(&given),
                format!(
                    "{} (or the same names with other contents)",
                    names(&run.models)
                ),
            )));
        }
        return Ok(given);
    }
    // run.json is data, not authority: an endpoint and a key name only
    // it states (an edited file) would take the key there. A recording
    // answers without the network.
    let live: Vec<&ModelFile> = run.models.iter().filter(|m| m.is_live()).collect();
    if !live.is_empty() && request.replay.is_none() {
        return Err(SetupError::ResumeNeedsModels {
            models: live
                .iter()
                .map(|m| {
                    let endpoint = m.api().and_then(|api| api.base_url.as_deref());
                    format!(
                        "{} ({})",
                        m.name,
                        endpoint.unwrap_or("its provider's endpoint")
                    )
                })
                .collect::<Vec<_>>()
                .join(", "),
        });
    }
    for file in &run.models {
        file.check().map_err(|source| SetupError::RecordedModel {
            model: file.name.clone(),
            source,
        })?;
    }
    Ok(run.models.clone())
}
