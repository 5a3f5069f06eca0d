//! The validation layer against the JSON Schema Test Suite in
//! ../shared/corpora (draft 7 and draft 2020-12, the required tests).
//! Tests known to fail are listed, each with its reason, in
//! tests/data/json-schema-test-suite-expected-failures.txt; the list must
//! match exactly, so it cannot hide a new failure or outlive a fix.
//! Schemas compile exactly as tool schemas do (`tool::schema_options`).

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

fn failures(suite: &Path, folder: &str, draft: Draft) -> (usize, Vec<String>) {
    let mut files: Vec<PathBuf> = std::fs::read_dir(suite.join("tests").join(folder))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "json"))
        .collect();
    files.sort();
    let (mut cases, mut failed) = (0, Vec::new());
    for file in files {
        let name = file.file_name().unwrap().to_string_lossy().into_owned();
        let groups: Vec<Value> = serde_json::from_slice(&std::fs::read(&file).unwrap()).unwrap();
        for group in groups {
            let compiled = toolgauge::tool::schema_options(draft)
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
