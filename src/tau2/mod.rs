//! tau2-bench's tasks as conversation tasks, run on tau2's own domains.
//! The bridge (`scripts/tau2_bridge/bridge.py`) exports each task with
//! the prompts tau2 builds for its agent and its user simulator; each
//! becomes a scenario whose opening is tau2's greeting, whose user speaks
//! first from tau2's own simulator prompt, whose tools are the bridge
//! started per trial on the task's environment, and whose verdict is the
//! bridge's probe: tau2's evaluator over the whole conversation. The gold
//! actions become the reference calls mock models play.

pub mod results;
mod tasks;

pub use tasks::{
    DOMAINS, EVALUATE, ExportedTask, GoldAction, Imported, Tau2Error, UserPlay, export, import,
    scenario, scenario_name,
};
