//! `--max-cost` and `--max-tokens` on the command line, against a live
//! model's server: the run stops before a request would pass the budget,
//! says so, keeps what finished, and `--resume` finishes it.

use serde_json::json;
use wiremock::matchers::{method, path};
use wiremock::{Mock, MockServer, ResponseTemplate};

use crate::live::{KEY, openai_weather_run, reply, rows, stderr, toolgauge};

/// A server whose every reply is the right call, 900 tokens in and 100 out.
async fn server() -> MockServer {
    calling(json!({"city": "Paris"})).await
}

/// A server whose every reply calls get_weather with `arguments`, 900
/// tokens in and 100 out.
async fn calling(arguments: serde_json::Value) -> MockServer {
    let server = MockServer::start().await;
    let mut body = reply("openai", arguments);
    body["usage"] = json!({"prompt_tokens": 900, "completion_tokens": 100, "total_tokens": 1000});
    Mock::given(method("POST"))
        .and(path("/v1/chat/completions"))
        .respond_with(ResponseTemplate::new(200).set_body_json(body))
        .mount(&server)
        .await;
    server
}

fn args(items: &[&str]) -> Vec<String> {
    items.iter().map(|s| (*s).to_owned()).collect()
}

#[tokio::test]
async fn a_token_budget_stops_the_run_and_resume_finishes_it() {
    let server = server().await;
    let run = openai_weather_run(&server, "What's the weather in Paris?", json!({}));
    let (dir, suite, model) = (&run.dir, &run.suite, &run.model);
    let out = dir.path().join("out");
    let (suite, model, out_text) = (
        suite.to_str().unwrap(),
        model.to_str().unwrap(),
        out.to_str().unwrap(),
    );
    let output = toolgauge(
        args(&[
            "run",
            suite,
            "--models",
            model,
            "--trials",
            "6",
            "--quiet",
            "--out",
            out_text,
            "--max-tokens",
            "3500",
        ]),
        Some(KEY),
    )
    .await;
    let said = stderr(&output);
    // Not complete, so not a pass; not the model's failure either.
    assert_eq!(output.status.code(), Some(1), "{said}");
    assert!(
        said.contains("budget spent (3000 of --max-tokens 3500 tokens, over 3 request(s))"),
        "{said}"
    );
    assert!(
        said.contains("3 of 6 trial(s)") && said.contains("--resume"),
        "{said}"
    );
    let kept = rows(&out);
    assert_eq!(kept.len(), 3);
    assert!(
        kept.iter()
            .all(|row| row.trial_success && row.failures.is_empty())
    );
    assert_eq!(server.received_requests().await.unwrap().len(), 3);

    let resume = ["run", "--resume", out_text, "--models", model, "--quiet"];
    let output = toolgauge(args(&resume), Some(KEY)).await;
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let all = rows(&out);
    assert_eq!(
        all.iter().map(|row| row.trial).collect::<Vec<_>>(),
        [0, 1, 2, 3, 4, 5]
    );
    // The three kept were not asked again.
    assert_eq!(server.received_requests().await.unwrap().len(), 6);
}

#[tokio::test]
async fn a_dollar_budget_needs_every_live_models_prices() {
    let server = server().await;
    let run = openai_weather_run(
        &server,
        "What's the weather in Paris?",
        json!({"prices": null}),
    );
    let (dir, suite, model) = (&run.dir, &run.suite, &run.model);
    let out = dir.path().join("out");
    let output = toolgauge(
        args(&[
            "run",
            suite.to_str().unwrap(),
            "--models",
            model.to_str().unwrap(),
            "--out",
            out.to_str().unwrap(),
            "--max-cost",
            "0.50",
        ]),
        Some(KEY),
    )
    .await;
    assert_eq!(output.status.code(), Some(2));
    let said = stderr(&output);
    assert!(
        said.contains("--max-cost: model \"openai-live\" has no api.prices"),
        "{said}"
    );
    assert!(server.received_requests().await.unwrap().is_empty());
}

#[tokio::test]
async fn a_budget_that_is_no_number_of_dollars_is_refused_by_name() {
    let output = toolgauge(
        args(&["run", "scenarios/starter", "--max-cost", "-1"]),
        None,
    )
    .await;
    assert_eq!(output.status.code(), Some(2));
    assert!(
        stderr(&output).contains("give US dollars above 0"),
        "{}",
        stderr(&output)
    );
}

/// The spend of a trial the budget cut (its first turns paid, its retry
/// refused) was paid and then absent from every report. It is said now.
#[tokio::test]
async fn the_spend_of_trials_a_budget_cut_is_reported() {
    // Always the wrong argument: every trial asks again after the error.
    let server = calling(json!({"town": "Paris"})).await;
    let run = openai_weather_run(&server, "What's the weather in Paris?", json!({}));
    let out = run.dir.path().join("out");
    let output = toolgauge(
        args(&[
            "run",
            run.suite.to_str().unwrap(),
            "--models",
            run.model.to_str().unwrap(),
            "--trials",
            "2",
            "--concurrency",
            "1",
            "--quiet",
            "--out",
            out.to_str().unwrap(),
            "--max-tokens",
            "2500",
        ]),
        Some(KEY),
    )
    .await;
    let said = stderr(&output);
    assert_eq!(output.status.code(), Some(1), "{said}");
    assert!(rows(&out).is_empty(), "{said}");
    assert!(
        said.contains("2000 tokens over 2 request(s) went to 1 trial(s) the budget cut"),
        "{said}"
    );
}
