//! BFCL's tool schemas and answers in ../shared/corpora/bfcl, through the
//! built-in validator: every converted tool passes the definition checks,
//! the validator kills every mutant and accepts every generated instance,
//! and every ground-truth answer validates except the entries listed, each
//! with its reason, in tests/data/bfcl-known-issues.txt.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use serde_json::Value;
use toolgauge::bfcl::answer::ground_truth_calls;
use toolgauge::bfcl::dialect::{Values, to_tool};
use toolgauge::bfcl::rules::first_acceptable;
use toolgauge::bfcl::{AnswerEntry, Entry, Language, SINGLE_TURN_CATEGORIES, read_jsonl};
use toolgauge::call::{Arguments, ParsedCall, ToolCall};
use toolgauge::pipeline::validate;
use toolgauge::tool::{Registry, ToolEnv, ToolSource};

fn bfcl() -> PathBuf {
    crate::corpora().join("bfcl")
}

fn questions(category: &str) -> Vec<Entry> {
    read_jsonl(&bfcl().join(format!("BFCL_v4_{category}.json"))).unwrap()
}

fn answers(category: &str) -> Option<Vec<AnswerEntry>> {
    let path = bfcl().join(format!("possible_answer/BFCL_v4_{category}.json"));
    path.exists().then(|| read_jsonl(&path).unwrap())
}

/// One registry per entry, with its functions normalised (typed values).
fn registry(entry: &Entry) -> Registry {
    let language = Language::of_id(&entry.id);
    let sources = entry
        .function
        .iter()
        .map(|f| ToolSource::Defined(to_tool(f, language, Values::Typed)))
        .collect();
    Registry::new(sources, ToolEnv::default())
        .unwrap_or_else(|e| panic!("{}: converted tools are refused: {e}", entry.id))
}

/// `id#call -- reason` lines; `#` at the start of a line is a comment.
fn known_issues() -> BTreeMap<String, String> {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/bfcl-known-issues.txt");
    std::fs::read_to_string(path)
        .unwrap()
        .lines()
        .filter(|l| !l.trim().is_empty() && !l.starts_with('#'))
        .map(|l| {
            let (id, reason) = l
                .split_once(" -- ")
                .expect("each known issue gives a reason after ' -- '");
            (id.to_owned(), reason.to_owned())
        })
        .collect()
}

#[test]
fn every_ground_truth_answer_validates_except_the_known_issues() {
    let mut failed: BTreeMap<String, String> = BTreeMap::new();
    let mut checked = 0;
    for category in SINGLE_TURN_CATEGORIES {
        let Some(answers) = answers(category) else {
            continue;
        };
        let entries: BTreeMap<String, Entry> = questions(category)
            .into_iter()
            .map(|e| (e.id.clone(), e))
            .collect();
        for answer in answers {
            let entry = &entries[&answer.id];
            let registry = registry(entry);
            for (i, call) in ground_truth_calls(&answer.ground_truth)
                .unwrap()
                .into_iter()
                .enumerate()
            {
                checked += 1;
                let arguments: serde_json::Map<String, Value> = call
                    .params
                    .iter()
                    .filter_map(|(k, options)| first_acceptable(options).map(|v| (k.clone(), v)))
                    .collect();
                let call = ParsedCall::Ok(ToolCall {
                    id: "gt".into(),
                    name: call.tool_name(),
                    arguments: Arguments::from_map(arguments),
                });
                if let Err(rejection) = validate(&registry, &call) {
                    let details: Vec<String> =
                        rejection.details.iter().map(ToString::to_string).collect();
                    let message = format!("{} {}", rejection.message, details.join("; "));
                    failed.insert(format!("{}#{i}", answer.id), message);
                }
            }
        }
    }
    assert!(checked > 3000, "checked {checked} answers");
    let known = known_issues();
    let unexpected: Vec<String> = failed
        .iter()
        .filter(|(id, _)| !known.contains_key(*id))
        .map(|(id, why)| format!("{id} -- {}", why.replace('\n', " ")))
        .collect();
    let fixed: Vec<&String> = known
        .keys()
        .filter(|id| !failed.contains_key(*id))
        .collect();
    assert!(
        unexpected.is_empty(),
        "{} answers fail their schema and are not known issues:\n{}",
        unexpected.len(),
        unexpected.join("\n")
    );
    assert!(
        fixed.is_empty(),
        "known issues that now validate (remove them): {fixed:?}"
    );
    // The list stays what BFCL's data explains (about 49 of 3,300).
    assert!(known.len() <= 60, "{} known issues", known.len());
}

fn sorted_lines(errors: &[toolgauge::schema::ArgumentError]) -> Vec<String> {
    let mut lines: Vec<String> = errors.iter().map(ToString::to_string).collect();
    lines.sort_unstable();
    lines
}

#[test]
fn the_builtin_validator_kills_every_mutant_of_every_bfcl_schema() {
    let mut seen = BTreeSet::new();
    let (mut tools, mut mutants, mut valid, mut quick) = (0, 0u64, 0u64, 0);
    for category in SINGLE_TURN_CATEGORIES {
        for entry in questions(category) {
            let registry = registry(&entry);
            for def in registry.definitions() {
                if !seen.insert(def.parameters.to_string()) {
                    continue;
                }
                tools += 1;
                let id = registry.lookup(&def.name).unwrap();
                let reference = registry.schema(id);
                quick += usize::from(reference.fast().is_some());
                let mut accepts = |instance: &Value| {
                    let Ok(arguments) = Arguments::try_from(instance.clone()) else {
                        // No call carries arguments that are not an object
                        // (Parse makes it a malformed call); both checks
                        // refuse it all the same.
                        assert!(
                            !reference.full_is_valid(instance),
                            "{}: {instance}",
                            entry.id
                        );
                        if let Some(quick) = reference.fast() {
                            assert!(!quick.is_valid(instance), "{}: {instance}", entry.id);
                        }
                        return Some(false);
                    };
                    let call = ParsedCall::Ok(ToolCall {
                        id: "f".into(),
                        name: def.name.clone(),
                        arguments,
                    });
                    let outcome = validate(&registry, &call);
                    // The quick check and jsonschema agree on every
                    // instance, and on what is wrong with it.
                    assert_eq!(
                        outcome.is_ok(),
                        reference.full_is_valid(instance),
                        "{}: {}: {instance}",
                        entry.id,
                        def.name
                    );
                    if let Err(rejection) = &outcome {
                        let general = reference.errors(instance);
                        assert_eq!(
                            sorted_lines(&rejection.details),
                            sorted_lines(&general),
                            "{}: {}: {instance}",
                            entry.id,
                            def.name
                        );
                    }
                    Some(outcome.is_ok())
                };
                let report =
                    toolgauge::fuzz::fuzz_schema(&def.parameters, reference, 6, 7, &mut accepts);
                assert_eq!(report.false_rejects, 0, "{}: {}", entry.id, def.name);
                assert_eq!(report.kill_rate(), 1.0, "{}: {}", entry.id, def.name);
                valid += report.valid;
                mutants += report
                    .by_mutation
                    .values()
                    .map(|c| c.generated)
                    .sum::<u64>();
            }
        }
    }
    eprintln!("quick check: {quick} of {tools} BFCL schemas");
    assert!(tools > 3000, "{tools} distinct schemas");
    assert!(
        quick * 2 > tools,
        "the quick check covers {quick} of {tools} schemas"
    );
    assert!(
        valid as usize >= tools,
        "{valid} valid instances for {tools} schemas"
    );
    assert!(
        mutants > 4 * tools as u64,
        "{mutants} mutants for {tools} schemas"
    );
}
