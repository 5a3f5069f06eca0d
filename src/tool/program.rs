//! Where a command's program is found: a path from its file's folder, a
//! name on PATH, or beside the toolgauge executable.

/// A command's program: a relative path (it has a `/`) from `folder`, as
/// commands run in their file's folder; a bare name from PATH, or else
/// from beside the toolgauge executable (and its `examples/` folders), so
/// that programs built with it (the repository's MCP test server) are
/// found wherever cargo puts them; anything else as given.
pub fn resolve_program(program: &str, folder: &std::path::Path) -> String {
    let path = std::path::Path::new(program);
    if program.contains('/') {
        if path.is_relative() {
            let joined = folder.join(program);
            return std::fs::canonicalize(&joined)
                .unwrap_or(joined)
                .display()
                .to_string();
        }
        return program.to_owned();
    }
    let on_path = std::env::var_os("PATH")
        .is_some_and(|paths| std::env::split_paths(&paths).any(|dir| dir.join(program).is_file()));
    if on_path {
        return program.to_owned();
    }
    beside_executable(program).map_or_else(|| program.to_owned(), |p| p.display().to_string())
}

/// Whether `program` (as [`resolve_program`] gives it) can be started: a
/// path to a file, or a name found on PATH.
pub fn program_exists(program: &str) -> bool {
    if program.contains('/') {
        return std::path::Path::new(program).is_file();
    }
    std::env::var_os("PATH")
        .is_some_and(|paths| std::env::split_paths(&paths).any(|dir| dir.join(program).is_file()))
}

/// `program` next to the running executable: in its folder, its
/// `examples/`, or the `examples/` of cargo's other profile.
fn beside_executable(program: &str) -> Option<std::path::PathBuf> {
    let exe = std::env::current_exe().ok()?;
    let dir = exe.parent()?;
    // Test binaries live in <profile>/deps.
    let profile = if dir.ends_with("deps") {
        dir.parent()?
    } else {
        dir
    };
    let target = profile.parent()?;
    [
        profile.join(program),
        profile.join("examples").join(program),
        target.join("debug/examples").join(program),
        target.join("release/examples").join(program),
    ]
    .into_iter()
    .find(|candidate| candidate.is_file())
}
