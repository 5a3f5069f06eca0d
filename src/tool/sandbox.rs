//! The sandbox directory that file tools are confined to: every requested
//! path is checked here before any file is opened.

use std::io;
use std::path::{Component, Path, PathBuf};

use super::ToolFailure;

/// A directory that file tools may not leave.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Sandbox {
    /// Canonical (symlink-free, absolute) root.
    root: PathBuf,
}

/// Why a path is refused before any file is opened.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PathBlocked {
    #[error("path blocked: it contains a NUL byte")]
    Nul,
    #[error("path blocked: {0:?} contains a backslash; use / between names")]
    Backslash(String),
    #[error("path blocked: {0:?} is absolute; give a path relative to the sandbox")]
    Absolute(String),
    #[error("path blocked: {0:?} leads outside the sandbox")]
    Outside(String),
}

/// `requested` as a path below a sandbox root, checked by its text alone:
/// refused when it has a NUL byte or a backslash, is absolute (or a drive,
/// or `~`), or climbs above the root with `..`. What a scenario names
/// (`files`, `final_state.files`) is checked with this when it loads;
/// what a model asks for is checked with it, and for links, at each call.
pub fn relative_path(requested: &str) -> Result<PathBuf, PathBlocked> {
    if requested.contains('\0') {
        return Err(PathBlocked::Nul);
    }
    if requested.contains('\\') {
        return Err(PathBlocked::Backslash(requested.to_owned()));
    }
    let absolute = || PathBlocked::Absolute(requested.to_owned());
    if requested.starts_with('/') || requested.starts_with('~') || has_drive_prefix(requested) {
        return Err(absolute());
    }
    let mut relative = PathBuf::new();
    for component in Path::new(requested).components() {
        match component {
            Component::Normal(name) => relative.push(name),
            Component::CurDir => {}
            Component::ParentDir => {
                if !relative.pop() {
                    return Err(PathBlocked::Outside(requested.to_owned()));
                }
            }
            Component::RootDir | Component::Prefix(_) => return Err(absolute()),
        }
    }
    Ok(relative)
}

impl Sandbox {
    /// Open `dir` as a sandbox; it must exist and be a directory.
    pub fn new(dir: impl AsRef<Path>) -> io::Result<Self> {
        let root = std::fs::canonicalize(dir.as_ref())?;
        if !root.is_dir() {
            return Err(io::Error::new(
                io::ErrorKind::NotADirectory,
                format!("{} is not a directory", dir.as_ref().display()),
            ));
        }
        Ok(Sandbox { root })
    }

    pub fn root(&self) -> &Path {
        &self.root
    }

    /// Resolve a path the model asked for to a path inside the sandbox, or
    /// refuse it. Refused: NUL bytes, backslashes, absolute or drive paths,
    /// `..` that climbs above the root, and symlinks (even dangling ones)
    /// that lead outside.
    pub fn resolve(&self, requested: &str) -> Result<PathBuf, ToolFailure> {
        let relative = relative_path(requested).map_err(|e| ToolFailure::blocked(e.to_string()))?;
        let joined = self.root.join(&relative);
        if self.has_link_below_root(&relative) {
            self.check_links(requested, &joined)?;
        }
        Ok(joined)
    }

    /// Whether a component below the (canonical) root is a symlink, found
    /// with one `lstat` per component that exists: the common path has no
    /// link, and resolving every component of the whole absolute path
    /// (realpath) cost a failed `readlink` per component per call.
    fn has_link_below_root(&self, relative: &Path) -> bool {
        let mut current = self.root.clone();
        for component in relative.components() {
            current.push(component);
            match std::fs::symlink_metadata(&current) {
                Ok(meta) if meta.file_type().is_symlink() => return true,
                Ok(_) => {}
                // Nothing exists from here on, so no link either.
                Err(_) => return false,
            }
        }
        false
    }

    /// The lexical check cannot see symlinks: canonicalize the deepest part
    /// of the path that exists and make sure it is still under the root.
    fn check_links(&self, requested: &str, joined: &Path) -> Result<(), ToolFailure> {
        let mut existing = joined;
        while std::fs::symlink_metadata(existing).is_err() {
            match existing.parent() {
                Some(parent) if parent.starts_with(&self.root) => existing = parent,
                _ => return Ok(()),
            }
        }
        match std::fs::canonicalize(existing) {
            Ok(real) if real.starts_with(&self.root) => Ok(()),
            Ok(_) => Err(ToolFailure::blocked(format!(
                "path blocked: {requested:?} leads outside the sandbox through a symlink"
            ))),
            Err(_) => Err(ToolFailure::blocked(format!(
                "path blocked: {requested:?} goes through a broken symlink"
            ))),
        }
    }
}

fn has_drive_prefix(path: &str) -> bool {
    let bytes = path.as_bytes();
    bytes.len() >= 2 && bytes[0].is_ascii_alphabetic() && bytes[1] == b':'
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tool::ToolFailureKind;

    fn sandbox() -> (tempfile::TempDir, Sandbox) {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir(dir.path().join("inner")).unwrap();
        std::fs::write(dir.path().join("inner/file.txt"), "x").unwrap();
        let sandbox = Sandbox::new(dir.path().join("inner")).unwrap();
        (dir, sandbox)
    }

    fn blocked(sandbox: &Sandbox, path: &str) -> bool {
        matches!(sandbox.resolve(path), Err(f) if f.kind == ToolFailureKind::Blocked)
    }

    #[test]
    fn paths_inside_resolve_under_the_root() {
        let (_dir, sandbox) = sandbox();
        for path in [
            "file.txt",
            "./file.txt",
            "a/../file.txt",
            "new/deeper.txt",
            "",
        ] {
            let resolved = sandbox.resolve(path).unwrap();
            assert!(resolved.starts_with(sandbox.root()), "{path}");
        }
    }

    #[test]
    fn escapes_are_blocked() {
        let (_dir, sandbox) = sandbox();
        for path in [
            "..",
            "../x",
            "a/../../x",
            "/etc/passwd",
            "~/x",
            "C:/x",
            "..\\x",
            "a\\..\\..\\x",
            "file.txt\0",
        ] {
            assert!(blocked(&sandbox, path), "{path:?} was not blocked");
        }
    }

    #[cfg(unix)]
    #[test]
    fn symlinks_pointing_out_are_blocked() {
        let (dir, sandbox) = sandbox();
        std::fs::write(dir.path().join("secret.txt"), "s").unwrap();
        std::os::unix::fs::symlink(dir.path().join("secret.txt"), sandbox.root().join("link"))
            .unwrap();
        std::os::unix::fs::symlink(dir.path(), sandbox.root().join("up")).unwrap();
        std::os::unix::fs::symlink(dir.path().join("nowhere"), sandbox.root().join("dangling"))
            .unwrap();
        std::os::unix::fs::symlink("file.txt", sandbox.root().join("ok-link")).unwrap();
        assert!(blocked(&sandbox, "link"));
        assert!(blocked(&sandbox, "up/secret.txt"));
        assert!(blocked(&sandbox, "up/new-file"));
        assert!(blocked(&sandbox, "dangling"));
        assert!(sandbox.resolve("ok-link").is_ok());
    }
}
