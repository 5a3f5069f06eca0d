//! The sharding examples in docs/examples run as written: the GitHub
//! Actions matrix and the Kubernetes Indexed Job each give, once merged,
//! the files of one run, byte for byte.

use std::path::Path;
use std::process::Command;

use crate::assert_success;
use crate::run::{FILES, read};

fn example(name: &str) -> String {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("docs/examples")
        .join(name);
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// Run toolgauge with `args`, `env` set, from the repository's root.
fn toolgauge(args: &[String], env: &[(&str, String)]) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_toolgauge"))
        .args(args)
        .env_remove("JOB_COMPLETION_INDEX")
        .envs(env.iter().map(|(k, v)| (*k, v.as_str())))
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output()
        .unwrap()
}

/// A command line's words after `toolgauge`, its folders moved under `dir`.
fn words(line: &str, folders: &[&str], dir: &Path) -> Vec<String> {
    let line = line.trim().trim_start_matches("- run:").trim();
    let line = line
        .strip_prefix("toolgauge ")
        .expect("a toolgauge command");
    line.split_whitespace()
        .map(|word| moved(word, folders, dir))
        .collect()
}

fn moved(word: &str, folders: &[&str], dir: &Path) -> String {
    match folders.iter().find(|f| word.starts_with(*f)) {
        Some(_) => dir
            .join(word.trim_start_matches('/'))
            .to_string_lossy()
            .into_owned(),
        None => word.to_owned(),
    }
}

/// The files of one run of the examples' suite, beside the merged ones.
fn assert_merge_is_one_run(dir: &Path, merged: &Path) {
    let one = dir.join("one");
    let args: Vec<String> = [
        "run",
        "scenarios/starter",
        "--trials",
        "6",
        "--seed",
        "11",
        "--quiet",
        "--out",
        one.to_str().unwrap(),
    ]
    .map(str::to_owned)
    .to_vec();
    assert_success(&toolgauge(&args, &[]));
    for file in FILES {
        assert_eq!(read(&one, file), read(merged, file), "{file} differs");
    }
}

#[test]
fn the_github_actions_matrix_example_merges_into_one_run() {
    let text = example("shards-github-actions.yml");
    let matrix: Vec<String> = text
        .lines()
        .find_map(|l| l.trim().strip_prefix("shard: ["))
        .expect("the matrix")
        .trim_end_matches(']')
        .split(',')
        .map(|v| v.trim().to_owned())
        .collect();
    assert_eq!(matrix, ["1", "2", "3", "4"]);
    let run = text
        .lines()
        .find(|l| l.contains("- run: toolgauge run"))
        .expect("the shard's command");
    let merge = text
        .lines()
        .find(|l| l.contains("- run: toolgauge report merge"))
        .expect("the merge's command");
    let dir = tempfile::tempdir().unwrap();
    let folders = ["shards/", "reports/"];
    for shard in &matrix {
        let line = run.replace("${{ matrix.shard }}", shard);
        assert_success(&toolgauge(&words(&line, &folders, dir.path()), &[]));
    }
    assert_success(&toolgauge(&words(merge, &folders, dir.path()), &[]));
    assert_merge_is_one_run(dir.path(), &dir.path().join("reports/merged"));
}

/// A Job's container command, as its JSON-like flow sequence.
fn command(document: &str) -> Vec<String> {
    let line = document
        .lines()
        .find_map(|l| l.trim().strip_prefix("command: "))
        .expect("a container command");
    serde_json::from_str(line).expect("the command is a flow sequence of strings")
}

#[test]
fn the_kubernetes_indexed_job_example_merges_into_one_run() {
    let text = example("shards-kubernetes.yaml");
    let jobs: Vec<&str> = text.split("\n---\n").collect();
    assert_eq!(jobs.len(), 2);
    assert!(jobs[0].contains("completionMode: Indexed"));
    let completions: u32 = jobs[0]
        .lines()
        .find_map(|l| l.trim().strip_prefix("completions: "))
        .expect("completions")
        .parse()
        .unwrap();
    assert_eq!(completions, 4);
    let dir = tempfile::tempdir().unwrap();
    let in_dir = |words: Vec<String>| -> Vec<String> {
        assert_eq!(words[0], "toolgauge");
        words[1..]
            .iter()
            .map(|w| moved(w, &["/shards"], dir.path()))
            .collect()
    };
    for index in 0..completions {
        // Kubernetes expands $(VAR) in a command from the container's env.
        let words = command(jobs[0])
            .into_iter()
            .map(|w| w.replace("$(JOB_COMPLETION_INDEX)", &index.to_string()))
            .collect();
        let env = [("JOB_COMPLETION_INDEX", index.to_string())];
        assert_success(&toolgauge(&in_dir(words), &env));
    }
    assert_success(&toolgauge(&in_dir(command(jobs[1])), &[]));
    assert_merge_is_one_run(dir.path(), &dir.path().join("shards/merged"));
}

#[test]
fn auto_shards_without_an_index_are_refused_by_name() {
    let args: Vec<String> = ["run", "scenarios/starter", "--shard", "auto/4"]
        .map(str::to_owned)
        .to_vec();
    let output = toolgauge(&args, &[]);
    assert_eq!(output.status.code(), Some(2));
    let said = String::from_utf8_lossy(&output.stderr);
    assert!(
        said.contains("JOB_COMPLETION_INDEX") && said.contains("not set"),
        "{said}"
    );
    let output = toolgauge(&args, &[("JOB_COMPLETION_INDEX", "4".to_owned())]);
    assert_eq!(output.status.code(), Some(2));
    let said = String::from_utf8_lossy(&output.stderr);
    assert!(said.contains("K must be between 1 and N"), "{said}");
}
