//! The validation layer against the JSON Schema Test Suite in
//! ../shared/corpora (draft 7 and draft 2020-12, the required tests).
//! Tests known to fail are listed, each with its reason, in
//! tests/data/json-schema-test-suite-expected-failures.txt; the list must
//! match exactly, so it cannot hide a new failure or outlive a fix.
//! Schemas compile exactly as tool schemas do (`schema::options`).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use jsonschema::Draft;
use serde_json::Value;

/// Serves the suite's `http://localhost:1234/` remotes from disk.
struct Remotes(PathBuf);

impl jsonschema::Retrieve for Remotes {
    fn retrieve(
        &self,
        uri: &jsonschema::Uri<String>,
    ) -> Result<Value, Box<dyn std::error::Error + Send + Sync>> {
        let path = uri
            .as_str()
            .strip_prefix("http://localhost:1234/")
            .ok_or_else(|| format!("no remote for {}", uri.as_str()))?;
        Ok(serde_json::from_slice(&std::fs::read(self.0.join(path))?)?)
    }
}

/// The test files of one draft's folder, sorted.
fn suite_files(suite: &Path, folder: &str) -> Vec<PathBuf> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(suite.join("tests").join(folder))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "json"))
        .collect();
    files.sort();
    files
}

fn failures(suite: &Path, folder: &str, draft: Draft) -> (usize, Vec<String>) {
    let (mut cases, mut failed) = (0, Vec::new());
    for file in suite_files(suite, folder) {
        let name = file.file_name().unwrap().to_string_lossy().into_owned();
        let groups: Vec<Value> = serde_json::from_slice(&std::fs::read(&file).unwrap()).unwrap();
        for group in groups {
            let compiled = toolgauge::schema::options(draft)
                .with_retriever(Remotes(suite.join("remotes")))
                .build(&group["schema"]);
            for test in group["tests"].as_array().unwrap() {
                cases += 1;
                let id = format!(
                    "{folder}/{name} | {} | {}",
                    group["description"].as_str().unwrap(),
                    test["description"].as_str().unwrap()
                );
                let passed = match &compiled {
                    Ok(validator) => {
                        validator.is_valid(&test["data"]) == test["valid"].as_bool().unwrap()
                    }
                    Err(_) => false,
                };
                if !passed {
                    failed.push(id);
                }
            }
        }
    }
    (cases, failed)
}

#[test]
fn the_validation_layer_passes_the_json_schema_test_suite() {
    let suite = crate::corpora().join("json-schema-test-suite");
    let listed_text = std::fs::read_to_string(
        Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("tests/data/json-schema-test-suite-expected-failures.txt"),
    )
    .unwrap();
    // `id -- reason` per line; `#` starts a comment.
    let listed: BTreeMap<&str, &str> = listed_text
        .lines()
        .filter(|l| !l.trim().is_empty() && !l.starts_with('#'))
        .map(|l| {
            l.split_once(" -- ")
                .expect("each expected failure gives a reason after ' -- '")
        })
        .collect();
    let mut failed = Vec::new();
    let mut total = 0;
    for (folder, draft) in [
        ("draft7", Draft::Draft7),
        ("draft2020-12", Draft::Draft202012),
    ] {
        let (cases, failures) = failures(&suite, folder, draft);
        total += cases;
        failed.extend(failures);
    }
    assert!(total > 2000, "read {total} test cases");
    let unexpected: Vec<&String> = failed
        .iter()
        .filter(|f| !listed.contains_key(f.as_str()))
        .collect();
    let fixed: Vec<&&str> = listed
        .keys()
        .filter(|l| !failed.iter().any(|f| f == *l))
        .collect();
    assert!(
        unexpected.is_empty(),
        "failures not in the expected list:\n{unexpected:#?}"
    );
    assert!(
        fixed.is_empty(),
        "listed failures that now pass (remove them):\n{fixed:#?}"
    );
}

/// The quick check gives the suite's answer on every test whose schema
/// it takes (and leaves the rest to the general validator).
#[test]
fn the_quick_check_passes_every_suite_test_whose_schema_it_takes() {
    use toolgauge::schema::errors::schema_errors;
    use toolgauge::schema::fast::FastSchema;

    let suite = crate::corpora().join("json-schema-test-suite");
    let (mut taken, mut cases, mut wrong) = (0, 0, Vec::new());
    for (folder, draft) in [
        ("draft7", Draft::Draft7),
        ("draft2020-12", Draft::Draft202012),
    ] {
        for file in suite_files(&suite, folder) {
            let groups: Vec<Value> =
                serde_json::from_slice(&std::fs::read(&file).unwrap()).unwrap();
            for group in groups {
                let Some(quick) = FastSchema::compile(&group["schema"], draft) else {
                    continue;
                };
                let general = toolgauge::schema::options(draft)
                    .build(&group["schema"])
                    .unwrap();
                taken += 1;
                for test in group["tests"].as_array().unwrap() {
                    cases += 1;
                    let data = &test["data"];
                    // The same error lines as the general validator's, worded.
                    let sorted = |errors: Vec<toolgauge::schema::ArgumentError>| {
                        let mut lines: Vec<String> =
                            errors.iter().map(ToString::to_string).collect();
                        lines.sort();
                        lines
                    };
                    assert_eq!(
                        sorted(quick.errors(data)),
                        sorted(schema_errors(general.iter_errors(data))),
                        "{data}"
                    );
                    // A call's arguments, read as they arrived, get the
                    // same answer and the same errors.
                    if let Ok(arguments) = toolgauge::call::Arguments::try_from(data.clone()) {
                        assert_eq!(
                            quick.arguments_are_valid(&arguments),
                            quick.is_valid(data),
                            "{data}"
                        );
                        assert_eq!(
                            sorted(quick.argument_errors(&arguments)),
                            sorted(quick.errors(data)),
                            "{data}"
                        );
                    }
                    if quick.is_valid(data) != test["valid"].as_bool().unwrap() {
                        wrong.push(format!(
                            "{folder}/{} | {} | {}",
                            file.file_name().unwrap().to_string_lossy(),
                            group["description"],
                            test["description"]
                        ));
                    }
                }
            }
        }
    }
    eprintln!("quick check: {taken} groups, {cases} tests");
    assert!(
        taken > 100 && cases > 400,
        "{taken} groups, {cases} tests taken"
    );
    assert!(wrong.is_empty(), "the quick check disagrees:\n{wrong:#?}");
}
