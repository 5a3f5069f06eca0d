//! The built-in tools: their definitions and what they do.

use std::time::Duration;

use serde_json::{Value, json};

use super::{ToolBackend, ToolCallContext, ToolFuture};
use crate::call::Arguments;
use crate::tool::{Effect, Sandbox, ToolDef, ToolFailure};

/// Does the built-in tool `name` read or write files (and so need a sandbox)?
pub fn builtin_needs_sandbox(name: &str) -> bool {
    Implementation::for_builtin(name).is_some_and(|i| i.needs_sandbox())
}

/// The built-in that runs shell commands: off unless named (`--builtin
/// all` leaves it out).
pub const SHELL_TOOL: &str = "bash";

/// Names of every built-in tool, in the order `--builtin all` registers
/// them (but [`SHELL_TOOL`]).
pub const BUILTIN_NAMES: [&str; 12] = [
    "echo",
    "math",
    "sleep",
    "read_file",
    "write_file",
    "list_dir",
    "edit_file",
    "store_get",
    "store_find",
    "store_put",
    "store_delete",
    SHELL_TOOL,
];

/// What a built-in tool does: one implementation of `ToolBackend` for all
/// of them, dispatching on this enum.
#[derive(Debug)]
pub(crate) enum Implementation {
    Echo,
    Math,
    Sleep,
    ReadFile,
    WriteFile,
    ListDir,
    EditFile,
    Bash,
}

impl Implementation {
    pub(crate) fn for_builtin(name: &str) -> Option<Self> {
        Some(match name {
            "echo" => Implementation::Echo,
            "math" => Implementation::Math,
            "sleep" => Implementation::Sleep,
            "read_file" => Implementation::ReadFile,
            "write_file" => Implementation::WriteFile,
            "list_dir" => Implementation::ListDir,
            "edit_file" => Implementation::EditFile,
            SHELL_TOOL => Implementation::Bash,
            _ => return None,
        })
    }

    pub(crate) fn needs_sandbox(&self) -> bool {
        matches!(
            self,
            Implementation::ReadFile
                | Implementation::WriteFile
                | Implementation::ListDir
                | Implementation::EditFile
                | Implementation::Bash
        )
    }

    /// Run with arguments that already passed validation.
    /// The instant built-ins, run without a future; `None` for the others.
    pub(crate) fn run_now(&self, args: &Arguments) -> Option<Result<String, ToolFailure>> {
        match self {
            Implementation::Echo => Some(Ok(str_arg(args, "message").to_owned())),
            Implementation::Math => Some(math(args)),
            _ => None,
        }
    }

    pub(crate) async fn run(
        &self,
        args: &Arguments,
        sandbox: Option<&Sandbox>,
    ) -> Result<String, ToolFailure> {
        match self {
            Implementation::Echo => Ok(str_arg(args, "message").to_owned()),
            Implementation::Math => math(args),
            Implementation::Sleep => {
                let ms = args.get("ms").and_then(whole_number).unwrap_or(0);
                tokio::time::sleep(Duration::from_millis(ms)).await;
                Ok(format!("slept {ms} ms"))
            }
            Implementation::ReadFile => {
                let requested = str_arg(args, "path");
                let bytes = file_sandbox(sandbox)?.read(requested)?;
                String::from_utf8(bytes)
                    .map_err(|_| ToolFailure::runtime(format!("{requested} is not UTF-8 text")))
            }
            Implementation::WriteFile => {
                let requested = str_arg(args, "path");
                let content = str_arg(args, "content");
                file_sandbox(sandbox)?.write(requested, content.as_bytes())?;
                Ok(format!("wrote {} bytes to {requested}", content.len()))
            }
            Implementation::EditFile => {
                edit_file(file_sandbox(sandbox)?, str_arg(args, "path"), args)
            }
            Implementation::Bash => {
                let sandbox =
                    sandbox.ok_or_else(|| ToolFailure::blocked("no sandbox directory is set"))?;
                let ms = args
                    .get("timeout_ms")
                    .and_then(whole_number)
                    .unwrap_or(super::shell::DEFAULT_COMMAND_TIMEOUT_MS);
                super::shell::run(
                    str_arg(args, "command"),
                    sandbox.root(),
                    Duration::from_millis(ms),
                )
                .await
            }
            Implementation::ListDir => {
                let path = sandboxed(args, sandbox)?;
                let requested = args.get("path").and_then(Value::as_str).unwrap_or(".");
                let entries =
                    std::fs::read_dir(&path).map_err(|e| ToolFailure::from_io(&e, requested))?;
                let mut names: Vec<String> = entries
                    .filter_map(Result::ok)
                    .map(|entry| {
                        let mut name = entry.file_name().to_string_lossy().into_owned();
                        if entry.file_type().is_ok_and(|t| t.is_dir()) {
                            name.push('/');
                        }
                        name
                    })
                    .collect();
                names.sort();
                Ok(names.join("\n"))
            }
        }
    }
}

/// Replace `old_text` by `new_text` where it occurs exactly once: a text
/// that is not there, or is there several times, is an error that says
/// so, and the file is left as it was.
fn edit_file(sandbox: &Sandbox, requested: &str, args: &Arguments) -> Result<String, ToolFailure> {
    let (old, new) = (str_arg(args, "old_text"), str_arg(args, "new_text"));
    let bytes = sandbox.read(requested)?;
    let text = String::from_utf8(bytes)
        .map_err(|_| ToolFailure::runtime(format!("{requested} is not UTF-8 text")))?;
    match text.matches(old).count() {
        0 => Err(ToolFailure::runtime(format!(
            "old_text does not occur in {requested}; read the file and copy the text exactly"
        ))),
        1 => {
            let edited = text.replacen(old, new, 1);
            sandbox.write(requested, edited.as_bytes())?;
            Ok(format!(
                "replaced 1 occurrence in {requested} ({} bytes now)",
                edited.len()
            ))
        }
        n => Err(ToolFailure::runtime(format!(
            "old_text occurs {n} times in {requested}; include more of the text around it so that it occurs once"
        ))),
    }
}

fn str_arg<'a>(args: &'a Arguments, key: &str) -> &'a str {
    args.get(key).and_then(Value::as_str).unwrap_or_default()
}

/// The sandbox a file tool works in. The registry refuses file tools
/// without one; this is a second lock.
fn file_sandbox(sandbox: Option<&Sandbox>) -> Result<&Sandbox, ToolFailure> {
    sandbox.ok_or_else(|| ToolFailure::blocked("no sandbox directory is set"))
}

fn sandboxed(
    args: &Arguments,
    sandbox: Option<&Sandbox>,
) -> Result<std::path::PathBuf, ToolFailure> {
    let sandbox = file_sandbox(sandbox)?;
    let requested = args.get("path").and_then(Value::as_str).unwrap_or(".");
    sandbox.resolve(requested)
}

fn math(args: &Arguments) -> Result<String, ToolFailure> {
    let a = args.get("a").and_then(Value::as_f64).unwrap_or(0.0);
    let b = args.get("b").and_then(Value::as_f64).unwrap_or(0.0);
    let value = match str_arg(args, "operation") {
        "add" => a + b,
        "subtract" => a - b,
        "multiply" => a * b,
        "divide" if b == 0.0 => {
            return Err(ToolFailure::runtime("division by zero: b must not be 0"));
        }
        "divide" => a / b,
        other => return Err(ToolFailure::runtime(format!("unknown operation {other:?}"))),
    };
    if !value.is_finite() {
        return Err(ToolFailure::runtime("the result is not a finite number"));
    }
    Ok(value.to_string())
}

/// The definition of a built-in tool, or `None` if no built-in has that name.
pub fn builtin_definition(name: &str) -> Option<ToolDef> {
    let (description, effect, parameters) = plain_tool(name)
        .or_else(|| file_tool(name))
        .or_else(|| super::store_tools::definition(name))?;
    // The shell stops its own commands, with what they printed.
    let timeout_ms = if name == SHELL_TOOL {
        130_000
    } else {
        crate::tool::DEFAULT_TIMEOUT_MS
    };
    Some(ToolDef {
        name: name.to_owned(),
        description: description.to_owned(),
        parameters,
        effect,
        timeout_ms,
        metadata: None,
        simulate: None,
        http: None,
        command: None,
    })
}

/// A built-in's description, effect and parameters.
type Described = (&'static str, Effect, Value);

/// The built-ins that need nothing: `echo`, `math`, `sleep`.
fn plain_tool(name: &str) -> Option<Described> {
    Some(match name {
        "echo" => (
            "Return the message unchanged.",
            Effect::Read,
            json!({
                "type": "object",
                "properties": {"message": {"type": "string", "description": "Text to return"}},
                "required": ["message"],
                "additionalProperties": false
            }),
        ),
        "math" => (
            "Apply an arithmetic operation to two numbers.",
            Effect::Read,
            json!({
                "type": "object",
                "properties": {
                    "operation": {"type": "string", "enum": ["add", "subtract", "multiply", "divide"]},
                    "a": {"type": "number"},
                    "b": {"type": "number"}
                },
                "required": ["operation", "a", "b"],
                "additionalProperties": false
            }),
        ),
        "sleep" => (
            "Wait for a number of milliseconds (simulated latency).",
            Effect::Read,
            json!({
                "type": "object",
                "properties": {"ms": {"type": "integer", "minimum": 0, "maximum": 600000}},
                "required": ["ms"],
                "additionalProperties": false
            }),
        ),
        _ => return None,
    })
}

/// The built-ins that work in the sandbox: the file tools and the shell.
fn file_tool(name: &str) -> Option<Described> {
    Some(match name {
        "read_file" => (
            "Read a UTF-8 text file inside the sandbox directory.",
            Effect::Read,
            json!({
                "type": "object",
                "properties": {"path": {"type": "string", "description": "Path relative to the sandbox"}},
                "required": ["path"],
                "additionalProperties": false
            }),
        ),
        "write_file" => (
            "Write a text file inside the sandbox directory, replacing it if it exists.",
            Effect::Write,
            json!({
                "type": "object",
                "properties": {
                    "path": {"type": "string", "description": "Path relative to the sandbox"},
                    "content": {"type": "string"}
                },
                "required": ["path", "content"],
                "additionalProperties": false
            }),
        ),
        "edit_file" => (
            "Replace a text that occurs exactly once in a UTF-8 file inside the sandbox directory.",
            Effect::Write,
            json!({
                "type": "object",
                "properties": {
                    "path": {"type": "string", "description": "Path relative to the sandbox"},
                    "old_text": {"type": "string", "minLength": 1, "description": "The text to replace, exactly as in the file; it must occur once"},
                    "new_text": {"type": "string"}
                },
                "required": ["path", "old_text", "new_text"],
                "additionalProperties": false
            }),
        ),
        "list_dir" => (
            "List the entries of a directory inside the sandbox; directories end with /.",
            Effect::Read,
            json!({
                "type": "object",
                "properties": {"path": {"type": "string", "description": "Path relative to the sandbox; . for its root"}},
                "additionalProperties": false
            }),
        ),
        SHELL_TOOL => (
            "Run a bash command in the sandbox directory (cleared environment, no network where isolation is available). Output is cut at 16 KiB; stderr and a non-zero exit code are appended.",
            Effect::Write,
            json!({
                "type": "object",
                "properties": {
                    "command": {"type": "string", "minLength": 1},
                    "timeout_ms": {"type": "integer", "minimum": 1, "maximum": 120000, "description": "Stop the command after this long (default 10000)"}
                },
                "required": ["command"],
                "additionalProperties": false
            }),
        ),
        _ => return None,
    })
}

/// A JSON number as JSON Schema's `integer` reads it: `5`, `5.0` and
/// `1e2` are all whole numbers (serde_json keeps the last two as floats).
fn whole_number(value: &Value) -> Option<u64> {
    value.as_u64().or_else(|| {
        let x = value.as_f64()?;
        (x.fract() == 0.0 && (0.0..=u64::MAX as f64).contains(&x)).then_some(x as u64)
    })
}

/// A built-in tool, with the sandbox the file tools are confined to.
#[derive(Debug)]
pub(in crate::tool) struct Builtin {
    pub implementation: Implementation,
    pub sandbox: Option<Sandbox>,
}

impl ToolBackend for Builtin {
    fn run_now(&self, arguments: &Arguments) -> Option<Result<String, ToolFailure>> {
        self.implementation.run_now(arguments)
    }

    fn run<'a>(&'a self, call: ToolCallContext<'a>) -> ToolFuture<'a> {
        Box::pin(self.implementation.run(
            call.arguments,
            call.state.sandbox.as_ref().or(self.sandbox.as_ref()),
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test(start_paused = true)]
    async fn sleep_reads_whole_numbers_as_json_schema_does() {
        for (ms, expected) in [(json!(5), 5), (json!(5.0), 5), (json!(1e2), 100)] {
            let args = json!({"ms": ms});
            let started = tokio::time::Instant::now();
            let text = Implementation::Sleep
                .run(&Arguments::try_from(args).unwrap(), None)
                .await
                .unwrap();
            assert_eq!(text, format!("slept {expected} ms"));
            assert_eq!(started.elapsed(), Duration::from_millis(expected));
        }
    }

    fn args(value: Value) -> Arguments {
        Arguments::try_from(value).unwrap()
    }

    #[tokio::test]
    async fn math_computes_and_refuses_division_by_zero() {
        let run = |v| async move { Implementation::Math.run(&args(v), None).await };
        assert_eq!(
            run(json!({"operation": "multiply", "a": 12.5, "b": 4}))
                .await
                .unwrap(),
            "50"
        );
        assert_eq!(
            run(json!({"operation": "add", "a": -3, "b": 1024.75}))
                .await
                .unwrap(),
            "1021.75"
        );
        assert_eq!(
            run(json!({"operation": "subtract", "a": 1, "b": 3}))
                .await
                .unwrap(),
            "-2"
        );
        assert_eq!(
            run(json!({"operation": "divide", "a": 1, "b": 4}))
                .await
                .unwrap(),
            "0.25"
        );
        let failure = run(json!({"operation": "divide", "a": 1, "b": 0}))
            .await
            .unwrap_err();
        assert!(failure.message.contains("division by zero"));
    }

    #[tokio::test]
    async fn edit_file_replaces_a_text_that_occurs_exactly_once() {
        let dir = tempfile::tempdir().unwrap();
        let sandbox = Sandbox::new(dir.path()).unwrap();
        std::fs::write(
            dir.path().join("app.cfg"),
            "port = 80\nhost = a\nhost_b = a\n",
        )
        .unwrap();
        let edit = |old: &str, new: &str| {
            let args = args(json!({"path": "app.cfg", "old_text": old, "new_text": new}));
            let sandbox = &sandbox;
            async move { Implementation::EditFile.run(&args, Some(sandbox)).await }
        };
        assert_eq!(
            edit("port = 80", "port = 8080").await.unwrap(),
            "replaced 1 occurrence in app.cfg (32 bytes now)"
        );
        let twice = edit(" = a", " = b").await.unwrap_err();
        assert_eq!(
            twice.message,
            "old_text occurs 2 times in app.cfg; include more of the text around it so that it occurs once"
        );
        let absent = edit("port = 80\n", "x").await.unwrap_err();
        assert!(
            absent
                .message
                .starts_with("old_text does not occur in app.cfg"),
            "{}",
            absent.message
        );
        // Failed edits leave the file as it was.
        assert_eq!(
            std::fs::read_to_string(dir.path().join("app.cfg")).unwrap(),
            "port = 8080\nhost = a\nhost_b = a\n"
        );
        let outside = Implementation::EditFile
            .run(
                &args(json!({"path": "../x", "old_text": "a", "new_text": "b"})),
                Some(&sandbox),
            )
            .await
            .unwrap_err();
        assert_eq!(outside.kind, crate::tool::ToolFailureKind::Blocked);
    }

    #[tokio::test]
    async fn file_tools_stay_in_the_sandbox() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir(dir.path().join("box")).unwrap();
        let sandbox = Sandbox::new(dir.path().join("box")).unwrap();
        let write = Implementation::WriteFile
            .run(
                &args(json!({"path": "notes/a.txt", "content": "hi"})),
                Some(&sandbox),
            )
            .await
            .unwrap();
        assert_eq!(write, "wrote 2 bytes to notes/a.txt");
        let read = Implementation::ReadFile
            .run(&args(json!({"path": "notes/a.txt"})), Some(&sandbox))
            .await;
        assert_eq!(read.unwrap(), "hi");
        let listing = Implementation::ListDir
            .run(&args(json!({})), Some(&sandbox))
            .await;
        assert_eq!(listing.unwrap(), "notes/");
        let escape = Implementation::WriteFile
            .run(
                &args(json!({"path": "../out.txt", "content": "x"})),
                Some(&sandbox),
            )
            .await;
        assert!(escape.is_err());
        assert!(!dir.path().join("out.txt").exists());
        let missing = Implementation::ReadFile
            .run(&args(json!({"path": "nope.txt"})), Some(&sandbox))
            .await
            .unwrap_err();
        assert!(missing.message.starts_with("not found: nope.txt"));
    }

    #[test]
    fn every_builtin_has_a_definition_and_an_implementation() {
        for name in BUILTIN_NAMES {
            assert_eq!(builtin_definition(name).unwrap().name, name);
            assert!(
                Implementation::for_builtin(name).is_some()
                    || super::super::store_tools::StoreTool::for_builtin(name).is_some(),
                "{name}"
            );
        }
    }
}
