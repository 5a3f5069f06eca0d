//! Instruction counts (callgrind, through gungraun) of the hot paths: Parse,
//! Validate (valid, and invalid with its error text), one pipeline turn, a
//! run of harness trials, fuzz generation and the BFCL decoders. Counts do
//! not move with the machine's load, so each is held to the committed
//! baseline in `benches/counts.baseline` (+5%). `scripts/counts.sh` runs
//! them; `scripts/counts.sh --update` rewrites the baseline.
//!
//! Every input is built in code or read from the repository: no Node, no
//! network, nothing random. Each bench hands its inputs back, so that
//! dropping them is not counted.

#[path = "common/inputs.rs"]
mod inputs;

use std::hint::black_box;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use clap::Parser;
use gungraun::{
    Callgrind, EventKind, LibraryBenchmarkConfig, library_benchmark, library_benchmark_group, main,
};
use mimalloc::MiMalloc;
use serde_json::{Value, json};
use toolgauge::bfcl::Language;
use toolgauge::call::{ParsedCall, ToolCall};
use toolgauge::cli::Cli;
use toolgauge::harness::{self, RunPlan, Settings};
use toolgauge::model::{LiveOptions, ModelFile};
use toolgauge::pipeline::{ExecOptions, Pipeline, SessionLog, validate};
use toolgauge::provider::Provider;
use toolgauge::report::Reporters;
use toolgauge::scenario::load_scenario;
use toolgauge::schema::Compiled;
use toolgauge::tool::mcp::ToolServers;
use toolgauge::tool::{Registry, ToolEnv, ToolSource};

// As in the binary.
#[global_allocator]
static GLOBAL: MiMalloc = MiMalloc;

/// How much a count may grow over its baseline before CI fails.
const ALLOWED_GROWTH: f64 = 1.05;

/// The committed counts: `group/bench instructions` per line.
const BASELINE: &str = include_str!("counts.baseline");

/// The limit for one bench: its committed count plus the allowed growth.
/// `TOOLGAUGE_COUNTS_UPDATE=1` (set by `scripts/counts.sh --update`) runs
/// without limits, to measure new baselines.
fn limit(key: &str) -> LibraryBenchmarkConfig {
    let mut config = LibraryBenchmarkConfig::default();
    if std::env::var_os("TOOLGAUGE_COUNTS_UPDATE").is_some() {
        return config;
    }
    let committed = BASELINE
        .lines()
        .filter_map(|line| line.split_once(' '))
        .find(|(name, _)| *name == key)
        .and_then(|(_, count)| count.trim().parse::<u64>().ok());
    let Some(committed) = committed else {
        panic!(
            "benches/counts.baseline has no count for {key}: run scripts/counts.sh --update and commit it"
        );
    };
    let ceiling = (committed as f64 * ALLOWED_GROWTH).ceil() as u64;
    config.tool(Callgrind::default().hard_limits([(EventKind::Ir, ceiling)]));
    config
}

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).to_path_buf()
}

/// A reply of 3 calls in the provider's format, parsed once to warm up.
fn reply(provider: Provider) -> (Provider, Vec<u8>) {
    let body =
        serde_json::to_vec(&provider.format_response("Let me call the tools.", &inputs::calls(3)))
            .expect("a reply serializes");
    provider.parse_response(&body).expect("the reply parses");
    (provider, body)
}

#[library_benchmark]
#[bench::openai_3(args = (Provider::OpenAi), setup = reply, config = limit("parse/openai_3"))]
#[bench::responses_3(args = (Provider::OpenAiResponses), setup = reply, config = limit("parse/responses_3"))]
#[bench::anthropic_3(args = (Provider::Anthropic), setup = reply, config = limit("parse/anthropic_3"))]
#[bench::gemini_3(args = (Provider::Gemini), setup = reply, config = limit("parse/gemini_3"))]
fn parse((provider, body): (Provider, Vec<u8>)) -> (usize, Vec<u8>) {
    let calls = provider
        .parse_response(black_box(&body))
        .unwrap()
        .calls
        .len();
    (calls, body)
}

// A streamed reply framed, its events read, assembled and parsed,
// beside the same reply parsed whole: the cost of reading it as it came.
#[library_benchmark]
#[bench::whole_3(args = (Provider::OpenAi, 3, false), setup = streamed_input, config = limit("stream/whole_3"))]
#[bench::openai_3(args = (Provider::OpenAi, 3, true), setup = streamed_input, config = limit("stream/openai_3"))]
#[bench::openai_12(args = (Provider::OpenAi, 12, true), setup = streamed_input, config = limit("stream/openai_12"))]
#[bench::anthropic_whole_3(args = (Provider::Anthropic, 3, false), setup = streamed_input, config = limit("stream/anthropic_whole_3"))]
#[bench::anthropic_3(args = (Provider::Anthropic, 3, true), setup = streamed_input, config = limit("stream/anthropic_3"))]
fn stream_parse((provider, stream, body): (Provider, bool, Vec<u8>)) -> (usize, Vec<u8>) {
    let parsed = if stream {
        provider.parse_stream(black_box(&body))
    } else {
        provider.parse_response(black_box(&body))
    };
    (parsed.unwrap().calls.len(), body)
}

// The same stream read as it comes, each call handed over the moment it
// is complete (execute_early): linear in calls x events when no call
// makes the stream be assembled again. An Anthropic stream's events are
// kept as JSON, and each call handed over is read from its block alone.
#[library_benchmark]
#[bench::openai_12_early(args = (Provider::OpenAi, 12), setup = stream_of, config = limit("stream/openai_12_early"))]
#[bench::anthropic_3_early(args = (Provider::Anthropic, 3), setup = stream_of, config = limit("stream/anthropic_3_early"))]
#[bench::anthropic_12_early(args = (Provider::Anthropic, 12), setup = stream_of, config = limit("stream/anthropic_12_early"))]
fn stream_early((provider, n, body): (Provider, usize, Vec<u8>)) -> (usize, Vec<u8>) {
    let mut handed = 0;
    let received = toolgauge::provider::stream::replay(
        provider,
        black_box(&body),
        std::time::Duration::ZERO,
        &[],
        |assembly, complete| {
            for k in complete {
                handed += usize::from(black_box(assembly.call(k)).is_some());
            }
        },
    );
    assert_eq!(handed, n);
    (received.raw.len(), body)
}

/// `provider`'s stream of `n` calendar calls, checked to parse to the
/// calls it was made of.
fn stream_of(provider: Provider, n: usize) -> (Provider, usize, Vec<u8>) {
    let calls = inputs::calendar_calls(n);
    let streamed = match provider {
        Provider::Anthropic => inputs::anthropic_stream(&calls),
        _ => inputs::chat_stream(&calls),
    };
    let parsed = provider
        .parse_stream(streamed.as_bytes())
        .expect("the stream parses");
    assert_eq!(parsed.calls, calls);
    (provider, n, streamed.into_bytes())
}

/// `provider`'s stream of `n` calendar calls, or the same reply whole,
/// each checked to parse to the calls it was made of.
fn streamed_input(provider: Provider, n: usize, stream: bool) -> (Provider, bool, Vec<u8>) {
    let calls = inputs::calendar_calls(n);
    let whole = serde_json::to_vec(&provider.format_response("", &calls)).expect("a reply");
    assert_eq!(
        provider.parse_response(&whole).expect("it parses").calls,
        calls
    );
    let body = match stream {
        true => stream_of(provider, n).2,
        false => whole,
    };
    (provider, stream, body)
}

/// The search tool and one call to it, validated once to warm up.
fn search_call(arguments: Value) -> (Registry, ParsedCall) {
    let registry = Registry::new(
        vec![ToolSource::BuiltinWithDefinition(inputs::def(
            "echo",
            inputs::search().0,
        ))],
        ToolEnv::default(),
    )
    .expect("the schema compiles");
    let call = ParsedCall::Ok(ToolCall {
        id: "call_1".to_owned(),
        name: "echo".to_owned(),
        arguments: arguments.try_into().expect("an object"),
    });
    let _ = validate(&registry, &call);
    (registry, call)
}

fn valid_search() -> (Registry, ParsedCall) {
    search_call(inputs::search().1)
}

fn invalid_search() -> (Registry, ParsedCall) {
    search_call(inputs::search().2)
}

/// The anchors' tools (echo, math) and 1,000 calls to them, seven in ten
/// valid, the rest a wrong type, a missing required property or a value
/// outside the enum (as ../shared/anchors/gen_workload.js makes them).
fn anchor_calls() -> (Registry, Vec<ParsedCall>) {
    let echo = json!({"type": "object", "properties": {"message": {"type": "string"}},
        "required": ["message"]});
    let math = json!({"type": "object", "properties": {
        "operation": {"type": "string", "enum": ["add", "multiply"]},
        "a": {"type": "number"}, "b": {"type": "number"}},
        "required": ["operation", "a", "b"]});
    let registry = Registry::new(
        vec![
            ToolSource::BuiltinWithDefinition(inputs::def("echo", echo)),
            ToolSource::BuiltinWithDefinition(inputs::def("math", math)),
        ],
        ToolEnv::default(),
    )
    .expect("the anchors' schemas compile");
    let calls: Vec<ParsedCall> = (0..1000)
        .map(|i| {
            let (name, arguments) = match (i % 2, i % 10) {
                (0, 7) => ("echo", json!({"message": i})),
                (0, 8) => ("echo", json!({})),
                (0, _) => ("echo", json!({"message": format!("hello {i}")})),
                (_, 7) => ("math", json!({"operation": "add", "a": "1", "b": 2})),
                (_, 9) => ("math", json!({"operation": "pow", "a": 1, "b": 2})),
                (_, 3) => ("math", json!({"operation": "multiply", "a": 1.5})),
                _ => ("math", json!({"operation": "add", "a": i, "b": 2.5})),
            };
            ParsedCall::Ok(ToolCall {
                id: format!("call_{i}"),
                name: name.to_owned(),
                arguments: arguments.try_into().expect("an object"),
            })
        })
        .collect();
    for call in &calls {
        let _ = validate(&registry, call);
    }
    (registry, calls)
}

#[library_benchmark]
#[bench::anchor_mix_1000(setup = anchor_calls, config = limit("validate/anchor_mix_1000"))]
fn validate_anchor_mix(
    (registry, calls): (Registry, Vec<ParsedCall>),
) -> (usize, Registry, Vec<ParsedCall>) {
    let valid = calls
        .iter()
        .filter(|call| validate(&registry, call).is_ok())
        .count();
    (valid, registry, calls)
}

#[library_benchmark]
#[bench::valid(setup = valid_search, config = limit("validate/valid"))]
#[bench::invalid_worded(setup = invalid_search, config = limit("validate/invalid_worded"))]
fn validate_call((registry, call): (Registry, ParsedCall)) -> (bool, Registry, ParsedCall) {
    let valid = validate(&registry, black_box(&call)).is_ok();
    (valid, registry, call)
}

struct TurnSetup {
    runtime: tokio::runtime::Runtime,
    pipeline: Pipeline,
    body: Vec<u8>,
}

/// An Anthropic reply of 3 calls to the built-in echo and math, through a
/// pipeline warmed up by one turn.
fn turn_setup() -> TurnSetup {
    let registry = Registry::new(
        vec![
            ToolSource::Builtin("echo".into()),
            ToolSource::Builtin("math".into()),
        ],
        ToolEnv::default(),
    )
    .expect("the built-ins register");
    let pipeline = Pipeline::new(Arc::new(registry), ExecOptions::default());
    let (_, body) = reply(Provider::Anthropic);
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .build()
        .expect("a runtime");
    let setup = TurnSetup {
        runtime,
        pipeline,
        body,
    };
    turn(&setup, Some(&mut SessionLog::new(Vec::new())));
    setup
}

fn turn(setup: &TurnSetup, log: Option<&mut SessionLog<Vec<u8>>>) -> usize {
    setup.runtime.block_on(async {
        let state = setup.pipeline.registry().new_state();
        let turn = setup
            .pipeline
            .turn(Provider::Anthropic, &setup.body, &state, log)
            .await
            .expect("a turn in memory");
        turn.returned.len()
    })
}

#[library_benchmark]
#[bench::turn_recorded(setup = turn_setup, config = limit("pipeline/turn_recorded"))]
fn pipeline_turn(setup: TurnSetup) -> (usize, TurnSetup) {
    let mut log = SessionLog::new(Vec::with_capacity(8192));
    (turn(&setup, Some(&mut log)), setup)
}

/// Ten trials of one starter scenario and one agent task on the careless
/// mock (it fails and corrects itself), virtual clock, nothing written.
fn trials_plan() -> RunPlan {
    let scenarios = root().join("scenarios");
    let sandbox = std::env::temp_dir().join("toolgauge-counts-sandbox");
    let servers = ToolServers::new();
    let load = |path: &str| {
        load_scenario(&scenarios.join(path), &sandbox, &servers).expect("the scenario loads")
    };
    let file = ModelFile::load(&scenarios.join("models/careless.json")).expect("the model loads");
    RunPlan::new(
        vec![
            load("starter/currency_convert.json"),
            load("agent/convert_order_total.json"),
        ],
        vec![
            toolgauge::model::build(&file, &LiveOptions::default(), None).expect("the mock builds"),
        ],
        Settings {
            concurrency: 1,
            no_session: false,
            ..Settings::of_trials(10)
        },
    )
}

#[library_benchmark]
#[bench::careless_20_trials(setup = trials_plan, config = limit("harness/careless_20_trials"))]
fn harness_trials(plan: RunPlan) -> (u64, RunPlan) {
    let info = plan.info();
    let mut reporters = Reporters::new(&info, Vec::new());
    harness::run(&plan, &mut reporters, None).expect("the run ends");
    let trials = reporters.stats().cells[0][0].trials;
    (trials, plan)
}

fn fuzz_setup() -> (Value, Compiled) {
    let schema = inputs::search().0;
    let validator = Compiled::new(&schema).expect("the schema compiles");
    (schema, validator)
}

#[library_benchmark]
#[bench::search_100_cases(setup = fuzz_setup, config = limit("fuzz/search_100_cases"))]
fn fuzz_generate((schema, validator): (Value, Compiled)) -> (u64, Value, Compiled) {
    let report = toolgauge::fuzz::fuzz_schema(&schema, &validator, 100, 1, &mut |v| {
        Some(validator.full_is_valid(v))
    });
    (report.valid, schema, validator)
}

/// Model outputs in BFCL's prompt format, as published runs hold them.
fn bfcl_output(language: Language) -> (Language, &'static str) {
    let text = match language {
        Language::Python => {
            "[get_weather(city='San Francisco', unit='celsius'), math.hypot(x=3, y=4.5, z=[1, 2, {'k': None}])]"
        }
        Language::Java => {
            "[ThreadPool.submit(task=\"new Runnable()\", priority=\"5\", tags=\"Arrays.asList(\\\"a\\\", \\\"b\\\")\")]"
        }
        Language::JavaScript => {
            "[fetchUser(userId=\"42\", options=\"{retries: 3, cache: true}\", onDone=\"handle\")]"
        }
    };
    toolgauge::bfcl::prompt::decode(text, language).expect("the output decodes");
    (language, text)
}

#[library_benchmark]
#[bench::python(args = (Language::Python), setup = bfcl_output, config = limit("bfcl/python"))]
#[bench::java(args = (Language::Java), setup = bfcl_output, config = limit("bfcl/java"))]
#[bench::javascript(args = (Language::JavaScript), setup = bfcl_output, config = limit("bfcl/javascript"))]
fn bfcl_decode((language, text): (Language, &'static str)) -> usize {
    black_box(
        toolgauge::bfcl::prompt::decode(black_box(text), language)
            .unwrap()
            .len(),
    )
}

/// A command as a user types it, its report folder a fresh temporary
/// one, from the repository's root.
fn command(args: &[&str]) -> (Cli, tempfile::TempDir) {
    let out = tempfile::tempdir().expect("a temporary folder");
    std::env::set_current_dir(root()).expect("the repository");
    let in_out = |name: &str| out.path().join(name).to_str().expect("UTF-8").to_owned();
    let line: Vec<String> = ["toolgauge"]
        .iter()
        .chain(args)
        .map(|arg| match *arg {
            "TOOLS" => in_out("tools.json"),
            arg => arg.to_owned(),
        })
        .chain(["--out".to_owned(), in_out("run")])
        .collect();
    // The built-in tools' definitions, as `tools list builtin` prints them.
    let builtin: Vec<_> = toolgauge::tool::BUILTIN_NAMES
        .iter()
        .filter_map(|name| toolgauge::tool::builtin_definition(name))
        .collect();
    let tools = serde_json::to_vec(&builtin).expect("definitions serialize");
    std::fs::write(in_out("tools.json"), tools).expect("a temporary file");
    (Cli::parse_from(line), out)
}

// Whole commands, in-process, as a user runs them (the main thread's
// work: the session log's writer thread is not counted): a regression
// anywhere on their path is caught as a function's is above.
#[library_benchmark]
#[bench::run_starter_multiple(args = (&["run", "scenarios/starter", "scenarios/bfcl/multiple", "--trials", "2"]), setup = command, config = limit("command/run_starter_multiple"))]
#[bench::fuzz_2000(args = (&["fuzz", "--tools", "TOOLS", "--cases", "2000"]), setup = command, config = limit("command/fuzz_2000"))]
fn whole_command((cli, out): (Cli, tempfile::TempDir)) -> tempfile::TempDir {
    let code = toolgauge::cli::run(black_box(cli)).expect("the command runs");
    black_box(code);
    out
}

library_benchmark_group!(name = parse_group; benchmarks = parse);
library_benchmark_group!(name = command_group; benchmarks = whole_command);
library_benchmark_group!(name = stream_group; benchmarks = stream_parse, stream_early);
library_benchmark_group!(name = validate_group; benchmarks = validate_call, validate_anchor_mix);
library_benchmark_group!(name = pipeline_group; benchmarks = pipeline_turn);
library_benchmark_group!(name = harness_group; benchmarks = harness_trials);
library_benchmark_group!(name = fuzz_group; benchmarks = fuzz_generate);
library_benchmark_group!(name = bfcl_group; benchmarks = bfcl_decode);

main!(
    library_benchmark_groups = parse_group,
    stream_group,
    validate_group,
    pipeline_group,
    harness_group,
    fuzz_group,
    bfcl_group,
    command_group
);
