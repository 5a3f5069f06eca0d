//! A run's plan: its models, scenarios, jobs in order with their seeds,
//! the clock, and the limits every trial runs under.

use std::sync::Arc;

use super::{Budget, Settings};
use crate::model::Model;
use crate::pipeline::{ExecMode, ExecOptions, FeedbackStyle};
use crate::report::{ModelInfo, RunInfo, ScenarioInfo};
use crate::scenario::{Scenario, Task};

/// Everything a run needs, validated.
#[derive(Debug)]
pub struct RunPlan {
    pub scenarios: Vec<Scenario>,
    pub models: Vec<Arc<dyn Model>>,
    /// The run's settings, lent: trials, seed, concurrency, clock, how
    /// calls run and how their errors are worded, shard, session log.
    pub settings: Settings,
    /// By model: the feedback style its file names, over `exec`'s.
    pub model_feedback: Vec<Option<FeedbackStyle>>,
    /// By model: it takes images (its `api.images`), which tools' results
    /// then carry as image parts.
    pub model_images: Vec<bool>,
    /// By scenario: the live model that plays its simulated user, when a
    /// model does (none given: none does).
    pub users: Vec<Option<Arc<crate::model::live::LiveModel>>>,
    /// `--max-cost`, `--max-tokens`: what the models' requests may spend.
    pub budget: Option<Arc<Budget>>,
    /// `--batch`: the ledger of the batches sent, told when the run ends.
    pub batches: Option<Arc<crate::batch::Ledger>>,
    /// Which scenarios run after which, and what their trials share.
    pub chains: super::Chains,
}

use super::job::Job;

impl RunPlan {
    /// `settings`'s run of `models` on `scenarios`: no model's own
    /// feedback or images, no live user, no budget, no batches; each
    /// field set apart with `RunPlan { field, ..RunPlan::new(..) }`.
    pub fn new(
        scenarios: Vec<Scenario>,
        models: Vec<Arc<dyn Model>>,
        settings: Settings,
    ) -> RunPlan {
        // An `after` naming no scenario of the suite was refused at load.
        let uses_folder: Vec<bool> = scenarios
            .iter()
            .map(|s| s.registry.uses_chain_dir())
            .collect();
        let after = crate::scenario::prerequisites(&scenarios).unwrap_or_default();
        let chains = super::Chains::new(after, &uses_folder);
        RunPlan {
            chains,
            scenarios,
            models,
            settings,
            model_feedback: Vec::new(),
            model_images: Vec::new(),
            users: Vec::new(),
            budget: None,
            batches: None,
        }
    }

    /// How `model`'s calls run and how its errors are worded.
    pub fn exec_of(&self, model: usize) -> ExecOptions {
        ExecOptions {
            mode: if self.settings.serial {
                ExecMode::Serial
            } else {
                ExecMode::Parallel
            },
            feedback: self.feedback_of(model),
            images: self.model_images.get(model).copied().unwrap_or(false),
            ..ExecOptions::default()
        }
    }

    /// The run's feedback style, with each model that has its own:
    /// `pointer-list (qwen-bare: bare)`.
    fn feedback_text(&self) -> String {
        let own: Vec<String> = (0..self.models.len())
            .filter(|&m| self.model_feedback.get(m).copied().flatten().is_some())
            .map(|m| {
                format!(
                    "{}: {}",
                    self.models[m].name(),
                    file_name(&self.feedback_of(m))
                )
            })
            .collect();
        let default = file_name(&self.settings.feedback);
        match own.len() {
            0 => default,
            n if n == self.models.len() => own.join(", "),
            _ => format!("{default} ({})", own.join(", ")),
        }
    }

    /// `job`'s place among its model's jobs in the report order: a live
    /// model serves the trial it started first before starting another.
    pub fn order_of(&self, job: Job) -> u64 {
        job.scenario as u64 * u64::from(self.settings.trials) + u64::from(job.trial)
    }

    fn feedback_of(&self, model: usize) -> FeedbackStyle {
        self.model_feedback
            .get(model)
            .copied()
            .flatten()
            .unwrap_or(self.settings.feedback)
    }

    /// Whether a trial waits on sockets or processes (a real tool, a
    /// simulated user played by a live model): the runtime then needs
    /// tokio's I/O driver.
    pub(crate) fn needs_io_driver(&self) -> bool {
        self.scenarios.iter().any(|s| s.registry.has_real_tools())
            || self.users.iter().any(Option::is_some)
    }

    /// Every job of this run (this shard), in report order.
    pub fn jobs(&self) -> impl Iterator<Item = Job> + '_ {
        let (models, scenarios, trials) = (
            self.models.len(),
            self.scenarios.len(),
            self.settings.trials,
        );
        (0..models)
            .flat_map(move |model| {
                (0..scenarios).flat_map(move |scenario| {
                    (0..trials).map(move |trial| Job {
                        model,
                        scenario,
                        trial,
                    })
                })
            })
            .filter(|job| self.in_shard(*job))
    }

    /// Is `job` one of this run's (this shard's) jobs?
    pub fn includes(&self, job: Job) -> bool {
        job.model < self.models.len()
            && job.scenario < self.scenarios.len()
            && job.trial < self.settings.trials
            && self.in_shard(job)
    }

    /// Shards take every N-th job of the report order.
    fn in_shard(&self, job: Job) -> bool {
        self.settings.shard.is_none_or(|shard| {
            let scenario = self.chains.shard_scenario(job.scenario);
            let index = (job.model * self.scenarios.len() + scenario) as u64
                * u64::from(self.settings.trials)
                + u64::from(job.trial);
            shard.includes(index)
        })
    }

    /// The seed of one trial: independent of scheduling and of other trials.
    pub fn trial_seed(&self, job: Job) -> u64 {
        let mut hash = self.settings.seed ^ 0x9e37_79b9_7f4a_7c15;
        for part in [
            self.models[job.model].name(),
            self.scenarios[job.scenario].name.as_str(),
        ] {
            for byte in part.bytes().chain([0xff]) {
                hash = (hash ^ u64::from(byte)).wrapping_mul(0x0000_0100_0000_01b3);
            }
        }
        splitmix(hash ^ u64::from(job.trial))
    }

    /// The seed a live model sends for a trial where its `seed` is
    /// `"trial"`: the same in every model's arm (the run's seed, the
    /// scenario, the trial), so paired arms draw alike and differ by what
    /// they were shown.
    pub fn shared_seed(&self, job: Job) -> u64 {
        let mut hash = self.settings.seed ^ 0x5eed_5eed_5eed_5eed;
        for byte in self.scenarios[job.scenario].name.bytes() {
            hash = (hash ^ u64::from(byte)).wrapping_mul(0x0000_0100_0000_01b3);
        }
        splitmix(hash ^ u64::from(job.trial))
    }

    /// How many attempts a trial of this model on this scenario gets: the
    /// scenario's `max_retries`, unless the model answers only once.
    pub fn max_attempts(&self, model: usize, scenario: usize) -> u32 {
        let allowed = self.scenarios[scenario].max_retries;
        self.models[model]
            .terms()
            .max_attempts
            .map_or(allowed, |m| m.min(allowed))
    }

    /// What reporters know of this run.
    pub fn info(&self) -> RunInfo {
        RunInfo {
            models: self
                .models
                .iter()
                .map(|m| ModelInfo {
                    name: m.name().to_owned(),
                    prices: m.terms().prices,
                    max_attempts: m.terms().max_attempts,
                })
                .collect(),
            scenarios: scenario_infos(&self.scenarios),
            trials: self.settings.trials,
            seed: self.settings.seed,
            feedback: self.feedback_text(),
            clock: file_name(&self.settings.clock),
            thresholds: self.settings.thresholds.clone(),
            batch: self.models.iter().any(|m| m.terms().batched),
        }
    }
}

/// What reporters know of each scenario.
pub fn scenario_infos(scenarios: &[Scenario]) -> Vec<ScenarioInfo> {
    scenarios
        .iter()
        .map(|s| ScenarioInfo {
            name: s.name.clone(),
            max_attempts: if s.task.is_some() { 1 } else { s.max_retries },
            task_milestones: s.task.as_ref().map(Task::all_milestones),
            task_user_turns: s
                .task
                .as_ref()
                .map(|t| t.user_turns() as u32)
                .filter(|n| *n > 1),
            min_success: s.min_success,
            tags: s.tags.clone(),
        })
        .collect()
}

/// The name a setting has in files (`pointer-list`, `virtual`).
pub(crate) fn file_name(value: &impl serde::Serialize) -> String {
    match serde_json::to_value(value) {
        Ok(serde_json::Value::String(name)) => name,
        other => format!("{other:?}"),
    }
}

pub(crate) fn splitmix(mut x: u64) -> u64 {
    x = x.wrapping_add(0x9e37_79b9_7f4a_7c15);
    x = (x ^ (x >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    x = (x ^ (x >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    x ^ (x >> 31)
}
