//! The `Registry`: checked definitions, their validators compiled once, and
//! each tool's [`ToolBackend`]. Lookup by name is a hash-map probe.

use std::fmt::Write as _;
use std::sync::atomic::AtomicU32;
use std::sync::{Arc, Mutex};

use rustc_hash::FxHashMap;
use serde_json::Value;

use super::backend::builtin::Builtin;
use super::backend::builtin::{BUILTIN_NAMES, Implementation, builtin_definition};
use super::backend::simulated::{EchoArguments, Simulated};
use super::backend::store_tools::StoreTool;
use super::backend::{ToolBackend, ToolCallContext, ToolOutput};
use super::check::{DefinitionProblem, check_definitions};
pub(super) use super::state::TrialResource;
pub use super::state::{ToolId, ToolState};
use super::store::Store;
use super::{Sandbox, ToolDef, ToolFailure};
use crate::call::Arguments;
use crate::schema::Compiled;

/// Where a registered tool comes from.
#[derive(Debug, Clone)]
pub enum ToolSource {
    /// A built-in tool by name (`echo`, `math`, ...).
    Builtin(String),
    /// A user definition: simulated if it has a `simulate` block, otherwise
    /// it answers with its arguments as JSON.
    Defined(ToolDef),
    /// A built-in implementation, chosen by the definition's name, behind
    /// the user's own definition (a stricter or looser schema, say).
    BuiltinWithDefinition(ToolDef),
    /// A definition served by an implementation of its own.
    Backend(ToolDef, Arc<dyn ToolBackend>),
}

/// What tools may touch.
#[derive(Debug, Clone, Default)]
pub struct ToolEnv {
    /// Required by the file tools.
    pub sandbox: Option<Sandbox>,
    /// What the store holds when a trial starts (a scenario's `state`).
    pub store: Store,
    /// Where `command` tools run: the scenario's or tools file's folder.
    pub base_dir: Option<std::path::PathBuf>,
}

/// Why a set of tools cannot be registered.
#[derive(Debug, thiserror::Error)]
pub enum RegistryError {
    #[error("unknown built-in tool {name:?}; the built-ins are {}", BUILTIN_NAMES.join(", "))]
    UnknownBuiltin { name: String },
    #[error("tool {tool:?} reads or writes files and needs a sandbox directory (--sandbox DIR)")]
    NeedsSandbox { tool: String },
    #[error("{}", format_problems(.0))]
    Definitions(Vec<DefinitionProblem>),
}

fn format_problems(problems: &[DefinitionProblem]) -> String {
    let mut text = format!("{} problem(s) in the tool definitions:", problems.len());
    for problem in problems {
        let _ = write!(text, "\n  {problem}");
    }
    text
}

struct RegisteredTool {
    def: ToolDef,
    schema: Compiled,
    backend: Arc<dyn ToolBackend>,
}

/// Up to this many tools, a name is looked up by comparing it with each.
const LINEAR_LOOKUP: usize = 8;

/// The tools available to a pipeline.
pub struct Registry {
    tools: Vec<RegisteredTool>,
    by_name: FxHashMap<Box<str>, ToolId>,
    /// The names in tool order, side by side: a scan of a few touches
    /// one cache line.
    names: Vec<Box<str>>,
    sandbox: Option<Sandbox>,
    /// What every trial's store starts with.
    store: Store,
}

impl std::fmt::Debug for Registry {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Registry")
            .field("tools", &self.names().collect::<Vec<_>>())
            .field("sandbox", &self.sandbox)
            .finish()
    }
}

impl Registry {
    /// Check every definition, compile every validator, and refuse the
    /// whole set if anything is wrong (reporting all problems).
    pub fn new(sources: Vec<ToolSource>, env: ToolEnv) -> Result<Self, RegistryError> {
        let mut defs = Vec::with_capacity(sources.len());
        let mut backends: Vec<Arc<dyn ToolBackend>> = Vec::with_capacity(sources.len());
        for source in sources {
            match source {
                ToolSource::Builtin(name) => {
                    let def = builtin_definition(&name)
                        .ok_or_else(|| RegistryError::UnknownBuiltin { name: name.clone() })?;
                    backends.push(builtin_backend(&def.name, &env)?);
                    defs.push(def);
                }
                ToolSource::BuiltinWithDefinition(def) => {
                    backends.push(builtin_backend(&def.name, &env)?);
                    defs.push(def);
                }
                ToolSource::Defined(def) => {
                    backends.push(Self::defined_backend(&def, &env)?);
                    defs.push(def);
                }
                ToolSource::Backend(def, backend) => {
                    backends.push(backend);
                    defs.push(def);
                }
            }
        }
        let problems = check_definitions(&defs);
        if !problems.is_empty() {
            return Err(RegistryError::Definitions(problems));
        }

        let mut tools = Vec::with_capacity(defs.len());
        let mut by_name = FxHashMap::default();
        let mut names = Vec::with_capacity(defs.len());
        for (index, (def, backend)) in defs.into_iter().zip(backends).enumerate() {
            let schema = if backend.takes_any_arguments() {
                compile(&def.name, &serde_json::json!({}))?
            } else {
                compile(&def.name, &def.parameters)?
            };
            by_name.insert(def.name.clone().into_boxed_str(), ToolId(index));
            names.push(def.name.clone().into_boxed_str());
            tools.push(RegisteredTool {
                def,
                schema,
                backend,
            });
        }
        Ok(Registry {
            tools,
            by_name,
            names,
            sandbox: env.sandbox,
            store: env.store,
        })
    }

    /// A defined tool's backend: the server it names, else its
    /// simulation, else the echo of its arguments.
    fn defined_backend(
        def: &ToolDef,
        env: &ToolEnv,
    ) -> Result<Arc<dyn ToolBackend>, RegistryError> {
        let problem = |pointer, message| {
            RegistryError::Definitions(vec![DefinitionProblem {
                tool: def.name.clone(),
                pointer,
                message,
            }])
        };
        let served = super::backend::served::backend_of(def, env.base_dir.as_deref())
            .transpose()
            .map_err(|message| problem(crate::pointer::Pointer::root(), message.to_string()))?;
        Ok(match (served, &def.simulate) {
            (Some(served), _) => served,
            (None, Some(simulate)) => Arc::new(
                Simulated::new(simulate.clone())
                    .map_err(|located| problem(located.pointer, located.message))?,
            ),
            (None, None) => Arc::new(EchoArguments),
        })
    }

    /// The built-in tools named, with no user definitions.
    pub fn builtins(names: &[&str], env: ToolEnv) -> Result<Self, RegistryError> {
        let sources = names
            .iter()
            .map(|n| ToolSource::Builtin((*n).to_owned()))
            .collect();
        Self::new(sources, env)
    }

    /// What every trial's store starts with (the scenario's `state`).
    pub fn seeded_store(&self) -> &Store {
        &self.store
    }

    pub fn lookup(&self, name: &str) -> Option<ToolId> {
        // A few names compare faster one by one than a hash is computed.
        if self.names.len() <= LINEAR_LOOKUP {
            return self
                .names
                .iter()
                .position(|known| crate::json_eq::str_eq(known, name))
                .map(ToolId);
        }
        self.by_name.get(name).copied()
    }

    pub fn definition(&self, id: ToolId) -> &ToolDef {
        &self.tools[id.0].def
    }

    /// The tool's `parameters`, compiled.
    pub fn schema(&self, id: ToolId) -> &Compiled {
        &self.tools[id.0].schema
    }

    /// Do `arguments` fit the tool's schema?
    pub fn is_valid(&self, id: ToolId, arguments: &Value) -> bool {
        self.tools[id.0].schema.is_valid(arguments)
    }

    /// Wait until every tool is ready for the trial of `state` (its own
    /// servers started: their start-up is no call's time).
    pub async fn ready(&self, state: &ToolState) {
        for tool in &self.tools {
            tool.backend.ready(state).await;
        }
    }

    /// Whether a tool's per-trial server is given the folder a chain of
    /// scenarios shares (see [`ToolBackend::uses_chain_dir`]).
    pub fn uses_chain_dir(&self) -> bool {
        self.tools.iter().any(|t| t.backend.uses_chain_dir())
    }

    /// Whether the tool takes any arguments (see
    /// [`ToolBackend::takes_any_arguments`]).
    pub fn takes_any_arguments(&self, id: ToolId) -> bool {
        self.tools[id.0].backend.takes_any_arguments()
    }

    pub fn definitions(&self) -> impl Iterator<Item = &ToolDef> {
        self.tools.iter().map(|t| &t.def)
    }

    pub fn names(&self) -> impl Iterator<Item = &str> {
        self.tools.iter().map(|t| t.def.name.as_str())
    }

    pub fn len(&self) -> usize {
        self.tools.len()
    }

    pub fn is_empty(&self) -> bool {
        self.tools.is_empty()
    }

    /// A fresh per-trial state: no tool has run yet.
    pub fn new_state(&self) -> ToolState {
        self.new_state_seeded(0)
    }

    /// Whether a tool runs outside toolgauge (see [`ToolBackend::is_real`]).
    pub fn has_real_tools(&self) -> bool {
        self.tools.iter().any(|t| t.backend.is_real())
    }

    /// A fresh per-trial state whose latency draws follow `seed`.
    pub fn new_state_seeded(&self, seed: u64) -> ToolState {
        self.new_trial_state(seed, None)
    }

    /// [`Registry::new_state_seeded`] for a trial on a chain of scenarios
    /// (see `harness::Chains`): the folder the chain shares, or why it
    /// could not be made, which its per-trial servers are given as
    /// `{chain_dir}`.
    pub fn new_trial_state(
        &self,
        seed: u64,
        chain_dir: Option<Result<std::path::PathBuf, super::state::ChainFolderError>>,
    ) -> ToolState {
        let state = ToolState {
            chain_dir,
            executions: self.tools.iter().map(|_| AtomicU32::new(0)).collect(),
            seed,
            rng: Mutex::new(None),
            store: Mutex::new(self.store.clone()),
            sandbox: None,
            down: Mutex::new(Vec::new()),
            resources: Mutex::new(Vec::new()),
            hidden: Vec::new(),
        };
        for tool in &self.tools {
            tool.backend.prepare(&state);
        }
        state
    }

    /// Run a tool that finishes at once and cannot hang (echo, math, a
    /// definition echoing its arguments): no future, no timer. `None` for
    /// every other tool, which goes through `execute`.
    pub fn execute_now(
        &self,
        id: ToolId,
        arguments: &Arguments,
    ) -> Option<Result<String, ToolFailure>> {
        self.tools[id.0].backend.run_now(arguments)
    }

    /// Execute a tool on arguments that passed validation. The caller
    /// applies the timeout; a simulated hang simply never finishes.
    pub async fn execute(
        &self,
        id: ToolId,
        arguments: &Arguments,
        state: &ToolState,
    ) -> Result<ToolOutput, ToolFailure> {
        let call = ToolCallContext {
            tool: id,
            arguments,
            state,
        };
        self.tools[id.0].backend.run_output(call).await
    }

    /// [`Registry::execute`] within the tool's own timeout: `Err` when it
    /// gave no result in time (the pipeline's calls and the probes alike).
    pub async fn execute_in_time(
        &self,
        id: ToolId,
        arguments: &Arguments,
        state: &ToolState,
    ) -> Result<Result<ToolOutput, ToolFailure>, tokio::time::error::Elapsed> {
        let timeout = self.definition(id).timeout();
        tokio::time::timeout(timeout, self.execute(id, arguments, state)).await
    }
}

fn builtin_backend(name: &str, env: &ToolEnv) -> Result<Arc<dyn ToolBackend>, RegistryError> {
    if let Some(store_tool) = StoreTool::for_builtin(name) {
        return Ok(Arc::new(store_tool));
    }
    let implementation =
        Implementation::for_builtin(name).ok_or_else(|| RegistryError::UnknownBuiltin {
            name: name.to_owned(),
        })?;
    if implementation.needs_sandbox() && env.sandbox.is_none() {
        return Err(RegistryError::NeedsSandbox {
            tool: name.to_owned(),
        });
    }
    let sandbox = implementation
        .needs_sandbox()
        .then(|| env.sandbox.clone())
        .flatten();
    Ok(Arc::new(Builtin {
        implementation,
        sandbox,
    }))
}

/// A tool's `parameters` compiled, a problem located under them.
fn compile(tool: &str, parameters: &Value) -> Result<Compiled, RegistryError> {
    Compiled::new(parameters).map_err(|error| {
        RegistryError::Definitions(vec![DefinitionProblem {
            tool: tool.to_owned(),
            pointer: crate::pointer::Pointer::root().key("parameters"),
            message: error.kind.to_string(),
        }])
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tool::ToolFailureKind;
    use serde_json::json;
    use std::time::Duration;

    fn defined(value: Value) -> ToolSource {
        ToolSource::Defined(serde_json::from_value(value).unwrap())
    }

    #[test]
    fn builtins_register_and_are_found_by_name() {
        let registry = Registry::builtins(&["echo", "math"], ToolEnv::default()).unwrap();
        let math = registry.lookup("math").unwrap();
        assert_eq!(registry.definition(math).name, "math");
        assert!(registry.lookup("nope").is_none());
        assert!(
            registry
                .schema(math)
                .full_is_valid(&json!({"operation": "add", "a": 1, "b": 2}))
        );
        assert!(
            !registry
                .schema(math)
                .full_is_valid(&json!({"operation": "pow", "a": 1, "b": 2}))
        );
    }

    /// A backend from outside this module: how an MCP, HTTP or command
    /// tool plugs in.
    #[derive(Debug)]
    struct Counter;

    impl ToolBackend for Counter {
        fn run<'a>(&'a self, call: ToolCallContext<'a>) -> crate::tool::ToolFuture<'a> {
            let n = call.arguments.len();
            Box::pin(async move { Ok(format!("{n} argument(s)")) })
        }
    }

    #[tokio::test]
    async fn a_tool_can_be_served_by_a_backend_of_its_own() {
        let def: ToolDef = serde_json::from_value(json!({
            "name": "count", "description": "Counts its arguments.",
            "parameters": {"type": "object"}
        }))
        .unwrap();
        let registry = Registry::new(
            vec![ToolSource::Backend(def, Arc::new(Counter))],
            ToolEnv::default(),
        )
        .unwrap();
        let tool = registry.lookup("count").unwrap();
        assert!(
            registry
                .execute_now(tool, &json!({}).try_into().unwrap())
                .is_none(),
            "it must be awaited"
        );
        let output = registry
            .execute(
                tool,
                &json!({"a": 1, "b": 2}).try_into().unwrap(),
                &registry.new_state(),
            )
            .await;
        assert_eq!(output.unwrap().text, "2 argument(s)");
    }

    #[test]
    fn file_tools_need_a_sandbox() {
        let error = Registry::builtins(&["read_file"], ToolEnv::default()).unwrap_err();
        assert!(matches!(error, RegistryError::NeedsSandbox { .. }));
        let error = Registry::builtins(&["rm"], ToolEnv::default()).unwrap_err();
        assert!(error.to_string().contains("the built-ins are echo, math"));
    }

    #[test]
    fn bad_definitions_are_refused_with_every_problem() {
        let error = Registry::new(
            vec![
                defined(json!({"name": "a", "parameters": {"type": "object"}})),
                defined(json!({"name": "b", "description": "d", "parameters": {"type": "array"}})),
            ],
            ToolEnv::default(),
        )
        .unwrap_err();
        let text = error.to_string();
        assert!(text.starts_with("2 problem(s)"), "{text}");
        assert!(text.contains("a: /description:"), "{text}");
        assert!(text.contains("b: /parameters/type:"), "{text}");
    }

    #[tokio::test]
    async fn a_definition_without_simulate_returns_its_arguments() {
        let registry = Registry::new(
            vec![defined(
                json!({"name": "t", "description": "d", "parameters": {"type": "object"}}),
            )],
            ToolEnv::default(),
        )
        .unwrap();
        let id = registry.lookup("t").unwrap();
        let out = registry
            .execute(
                id,
                &json!({"x": [1, 2]}).try_into().unwrap(),
                &registry.new_state(),
            )
            .await
            .unwrap();
        assert_eq!(out.text, r#"{"x":[1,2]}"#);
    }

    #[tokio::test(start_paused = true)]
    async fn drawn_latencies_stay_in_range_and_follow_the_seed() {
        let registry = Registry::new(
            vec![defined(json!({
                "name": "jittery", "description": "d", "parameters": {"type": "object"},
                "simulate": {"latency_ms": {"uniform": [50, 150]}}
            }))],
            ToolEnv::default(),
        )
        .unwrap();
        let id = registry.lookup("jittery").unwrap();
        let draws = |seed| {
            let registry = &registry;
            async move {
                let state = registry.new_state_seeded(seed);
                let mut draws = Vec::new();
                for _ in 0..20 {
                    let start = tokio::time::Instant::now();
                    registry
                        .execute(id, &json!({}).try_into().unwrap(), &state)
                        .await
                        .unwrap();
                    draws.push(start.elapsed().as_millis());
                }
                draws
            }
        };
        let first = draws(7).await;
        assert!(first.iter().all(|ms| (50..=150).contains(ms)), "{first:?}");
        assert!(first.iter().any(|ms| *ms != first[0]), "draws vary");
        assert_eq!(first, draws(7).await);
        assert_ne!(first, draws(8).await);
    }

    #[test]
    fn latency_distributions_parse_and_sample() {
        use crate::tool::{Latency, LatencyDistribution};
        let fixed: Latency = serde_json::from_value(json!(120)).unwrap();
        assert_eq!(fixed.sample(|| 0.9), Duration::from_millis(120));
        let uniform: Latency = serde_json::from_value(json!({"uniform": [10, 20]})).unwrap();
        assert_eq!(
            uniform,
            Latency::Drawn(LatencyDistribution::Uniform([10, 20]))
        );
        assert_eq!(uniform.sample(|| 0.0), Duration::from_millis(10));
        assert_eq!(uniform.sample(|| 0.999), Duration::from_millis(20));
        let exponential: Latency = serde_json::from_value(json!({"exponential": 100.0})).unwrap();
        let median = exponential.sample(|| 0.5).as_secs_f64() * 1e3;
        assert!(
            (median - 100.0 * std::f64::consts::LN_2).abs() < 0.01,
            "{median}"
        );
        assert!(serde_json::from_value::<Latency>(json!({"normal": 3})).is_err());
    }

    #[tokio::test]
    async fn a_simulated_tool_refuses_what_its_rules_name_as_a_server_would() {
        let registry = Registry::new(
            vec![defined(json!({
                "name": "get_weather", "description": "d",
                "parameters": {"type": "object", "properties": {"city": {"type": "string"}, "days": {"type": "integer"}}},
                "simulate": {"result": {"ok": true}, "refuse": [
                    {"when": {"properties": {"days": {"minimum": 15}}, "required": ["days"]}, "kind": "invalid"},
                    {"unless": {"properties": {"city": {"enum": ["Springfield, IL"]}}},
                     "message": "city '{{args.city}}' is ambiguous: use 'Springfield, IL'"}
                ]}
            }))],
            ToolEnv::default(),
        )
        .unwrap();
        let id = registry.lookup("get_weather").unwrap();
        let state = registry.new_state();
        let call = |args: Value| {
            let (registry, state) = (&registry, &state);
            async move { registry.execute(id, &args.try_into().unwrap(), state).await }
        };
        let ambiguous = call(json!({"city": "Springfield"})).await.unwrap_err();
        assert_eq!(ambiguous.kind, ToolFailureKind::Runtime);
        assert_eq!(
            ambiguous.message,
            "city 'Springfield' is ambiguous: use 'Springfield, IL'"
        );
        // The first rule that applies wins; without a message, none is
        // worded here: `when` alone has no errors to list.
        let long = call(json!({"city": "Springfield, IL", "days": 20}))
            .await
            .unwrap_err();
        assert_eq!(long.kind, ToolFailureKind::Invalid);
        assert_eq!(long.message, "the call was refused");
        let fine = call(json!({"city": "Springfield, IL", "days": 3})).await;
        assert_eq!(fine.unwrap().text, r#"{"ok":true}"#);
    }

    #[tokio::test]
    async fn a_refusal_without_a_message_lists_how_the_call_breaks_the_servers_schema() {
        let registry = Registry::new(
            vec![defined(json!({
                "name": "create_ticket", "description": "d", "parameters": {"type": "object"},
                "simulate": {"refuse": [{"unless": {"properties": {"priority": {"enum": ["P1", "P2"]}}}, "kind": "invalid"}]}
            }))],
            ToolEnv::default(),
        )
        .unwrap();
        let id = registry.lookup("create_ticket").unwrap();
        let refused = registry
            .execute(
                id,
                &json!({"priority": "high"}).try_into().unwrap(),
                &registry.new_state(),
            )
            .await
            .unwrap_err();
        assert_eq!(
            refused.message,
            "The server refused the arguments:\n- /priority: must be one of \"P1\", \"P2\""
        );
    }

    #[test]
    fn a_refusal_schema_that_does_not_compile_is_located() {
        let Err(RegistryError::Definitions(problems)) = Registry::new(
            vec![defined(json!({
                "name": "t", "description": "d", "parameters": {"type": "object"},
                "simulate": {"refuse": [{"unless": {"type": "nope"}}]}
            }))],
            ToolEnv::default(),
        ) else {
            panic!("a refusal schema that does not compile is refused");
        };
        assert_eq!(problems[0].tool, "t");
        assert_eq!(problems[0].pointer.to_string(), "/simulate/refuse/0/unless");
    }

    #[tokio::test]
    async fn simulated_failures_hit_the_first_executions_only() {
        let registry = Registry::new(
            vec![defined(json!({
                "name": "flaky", "description": "d", "parameters": {"type": "object"},
                "simulate": {"result": {"ok": true}, "failure": {"first": 2, "kind": "not_found", "message": "no such row"}}
            }))],
            ToolEnv::default(),
        )
        .unwrap();
        let id = registry.lookup("flaky").unwrap();
        let state = registry.new_state();
        for _ in 0..2 {
            let failure = registry
                .execute(id, &json!({}).try_into().unwrap(), &state)
                .await
                .unwrap_err();
            assert_eq!(failure.kind, ToolFailureKind::NotFound);
            assert_eq!(failure.message, "no such row");
        }
        assert_eq!(
            registry
                .execute(id, &json!({}).try_into().unwrap(), &state)
                .await
                .unwrap()
                .text,
            r#"{"ok":true}"#
        );
        let fresh = registry.new_state();
        assert!(
            registry
                .execute(id, &json!({}).try_into().unwrap(), &fresh)
                .await
                .is_err(),
            "a new trial fails again"
        );
    }
}
