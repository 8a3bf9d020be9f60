//! The modules of each crate's `src` form layers. A `use` (or a path in code) of `crate::a::…`,
//! `super::…` or `self::…` is an edge from the module that writes it to the module it names; comments and
//! `#[cfg(test)]` modules do not count.
//!
//! - No module imports a module that imports it back, at any depth: edges are counted between the two
//!   siblings under their common parent (so `agent::run` using `executor` is `agent` → `executor`), and
//!   a cycle among siblings fails and names them.
//! - In yiem-core, [`CORE_LAYERS`] says which layer may import which: a module imports its own layer and
//!   those below, and an import of a layer above fails, naming the file and the path.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// Every `.rs` file under `dir`.
fn sources(dir: &Path, found: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            sources(&path, found);
        } else if path.extension().is_some_and(|ext| ext == "rs") {
            found.push(path);
        }
    }
}

/// The module path of a source file (`agent::run` for `src/agent/run.rs`, `agent` for
/// `src/agent/mod.rs`, the root for `lib.rs` and `main.rs`).
fn module_of(src: &Path, file: &Path) -> Vec<String> {
    let relative = file.strip_prefix(src).unwrap().with_extension("");
    let mut parts: Vec<String> = relative
        .components()
        .map(|part| part.as_os_str().to_string_lossy().into_owned())
        .collect();
    if parts.last().is_some_and(|last| last == "mod") {
        parts.pop();
    }
    if parts.len() == 1 && (parts[0] == "lib" || parts[0] == "main") {
        parts.clear();
    }
    parts
}

/// The code of a file without its comments and its `#[cfg(test)]` modules (the first and all after it).
fn code(text: &str) -> String {
    let text = text.split("#[cfg(test)]\nmod ").next().unwrap_or_default();
    text.lines()
        .filter(|line| !line.trim_start().starts_with("//"))
        .collect::<Vec<_>>()
        .join("\n")
}

/// The paths written in `code` that start at `crate`, `super` or `self`.
fn paths(code: &str) -> Vec<Vec<String>> {
    let mut found = Vec::new();
    let bytes = code.as_bytes();
    for start in ["crate::", "super::", "self::"] {
        let mut from = 0;
        while let Some(at) = code[from..].find(start) {
            let at = from + at;
            from = at + start.len();
            let before = at.checked_sub(1).map(|i| bytes[i] as char);
            if before.is_some_and(|c| c.is_alphanumeric() || c == '_' || c == ':') {
                continue;
            }
            let end = code[at..]
                .find(|c: char| !(c.is_alphanumeric() || c == '_' || c == ':'))
                .map_or(code.len(), |end| at + end);
            let path: Vec<String> = code[at..end]
                .split("::")
                .filter(|part| !part.is_empty())
                .map(str::to_owned)
                .collect();
            found.push(path);
        }
    }
    found
}

/// The module `path` names, written in module `from`: the longest prefix that is a module.
fn target(
    modules: &BTreeSet<Vec<String>>,
    from: &[String],
    path: &[String],
) -> Option<Vec<String>> {
    let (mut base, mut rest) = match path.first().map(String::as_str) {
        Some("crate") => (Vec::new(), &path[1..]),
        Some("self") => (from.to_vec(), &path[1..]),
        Some("super") => (from[..from.len().saturating_sub(1)].to_vec(), &path[1..]),
        _ => return None,
    };
    while rest.first().is_some_and(|part| part == "super") {
        base.pop();
        rest = &rest[1..];
    }
    let mut best = None;
    for take in 0..=rest.len() {
        let mut candidate = base.clone();
        candidate.extend(rest[..take].iter().cloned());
        if modules.contains(&candidate) {
            best = Some(candidate);
        }
    }
    best
}

/// The sibling modules' edges of one crate, each with one place that makes it.
fn sibling_edges(src: &Path) -> BTreeMap<(String, String), String> {
    let mut files = Vec::new();
    sources(src, &mut files);
    let modules: BTreeSet<Vec<String>> = files.iter().map(|file| module_of(src, file)).collect();
    let mut edges = BTreeMap::new();
    for file in &files {
        let from = module_of(src, file);
        let text = std::fs::read_to_string(file).unwrap();
        for path in paths(&code(&text)) {
            let Some(to) = target(&modules, &from, &path) else {
                continue;
            };
            let common = from.iter().zip(&to).take_while(|(a, b)| a == b).count();
            // A module and its own parent or child are one unit here.
            if common == from.len() || common == to.len() {
                continue;
            }
            let name = |module: &[String]| module[..=common].join("::");
            edges
                .entry((name(&from), name(&to)))
                .or_insert_with(|| format!("{}: {}", file.display(), path.join("::")));
        }
    }
    edges
}

/// The cycles among the edges: each strongly connected set of more than one module.
fn cycles(edges: &BTreeMap<(String, String), String>) -> Vec<Vec<String>> {
    let nodes: BTreeSet<&String> = edges.keys().flat_map(|(a, b)| [a, b]).collect();
    let reaches = |from: &String| {
        let mut seen = BTreeSet::from([from.clone()]);
        let mut todo = vec![from.clone()];
        while let Some(node) = todo.pop() {
            for (a, b) in edges.keys() {
                if *a == node && seen.insert(b.clone()) {
                    todo.push(b.clone());
                }
            }
        }
        seen
    };
    let reach: BTreeMap<&String, BTreeSet<String>> =
        nodes.iter().map(|node| (*node, reaches(node))).collect();
    let mut found: Vec<Vec<String>> = Vec::new();
    for node in &nodes {
        let set: Vec<String> = nodes
            .iter()
            .filter(|other| reach[*node].contains(**other) && reach[**other].contains(*node))
            .map(|other| (*other).clone())
            .collect();
        if set.len() > 1 && !found.contains(&set) {
            found.push(set);
        }
    }
    found
}

/// yiem-core's layers, lowest first, each with its modules (a module path names the module and what is
/// under it; the longest that fits a file decides its layer). A module may import its own layer and the
/// layers below; the agent protocol's step machine (`protocol`) names the calls it plans and the replies
/// it records, but never imports the executor that runs them or the models that make them.
const CORE_LAYERS: &[(&str, &[&str])] = &[
    (
        "data",
        &[
            "content", "result", "call", "message", "id", "guard", "journal", "otel", "decision",
            "suggest", "grammar", "state",
        ],
    ),
    ("schema", &["dialect", "args"]),
    ("ask", &["ask"]),
    (
        "tool",
        &[
            "tool",
            "store",
            "catalog",
            "program",
            "exec::hooks",
            "approval",
            "event",
            "telemetry",
        ],
    ),
    (
        "protocol",
        &[
            "agent::run",
            "agent::saved",
            "agent::asked",
            "agent::paused",
            "agent::resume",
            "agent::limits",
        ],
    ),
    ("exec", &["exec"]),
    ("llm", &["llm"]),
    ("code", &["code"]),
    ("agent", &["agent"]),
    ("mcp", &["mcp"]),
    ("root", &["", "__private", "guide"]),
];

/// The layer of `module` in `layers`: its index, and the module path that put it there.
fn layer_of(layers: &[(&str, &[&str])], module: &[String]) -> Option<usize> {
    let path = module.join("::");
    let mut best: Option<(usize, usize)> = None;
    for (index, (_, modules)) in layers.iter().enumerate() {
        for prefix in *modules {
            let fits = prefix.is_empty() && path.is_empty()
                || !prefix.is_empty()
                    && (path == *prefix || path.starts_with(&format!("{prefix}::")));
            if fits && best.is_none_or(|(length, _)| prefix.len() >= length) {
                best = Some((prefix.len(), index));
            }
        }
    }
    best.map(|(_, index)| index)
}

/// The imports of `src` in the wrong direction under `layers`, each as `file: path (from → to)`; and the
/// modules no layer holds.
fn wrong_direction(src: &Path, layers: &[(&str, &[&str])]) -> (Vec<String>, BTreeSet<String>) {
    let mut files = Vec::new();
    sources(src, &mut files);
    let modules: BTreeSet<Vec<String>> = files.iter().map(|file| module_of(src, file)).collect();
    let mut wrong = Vec::new();
    let mut unplaced = BTreeSet::new();
    for file in &files {
        let from = module_of(src, file);
        let Some(from_layer) = layer_of(layers, &from) else {
            unplaced.insert(from.join("::"));
            continue;
        };
        let text = std::fs::read_to_string(file).unwrap();
        for path in paths(&code(&text)) {
            let Some(to) = target(&modules, &from, &path) else {
                continue;
            };
            let Some(to_layer) = layer_of(layers, &to) else {
                unplaced.insert(to.join("::"));
                continue;
            };
            if to_layer > from_layer {
                let relative = file.strip_prefix(src).unwrap_or(file);
                wrong.push(format!(
                    "{}: {} ({} → {})",
                    relative.display(),
                    path.join("::"),
                    layers[from_layer].0,
                    layers[to_layer].0
                ));
            }
        }
    }
    (wrong, unplaced)
}

fn crate_sources() -> Vec<PathBuf> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).parent().unwrap();
    ["yiem-core", "yiem-macros", "yiem-tools", "yiem-restate"]
        .iter()
        .map(|name| root.join(name).join("src"))
        .collect()
}

#[test]
fn no_module_imports_one_that_imports_it_back() {
    let mut report = Vec::new();
    for src in crate_sources() {
        let edges = sibling_edges(&src);
        assert!(!edges.is_empty(), "{} has modules", src.display());
        for cycle in cycles(&edges) {
            let uses: Vec<&String> = edges
                .iter()
                .filter(|((a, b), _)| cycle.contains(a) && cycle.contains(b))
                .map(|(_, place)| place)
                .collect();
            report.push(format!("{}: {cycle:?}, by {uses:#?}", src.display()));
        }
    }
    assert!(report.is_empty(), "import cycles:\n{}", report.join("\n"));
}

#[test]
fn no_module_of_yiem_core_imports_a_layer_above_its_own() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .unwrap()
        .join("yiem-core/src");
    let (wrong, unplaced) = wrong_direction(&src, CORE_LAYERS);
    assert!(
        unplaced.is_empty(),
        "modules in no layer of CORE_LAYERS (add each to the layer it belongs to): {unplaced:?}"
    );
    assert!(
        wrong.is_empty(),
        "imports in the wrong direction (a layer may import only its own and those below: \
         CORE_LAYERS):\n{}",
        wrong.join("\n")
    );
}

#[test]
fn the_check_finds_an_import_in_the_wrong_direction() {
    let src = &Path::new(env!("CARGO_TARGET_TMPDIR")).join("layers-direction");
    let _ = std::fs::remove_dir_all(src);
    std::fs::create_dir_all(src.join("agent")).unwrap();
    std::fs::write(src.join("lib.rs"), "mod agent;\nmod executor;\nmod call;\n").unwrap();
    std::fs::write(src.join("call.rs"), "pub struct ToolCall;\n").unwrap();
    std::fs::write(src.join("executor.rs"), "use crate::call::ToolCall;\n").unwrap();
    std::fs::write(
        src.join("agent/mod.rs"),
        "mod run;\nuse crate::executor::Run;\n",
    )
    .unwrap();
    std::fs::write(src.join("agent/run.rs"), "use crate::call::ToolCall;\n").unwrap();
    let layers: &[(&str, &[&str])] = &[
        ("data", &["call"]),
        ("protocol", &["agent::run"]),
        ("exec", &["executor"]),
        ("agent", &["agent"]),
        ("root", &[""]),
    ];
    assert_eq!(wrong_direction(src, layers), (Vec::new(), BTreeSet::new()));
    // The step machine reaching up for the executor: named, with the layers.
    std::fs::write(
        src.join("agent/run.rs"),
        "use crate::call::ToolCall;\nfn f() { super::super::executor::run() }\n",
    )
    .unwrap();
    let (wrong, _) = wrong_direction(src, layers);
    assert_eq!(
        wrong,
        ["agent/run.rs: super::super::executor::run (protocol → exec)"]
    );
    // A module no layer holds is reported, not let through.
    std::fs::write(
        src.join("lib.rs"),
        "mod agent;\nmod executor;\nmod call;\nmod extra;\n",
    )
    .unwrap();
    std::fs::write(src.join("extra.rs"), "use crate::call::ToolCall;\n").unwrap();
    let (_, unplaced) = wrong_direction(src, layers);
    assert_eq!(unplaced, BTreeSet::from(["extra".to_owned()]));
}

#[test]
fn the_check_finds_a_cycle() {
    let src = &Path::new(env!("CARGO_TARGET_TMPDIR")).join("layers-check");
    let _ = std::fs::remove_dir_all(src);
    std::fs::create_dir_all(src).unwrap();
    std::fs::write(src.join("lib.rs"), "mod a;\nmod b;\n").unwrap();
    std::fs::write(src.join("a.rs"), "use crate::b::Thing;\n").unwrap();
    std::fs::create_dir(src.join("b")).unwrap();
    std::fs::write(src.join("b/mod.rs"), "mod inner;\npub struct Thing;\n").unwrap();
    std::fs::write(src.join("b/inner.rs"), "fn f() { super::super::a::g() }\n").unwrap();
    let edges = sibling_edges(src);
    assert_eq!(cycles(&edges), [vec!["a".to_owned(), "b".to_owned()]]);
    // Comments and tests do not count.
    std::fs::write(
        src.join("b/inner.rs"),
        "// super::super::a\n#[cfg(test)]\nmod tests { use crate::a; }\n",
    )
    .unwrap();
    assert!(cycles(&sibling_edges(src)).is_empty());
}
