//! A scenario file compiled step by step, once its shape is known good:
//! its tools (MCP entries start their servers through the run's
//! [`ToolServers`]), what success is (one turn's expectation, or a task),
//! and its prompt. Every problem is located by JSON pointer from the
//! file's root; `load` adds the line and column.

use std::path::{Path, PathBuf};

use serde_json::{Value, json};

use super::expect::{Expectation, ExpectedCall, Order, Rules};
use super::matcher::ArgumentMatchers;
use super::task::Task;
use super::{ExpectFile, ScenarioFile, ToolEntry};
use crate::bfcl::rules::BfclCall;
use crate::pointer::{Located, Pointer};
use crate::tool::mcp::{ServedTool, ToolServers};
use crate::tool::{
    BUILTIN_NAMES, DefinitionProblem, Registry, RegistryError, ToolEnv, ToolSource,
    builtin_definition,
};

/// What a task's turns are held to one by one: nothing (the task judges).
static NO_CALL: ExpectFile = ExpectFile {
    calls: Vec::new(),
    order: Order::Any,
    no_call: true,
    any_call: false,
    rules: Rules::Exact,
};

fn tool_at(i: usize) -> Pointer {
    Pointer::root().key("tools").index(i)
}

/// The scenario's tools, compiled into a registry over `env`, and the
/// opening an MCP server's prompt gives, if one does. Commands (of tools
/// and MCP servers) run in `folder`, the scenario's.
pub(super) fn tools(
    file: &ScenarioFile,
    env: ToolEnv,
    folder: &Path,
    servers: &ToolServers,
) -> Result<(Registry, Option<Vec<Value>>), Located> {
    // The entry each MCP tool came from, and its server, for problems.
    let mut served_by: Vec<(String, usize, String)> = Vec::new();
    let mut sources = Vec::with_capacity(file.tools.len());
    let mut opening = None;
    for (i, tool) in file.tools.iter().enumerate() {
        match tool {
            ToolEntry::Builtin(name) if builtin_definition(name).is_none() => {
                return Err(Located::new(
                    tool_at(i),
                    format!(
                        "unknown built-in tool {name:?}; the built-ins are {}",
                        BUILTIN_NAMES.join(", ")
                    ),
                ));
            }
            ToolEntry::Builtin(name) => sources.push(ToolSource::Builtin(name.clone())),
            ToolEntry::Defined(def) => sources.push(ToolSource::Defined((**def).clone())),
            ToolEntry::Mcp(entry) => {
                let served = mcp_tools(entry, i, folder, servers)?;
                if let Some(messages) = served.opening {
                    if opening.is_some() {
                        return Err(Located::new(
                            tool_at(i).key("opening"),
                            "a second MCP entry with an opening: a scenario opens once",
                        ));
                    }
                    opening = Some(messages);
                }
                for (def, backend) in served.tools {
                    served_by.push((def.name.clone(), i, served.label.clone()));
                    sources.push(ToolSource::Backend(def, backend));
                }
            }
        }
    }
    let registry = Registry::new(sources, env).map_err(|error| match error {
        // The first problem, at its place in this file.
        RegistryError::Definitions(ref problems) if !problems.is_empty() => {
            definition_problem(file, &problems[0], &served_by)
                .unwrap_or_else(|| Located::new(Pointer::root().key("tools"), error.to_string()))
        }
        other => Located::new(Pointer::root().key("tools"), other.to_string()),
    })?;
    Ok((registry, opening))
}

/// An MCP entry's tools, how messages name their server, and the
/// opening its prompt gives.
struct McpEntryTools {
    label: String,
    tools: Vec<ServedTool>,
    opening: Option<Vec<Value>>,
}

/// The tools of an MCP entry, its server started (or shared) by `servers`:
/// its working folder inside the scenario's, its program found.
fn mcp_tools(
    entry: &super::McpEntry,
    i: usize,
    folder: &Path,
    servers: &ToolServers,
) -> Result<McpEntryTools, Located> {
    let mut spec = entry.mcp.clone();
    // Judged as written, before any path in it is resolved.
    spec.judge = servers
        .vouch(&entry.mcp)
        .map_err(|e| Located::new(tool_at(i).key("mcp").key("judge"), e.to_string()))?;
    let cwd = match &spec.cwd {
        None => folder.to_owned(),
        Some(cwd) => cwd_inside(cwd, folder, tool_at(i).key("mcp").key("cwd"))?,
    };
    spec.cwd = Some(cwd);
    if let Some(program) = spec.command.first_mut() {
        *program = crate::tool::resolve_program(program, folder);
    }
    let own_command = entry.per_trial && spec.url.is_none();
    if !entry.trial_args.is_empty() && !own_command {
        return Err(Located::new(
            tool_at(i).key("trial_args"),
            "\"trial_args\" are added to the command of each trial's own server: they need \"per_trial\": true and a \"command\"",
        ));
    }
    let per_trial = entry.per_trial.then_some(entry.trial_args.as_slice());
    let failed = |at: Pointer| move |e: crate::tool::mcp::McpError| Located::new(at, e.to_string());
    let server = servers.open(&spec).map_err(failed(tool_at(i)))?;
    let mut tools = server
        .tools(
            entry.only.as_deref(),
            &entry.read,
            per_trial,
            entry.validate,
        )
        .map_err(failed(tool_at(i)))?;
    if let Some(name) = &entry.resources {
        tools.push(
            server
                .resource_tool(name, per_trial)
                .map_err(failed(tool_at(i).key("resources")))?,
        );
    }
    let opening = entry
        .opening
        .as_ref()
        .map(|o| server.prompt(&o.prompt, &o.arguments))
        .transpose()
        .map_err(failed(tool_at(i).key("opening")))?;
    if let Some(ms) = entry.timeout_ms {
        for (def, _) in &mut tools {
            def.timeout_ms = ms;
        }
    }
    Ok(McpEntryTools {
        label: spec.label(),
        tools,
        opening,
    })
}

/// An MCP server's `cwd`: inside the scenario's folder, like every path
/// it names, its links resolved before the check (a link inside the
/// folder may point anywhere).
fn cwd_inside(cwd: &Path, folder: &Path, at: Pointer) -> Result<PathBuf, Located> {
    let joined = folder.join(
        crate::tool::sandbox_path(&cwd.to_string_lossy())
            .map_err(|e| Located::new(at.clone(), e.to_string()))?,
    );
    let real = std::fs::canonicalize(&joined).map_err(|e| {
        Located::new(
            at.clone(),
            format!(
                "{}: {e}; give a folder inside the scenario's",
                joined.display()
            ),
        )
    })?;
    let inside = std::fs::canonicalize(folder).is_ok_and(|f| real.starts_with(f));
    if !inside {
        return Err(Located::new(
            at,
            format!(
                "{:?} leads outside the scenario's folder through a link; give a folder inside it",
                cwd.display()
            ),
        ));
    }
    Ok(real)
}

/// Where a definition problem is in the file: at the MCP entry that
/// served the tool, or at the tool's own entry.
fn definition_problem(
    file: &ScenarioFile,
    problem: &DefinitionProblem,
    served_by: &[(String, usize, String)],
) -> Option<Located> {
    if let Some((_, i, label)) = served_by.iter().find(|(n, ..)| *n == problem.tool) {
        return Some(Located::new(
            tool_at(*i),
            format!(
                "MCP server {label}: tool {:?}: {}{}",
                problem.tool,
                problem.pointer,
                format_args!(" {}", problem.message)
            ),
        ));
    }
    let index = file
        .tools
        .iter()
        .position(|t| match t {
            ToolEntry::Defined(def) => def.name == problem.tool,
            ToolEntry::Builtin(name) => *name == problem.tool,
            ToolEntry::Mcp(_) => false,
        })
        .or_else(|| problem.tool.strip_prefix('#').and_then(|i| i.parse().ok()))?;
    Some(Located::new(
        tool_at(index).join(&problem.pointer),
        problem.message.clone(),
    ))
}

/// What success is: one turn's expected calls, or a task judged when the
/// model answers. `sandbox`: the scenario's, if it has one.
pub(super) fn success(
    file: &ScenarioFile,
    registry: &Registry,
    sandbox: Option<&PathBuf>,
    opening: &[Value],
) -> Result<(Expectation, Option<Task>), Located> {
    let (expect, task) = match (&file.expect, &file.task) {
        (Some(expect), None) => (expect, None),
        (None, Some(task)) => {
            let task = Task::compile(task, registry)?;
            let agent_spoke_last = opening.last().is_some_and(|m| m["role"] == "assistant");
            if agent_spoke_last && task.user.is_none() {
                return Err(Located::new(
                    Pointer::root().key("messages"),
                    "ends with the agent's words (a greeting): only a simulated user (\"task.user\") can speak first",
                ));
            }
            for k in 0..task.user_turns() {
                let checked = task.user_turn(k).expect("k < user_turns");
                if !checked.final_files.is_empty() && sandbox.is_none() {
                    let at = match k {
                        0 => Pointer::at("/task/final_state/files"),
                        k => Pointer::at("/task/turns")
                            .index(k - 1)
                            .key("final_state")
                            .key("files"),
                    };
                    return Err(Located::new(
                        at,
                        "files can be checked only in a scenario with file tools or files",
                    ));
                }
            }
            (&NO_CALL, Some(task))
        }
        (Some(_), Some(_)) => {
            return Err(Located::new(
                Pointer::root().key("task"),
                "give \"expect\" (one turn) or \"task\" (until the model answers), not both",
            ));
        }
        (None, None) => {
            return Err(Located::here(
                "say what success is: \"expect\" (one turn) or \"task\"",
            ));
        }
    };
    let expectation = if expect.no_call {
        Expectation::NoCall
    } else if expect.any_call {
        Expectation::AnyCall
    } else {
        Expectation::Calls {
            calls: expected_calls(expect, registry)?,
            order: expect.order,
        }
    };
    if expect.rules == Rules::Bfcl {
        return Ok((Expectation::Bfcl(Box::new(expectation)), task));
    }
    Ok((expectation, task))
}

fn expected_calls(expect: &ExpectFile, registry: &Registry) -> Result<Vec<ExpectedCall>, Located> {
    let mut calls = Vec::with_capacity(expect.calls.len());
    for (i, call) in expect.calls.iter().enumerate() {
        let here = Pointer::root().key("expect").key("calls").index(i);
        if registry.lookup(&call.name).is_none() {
            return Err(Located::new(
                here.key("name"),
                format!("no tool named {:?} in this scenario's tools", call.name),
            ));
        }
        calls.push(if expect.rules == Rules::Bfcl {
            bfcl_call(call, registry, &here)?
        } else {
            exact_call(call, registry, &here)?
        });
    }
    Ok(calls)
}

/// A call judged by BFCL's rules, not by the schema: some of BFCL's
/// ground truth fails its own schema (see tests/data/bfcl-known-issues.txt),
/// and stays importable.
fn bfcl_call(
    call: &super::ExpectedCallFile,
    registry: &Registry,
    here: &Pointer,
) -> Result<ExpectedCall, Located> {
    let arguments_at = here.clone().key("arguments");
    let tool = registry.lookup(&call.name).expect("checked by the caller");
    let def = registry.definition(tool);
    let bfcl = def.metadata.as_ref().and_then(|m| m.other.get("bfcl"));
    let source = bfcl
        .filter(|b| b.get("declared_types").is_some())
        .and_then(crate::bfcl::rules::Source::of);
    let mut rule = BfclCall::new(&call.name, &call.arguments, &def.parameters, source)
        .map_err(|e| e.under(&arguments_at))?;
    if let Some(bfcl) = bfcl {
        rule.read_any_as_string(bfcl);
    }
    let examples: serde_json::Map<String, Value> = rule.example();
    Ok(ExpectedCall {
        name: call.name.clone(),
        arguments: ArgumentMatchers::from_map(&examples).map_err(|e| e.under(&arguments_at))?,
        bfcl: Some(rule),
    })
}

/// A call whose arguments are matched as written; its example must pass
/// the tool's schema.
fn exact_call(
    call: &super::ExpectedCallFile,
    registry: &Registry,
    here: &Pointer,
) -> Result<ExpectedCall, Located> {
    let arguments_at = here.clone().key("arguments");
    let arguments =
        ArgumentMatchers::from_map(&call.arguments).map_err(|e| e.under(&arguments_at))?;
    if arguments.result_tools().next().is_some() {
        return Err(Located::new(
            arguments_at,
            "$result reads earlier results: it belongs in a task's milestones",
        ));
    }
    let tool = registry.lookup(&call.name).expect("checked by the caller");
    let example = Value::Object(arguments.example());
    if let Some(error) = registry.schema(tool).first_error(&example) {
        return Err(Located::new(
            arguments_at,
            format!("the correct call must pass its tool's schema, but {error}"),
        ));
    }
    Ok(ExpectedCall {
        name: call.name.clone(),
        arguments,
        bfcl: None,
    })
}

/// The messages the model starts from: the prompt, the messages, or
/// what an MCP server's prompt gave (`opening`).
pub(super) fn prompt(
    file: &ScenarioFile,
    opening: Option<Vec<Value>>,
) -> Result<Vec<Value>, Located> {
    if let Some(opening) = opening {
        if file.prompt.is_some() || file.messages.is_some() {
            return Err(Located::new(
                Pointer::root().key("prompt"),
                "an MCP entry's \"opening\" opens the scenario: give no prompt or messages",
            ));
        }
        return Ok(opening);
    }
    match (&file.prompt, &file.messages) {
        (Some(prompt), None) => Ok(vec![json!({"role": "user", "content": prompt})]),
        (None, Some(messages)) if !messages.is_empty() => Ok(messages.clone()),
        (Some(_), Some(_)) => Err(Located::new(
            Pointer::root().key("messages"),
            "give a prompt or messages, not both",
        )),
        _ => Err(Located::here("give a prompt (or a message list)")),
    }
}
