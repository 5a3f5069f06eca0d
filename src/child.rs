//! Every process toolgauge starts has an owner that ends it: each child
//! leads a process group of its own (so that ending it ends whatever it
//! started), and on Linux the kernel kills it when toolgauge dies, however
//! toolgauge dies (`PR_SET_PDEATHSIG`, SIGKILL and crashes included). The
//! signal follows the thread that started the child, so children that
//! outlive a call are started from threads that live as long as toolgauge
//! (the MCP servers' runtime, the main thread). A program a suite names
//! inherits only what programs need of the environment ([`suite_env`]).

/// What a program a suite names (an MCP server, a command tool) inherits
/// of toolgauge's environment: what programs need to run (the MCP SDKs'
/// default set, the locale, the temporary folder), never a key. Anything
/// else it is given by name: its `env`, or a judge (`--judge-model`).
pub const SUITE_INHERITS: [&str; 10] = [
    "HOME", "LOGNAME", "PATH", "SHELL", "TERM", "USER", "LANG", "LC_ALL", "LC_CTYPE", "TMPDIR",
];

/// Start `command` with only [`SUITE_INHERITS`] of our environment.
pub fn suite_env(command: &mut std::process::Command) -> &mut std::process::Command {
    command.env_clear();
    for name in SUITE_INHERITS {
        if let Some(value) = std::env::var_os(name) {
            command.env(name, value);
        }
    }
    command
}

/// Make `command` an owned child: its own process group, killed with us.
pub fn own(command: &mut std::process::Command) -> &mut std::process::Command {
    use std::os::unix::process::CommandExt;
    command.process_group(0);
    set_death_signal(command);
    command
}

/// The kernel kills the child when the thread that starts it ends.
fn set_death_signal(command: &mut std::process::Command) {
    use std::os::unix::process::CommandExt;
    let parent = std::process::id() as libc::pid_t;
    // SAFETY: the closure runs in the child between fork and exec, and
    // calls only async-signal-safe functions.
    unsafe {
        command.pre_exec(move || die_with_parent(parent));
    }
}

/// [`own`] for tokio's commands.
pub fn own_async(command: &mut tokio::process::Command) -> &mut tokio::process::Command {
    own(command.as_std_mut());
    command
}

/// [`own`]'s death signal alone, for a command whose process group is set
/// elsewhere (rmcp's process wrapper makes MCP servers group leaders).
pub fn die_with_us(command: &mut tokio::process::Command) -> &mut tokio::process::Command {
    use std::os::unix::process::CommandExt;
    let parent = std::process::id() as libc::pid_t;
    // SAFETY: as in `own`.
    unsafe {
        command
            .as_std_mut()
            .pre_exec(move || die_with_parent(parent));
    }
    command
}

/// In the child: be killed when the parent dies; if it died already (the
/// race between fork and this call), go now.
fn die_with_parent(parent: libc::pid_t) -> std::io::Result<()> {
    #[cfg(target_os = "linux")]
    // SAFETY: prctl, getppid and _exit are async-signal-safe.
    unsafe {
        if libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL) != 0 {
            return Err(std::io::Error::last_os_error());
        }
        if libc::getppid() != parent {
            libc::_exit(1);
        }
    }
    #[cfg(not(target_os = "linux"))]
    let _ = parent;
    Ok(())
}

/// End a child's whole process group (it and whatever it started).
pub fn kill_group(pid: u32) {
    // SAFETY: killpg only sends a signal; a group that is gone is an error
    // we ignore.
    unsafe {
        libc::killpg(pid as libc::pid_t, libc::SIGKILL);
    }
}

/// Kills a child's process group when dropped: whatever the child
/// started ends with the value that owns it (a call, a server). Every
/// live guard's group is also known process-wide, so that a process that
/// ends at once (a signal during start-up) still ends them all
/// ([`kill_every_group`]).
#[derive(Debug)]
pub struct GroupGuard(u32);

/// The groups of every live [`GroupGuard`].
static GROUPS: std::sync::Mutex<Vec<u32>> = std::sync::Mutex::new(Vec::new());

fn groups() -> std::sync::MutexGuard<'static, Vec<u32>> {
    GROUPS.lock().unwrap_or_else(|e| e.into_inner())
}

impl GroupGuard {
    /// Start a child with `spawn` and guard its group, with no moment
    /// between the two when a signal that ends the process at once would
    /// miss it ([`kill_every_group`] waits for the registry).
    pub fn spawned<T>(
        spawn: impl FnOnce() -> std::io::Result<T>,
        pid_of: impl FnOnce(&T) -> Option<u32>,
    ) -> std::io::Result<(T, Option<GroupGuard>)> {
        let mut groups = groups();
        let child = spawn()?;
        let guard = pid_of(&child).map(|pid| {
            groups.push(pid);
            GroupGuard(pid)
        });
        Ok((child, guard))
    }
}

impl Drop for GroupGuard {
    fn drop(&mut self) {
        kill_group(self.0);
        let mut groups = groups();
        if let Some(at) = groups.iter().position(|g| *g == self.0) {
            groups.swap_remove(at);
        }
    }
}

/// Kill the group of every live [`GroupGuard`]: for a process about to
/// end without dropping what it owns. A leader's death signal ends the
/// leader; this ends what it started.
pub fn kill_every_group() {
    for pid in groups().iter() {
        kill_group(*pid);
    }
}

/// Run `command` as an owned child (its own group, guarded while it
/// runs) and collect its output, unless it is still running after
/// `limit`: then its whole group is killed and `None` is the answer.
pub fn output_within(
    command: &mut std::process::Command,
    limit: std::time::Duration,
) -> std::io::Result<Option<std::process::Output>> {
    use std::io::Read;
    use std::process::Stdio;
    own(command)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let (mut child, _group) = GroupGuard::spawned(|| command.spawn(), |c| Some(c.id()))?;
    let read = |pipe: Option<Box<dyn Read + Send>>| {
        std::thread::spawn(move || {
            let mut bytes = Vec::new();
            if let Some(mut pipe) = pipe {
                let _ = pipe.read_to_end(&mut bytes);
            }
            bytes
        })
    };
    let stdout = read(
        child
            .stdout
            .take()
            .map(|p| Box::new(p) as Box<dyn Read + Send>),
    );
    let stderr = read(
        child
            .stderr
            .take()
            .map(|p| Box::new(p) as Box<dyn Read + Send>),
    );
    if !exits_within(child.id(), limit) {
        kill_group(child.id());
        let _ = child.wait();
        return Ok(None);
    }
    let status = child.wait()?;
    // Whatever the leader left behind goes with the group (the guard),
    // so the pipes close and the readers end.
    drop(_group);
    Ok(Some(std::process::Output {
        status,
        stdout: stdout.join().unwrap_or_default(),
        stderr: stderr.join().unwrap_or_default(),
    }))
}

/// Whether `pid` has ended within `limit`: waits on the kernel's word (a
/// pidfd becomes readable when the process exits), not on a clock.
pub fn exits_within(pid: u32, limit: std::time::Duration) -> bool {
    // SAFETY: pidfd_open and poll only read; the fd is closed below.
    unsafe {
        let fd = libc::syscall(libc::SYS_pidfd_open, pid as libc::pid_t, 0) as i32;
        if fd < 0 {
            return true; // no such process: gone already
        }
        let mut event = libc::pollfd {
            fd,
            events: libc::POLLIN,
            revents: 0,
        };
        let ready = libc::poll(&mut event, 1, limit.as_millis() as i32);
        libc::close(fd);
        ready == 1
    }
}

/// Whether the child `pid` has exited, without reaping it: its process
/// group id stays its own until it is waited for, so the group can still
/// be killed by that id.
pub fn has_exited(pid: u32) -> std::io::Result<bool> {
    // SAFETY: waitid writes only into `info`, which we own; WNOWAIT leaves
    // the child to be reaped by its owner.
    unsafe {
        let mut info: libc::siginfo_t = std::mem::zeroed();
        let code = libc::waitid(
            libc::P_PID,
            pid as libc::id_t,
            &mut info,
            libc::WEXITED | libc::WNOHANG | libc::WNOWAIT,
        );
        if code != 0 {
            return Err(std::io::Error::last_os_error());
        }
        Ok(info.si_pid() != 0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_command_past_its_deadline_is_killed_with_everything_it_started() {
        let dir = tempfile::tempdir().unwrap();
        let pid_file = dir.path().join("helper.pid");
        // A helper in the background, and a leader that never ends.
        let script = format!("sleep 600 & echo $! > {}; sleep 600", pid_file.display());
        let mut command = std::process::Command::new("sh");
        command.args(["-c", &script]);
        let limit = std::time::Duration::from_millis(300);
        assert!(output_within(&mut command, limit).unwrap().is_none());
        let helper: u32 = std::fs::read_to_string(&pid_file)
            .unwrap()
            .trim()
            .parse()
            .unwrap();
        assert!(exits_within(helper, std::time::Duration::from_secs(5)));
    }

    #[test]
    fn a_command_within_its_deadline_gives_its_output() {
        let mut command = std::process::Command::new("sh");
        command.args(["-c", "echo out; echo err >&2"]);
        let output = output_within(&mut command, std::time::Duration::from_secs(60))
            .unwrap()
            .unwrap();
        assert!(output.status.success());
        assert_eq!(output.stdout, b"out\n");
        assert_eq!(output.stderr, b"err\n");
    }
}
