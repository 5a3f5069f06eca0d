//! The front door and the book hold together: every relative link in
//! README.md, ARCHITECTURE.md, reports/README.md and docs/ leads to a file
//! that exists (and a heading, when it names one), every chapter is in the
//! book's SUMMARY.md, every included file exists, README.md stays a
//! front door (at most 150 lines), and every fenced `toolgauge` command
//! that needs only what the repository has runs as written.

use std::path::{Path, PathBuf};

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// The text of `file` outside fenced code blocks.
fn prose(file: &Path) -> String {
    let text = std::fs::read_to_string(file).unwrap();
    let mut fenced = false;
    let mut kept = String::new();
    for line in text.lines() {
        if line.trim_start().starts_with("```") {
            fenced = !fenced;
            continue;
        }
        if !fenced {
            kept.push_str(line);
            kept.push('\n');
        }
    }
    kept
}

/// A heading's anchor as GitHub and mdBook make it.
fn slug(heading: &str) -> String {
    heading
        .trim()
        .to_lowercase()
        .chars()
        .filter(|c| c.is_alphanumeric() || *c == '-' || *c == '_' || *c == ' ')
        .collect::<String>()
        .replace(' ', "-")
}

fn anchors(file: &Path) -> Vec<String> {
    prose(file)
        .lines()
        .filter_map(|l| l.strip_prefix('#'))
        .map(|l| slug(l.trim_start_matches('#')))
        .collect()
}

/// Every `](target)` of the prose.
fn links(text: &str) -> Vec<String> {
    let mut found = Vec::new();
    let mut rest = text;
    while let Some(at) = rest.find("](") {
        rest = &rest[at + 2..];
        if let Some(end) = rest.find(')') {
            found.push(rest[..end].to_owned());
            rest = &rest[end..];
        }
    }
    found
}

fn documents() -> Vec<PathBuf> {
    let mut files = vec![
        root().join("README.md"),
        root().join("ARCHITECTURE.md"),
        root().join("reports/README.md"),
    ];
    let mut chapters: Vec<PathBuf> = std::fs::read_dir(root().join("docs"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "md"))
        .collect();
    chapters.sort();
    files.extend(chapters);
    files
}

#[test]
fn every_link_in_the_readme_and_the_book_leads_somewhere() {
    let mut broken = Vec::new();
    for file in documents() {
        let dir = file.parent().unwrap();
        let text = prose(&file);
        for link in links(&text) {
            if link.starts_with("http://")
                || link.starts_with("https://")
                || link.starts_with("mailto:")
            {
                continue;
            }
            let (path, anchor) = link.split_once('#').unwrap_or((&link, ""));
            let target = if path.is_empty() {
                file.clone()
            } else {
                dir.join(path)
            };
            if !target.exists() {
                broken.push(format!("{}: {link}: no such file", file.display()));
                continue;
            }
            if !anchor.is_empty() && !anchors(&target).iter().any(|a| a == anchor) {
                broken.push(format!("{}: {link}: no such heading", file.display()));
            }
        }
        for line in text.lines() {
            if let Some(included) = line.trim().strip_prefix("{{#include ")
                && let Some(path) = included.strip_suffix("}}")
                && !dir.join(path.trim()).is_file()
            {
                broken.push(format!(
                    "{}: includes {path}, which does not exist",
                    file.display()
                ));
            }
        }
    }
    assert!(broken.is_empty(), "broken links:\n{}", broken.join("\n"));
}

#[test]
fn every_chapter_is_in_the_book_and_the_readme_stays_short() {
    let summary = std::fs::read_to_string(root().join("docs/SUMMARY.md")).unwrap();
    for chapter in documents()
        .iter()
        .filter(|p| p.starts_with(root().join("docs")))
    {
        let name = chapter.file_name().unwrap().to_str().unwrap();
        if name != "SUMMARY.md" {
            assert!(
                summary.contains(&format!("]({name})")),
                "{name} is not in SUMMARY.md"
            );
        }
    }
    let readme = std::fs::read_to_string(root().join("README.md")).unwrap();
    assert!(
        readme.lines().count() <= 150,
        "README.md has {} lines",
        readme.lines().count()
    );
}

/// The fenced `json` blocks of the book's chapters.
fn json_blocks() -> Vec<(PathBuf, String)> {
    let mut blocks = Vec::new();
    for file in documents()
        .into_iter()
        .filter(|p| p.starts_with(root().join("docs")))
    {
        let text = std::fs::read_to_string(&file).unwrap();
        let mut current: Option<String> = None;
        for line in text.lines() {
            match (&mut current, line.trim_start()) {
                (None, "```json") => current = Some(String::new()),
                (Some(_), "```") => blocks.push((file.clone(), current.take().unwrap())),
                (Some(block), _) => {
                    block.push_str(line);
                    block.push('\n');
                }
                (None, _) => {}
            }
        }
    }
    blocks
}

/// Every whole scenario the book shows loads and runs on a mock model,
/// every live model file it shows is one toolgauge accepts: examples a
/// reader copies work.
#[test]
fn every_scenario_in_the_book_runs_and_every_model_file_loads() {
    let (mut scenarios, mut models) = (0, 0);
    for (file, block) in json_blocks() {
        let Ok(value) = serde_json::from_str::<serde_json::Value>(&block) else {
            continue;
        };
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("example.json");
        std::fs::write(&path, &block).unwrap();
        if value.get("expect").is_some() || value.get("task").is_some() {
            toolgauge::scenario::load_scenario(
                &path,
                dir.path(),
                &toolgauge::tool::mcp::ToolServers::new(),
            )
            .unwrap_or_else(|e| panic!("{}: a scenario that does not load: {e}", file.display()));
            // And it runs: a mock model measures it end to end.
            let out = dir.path().join("out");
            let output = crate::toolgauge(&[
                "run",
                path.to_str().unwrap(),
                "--models",
                "scenarios/models/reference.json",
                "--trials",
                "1",
                "--quiet",
                "--out",
                out.to_str().unwrap(),
            ]);
            let trials = std::fs::read_to_string(out.join("trials.csv")).unwrap_or_default();
            assert!(
                matches!(output.status.code(), Some(0 | 1)) && trials.lines().count() > 1,
                "{}: a scenario that does not run: {}",
                file.display(),
                String::from_utf8_lossy(&output.stderr)
            );
            scenarios += 1;
        } else if value.get("api").is_some() {
            toolgauge::model::ModelFile::load(&path).unwrap_or_else(|e| {
                panic!("{}: a model file that does not load: {e}", file.display())
            });
            models += 1;
        }
    }
    assert!(
        scenarios >= 1 && models >= 1,
        "{scenarios} scenario(s), {models} model file(s)"
    );
}

/// The book's `toolgauge` commands as written: each line of a fenced
/// shell block that starts with `toolgauge` (continued over lines that
/// end in `\`), in order, with the file and line it is at.
fn fenced_commands(file: &Path) -> Vec<(usize, String)> {
    let text = std::fs::read_to_string(file).unwrap();
    let (mut fenced, mut shell) = (false, false);
    let mut commands: Vec<(usize, String)> = Vec::new();
    let mut continued = false;
    for (n, line) in text.lines().enumerate() {
        if let Some(lang) = line.trim_start().strip_prefix("```") {
            fenced = !fenced;
            shell = fenced && matches!(lang.trim(), "sh" | "bash" | "");
            continue;
        }
        if !shell {
            continue;
        }
        let code = line.trim();
        if continued {
            let last = commands.last_mut().expect("a command is continued");
            last.1.push(' ');
            last.1.push_str(code.trim_end_matches('\\'));
        } else if code.starts_with("toolgauge ") {
            commands.push((n + 1, code.trim_end_matches('\\').to_owned()));
        } else {
            continue;
        }
        continued = code.ends_with('\\');
    }
    commands
}

/// Why a command of the book needs more than the repository has, if it
/// does: a synopsis with placeholders, a live model, a server, a key.
fn needs_more(command: &str) -> Option<&'static str> {
    let code = command.split(" #").next().unwrap_or(command);
    let placeholder = code.split_whitespace().any(|word| {
        word.contains('[')
            || word.contains("...")
            || word.contains('|')
            || word.chars().filter(char::is_ascii_uppercase).count() >= 3
    });
    if placeholder {
        Some("a synopsis: its words are placeholders")
    } else if code.contains("live-models/") || code.contains("my-models/") {
        Some("a live model's server or key")
    } else if code.contains("mcp:node") {
        Some("Node and a server of your own")
    } else if code.contains("tau2/") {
        Some("tau2's Python package (docs/tau2.md)")
    } else {
        None
    }
}

/// Every fenced `toolgauge` command of README.md and the book that needs
/// only what the repository has runs as written: no usage error, no bad
/// input (exit 2). The `mcp:` commands failed as written, and the tour
/// named a model file it never showed.
#[test]
fn the_books_commands_run_as_written() {
    let bin = Path::new(env!("CARGO_BIN_EXE_toolgauge"))
        .parent()
        .unwrap()
        .to_owned();
    let path = format!(
        "{}:{}",
        bin.display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let mut ran = 0;
    for document in documents() {
        // Each document's commands in one folder, in order: a baseline
        // made by one is compared by the next.
        let dir = tempfile::tempdir().unwrap();
        std::os::unix::fs::symlink(root().join("scenarios"), dir.path().join("scenarios")).unwrap();
        for (line, command) in fenced_commands(&document) {
            let at = format!("{}:{line}", document.display());
            // A server's command is one argument: the shell splits it
            // otherwise, and the source is the program alone.
            let code = command.split(" #").next().unwrap_or(&command);
            let unquoted = code
                .split_whitespace()
                .any(|w| w.starts_with("mcp:") && !w.starts_with("mcp:http"));
            assert!(!unquoted, "{at}: quote the mcp: source: {command}");
            if let Some(why) = needs_more(&command) {
                println!("not run, needs {why}: {at}: {command}");
                continue;
            }
            let output = std::process::Command::new("sh")
                .args(["-c", &command])
                .env("PATH", &path)
                .current_dir(dir.path())
                .output()
                .unwrap();
            let said = String::from_utf8_lossy(&output.stderr);
            assert!(
                matches!(output.status.code(), Some(0 | 1)),
                "{at}: {command}\nexit {:?}: {said}",
                output.status.code()
            );
            ran += 1;
        }
    }
    assert!(ran >= 8, "only {ran} of the book's commands ran");
}
