//! Loading scenario files: JSON syntax, then the published JSON Schema,
//! then the typed format, then the checks that need the tools (expected
//! calls name real tools, and their example arguments validate). Every
//! error names the file, line, column and JSON pointer.

use std::path::{Path, PathBuf};
use std::sync::{Arc, OnceLock};

use jsonschema::Validator;
use serde_json::Value;

use super::compile;
use super::{DEFAULT_MAX_RETRIES, Scenario, ScenarioFile, ToolEntry};
use crate::pointer::{Located, Pointer};
use crate::source::locate;
use crate::source::{self, FileError};
use crate::tool::mcp::ToolServers;
use crate::tool::{Sandbox, Store, ToolDef, ToolEnv};

/// The published JSON Schema of scenario files.
pub const SCENARIO_SCHEMA: &str = include_str!("../../scenarios/scenario.schema.json");

/// Folders of a suite that hold other things than scenarios.
const NOT_SCENARIO_DIRS: [&str; 2] = ["models", "examples"];

/// A scenario file that cannot be used.
#[derive(Debug, thiserror::Error)]
pub enum LoadError {
    #[error(transparent)]
    File(#[from] FileError),
    #[error("{}:{line}:{column}: {}: {message}", path.display(), if pointer.is_root() { "/" } else { pointer.as_str() })]
    Invalid {
        path: PathBuf,
        line: usize,
        column: usize,
        pointer: Pointer,
        message: String,
    },
    #[error("{}: {message}", path.display())]
    Suite { path: PathBuf, message: String },
    /// An MCP server's program that is not installed here: a scenario
    /// found in a folder is passed over with this as its warning.
    #[error("{}: {}: the program {program:?} is not found (no such file, not on PATH, not beside toolgauge){hint}", path.display(), pointer.as_str())]
    ProgramMissing {
        path: PathBuf,
        pointer: Pointer,
        program: String,
        hint: &'static str,
    },
}

fn schema_validator() -> &'static Validator {
    static VALIDATOR: OnceLock<Validator> = OnceLock::new();
    VALIDATOR.get_or_init(|| {
        let schema: Value =
            serde_json::from_str(SCENARIO_SCHEMA).expect("the scenario schema is JSON");
        jsonschema::validator_for(&schema).expect("the scenario schema compiles")
    })
}

/// The published schema's branch `name` of `$defs` (an inline tool, an
/// MCP entry) on its own, for errors that name the field.
fn branch_validator(name: &str) -> &'static Validator {
    static BRANCHES: OnceLock<[(String, Validator); 2]> = OnceLock::new();
    let branches = BRANCHES.get_or_init(|| {
        let schema: Value =
            serde_json::from_str(SCENARIO_SCHEMA).expect("the scenario schema is JSON");
        ["tool", "mcp_tools"].map(|branch| {
            let mut one = schema.clone();
            one.as_object_mut()
                .expect("the schema is an object")
                .retain(|key, _| key == "$defs" || key == "$schema");
            one["$ref"] = Value::String(format!("#/$defs/{branch}"));
            let validator = jsonschema::validator_for(&one).expect("a branch compiles");
            (branch.to_owned(), validator)
        })
    });
    &branches
        .iter()
        .find(|(branch, _)| branch == name)
        .expect("a known branch")
        .1
}

/// A loaded suite, and the paths under it that were passed over.
#[derive(Debug)]
pub struct Suite {
    pub scenarios: Vec<Scenario>,
    pub skipped: Vec<Skipped>,
}

/// A path in a suite folder that is not read, and why: a symlink loop, a
/// FIFO or device named `*.json`, an unreadable entry.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{}: skipped: {why}", path.display())]
pub struct Skipped {
    pub path: PathBuf,
    pub why: String,
}

/// Every scenario file under `dir` (recursively, sorted by path, skipping
/// `models/`, `examples/` and `*.schema.json`), loaded. All bad files are
/// reported, not just the first.
pub fn load_suite(
    dir: &Path,
    sandbox_root: &Path,
    servers: &ToolServers,
) -> Result<Suite, Vec<LoadError>> {
    load_suites(&[dir.to_owned()], sandbox_root, servers)
}

/// Several suites as one, in the order given: scenario names must be
/// unique across them. MCP servers are started by `servers`, which owns
/// them.
pub fn load_suites(
    dirs: &[PathBuf],
    sandbox_root: &Path,
    servers: &ToolServers,
) -> Result<Suite, Vec<LoadError>> {
    let mut files = Vec::new();
    let mut skipped = Vec::new();
    // Scenario files given by name, not found in a folder.
    let named: Vec<PathBuf> = dirs.iter().filter(|d| d.is_file()).cloned().collect();
    refuse_a_suite_given_twice(dirs)?;
    for dir in dirs {
        let (found, passed_over) = if dir.is_file() {
            (vec![dir.to_owned()], Vec::new())
        } else {
            suite_files(dir).map_err(|error| vec![error])?
        };
        if found.is_empty() {
            return Err(vec![LoadError::Suite {
                path: dir.to_owned(),
                message: "no scenario files (*.json) found".to_owned(),
            }]);
        }
        files.extend(found);
        skipped.extend(passed_over);
    }
    let mut scenarios: Vec<Scenario> = Vec::new();
    let mut errors = Vec::new();
    for file in files {
        match load_scenario(&file, sandbox_root, servers) {
            // Found in a folder: the rest of the suite still runs, and the
            // warning says how to install what it needs.
            Err(missing @ LoadError::ProgramMissing { .. }) if !named.contains(&file) => {
                let said = missing.to_string();
                let prefix = format!("{}: ", file.display());
                skipped.push(Skipped {
                    path: file.clone(),
                    why: said.strip_prefix(&prefix).unwrap_or(&said).to_owned(),
                });
            }
            Ok(scenario) => {
                if let Some(other) = scenarios.iter().find(|s| s.name == scenario.name) {
                    errors.push(LoadError::Suite {
                        path: file.clone(),
                        message: format!(
                            "scenario name {:?} is already used by {}",
                            scenario.name,
                            other.path.display()
                        ),
                    });
                } else {
                    scenarios.push(scenario);
                }
            }
            Err(error) => errors.push(error),
        }
    }
    if !errors.is_empty() {
        return Err(errors);
    }
    let scenarios = super::order::prerequisites_first(scenarios).map_err(|e| {
        vec![LoadError::Suite {
            path: e.path,
            message: e.message,
        }]
    })?;
    Ok(Suite { scenarios, skipped })
}

/// The scenario's own sandbox, made when it has files or a built-in tool
/// that works in one.
fn sandbox_of(file: &ScenarioFile, sandbox_root: &Path) -> Result<Option<PathBuf>, Located> {
    let needs_sandbox = !file.files.is_empty()
        || file.tools.iter().any(
            |t| matches!(t, ToolEntry::Builtin(name) if crate::tool::builtin_needs_sandbox(name)),
        );
    needs_sandbox
        .then(|| make_sandbox(sandbox_root, file))
        .transpose()
}

/// The same suite twice would run each scenario twice under one name.
fn refuse_a_suite_given_twice(dirs: &[PathBuf]) -> Result<(), Vec<LoadError>> {
    let canonical: Vec<Option<PathBuf>> = dirs.iter().map(|d| d.canonicalize().ok()).collect();
    for (i, dir) in dirs.iter().enumerate() {
        if let Some(Some(earlier)) = canonical[..i]
            .iter()
            .find(|c| c.is_some() && **c == canonical[i])
        {
            return Err(vec![LoadError::Suite {
                path: dir.to_owned(),
                message: format!("is given twice (as {})", earlier.display()),
            }]);
        }
    }
    Ok(())
}

/// The scenario files under `dir`, sorted by path. Links are followed,
/// and a link back to a folder above it is a loop, skipped; only regular
/// files are read (a FIFO would block the run forever).
fn suite_files(dir: &Path) -> Result<(Vec<PathBuf>, Vec<Skipped>), LoadError> {
    if !dir.is_dir() {
        let message = match std::fs::metadata(dir) {
            Err(_) => "no such file or folder".to_owned(),
            // A device or a FIFO: neither a suite folder nor a file to read.
            Ok(_) => "not a suite folder nor a scenario file (a device or a FIFO?); give a folder of scenario files or a scenario file".to_owned(),
        };
        return Err(LoadError::Suite {
            path: dir.to_owned(),
            message,
        });
    }
    let mut files = Vec::new();
    let mut skipped = Vec::new();
    let walk = walkdir::WalkDir::new(dir)
        .follow_links(true)
        .sort_by_file_name()
        .into_iter()
        .filter_entry(|entry| {
            entry.depth() == 0
                || !entry.file_type().is_dir()
                || !entry
                    .file_name()
                    .to_str()
                    .is_some_and(|name| NOT_SCENARIO_DIRS.contains(&name))
        });
    for entry in walk {
        let entry = match entry {
            Ok(entry) => entry,
            Err(error) => {
                let path = error.path().unwrap_or(dir).to_owned();
                let why = match error.loop_ancestor() {
                    Some(ancestor) => format!("a link loop back to {}", ancestor.display()),
                    None => error
                        .io_error()
                        .map_or_else(|| error.to_string(), ToString::to_string),
                };
                skipped.push(Skipped { path, why });
                continue;
            }
        };
        let name = entry.file_name().to_str().unwrap_or_default();
        if !name.ends_with(".json") || name.ends_with(".schema.json") {
            continue;
        }
        let kind = entry.file_type();
        if kind.is_file() {
            files.push(entry.into_path());
        } else if !kind.is_dir() {
            skipped.push(Skipped {
                path: entry.into_path(),
                why: "not a regular file (a FIFO, socket or device)".to_owned(),
            });
        }
    }
    Ok((files, skipped))
}

/// Load one scenario file. A scenario with file tools gets a sandbox
/// directory under `sandbox_root`, filled with its `files`.
pub fn load_scenario(
    path: &Path,
    sandbox_root: &Path,
    servers: &ToolServers,
) -> Result<Scenario, LoadError> {
    let bytes = crate::source::read_input(path).map_err(|source| FileError::Read {
        path: path.to_owned(),
        source,
    })?;
    let text = String::from_utf8_lossy(&bytes);
    let invalid = |problem: Located| {
        let (line, column) = locate(&text, problem.pointer.as_str());
        LoadError::Invalid {
            path: path.to_owned(),
            line,
            column,
            pointer: problem.pointer,
            message: problem.message,
        }
    };
    let file = read_file(path, &bytes, &invalid)?;
    let sandbox_dir = sandbox_of(&file, sandbox_root).map_err(&invalid)?;
    let store = Store::seeded(&file.state).map_err(|e| {
        invalid(Located::new(
            Pointer::root().key("state").join(&e.pointer),
            e.problem,
        ))
    })?;
    // Commands (of tools and MCP servers) run in the scenario's folder.
    let folder = std::path::absolute(path.parent().unwrap_or(Path::new(".")))
        .unwrap_or_else(|_| PathBuf::from("."));
    missing_program(path, &file, &folder)?;
    let env = ToolEnv {
        sandbox: sandbox_dir
            .as_deref()
            .map(Sandbox::new)
            .transpose()
            .map_err(|e| {
                invalid(located_at(
                    "/files",
                    format!("cannot open the sandbox: {e}"),
                ))
            })?,
        store,
        base_dir: Some(folder.clone()),
    };
    let (registry, opening) = compile::tools(&file, env, &folder, servers).map_err(&invalid)?;
    let prompt = compile::prompt(&file, opening).map_err(&invalid)?;
    let (expectation, task) =
        compile::success(&file, &registry, sandbox_dir.as_ref(), &prompt).map_err(&invalid)?;
    Ok(Scenario {
        name: file.name,
        description: file.description,
        tags: file.tags,
        path: path.to_owned(),
        registry: Arc::new(registry),
        prompt,
        expectation,
        task,
        max_retries: file.max_retries.unwrap_or(DEFAULT_MAX_RETRIES),
        min_success: file.min_success,
        script: file.script,
        after: file.after,
        sandbox: sandbox_dir,
        digest: super::fnv1a(super::FNV_OFFSET, &bytes),
    })
}

/// The first MCP server of `file` whose program is not installed here.
fn missing_program(path: &Path, file: &ScenarioFile, folder: &Path) -> Result<(), LoadError> {
    for (i, tool) in file.tools.iter().enumerate() {
        let ToolEntry::Mcp(entry) = tool else {
            continue;
        };
        let Some(program) = entry.mcp.command.first() else {
            continue;
        };
        if crate::tool::program_exists(&crate::tool::resolve_program(program, folder)) {
            continue;
        }
        return Err(LoadError::ProgramMissing {
            path: path.to_owned(),
            pointer: Pointer::root()
                .key("tools")
                .index(i)
                .key("mcp")
                .key("command")
                .index(0),
            program: program.clone(),
            hint: if program == "mcp_test_server" {
                "; it is toolgauge's own test server: build it with `cargo build --release --example mcp_test_server`"
            } else {
                ""
            },
        });
    }
    Ok(())
}

/// The file's JSON, checked against the published schema, then read into
/// its typed form; `invalid` places a problem in the file.
fn read_file(
    path: &Path,
    bytes: &[u8],
    invalid: &dyn Fn(Located) -> LoadError,
) -> Result<ScenarioFile, LoadError> {
    let value: Value = source::parse_json(path, bytes)?;
    // An inline tool is one branch of an `anyOf` (an untagged enum), whose
    // error only says "not valid under any of the schemas": when the error
    // is a whole tool, read it the way `check-tools` does, for the precise
    // pointer and message.
    let tool_error = |pointer: &str| {
        let i: usize = pointer.strip_prefix("/tools/")?.parse().ok()?;
        let tool = value.get("tools")?.get(i).filter(|t| t.is_object())?;
        let branch = if tool.get("mcp").is_some() {
            "mcp_tools"
        } else {
            "tool"
        };
        let typed = if branch == "mcp_tools" {
            source::from_value::<super::McpEntry>(tool).err()
        } else {
            source::from_value::<ToolDef>(tool).err()
        };
        // Read as its type, or else checked against its own branch of the
        // schema: either names the field.
        let problem = typed.or_else(|| {
            let error = branch_validator(branch).iter_errors(tool).next()?;
            Some(located_at(
                &error.instance_path().to_string(),
                crate::schema::errors::message(&error),
            ))
        })?;
        Some(problem.under(&Pointer::root().key("tools").index(i)))
    };
    if let Some(error) = schema_validator().iter_errors(&value).next() {
        let pointer = error.instance_path().to_string();
        let message = crate::schema::errors::message(&error);
        // The expect block's branches differ by which key is set: say so.
        if pointer == "/expect" && message.contains("'oneOf'") {
            return Err(invalid(located_at(
                &pointer,
                "give exactly one of \"calls\" (at least one call), \"no_call\": true or \"any_call\": true",
            )));
        }
        return Err(invalid(
            tool_error(&pointer).unwrap_or_else(|| located_at(&pointer, message)),
        ));
    }
    source::from_value(&value)
        .map_err(|problem| invalid(tool_error(problem.pointer.as_str()).unwrap_or(problem)))
}

fn located_at(pointer: &str, message: impl Into<String>) -> Located {
    Located::new(Pointer::at(pointer), message)
}

/// Create the scenario's sandbox and write its files, refusing any file
/// path that would land outside it.
fn make_sandbox(root: &Path, file: &ScenarioFile) -> Result<PathBuf, Located> {
    let files = Pointer::root().key("files");
    let dir = root.join(&file.name);
    let cannot = |e: std::io::Error| {
        Located::new(
            files.clone(),
            format!("cannot create {}: {e}", dir.display()),
        )
    };
    std::fs::create_dir_all(&dir).map_err(cannot)?;
    let sandbox = Sandbox::new(&dir).map_err(cannot)?;
    for (name, content) in &file.files {
        let at = files.clone().key(name);
        let path = sandbox
            .resolve(name)
            .map_err(|f| Located::new(at.clone(), format!("file {name:?}: {}", f.message)))?;
        if path == sandbox.root() {
            return Err(Located::new(
                at,
                format!(
                    "{name:?} names the sandbox itself, not a file; give a path such as \"notes.txt\""
                ),
            ));
        }
        // A file given as another's folder ("a" and "a/b") cannot be both.
        if let Some(folder) = file.files.keys().find(|other| {
            other.as_str() != name && Path::new(name).starts_with(Path::new(other.as_str()))
        }) {
            return Err(Located::new(
                at,
                format!(
                    "{name:?} needs {folder:?} to be a folder, and {folder:?} is given as a file"
                ),
            ));
        }
        if let Some(parent) = path.parent() {
            std::fs::create_dir_all(parent).map_err(|e| {
                Located::new(
                    at.clone(),
                    format!("cannot make the folder of {name:?}: {e}"),
                )
            })?;
        }
        std::fs::write(&path, content)
            .map_err(|e| Located::new(at.clone(), format!("cannot write {name:?}: {e}")))?;
    }
    Ok(sandbox.root().to_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn load(text: &str) -> Result<Scenario, LoadError> {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("s.json");
        std::fs::write(&path, text).unwrap();
        load_scenario(
            &path,
            &dir.path().join("sandboxes"),
            &crate::tool::mcp::ToolServers::new(),
        )
    }

    fn message(text: &str) -> String {
        let error = load(text).unwrap_err().to_string();
        // Drop the temporary directory from the message.
        error[error.find("s.json").unwrap()..].to_owned()
    }

    #[test]
    fn a_good_scenario_loads() {
        let scenario = load(r#"{
            "name": "add", "tools": ["math"], "prompt": "1+2?",
            "expect": {"calls": [{"name": "math", "arguments": {"operation": "add", "a": 1, "b": 2}}]}
        }"#)
        .unwrap();
        assert_eq!(scenario.max_retries, 3);
        assert_eq!(scenario.expectation.expected_calls().len(), 1);
    }

    #[test]
    fn errors_name_line_column_and_pointer() {
        assert_eq!(
            message(
                "{\n  \"name\": \"x\", \"tools\": [\"math\"], \"prompt\": \"p\",\n  \"expect\": {\"calls\": [{\"name\": \"math\", \"argumnts\": {}}]}\n}"
            ),
            "s.json:3:24: /expect/calls/0: Additional properties are not allowed ('argumnts' was unexpected)"
        );
        assert_eq!(
            message(
                "{\"name\": \"x\", \"tools\": [\"math\"], \"prompt\": \"p\",\n \"expect\": {\"calls\": [{\"name\": \"maths\"}]}}"
            ),
            "s.json:2:32: /expect/calls/0/name: no tool named \"maths\" in this scenario's tools"
        );
        assert_eq!(
            message(
                "{\"name\": \"x\", \"tools\": [\"math\"], \"prompt\": \"p\",\n \"expect\": {\"calls\": [{\"name\": \"math\", \"arguments\": {\"operation\": \"pow\", \"a\": 1, \"b\": 2}}]}}"
            ),
            "s.json:2:53: /expect/calls/0/arguments: the correct call must pass its tool's schema, but /operation: must be one of \"add\", \"subtract\", \"multiply\", \"divide\""
        );
        assert!(message("{\"name\": \"x\", \"tools\": [\"mth\"], \"prompt\": \"p\", \"expect\": {\"no_call\": true}}")
            .starts_with("s.json:1:25: /tools/0: unknown built-in tool \"mth\""));
    }

    #[test]
    fn a_mistake_inside_an_inline_tool_has_its_precise_pointer() {
        let tool = |extra: &str| {
            format!(
                r#"{{"name": "x", "prompt": "p", "expect": {{"no_call": true}},
"tools": ["math", {{"name": "t", "description": "d", "parameters": {{"type": "object"}}{extra}}}]}}"#
            )
        };
        assert_eq!(
            message(&tool(r#", "effect": "wirte""#)),
            "s.json:2:97: /tools/1/effect: unknown variant `wirte`, expected `read` or `write`"
        );
        assert_eq!(
            message(&tool(r#", "timeout_ms": "100""#)),
            "s.json:2:101: /tools/1/timeout_ms: invalid type: string \"100\", expected a whole number >= 0"
        );
        assert!(
            message(&tool(r#", "simulat": {}"#))
                .starts_with("s.json:2:98: /tools/1/simulat: unknown field `simulat`"),
        );
        // A check of check-tools (not of the shape) names its place too.
        let bad_name = r#"{"name": "x", "prompt": "p", "expect": {"no_call": true},
"tools": ["math", {"name": "t 1", "description": "d", "parameters": {"type": "object"}}]}"#;
        assert_eq!(
            message(bad_name),
            "s.json:2:28: /tools/1/name: name \"t 1\" contains ' '; use only letters, digits, _ and -"
        );
    }

    #[cfg(unix)]
    #[test]
    fn a_link_loop_or_a_fifo_in_a_suite_is_skipped_and_named_not_a_hang() {
        let dir = tempfile::tempdir().unwrap();
        let suite = dir.path().join("suite");
        std::fs::create_dir_all(suite.join("nested")).unwrap();
        std::fs::write(
            suite.join("nested/good.json"),
            r#"{"name": "good", "tools": ["math"], "prompt": "p", "expect": {"no_call": true}}"#,
        )
        .unwrap();
        std::os::unix::fs::symlink(&suite, suite.join("nested/loop")).unwrap();
        let fifo = suite.join("pipe.json");
        let made = std::process::Command::new("mkfifo")
            .arg(&fifo)
            .status()
            .unwrap();
        assert!(made.success());

        // The bug was a hang: load on a thread and give up on it if it does.
        let (done, result) = std::sync::mpsc::channel();
        let sandboxes = dir.path().join("sandboxes");
        let root = suite.clone();
        std::thread::spawn(move || {
            done.send(
                load_suite(&root, &sandboxes, &crate::tool::mcp::ToolServers::new())
                    .map_err(|e| e.len()),
            )
        });
        let loaded = result
            .recv_timeout(std::time::Duration::from_secs(60))
            .expect("loading the suite hung")
            .expect("the good scenario loads");
        let names: Vec<&str> = loaded.scenarios.iter().map(|s| s.name.as_str()).collect();
        assert_eq!(names, ["good"]);
        let skipped: Vec<String> = loaded.skipped.iter().map(ToString::to_string).collect();
        assert_eq!(skipped.len(), 2, "{skipped:?}");
        assert!(
            skipped
                .iter()
                .any(|s| s.contains("nested/loop") && s.contains("link loop")),
            "{skipped:?}"
        );
        assert!(
            skipped
                .iter()
                .any(|s| s.contains("pipe.json") && s.contains("not a regular file")),
            "{skipped:?}"
        );
    }

    #[test]
    fn scenario_files_cannot_write_outside_their_sandbox() {
        let text = r#"{"name": "x", "tools": ["read_file"], "prompt": "p", "files": {"../escape.txt": "x"},
                       "expect": {"no_call": true}}"#;
        assert!(message(text).contains("file \"../escape.txt\": path blocked"));
    }

    #[test]
    fn task_problems_are_located_in_the_file() {
        let task = |block: &str| {
            format!(
                "{{\"name\": \"t\", \"tools\": [\"store_get\", \"store_find\"], \"prompt\": \"p\",\n\"task\": {block}}}"
            )
        };
        assert_eq!(
            message(&task(r#"{"milestones": [{"name": "store_nope"}]}"#)),
            "s.json:2:34: /task/milestones/0/name: no tool named \"store_nope\" in this scenario's tools"
        );
        assert_eq!(
            message(&task(
                r#"{"milestones": [{"name": "store_get", "arguments": {"collection": "c", "id": "x"}, "after": "nope"}]}"#
            )),
            "s.json:2:101: /task/milestones/0/after: no earlier milestone has the id \"nope\""
        );
        assert!(
            message(&task(
                r#"{"milestones": [{"name": "store_get", "arguments": {"collection": "c", "id": 7}}]}"#
            ))
            .contains("/task/milestones/0/arguments: the correct call must pass its tool's schema, but /id: must be string"),
        );
        assert!(
            message(&task(
                r#"{"milestones": [{"name": "store_get", "arguments": {"collection": "c", "id": {"$result": "ghost", "pointer": "/id"}}}]}"#
            ))
            .contains("/task/milestones/0/arguments: no tool named \"ghost\""),
        );
        assert!(
            message(&task(r#"{"forbidden": [{"name": "rm_rf"}]}"#))
                .contains("/task/forbidden/0/name: no tool named \"rm_rf\""),
        );
        assert!(
            message(&task(r#"{"final_state": {"files": {"a.txt": "x"}}}"#)).contains(
                "/task/final_state/files: files can be checked only in a scenario with file tools"
            ),
        );
        let both = r#"{"name": "t", "tools": ["math"], "prompt": "p", "expect": {"no_call": true}, "task": {}}"#;
        assert!(message(both).contains("/task: give \"expect\" (one turn) or \"task\""));
        let neither = r#"{"name": "t", "tools": ["math"], "prompt": "p"}"#;
        assert!(message(neither).contains("say what success is"));
        let result_outside_a_task = r#"{"name": "t", "tools": ["store_get"], "prompt": "p",
            "expect": {"calls": [{"name": "store_get", "arguments": {"collection": "c", "id": {"$result": "store_get"}}}]}}"#;
        assert!(message(result_outside_a_task).contains("$result reads earlier results"));
    }
}
