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
        let relative = requested_path(requested)?;
        let joined = self.root.join(&relative);
        if self.has_link_below_root(&relative) {
            self.check_links(requested, &joined)?;
        }
        Ok(joined)
    }

    /// The bytes of a file the model asked for, opened beneath the root by
    /// the kernel (a link out is refused at the open, not only at a check).
    pub fn read(&self, requested: &str) -> Result<Vec<u8>, ToolFailure> {
        read_beneath(&self.root, &requested_path(requested)?)
            .map_err(|e| beneath_failure(&e, requested))
    }

    /// Write a file the model asked for, beneath the root, replacing
    /// whatever link is at its name (`write_beneath`).
    pub fn write(&self, requested: &str, content: &[u8]) -> Result<(), ToolFailure> {
        write_beneath(&self.root, &requested_path(requested)?, content)
            .map_err(|e| beneath_failure(&e, requested))
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

/// A path the model asked for, checked by its text ([`relative_path`]),
/// or why it is blocked.
fn requested_path(requested: &str) -> Result<PathBuf, ToolFailure> {
    relative_path(requested).map_err(|e| ToolFailure::blocked(e.to_string()))
}

/// A failed open beneath the root, as the model is told it: a link that
/// leads out is a blocked path, anything else what the system said.
fn beneath_failure(error: &io::Error, requested: &str) -> ToolFailure {
    let link = error.raw_os_error() == Some(libc::ELOOP)
        || (error.kind() == io::ErrorKind::PermissionDenied && error.get_ref().is_some());
    if link {
        ToolFailure::blocked(format!("path blocked: {requested:?}: {error}"))
    } else {
        ToolFailure::from_io(error, requested)
    }
}

/// Open `relative` below `root` with the kernel holding it there
/// (`openat2` with `RESOLVE_BENEATH`): a link that leads out, even one made
/// after any check, fails the open itself. Where the kernel has no
/// `openat2`, each component is opened in turn with `O_NOFOLLOW`, which
/// refuses every link.
pub fn open_beneath(root: &Path, relative: &Path, flags: i32) -> io::Result<std::fs::File> {
    use std::os::fd::{AsRawFd as _, FromRawFd as _};
    use std::os::unix::ffi::OsStrExt as _;
    let dir = std::fs::File::open(root)?;
    let name = if relative.as_os_str().is_empty() {
        Path::new(".")
    } else {
        relative
    };
    let name = std::ffi::CString::new(name.as_os_str().as_bytes())
        .map_err(|_| io::Error::new(io::ErrorKind::InvalidInput, "a NUL byte in a path"))?;
    // SAFETY: `how` is zeroed then filled field by field (the struct is
    // non-exhaustive); the kernel reads it and `name`, both alive here.
    let fd = unsafe {
        let mut how: libc::open_how = std::mem::zeroed();
        how.flags = (flags | libc::O_CLOEXEC) as u64;
        how.mode = if flags & libc::O_CREAT != 0 { 0o644 } else { 0 };
        how.resolve = libc::RESOLVE_BENEATH | libc::RESOLVE_NO_MAGICLINKS;
        libc::syscall(
            libc::SYS_openat2,
            dir.as_raw_fd(),
            name.as_ptr(),
            &how as *const libc::open_how,
            std::mem::size_of::<libc::open_how>(),
        )
    };
    if fd >= 0 {
        // SAFETY: a new descriptor the kernel gave us, owned by the file.
        return Ok(unsafe { std::fs::File::from_raw_fd(fd as i32) });
    }
    let error = io::Error::last_os_error();
    match error.raw_os_error() {
        Some(libc::ENOSYS) => open_without_links(root, relative, flags),
        Some(libc::EXDEV) => Err(io::Error::new(
            io::ErrorKind::PermissionDenied,
            "it leads outside the sandbox through a link",
        )),
        _ => Err(error),
    }
}

/// `open_beneath` without `openat2`: every component opened with
/// `O_NOFOLLOW` from the one before.
fn open_without_links(root: &Path, relative: &Path, flags: i32) -> io::Result<std::fs::File> {
    use std::os::unix::fs::OpenOptionsExt as _;
    let mut options = std::fs::OpenOptions::new();
    options.read(true).custom_flags(libc::O_NOFOLLOW);
    let mut path = root.to_owned();
    let components: Vec<_> = relative.components().collect();
    for component in components.iter().take(components.len().saturating_sub(1)) {
        path.push(component);
        options.open(&path)?;
    }
    path.push(components.last().map_or(Path::new("."), |c| c.as_ref()));
    let mut last = std::fs::OpenOptions::new();
    let access = flags & libc::O_ACCMODE;
    last.read(access != libc::O_WRONLY)
        .write(access != libc::O_RDONLY)
        .create(flags & libc::O_CREAT != 0)
        .custom_flags((flags & !libc::O_ACCMODE & !libc::O_CREAT) | libc::O_NOFOLLOW);
    last.open(&path)
}

/// The bytes of the file `relative` below `root`, opened beneath it. A
/// file with another name (a hard link, maybe to a host file) is not the
/// sandbox's own: refused.
pub fn read_beneath(root: &Path, relative: &Path) -> io::Result<Vec<u8>> {
    use std::io::Read as _;
    use std::os::unix::fs::MetadataExt as _;
    let mut file = open_beneath(root, relative, libc::O_RDONLY)?;
    let meta = file.metadata()?;
    if meta.is_file() && meta.nlink() > 1 {
        return Err(io::Error::new(
            io::ErrorKind::PermissionDenied,
            "it is a hard link: the file also lives outside what the sandbox owns",
        ));
    }
    let mut bytes = Vec::new();
    file.read_to_end(&mut bytes)?;
    Ok(bytes)
}

/// Write `content` as the file `relative` below `root`: its folders made
/// and opened beneath the root, the bytes written to a new file beside it
/// and renamed into place, so that a link (symbolic or hard) at that
/// name is replaced, never written through.
pub fn write_beneath(root: &Path, relative: &Path, content: &[u8]) -> io::Result<()> {
    use std::io::Write as _;
    use std::os::fd::AsRawFd as _;
    use std::os::unix::ffi::OsStrExt as _;
    let (Some(parent), Some(name)) = (relative.parent(), relative.file_name()) else {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            "it names the sandbox itself, not a file",
        ));
    };
    let mut made = PathBuf::new();
    for component in parent.components() {
        let above = open_beneath(root, &made, libc::O_RDONLY | libc::O_DIRECTORY)?;
        let entry = std::ffi::CString::new(component.as_os_str().as_bytes())
            .map_err(|_| io::Error::new(io::ErrorKind::InvalidInput, "a NUL byte in a path"))?;
        // SAFETY: mkdirat reads the name; it never follows a link at it.
        if unsafe { libc::mkdirat(above.as_raw_fd(), entry.as_ptr(), 0o755) } != 0 {
            let error = io::Error::last_os_error();
            if error.kind() != io::ErrorKind::AlreadyExists {
                return Err(error);
            }
        }
        made.push(component);
    }
    let folder = open_beneath(root, parent, libc::O_RDONLY | libc::O_DIRECTORY)?;
    let temporary = format!(
        ".{}.toolgauge-{}.partial",
        name.to_string_lossy(),
        std::process::id()
    );
    let temporary_path = parent.join(&temporary);
    let mut file = open_beneath(
        root,
        &temporary_path,
        libc::O_WRONLY | libc::O_CREAT | libc::O_TRUNC | libc::O_NOFOLLOW,
    )?;
    let written = file.write_all(content).and_then(|()| file.flush());
    let c_temporary = std::ffi::CString::new(temporary.as_bytes())
        .map_err(|_| io::Error::new(io::ErrorKind::InvalidInput, "a NUL byte in a path"))?;
    let c_name = std::ffi::CString::new(name.as_bytes())
        .map_err(|_| io::Error::new(io::ErrorKind::InvalidInput, "a NUL byte in a path"))?;
    // SAFETY: renameat and unlinkat read the names; a link at the target
    // name is replaced, not followed.
    let renamed = written.and_then(|()| unsafe {
        if libc::renameat(
            folder.as_raw_fd(),
            c_temporary.as_ptr(),
            folder.as_raw_fd(),
            c_name.as_ptr(),
        ) == 0
        {
            Ok(())
        } else {
            Err(io::Error::last_os_error())
        }
    });
    if renamed.is_err() {
        // SAFETY: as above.
        unsafe { libc::unlinkat(folder.as_raw_fd(), c_temporary.as_ptr(), 0) };
    }
    renamed
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

    #[test]
    fn a_write_replaces_a_link_at_its_name_and_never_writes_through_it() {
        let (dir, sandbox) = sandbox();
        let host = dir.path().join("host.txt");
        std::fs::write(&host, "host").unwrap();
        // A hard link into the sandbox (same file system), and a symlink.
        std::fs::hard_link(&host, sandbox.root().join("hard.txt")).unwrap();
        std::os::unix::fs::symlink(&host, sandbox.root().join("soft.txt")).unwrap();
        for name in ["hard.txt", "soft.txt"] {
            sandbox.write(name, b"model").unwrap();
            assert_eq!(std::fs::read_to_string(&host).unwrap(), "host", "{name}");
            let written = sandbox.root().join(name);
            assert!(std::fs::symlink_metadata(&written).unwrap().is_file());
            assert_eq!(std::fs::read_to_string(&written).unwrap(), "model");
        }
        // No temporary file is left beside them.
        let mut names: Vec<String> = std::fs::read_dir(sandbox.root())
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        names.sort();
        assert_eq!(names, ["file.txt", "hard.txt", "soft.txt"]);
    }

    #[test]
    fn a_read_refuses_a_hard_link_and_a_link_out_at_the_open() {
        let (dir, sandbox) = sandbox();
        let host = dir.path().join("host.txt");
        std::fs::write(&host, "host").unwrap();
        std::fs::hard_link(&host, sandbox.root().join("hard.txt")).unwrap();
        std::os::unix::fs::symlink(dir.path(), sandbox.root().join("up")).unwrap();
        std::os::unix::fs::symlink("file.txt", sandbox.root().join("ok-link")).unwrap();
        for name in ["hard.txt", "up/host.txt"] {
            let failure = sandbox.read(name).unwrap_err();
            assert_eq!(
                failure.kind,
                ToolFailureKind::Blocked,
                "{name}: {}",
                failure.message
            );
        }
        assert_eq!(sandbox.read("ok-link").unwrap(), b"x");
        // Folders made for a write stay inside too.
        let failure = sandbox.write("up/new/file.txt", b"x").unwrap_err();
        assert_eq!(
            failure.kind,
            ToolFailureKind::Blocked,
            "{}",
            failure.message
        );
        assert!(!dir.path().join("new").exists());
        sandbox.write("deep/er/file.txt", b"y").unwrap();
        assert_eq!(sandbox.read("deep/er/file.txt").unwrap(), b"y");
    }
}
