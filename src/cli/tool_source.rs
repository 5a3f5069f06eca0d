//! Where a command's tools come from: a JSON file of definitions, or an
//! MCP server (`mcp:COMMAND ARGS...` over stdio, `mcp:http://...` or a
//! bare `http://...` URL).

use std::path::Path;

use super::CliError;
use crate::tool::mcp::{Answers, McpServerSpec, ToolServers};
use crate::tool::{DefinitionProblem, ToolDef, ToolSource, check_definitions};

/// A source's tools, checked: what to register, and every problem found.
pub struct Tools {
    /// How messages name the source: the file or the server.
    pub label: String,
    pub defs: Vec<ToolDef>,
    pub problems: Vec<DefinitionProblem>,
    pub sources: Vec<ToolSource>,
    /// Tools an MCP server serves (not a file's definitions).
    pub served: bool,
    /// Where a file's `command` tools run: its folder.
    pub base_dir: Option<std::path::PathBuf>,
}

/// `--tools` as given: `mcp:...`, `builtin` (toolgauge's own tools, as a
/// scenario names them) or a path.
pub fn load(text: &str, servers: &ToolServers) -> Result<Tools, CliError> {
    load_answering(text, servers, &Answers::default())
}

/// [`load`], an MCP server's requests answered with `answers`.
pub fn load_answering(
    text: &str,
    servers: &ToolServers,
    answers: &Answers,
) -> Result<Tools, CliError> {
    if text == "builtin" && !Path::new(text).exists() {
        let defs: Vec<ToolDef> = crate::tool::BUILTIN_NAMES
            .iter()
            .filter_map(|name| crate::tool::builtin_definition(name))
            .collect();
        return Ok(Tools {
            label: "the built-in tools".to_owned(),
            problems: check_definitions(&defs),
            sources: crate::tool::BUILTIN_NAMES
                .iter()
                .map(|name| ToolSource::Builtin((*name).to_owned()))
                .collect(),
            defs,
            served: false,
            base_dir: None,
        });
    }
    let url = text.starts_with("http://") || text.starts_with("https://");
    let Some(server) = text.strip_prefix("mcp:").or(url.then_some(text)) else {
        let path = Path::new(text);
        let (defs, problems) = crate::tool::check_definitions_file(path)?;
        return Ok(Tools {
            label: path.display().to_string(),
            sources: defs.iter().cloned().map(ToolSource::Defined).collect(),
            defs,
            problems,
            served: false,
            base_dir: std::path::absolute(path.parent().unwrap_or(Path::new("."))).ok(),
        });
    };
    let mut spec = McpServerSpec::parse(server)
        .map_err(|e| CliError::Usage(format!("--tools {text:?}: {e}")))?;
    spec.answers = answers.clone();
    let server = servers.open(&spec)?;
    let tools = server.tools(None, &[], None, true)?;
    let defs: Vec<ToolDef> = tools.iter().map(|(def, _)| def.clone()).collect();
    let problems = check_definitions(&defs)
        .into_iter()
        .map(|mut p| {
            p.message = format!("(MCP server {}) {}", server.label(), p.message);
            p
        })
        .collect();
    Ok(Tools {
        label: format!("MCP server {}", server.label()),
        defs,
        problems,
        sources: tools
            .into_iter()
            .map(|(def, backend)| ToolSource::Backend(def, backend))
            .collect(),
        served: true,
        base_dir: None,
    })
}

impl Tools {
    /// The last word on a check of the definitions: a summary line on
    /// stderr, and exit 1 when there were problems.
    pub fn verdict(&self) -> std::process::ExitCode {
        if self.problems.is_empty() {
            eprintln!("{}: {} tool(s), no problems", self.label, self.defs.len());
            std::process::ExitCode::SUCCESS
        } else {
            eprintln!("{}: {} problem(s)", self.label, self.problems.len());
            std::process::ExitCode::from(super::EXIT_FAILED)
        }
    }

    /// The tools registered, ready to run.
    pub fn registry(&self, env: crate::tool::ToolEnv) -> Result<crate::tool::Registry, CliError> {
        let env = crate::tool::ToolEnv {
            base_dir: self.base_dir.clone(),
            ..env
        };
        Ok(crate::tool::Registry::new(self.sources.clone(), env)?)
    }

    /// For a command that will use the tools: any problem is bad input.
    pub fn usable(self) -> Result<Tools, CliError> {
        if self.problems.is_empty() {
            return Ok(self);
        }
        let lines: Vec<String> = self.problems.iter().map(|p| format!("  {p}")).collect();
        Err(CliError::Usage(format!(
            "{}: {} problem(s) in the tool definitions (see `toolgauge tools list`):\n{}",
            self.label,
            self.problems.len(),
            lines.join("\n")
        )))
    }
}
