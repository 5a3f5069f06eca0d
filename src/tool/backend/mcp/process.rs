//! A server's own process: started owned (its own process group, killed
//! with toolgauge and when dropped, given only the environment it may
//! have) and the tail of its stderr, for error messages.

use std::collections::VecDeque;
use std::sync::{Arc, Mutex};

use super::McpServerSpec;
use super::hub::JudgeEnv;

/// Lines of a server's stderr kept for error messages.
const STDERR_LINES: usize = 8;

/// The last lines a server wrote to stderr.
#[derive(Debug, Clone, Default)]
pub(super) struct StderrTail(Arc<Mutex<VecDeque<String>>>);

impl StderrTail {
    pub(super) fn push(&self, line: String) {
        if let Ok(mut lines) = self.0.lock() {
            if lines.len() == STDERR_LINES {
                lines.pop_front();
            }
            lines.push_back(line);
        }
    }

    pub(super) fn text(&self) -> String {
        self.0
            .lock()
            .map(|lines| lines.iter().cloned().collect::<Vec<_>>().join(" | "))
            .unwrap_or_default()
    }
}

/// Start `spec`'s command as an owned child (its own process group,
/// killed with toolgauge and when dropped), `stdin` and `stdout` given,
/// its stderr read into `tail`. A suite's server gets the
/// run's judge (`given`) and no key of ours it was not given. Run on the
/// servers' runtime, whose thread the death signal follows.
pub(super) fn spawn_owned(
    spec: &McpServerSpec,
    given: &JudgeEnv,
    (stdin, stdout): (std::process::Stdio, std::process::Stdio),
    tail: &StderrTail,
) -> std::io::Result<(
    Box<dyn process_wrap::tokio::ChildWrapper>,
    Option<crate::child::GroupGuard>,
)> {
    let mut command = tokio::process::Command::new(&spec.command[0]);
    if !spec.users_own {
        crate::child::suite_env(command.as_std_mut());
    }
    command
        .args(&spec.command[1..])
        .envs(&spec.env)
        .envs(given.0.iter().map(|(k, v)| (k, v)));
    crate::child::die_with_us(&mut command);
    if let Some(cwd) = &spec.cwd {
        command.current_dir(cwd);
    }
    command
        .stdin(stdin)
        .stdout(stdout)
        .stderr(std::process::Stdio::piped());
    let mut wrapped = process_wrap::tokio::CommandWrap::from(command);
    wrapped
        .wrap(process_wrap::tokio::ProcessGroup::leader())
        .wrap(process_wrap::tokio::KillOnDrop);
    let (mut spawned, group) =
        crate::child::GroupGuard::spawned(|| wrapped.spawn(), |child| child.id())?;
    if let Some(child_stderr) = spawned.stderr().take() {
        keep_tail(child_stderr, tail.clone());
    }
    Ok((spawned, group))
}

/// The server's stderr read line by line into `tail`, until it closes.
fn keep_tail(child_stderr: tokio::process::ChildStderr, tail: StderrTail) {
    tokio::spawn(async move {
        use tokio::io::AsyncBufReadExt;
        let mut lines = tokio::io::BufReader::new(child_stderr).lines();
        while let Ok(Some(line)) = lines.next_line().await {
            tail.push(line);
        }
    });
}
