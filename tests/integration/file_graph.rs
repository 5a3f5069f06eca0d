//! The files of src/ as a graph: an arrow from a file to the file that
//! defines each item it names, seen through every `pub use` on the way,
//! so that importing a type from a folder's `mod.rs` is an arrow to the
//! file that defines it. No cycle may run through files, and a folder's
//! face (`mod.rs`, or `x.rs` beside `x/`) holds only its doors: `mod`
//! and `pub use` lines.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use crate::architecture::{code_only, find_cycle, root, sources};

/// A module of the crate: its file, its child modules and what it
/// re-exports (`pub use`: the name it gives, the path it names).
#[derive(Default)]
struct Module {
    file: String,
    children: BTreeSet<String>,
    exports: BTreeMap<String, Vec<String>>,
    globs: Vec<Vec<String>>,
}

/// The crate's modules by path (`["tool", "backend"]`), each file's code
/// and its module path.
struct Crate {
    modules: BTreeMap<Vec<String>, Module>,
    files: Vec<(String, Vec<String>, String)>,
}

fn module_path(path: &Path) -> Vec<String> {
    let relative = path.strip_prefix(root().join("src")).unwrap();
    let mut parts: Vec<String> = relative
        .components()
        .map(|c| c.as_os_str().to_str().unwrap().to_owned())
        .collect();
    let last = parts.pop().unwrap();
    let stem = last.trim_end_matches(".rs");
    if !matches!(stem, "mod" | "lib" | "main") {
        parts.push(stem.to_owned());
    }
    parts
}

/// A face: `mod.rs`, or `x.rs` whose folder `x/` holds its children.
pub(crate) fn is_face(path: &Path) -> bool {
    path.file_name().is_some_and(|n| n == "mod.rs")
        || path.with_extension("").is_dir() && path.extension().is_some_and(|e| e == "rs")
}

/// Every `use` statement's paths (`use a::{b, c::d as e};` gives the
/// name each brings in and the path it names), `pub` ones apart.
fn use_statements(code: &str) -> Vec<(bool, String, Vec<String>)> {
    let mut found = Vec::new();
    for (at, _) in code.match_indices("use ") {
        let before = code[..at].trim_end_matches([' ', '\t']);
        let line_start = before.rfind('\n').map_or(0, |i| i + 1);
        let prefix = before[line_start..].trim();
        let public = prefix.starts_with("pub");
        if !(prefix.is_empty() || prefix.starts_with("pub")) {
            continue;
        }
        let Some(end) = code[at..].find(';') else {
            continue;
        };
        let tree: String = code[at + 4..at + end]
            .chars()
            .filter(|c| !c.is_whitespace() || *c == ' ')
            .collect();
        expand(tree.trim(), &[], &mut |name, path| {
            found.push((public, name, path));
        });
    }
    found
}

/// A use tree's leaves: `a::{b, c as d}` gives (`b`, a::b), (`d`, a::c).
fn expand(tree: &str, prefix: &[String], out: &mut dyn FnMut(String, Vec<String>)) {
    let tree = tree.trim();
    if let Some(open) = tree.find('{') {
        let head: Vec<String> = segments(&tree[..open]);
        let mut base = prefix.to_vec();
        base.extend(head);
        let inner = &tree[open + 1..tree.rfind('}').unwrap_or(tree.len())];
        let mut depth = 0;
        let mut start = 0;
        for (i, c) in inner.char_indices() {
            match c {
                '{' => depth += 1,
                '}' => depth -= 1,
                ',' if depth == 0 => {
                    expand(&inner[start..i], &base, out);
                    start = i + 1;
                }
                _ => {}
            }
        }
        expand(&inner[start..], &base, out);
        return;
    }
    if tree.is_empty() {
        return;
    }
    let (path, alias) = match tree.split_once(" as ") {
        Some((p, a)) => (p, Some(a.trim())),
        None => (tree, None),
    };
    let mut full = prefix.to_vec();
    full.extend(segments(path));
    let Some(last) = full.last().cloned() else {
        return;
    };
    if last == "self" {
        full.pop();
    }
    let name = alias.map_or_else(|| full.last().cloned().unwrap_or_default(), str::to_owned);
    out(name, full);
}

fn segments(path: &str) -> Vec<String> {
    path.split("::")
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .map(str::to_owned)
        .collect()
}

impl Crate {
    fn read() -> Crate {
        let mut modules: BTreeMap<Vec<String>, Module> = BTreeMap::new();
        let mut files = Vec::new();
        for (path, text) in sources() {
            let name = path.strip_prefix(root()).unwrap().display().to_string();
            if name == "src/main.rs" {
                continue;
            }
            let at = module_path(&path);
            let code = code_only(&text);
            let module = modules.entry(at.clone()).or_default();
            module.file = name.clone();
            for line in code.lines() {
                let line = line.trim();
                let declared = line
                    .trim_start_matches("pub(crate) ")
                    .trim_start_matches("pub(super) ")
                    .trim_start_matches("pub ");
                if let Some(child) = declared.strip_prefix("mod ")
                    && let Some(child) = child.strip_suffix(';')
                {
                    module.children.insert(child.trim().to_owned());
                }
            }
            for (public, alias, target) in use_statements(&code) {
                if !public {
                    continue;
                }
                if alias == "*" {
                    let mut glob = target.clone();
                    glob.pop();
                    module.globs.push(glob);
                } else {
                    module.exports.insert(alias, target);
                }
            }
            files.push((name, at, code));
        }
        Crate { modules, files }
    }

    /// The file that defines what `path` names, seen from module `from`.
    fn resolve(&self, from: &[String], path: &[String], depth: usize) -> Option<String> {
        if depth > 16 || path.is_empty() {
            return None;
        }
        let mut at: Vec<String> = from.to_vec();
        let mut rest = path;
        match path[0].as_str() {
            "crate" => {
                at.clear();
                rest = &path[1..];
            }
            "self" => rest = &path[1..],
            "super" => {
                while rest.first().is_some_and(|s| s == "super") {
                    at.pop();
                    rest = &rest[1..];
                }
            }
            _ => {}
        }
        for (i, segment) in rest.iter().enumerate() {
            let module = self.modules.get(&at)?;
            if module.children.contains(segment) {
                at.push(segment.clone());
                continue;
            }
            if let Some(target) = module.exports.get(segment) {
                let mut full = target.clone();
                full.extend(rest[i + 1..].iter().cloned());
                return self.resolve(&at, &full, depth + 1);
            }
            for glob in &module.globs {
                let mut full = glob.clone();
                full.extend(rest[i..].iter().cloned());
                if let Some(file) = self.resolve(&at, &full, depth + 1)
                    && file != module.file
                {
                    return Some(file);
                }
            }
            return Some(module.file.clone());
        }
        self.modules.get(&at).map(|m| m.file.clone())
    }

    /// Each file's arrows to the files that define what it names.
    fn edges(&self) -> BTreeMap<String, BTreeMap<String, String>> {
        let mut edges: BTreeMap<String, BTreeMap<String, String>> = BTreeMap::new();
        for (file, at, code) in &self.files {
            let mut targets: BTreeMap<String, String> = BTreeMap::new();
            let face = is_face(&root().join(file));
            let mut local_modules: BTreeMap<String, Vec<String>> = BTreeMap::new();
            for (public, alias, path) in use_statements(code) {
                if face && public {
                    continue; // a door, not a use
                }
                if matches!(path[0].as_str(), "crate" | "self" | "super")
                    || self.modules[at].children.contains(&path[0])
                {
                    if let Some(target) = self.resolve(at, &path, 0) {
                        targets.entry(target).or_insert_with(|| path.join("::"));
                    }
                    local_modules.insert(alias, path);
                }
            }
            for path in inline_paths(code) {
                let path = match local_modules.get(&path[0]) {
                    Some(base) if path.len() > 1 => {
                        let mut full = base.clone();
                        full.extend(path[1..].iter().cloned());
                        full
                    }
                    _ => path,
                };
                let ours = matches!(path[0].as_str(), "crate" | "self" | "super")
                    || self.modules[at].children.contains(&path[0]);
                if ours && let Some(target) = self.resolve(at, &path, 0) {
                    targets.entry(target).or_insert_with(|| path.join("::"));
                }
            }
            targets.remove(file);
            edges.insert(file.clone(), targets);
        }
        edges
    }
}

/// Paths written in code outside `use` lines: `a::b::C`, each as its
/// segments up to the first one that is not a plain name.
fn inline_paths(code: &str) -> Vec<Vec<String>> {
    let mut paths = Vec::new();
    for line in code.lines() {
        let trimmed = line.trim_start();
        if trimmed.starts_with("use ") || trimmed.starts_with("pub use ") {
            continue;
        }
        let bytes: Vec<char> = line.chars().collect();
        let mut i = 0;
        while i < bytes.len() {
            let starts = (bytes[i].is_alphabetic() || bytes[i] == '_')
                && (i == 0
                    || !(bytes[i - 1].is_alphanumeric()
                        || bytes[i - 1] == '_'
                        || bytes[i - 1] == ':'));
            if !starts {
                i += 1;
                continue;
            }
            let mut path = Vec::new();
            let mut j = i;
            loop {
                let start = j;
                while j < bytes.len() && (bytes[j].is_alphanumeric() || bytes[j] == '_') {
                    j += 1;
                }
                path.push(bytes[start..j].iter().collect::<String>());
                if j + 2 < bytes.len()
                    && bytes[j] == ':'
                    && bytes[j + 1] == ':'
                    && (bytes[j + 2].is_alphabetic() || bytes[j + 2] == '_')
                {
                    j += 2;
                } else {
                    break;
                }
            }
            if path.len() > 1 {
                paths.push(path);
            }
            i = j.max(i + 1);
        }
    }
    paths
}

#[test]
fn no_cycle_runs_through_files_seen_through_their_doors() {
    let named = Crate::read().edges();
    let edges: BTreeMap<String, BTreeSet<String>> = named
        .iter()
        .map(|(k, v)| (k.clone(), v.keys().cloned().collect()))
        .collect();
    let knots = knots(&edges);
    let mut told = Vec::new();
    for knot in &knots {
        told.push(knot.join(" <-> "));
        for from in knot {
            for (to, path) in &named[from] {
                if knot.contains(to) {
                    told.push(format!("    {from} -> {to} ({path})"));
                }
            }
        }
    }
    assert!(
        knots.is_empty(),
        "files in a cycle (each set of files reach each other; the arrows say by what path):\n{}",
        told.join("\n")
    );
    let borrowed: BTreeMap<&str, Vec<&str>> = edges
        .iter()
        .map(|(k, v)| (k.as_str(), v.iter().map(String::as_str).collect()))
        .collect();
    assert_eq!(find_cycle(&borrowed), None);
}

/// The graph's strongly connected sets of more than one file.
fn knots(edges: &BTreeMap<String, BTreeSet<String>>) -> Vec<Vec<String>> {
    let reach = |from: &str| {
        let mut seen = BTreeSet::new();
        let mut stack = vec![from.to_owned()];
        while let Some(node) = stack.pop() {
            for next in edges.get(&node).into_iter().flatten() {
                if seen.insert(next.clone()) {
                    stack.push(next.clone());
                }
            }
        }
        seen
    };
    let reaches: BTreeMap<&String, BTreeSet<String>> =
        edges.keys().map(|k| (k, reach(k))).collect();
    let mut placed = BTreeSet::new();
    let mut knots = Vec::new();
    for (node, reached) in &reaches {
        if placed.contains(*node) || !reached.contains(*node) {
            continue;
        }
        let knot: Vec<String> = reached
            .iter()
            .filter(|other| reaches.get(other).is_some_and(|r| r.contains(*node)))
            .cloned()
            .collect();
        placed.extend(knot.iter().cloned());
        knots.push(knot);
    }
    knots
}

/// What a face may hold besides its doors: docs, attributes, blank lines.
fn is_door(line: &str) -> bool {
    let line = line.trim();
    let bare = line
        .trim_start_matches("pub(crate) ")
        .trim_start_matches("pub(super) ")
        .trim_start_matches("pub ");
    line.is_empty()
        || line.starts_with("#[")
        || line.starts_with("#![")
        || bare.starts_with("mod ")
        || (line.starts_with("pub") && bare.starts_with("use "))
}

#[test]
fn a_folder_face_holds_only_its_doors() {
    let mut crowded = Vec::new();
    for (path, text) in sources() {
        if !is_face(&path) || path.ends_with("lib.rs") {
            continue;
        }
        let code = code_only(&text);
        // A `pub use` may span lines: its continuation lines are doors too.
        let mut open = false;
        for line in code.lines() {
            let door = open || is_door(line);
            if !door {
                let name = path.strip_prefix(root()).unwrap().display();
                crowded.push(format!("{name}: {}", line.trim()));
                break;
            }
            let trimmed = line.trim();
            if trimmed.contains("use ") || open {
                open = !trimmed.ends_with(';');
            }
        }
    }
    assert!(
        crowded.is_empty(),
        "a face holds more than its doors (mod and pub use lines):\n{}",
        crowded.join("\n")
    );
}

#[test]
fn the_file_graph_sees_through_doors() {
    let mut uses = Vec::new();
    expand(
        "crate::tool::{Registry, mcp::{self, ToolServers as Servers}}",
        &[],
        &mut |n, p| {
            uses.push((n, p.join("::")));
        },
    );
    assert_eq!(
        uses,
        vec![
            ("Registry".to_owned(), "crate::tool::Registry".to_owned()),
            ("mcp".to_owned(), "crate::tool::mcp".to_owned()),
            (
                "Servers".to_owned(),
                "crate::tool::mcp::ToolServers".to_owned()
            ),
        ]
    );
    assert_eq!(
        inline_paths("let x = super::def::Tool::new(crate::a::B);"),
        vec![
            vec![
                "super".to_owned(),
                "def".to_owned(),
                "Tool".to_owned(),
                "new".to_owned()
            ],
            vec!["crate".to_owned(), "a".to_owned(), "B".to_owned()],
        ]
    );
    let _unused: PathBuf = root();
}
