//! The run driven by a model double, as hyperfine tests its benchmarks
//! with a `MockExecutor`: what the harness does with replies that take
//! time, come out of order, fail or must wait their turn, seen through
//! its reporters, without a process, a network or a model file.

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::Mutex;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use toolgauge::call::{Failure, Party, Usage};
use toolgauge::harness::{self, RunPlan, Settings};
use toolgauge::metrics::{Aggregate, TrialOutcome};
use toolgauge::model::{Model, ModelTerms, ModelTrial, Reply, ReplyError, ReplyFuture, TrialStart};
use toolgauge::provider::Provider;
use toolgauge::report::{FinishedTrial, Notice, Reporter, Reporters, RunInfo};
use toolgauge::transport::TransportError;

/// What the double does on one trial.
#[derive(Debug, Clone, Copy)]
enum Act {
    /// The right call, after this long on the run's clock.
    Answer(Duration),
    /// The request fails after its retries.
    Fail,
}

/// A model whose every reply is scripted per trial, and which counts the
/// trials it has under way.
#[derive(Debug)]
struct MockExecutor {
    acts: BTreeMap<u32, Act>,
    at_once: Option<usize>,
    under_way: AtomicUsize,
    most_under_way: AtomicUsize,
    started: Mutex<Vec<u32>>,
}

impl MockExecutor {
    fn new(acts: impl IntoIterator<Item = (u32, Act)>) -> MockExecutor {
        MockExecutor {
            acts: acts.into_iter().collect(),
            at_once: None,
            under_way: AtomicUsize::new(0),
            most_under_way: AtomicUsize::new(0),
            started: Mutex::new(Vec::new()),
        }
    }
}

struct MockTrial<'a> {
    executor: &'a MockExecutor,
    act: Act,
}

impl Model for MockExecutor {
    fn name(&self) -> &str {
        "mock-executor"
    }

    fn provider(&self) -> Provider {
        Provider::OpenAi
    }

    fn terms(&self) -> ModelTerms {
        ModelTerms {
            trials_at_once: self.at_once,
            ..ModelTerms::default()
        }
    }

    fn start_trial<'a>(&'a self, start: TrialStart<'a>) -> Box<dyn ModelTrial + 'a> {
        let now = self.under_way.fetch_add(1, Ordering::SeqCst) + 1;
        self.most_under_way.fetch_max(now, Ordering::SeqCst);
        self.started.lock().unwrap().push(start.trial);
        Box::new(MockTrial {
            executor: self,
            act: self.acts[&start.trial],
        })
    }
}

impl Drop for MockTrial<'_> {
    fn drop(&mut self) {
        self.executor.under_way.fetch_sub(1, Ordering::SeqCst);
    }
}

impl ModelTrial for MockTrial<'_> {
    fn reply<'s>(&'s mut self, _attempt: u32, _returned: Option<&'s [u8]>) -> ReplyFuture<'s> {
        let act = self.act;
        Box::pin(async move {
            match act {
                Act::Answer(after) => {
                    // The run's clock: paused in a virtual run, so no test waits.
                    tokio::time::sleep(after).await;
                    let body = r#"{"choices": [{"message": {"role": "assistant", "tool_calls": [{"id": "c1", "type": "function", "function": {"name": "echo", "arguments": "{\"message\": \"hi\"}"}}]}, "finish_reason": "tool_calls"}]}"#;
                    Ok(Reply {
                        body: body.as_bytes().to_vec(),
                        usage: Usage {
                            input_tokens: 900,
                            output_tokens: 100,
                            ..Usage::default()
                        },
                        ..Reply::default()
                    })
                }
                Act::Fail => Err(ReplyError::Transport(TransportError::Status {
                    url: "http://model.invalid/v1/chat/completions".to_owned(),
                    status: 503,
                    tries: 3,
                    excerpt: "overloaded".to_owned(),
                })),
            }
        })
    }
}

/// One scenario the double answers right: call `echo` with message "hi".
fn plan(executor: std::sync::Arc<MockExecutor>, trials: u32, sandbox: &Path) -> RunPlan {
    let file = sandbox.join("echo.json");
    let scenario = serde_json::json!({
        "name": "echo",
        "prompt": "Say hi through echo.",
        "tools": ["echo"],
        "expect": {"calls": [{"name": "echo", "arguments": {"message": "hi"}}]}
    });
    std::fs::write(&file, scenario.to_string()).unwrap();
    let servers = toolgauge::tool::mcp::ToolServers::new();
    RunPlan::new(
        vec![toolgauge::scenario::load_scenario(&file, sandbox, &servers).unwrap()],
        vec![executor],
        Settings {
            concurrency: 8,
            ..Settings::of_trials(trials)
        },
    )
}

/// Hears the trials in the order they are handed over, and the notices.
#[derive(Default)]
struct Heard {
    trials: Vec<TrialOutcome>,
    notices: Vec<Notice>,
}

impl Reporter for Heard {
    fn trial_finished(&mut self, _: &RunInfo, trial: FinishedTrial<'_>) -> std::io::Result<()> {
        self.trials.push(trial.outcome.clone());
        Ok(())
    }

    fn notice(&mut self, _: &RunInfo, notice: &Notice) -> std::io::Result<()> {
        self.notices.push(notice.clone());
        Ok(())
    }
}

fn run(plan: &RunPlan) -> (Heard, Aggregate) {
    let (heard, ended) = run_to_end(plan);
    (heard, ended.unwrap())
}

/// The run's measures, or why it ended before its end.
fn run_to_end(plan: &RunPlan) -> (Heard, Result<Aggregate, harness::RunError>) {
    let info = plan.info();
    let mut heard = Heard::default();
    let ended = {
        let mut reporters = Reporters::new(&info, vec![&mut heard]);
        harness::run(plan, &mut reporters, None).map(|()| reporters.stats().clone())
    };
    (heard, ended)
}

#[test]
fn trials_that_finish_out_of_order_reach_the_reporters_in_job_order() {
    let sandbox = tempfile::tempdir().unwrap();
    // The first trial is the slowest: it finishes last.
    let executor = std::sync::Arc::new(MockExecutor::new((0..6).map(|k| {
        (
            k,
            Act::Answer(Duration::from_millis(60 - 10 * u64::from(k))),
        )
    })));
    let (heard, stats) = run(&plan(executor.clone(), 6, sandbox.path()));
    assert!(
        executor.most_under_way.load(Ordering::SeqCst) > 1,
        "the trials overlapped, so they could finish out of order"
    );
    let order: Vec<u32> = heard.trials.iter().map(|t| t.trial).collect();
    assert_eq!(order, [0, 1, 2, 3, 4, 5]);
    assert!(heard.trials.iter().all(TrialOutcome::success));
    assert_eq!(stats.measured_trials(), 6);
}

#[test]
fn a_model_that_takes_one_trial_at_a_time_never_has_two_under_way() {
    let sandbox = tempfile::tempdir().unwrap();
    let mut executor =
        MockExecutor::new((0..5).map(|k| (k, Act::Answer(Duration::from_millis(5)))));
    executor.at_once = Some(1);
    let executor = std::sync::Arc::new(executor);
    let (heard, _) = run(&plan(executor.clone(), 5, sandbox.path()));
    assert_eq!(executor.most_under_way.load(Ordering::SeqCst), 1);
    // Admitted in job order, so they end in it too.
    assert_eq!(*executor.started.lock().unwrap(), [0, 1, 2, 3, 4]);
    assert_eq!(heard.trials.len(), 5);
}

#[test]
fn a_request_that_fails_loses_its_trial_to_the_server_not_the_model() {
    let sandbox = tempfile::tempdir().unwrap();
    let executor = std::sync::Arc::new(MockExecutor::new([
        (0, Act::Answer(Duration::ZERO)),
        (1, Act::Fail),
        (2, Act::Answer(Duration::ZERO)),
    ]));
    let (heard, stats) = run(&plan(executor, 3, sandbox.path()));
    let lost = &heard.trials[1];
    assert_eq!(lost.lost(), Some(Failure::TransportError));
    assert_eq!(Failure::TransportError.party(), Party::Server);
    assert!(heard.trials[0].success() && heard.trials[2].success());
    // Measured: the two the model answered; the lost one is counted apart.
    assert_eq!(stats.measured_trials(), 2);
    let [Notice::RequestFailed { error, .. }] = heard.notices.as_slice() else {
        panic!("one notice of the failed request: {:?}", heard.notices);
    };
    assert!(
        error.contains("HTTP 503") && error.contains("overloaded"),
        "{error}"
    );
}

#[test]
fn a_budget_stops_the_run_before_a_request_would_pass_it_keeping_what_finished() {
    let sandbox = tempfile::tempdir().unwrap();
    // Every reply 1,000 tokens; trials overlap, each one request.
    let executor = std::sync::Arc::new(MockExecutor::new(
        (0..8).map(|k| (k, Act::Answer(Duration::from_millis(10)))),
    ));
    let mut plan = plan(executor.clone(), 8, sandbox.path());
    let budget = std::sync::Arc::new(harness::Budget::new(harness::BudgetLimits {
        max_tokens: Some(4_500),
        ..Default::default()
    }));
    plan.budget = Some(budget.clone());
    let (heard, ended) = run_to_end(&plan);
    let Err(harness::RunError::BudgetSpent {
        finished,
        total,
        spent,
        cut,
    }) = ended
    else {
        panic!("the budget ends the run: {ended:?}");
    };
    // Never past the budget: 4 x 1,000 spent, a fifth would reach 5,000.
    assert_eq!((spent.tokens, spent.requests), (4_000, 4));
    assert_eq!(total, 8);
    // Every request let go ran its turn, and those trials were handed
    // over in job order; nothing was charged to the model: no trial heard
    // is a failure, and the trials the budget stopped are not heard.
    assert_eq!(finished as usize, heard.trials.len());
    assert_eq!(finished, 4);
    let order: Vec<u32> = heard.trials.iter().map(|t| t.trial).collect();
    assert_eq!(order, (0..finished as u32).collect::<Vec<_>>());
    assert!(heard.trials.iter().all(TrialOutcome::success));
    assert!(budget.has_ended());
    // Each trial let go was kept: nothing was paid for a trial cut.
    assert_eq!((cut.0.requests, cut.1), (0, 0));
}
