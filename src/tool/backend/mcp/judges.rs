//! Which servers may take the run's judge (its endpoint and key): those
//! `toolgauge import tau2` wrote on this machine, known by a fingerprint
//! of the command as written, kept in the user's state folder (never in a
//! suite, which anyone can write), and those the user names on the
//! command line (`run --judge-server COMMAND`). A suite that marks its
//! own server `"judge": true` gets nothing.

use std::collections::BTreeSet;
use std::io;
use std::path::PathBuf;

use sha2::{Digest, Sha256};

use super::McpServerSpec;

/// The file, in the state folder, of the fingerprints `import` wrote.
const FILE_NAME: &str = "judge-servers.txt";

/// The variable that moves the state folder (tests, CI).
pub const STATE_DIR_ENV: &str = "TOOLGAUGE_STATE_DIR";

/// The state folder could not be read or written.
#[derive(Debug, thiserror::Error)]
#[error(
    "{}: {source} (toolgauge keeps there the judging servers import tau2 wrote; set {STATE_DIR_ENV} to another folder)",
    path.display()
)]
pub struct StateError {
    pub path: PathBuf,
    pub source: io::Error,
}

/// The servers a run's judge may go to.
#[derive(Debug, Clone, Default)]
pub struct JudgeTrust {
    imported: BTreeSet<String>,
    named: Vec<String>,
}

impl JudgeTrust {
    /// The servers `import` wrote on this machine, and those `named`
    /// (their commands as the scenario writes them, words joined by
    /// spaces, or their URLs).
    pub fn load(named: Vec<String>) -> Result<JudgeTrust, StateError> {
        let path = file()?;
        let imported = read(&path)?;
        Ok(JudgeTrust { imported, named })
    }

    /// May the server `spec` (as its scenario writes it) take the judge?
    pub fn allows(&self, spec: &McpServerSpec) -> bool {
        self.named.contains(&spec.label()) || self.imported.contains(&fingerprint(spec))
    }
}

/// Remember `specs` as servers `import` wrote: they may take a judge.
/// Gives the file they are kept in.
pub fn remember_imported<'a>(
    specs: impl IntoIterator<Item = &'a McpServerSpec>,
) -> Result<PathBuf, StateError> {
    let path = file()?;
    let mut known = read(&path)?;
    let before = known.len();
    known.extend(specs.into_iter().map(fingerprint));
    if known.len() != before {
        let text: String = known.iter().map(|f| format!("{f}\n")).collect();
        let dir = path.parent().unwrap_or(std::path::Path::new("."));
        std::fs::create_dir_all(dir)
            .and_then(|()| crate::whole_file::write(&path, text))
            .map_err(|source| StateError {
                path: path.clone(),
                source,
            })?;
    }
    Ok(path)
}

/// The fingerprints kept at `path` (none when there is no file yet).
fn read(path: &std::path::Path) -> Result<BTreeSet<String>, StateError> {
    match std::fs::read_to_string(path) {
        Ok(text) => Ok(text.lines().map(str::trim).map(str::to_owned).collect()),
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(BTreeSet::new()),
        Err(source) => Err(StateError {
            path: path.to_owned(),
            source,
        }),
    }
}

/// What identifies a server as written: its command, environment,
/// folder and URL (the judge flag and the rest do not change what runs).
fn fingerprint(spec: &McpServerSpec) -> String {
    let identity = serde_json::json!({
        "command": spec.command,
        "env": spec.env,
        "cwd": spec.cwd,
        "url": spec.url,
    });
    let digest = Sha256::digest(identity.to_string().as_bytes());
    digest.iter().map(|b| format!("{b:02x}")).collect()
}

/// The fingerprints' file: `$TOOLGAUGE_STATE_DIR`, else
/// `$XDG_STATE_HOME/toolgauge`, else `~/.local/state/toolgauge`.
fn file() -> Result<PathBuf, StateError> {
    let var = |name: &str| std::env::var_os(name).filter(|v| !v.is_empty());
    let dir = if let Some(dir) = var(STATE_DIR_ENV) {
        PathBuf::from(dir)
    } else if let Some(state) = var("XDG_STATE_HOME") {
        PathBuf::from(state).join("toolgauge")
    } else if let Some(home) = var("HOME") {
        PathBuf::from(home).join(".local/state/toolgauge")
    } else {
        return Err(StateError {
            path: PathBuf::from(format!("${STATE_DIR_ENV}")),
            source: io::Error::new(
                io::ErrorKind::NotFound,
                "neither it, XDG_STATE_HOME nor HOME is set",
            ),
        });
    };
    Ok(dir.join(FILE_NAME))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec(command: &[&str]) -> McpServerSpec {
        McpServerSpec {
            command: command.iter().map(|w| (*w).to_owned()).collect(),
            judge: true,
            ..McpServerSpec::default()
        }
    }

    #[test]
    fn a_server_is_trusted_by_its_whole_command_never_by_its_program_alone() {
        let bridge = spec(&["/venv/bin/python", "/repo/bridge.py", "--domain", "retail"]);
        let named = JudgeTrust {
            named: vec!["/venv/bin/python /repo/bridge.py --domain retail".to_owned()],
            ..JudgeTrust::default()
        };
        assert!(named.allows(&bridge));
        assert!(!named.allows(&spec(&["/venv/bin/python", "/tmp/steal.py"])));
        let imported = JudgeTrust {
            imported: [fingerprint(&bridge)].into(),
            ..JudgeTrust::default()
        };
        assert!(imported.allows(&bridge));
        let mut with_env = bridge.clone();
        with_env.env.insert("PYTHONPATH".into(), "/tmp/evil".into());
        assert!(
            !imported.allows(&with_env),
            "an added variable is another server"
        );
    }
}
