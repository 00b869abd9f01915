//! The architecture, checked: every `use` across the tree goes down the layers that
//! ARCHITECTURE.md names (engine, measure, analysis, present, gui, then the binary's
//! cli), no crate's Cargo.toml depends on a crate of its own layer or above, the
//! modules inside each crate import each other without a cycle (the top-level ones, and
//! the children of any one module, such as the app's parts), no module outgrows about
//! 400 lines of non-test code, no function of the app (the gui crate) is longer than
//! 80 lines, and the app's `App` composes at most 12 parts. The checker reads the
//! sources as text: `crate::`, `super::` and `loaderbench_*::` paths (test modules at
//! the end of a file are left out, since a test may reach for any fixture). Tests plant an upward import,
//! cycles and a long function in a scratch tree, so the checker is shown to catch them.

use std::collections::{BTreeMap, BTreeSet};
use std::fs;
use std::path::{Path, PathBuf};

/// The layers, bottom first: a crate may use only the crates before it.
const LAYERS: [&str; 6] = [
    "engine",
    "measure",
    "analysis",
    "present",
    "gui",
    "loaderbench",
];

/// Non-test lines a module may have before it should be split.
const MODULE_LINES: usize = 420;

/// Lines a function of the app may span, from its `fn` to its closing brace.
const FUNCTION_LINES: usize = 80;

/// One source file: its crate, its module path inside the crate, its code (tests cut).
struct Source {
    path: PathBuf,
    krate: String,
    module: Vec<String>,
    code: String,
}

/// A use of something in another module or crate, as the checker resolved it.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
struct Import {
    file: String,
    from_crate: String,
    from_top: String,
    to_crate: String,
    to_top: String,
    /// The importing module's path inside its crate.
    from_module: Vec<String>,
    /// The path imported, inside `to_crate` (its last segments may name an item).
    to_path: Vec<String>,
}

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// The crates of the tree at `root`: each `crates/NAME/src` and the binary's `src`.
fn crate_dirs(root: &Path) -> Vec<(String, PathBuf)> {
    let mut dirs: Vec<(String, PathBuf)> = fs::read_dir(root.join("crates"))
        .into_iter()
        .flatten()
        .flatten()
        .filter(|entry| entry.path().join("src").is_dir())
        .map(|entry| {
            let name = entry.file_name().to_string_lossy().into_owned();
            (name, entry.path().join("src"))
        })
        .collect();
    dirs.push(("loaderbench".to_owned(), root.join("src")));
    dirs.sort();
    dirs
}

fn rust_files(dir: &Path, found: &mut Vec<PathBuf>) {
    for entry in fs::read_dir(dir).into_iter().flatten().flatten() {
        let path = entry.path();
        if path.is_dir() {
            rust_files(&path, found);
        } else if path.extension().is_some_and(|e| e == "rs") {
            found.push(path);
        }
    }
}

/// The module path of a file under a crate's `src`: `lib.rs` and `main.rs` are the
/// root, `a/mod.rs` is `a`, `a/b.rs` is `a::b`.
fn module_path(src: &Path, file: &Path) -> Vec<String> {
    let relative = file.strip_prefix(src).unwrap_or(file);
    let mut parts: Vec<String> = relative
        .iter()
        .map(|p| p.to_string_lossy().into_owned())
        .collect();
    let last = parts.pop().unwrap_or_default();
    let stem = last.trim_end_matches(".rs");
    if !matches!(stem, "mod" | "lib" | "main") {
        parts.push(stem.to_owned());
    }
    parts
}

/// The text before the file's test module: tests come last in every file here.
fn before_tests(text: &str) -> String {
    let mut code = String::new();
    let mut lines = text.lines().peekable();
    while let Some(line) = lines.next() {
        if line.trim() == "#[cfg(test)]"
            && lines.peek().is_some_and(|next| next.contains("mod tests"))
        {
            break;
        }
        code.push_str(line);
        code.push('\n');
    }
    code
}

/// The code before the file's test module, line comments cut.
fn without_tests(text: &str) -> String {
    before_tests(text)
        .lines()
        .map(|line| format!("{}\n", line.split("//").next().unwrap_or("")))
        .collect()
}

fn sources(root: &Path) -> Vec<Source> {
    let mut sources = Vec::new();
    for (krate, src) in crate_dirs(root) {
        let mut files = Vec::new();
        rust_files(&src, &mut files);
        for path in files {
            let text = fs::read_to_string(&path).unwrap_or_default();
            sources.push(Source {
                module: module_path(&src, &path),
                krate: krate.clone(),
                code: without_tests(&text),
                path,
            });
        }
    }
    sources
}

fn is_ident(c: char) -> bool {
    c.is_ascii_alphanumeric() || c == '_'
}

/// Every path in `code` that starts with `prefix` (`crate`, `super`, `loaderbench_x`),
/// as its segments after the prefix; a `{` group contributes each of its items.
fn paths_after(code: &str, prefix: &str) -> Vec<Vec<String>> {
    let needle = format!("{prefix}::");
    let mut found = Vec::new();
    let mut at = 0;
    while let Some(offset) = code[at..].find(&needle) {
        let start = at + offset;
        at = start + needle.len();
        let before = &code[..start];
        if before.chars().next_back().is_some_and(is_ident) || before.ends_with("::") {
            continue;
        }
        let rest = &code[at..];
        found.extend(expand(rest));
    }
    found
}

/// The segments of the path at the start of `rest`, with a group expanded one level.
fn expand(rest: &str) -> Vec<Vec<String>> {
    let mut segments = Vec::new();
    let mut text = rest;
    loop {
        let name: String = text.chars().take_while(|c| is_ident(*c)).collect();
        if name.is_empty() {
            if let Some(group) = text.strip_prefix('{') {
                let inner = &group[..matching_brace(group)];
                return split_top_level(inner)
                    .into_iter()
                    .flat_map(|item| {
                        expand(item.trim()).into_iter().map({
                            let segments = segments.clone();
                            move |tail| [segments.clone(), tail].concat()
                        })
                    })
                    .collect();
            }
            break;
        }
        text = &text[name.len()..];
        segments.push(name);
        match text.strip_prefix("::") {
            Some(next) => text = next,
            None => break,
        }
    }
    if segments.is_empty() {
        Vec::new()
    } else {
        vec![segments]
    }
}

fn matching_brace(text: &str) -> usize {
    let mut depth = 0;
    for (i, c) in text.char_indices() {
        match c {
            '{' => depth += 1,
            '}' if depth == 0 => return i,
            '}' => depth -= 1,
            _ => {}
        }
    }
    text.len()
}

fn split_top_level(text: &str) -> Vec<&str> {
    let (mut parts, mut depth, mut start) = (Vec::new(), 0, 0);
    for (i, c) in text.char_indices() {
        match c {
            '{' => depth += 1,
            '}' => depth -= 1,
            ',' if depth == 0 => {
                parts.push(&text[start..i]);
                start = i + 1;
            }
            _ => {}
        }
    }
    parts.push(&text[start..]);
    parts.into_iter().filter(|p| !p.trim().is_empty()).collect()
}

/// The top-level module a path inside crate `module`'s file reaches, if any.
fn top_of(segments: &[String]) -> Option<String> {
    let first = segments.first()?;
    // `crate::Item` names something the crate root declares or re-exports.
    if first.starts_with(|c: char| c.is_ascii_uppercase()) || first == "self" {
        return None;
    }
    Some(first.clone())
}

fn imports(sources: &[Source]) -> Vec<Import> {
    let mut found = BTreeSet::new();
    for source in sources {
        let from_top = source.module.first().cloned().unwrap_or_default();
        let file = source.path.display().to_string();
        let mut add = |to_crate: &str, segments: &[String]| {
            if let Some(to_top) = top_of(segments) {
                found.insert(Import {
                    file: file.clone(),
                    from_crate: source.krate.clone(),
                    from_top: from_top.clone(),
                    to_crate: to_crate.to_owned(),
                    to_top,
                    from_module: source.module.clone(),
                    to_path: segments.to_vec(),
                });
            }
        };
        for segments in paths_after(&source.code, "crate") {
            add(&source.krate, &segments);
        }
        // `super::` from a/b.rs (module `a::b`) is `a`; from a/mod.rs (module `a`) the root.
        for segments in paths_after(&source.code, "super") {
            let mut module = source.module.clone();
            module.pop();
            let mut supers = segments.as_slice();
            while supers.first().is_some_and(|s| s == "super") {
                module.pop();
                supers = &supers[1..];
            }
            let full = [module, supers.to_vec()].concat();
            add(&source.krate, &full);
        }
        for layer in LAYERS {
            for segments in paths_after(&source.code, &format!("loaderbench_{layer}")) {
                found.insert(Import {
                    file: file.clone(),
                    from_crate: source.krate.clone(),
                    from_top: from_top.clone(),
                    to_crate: layer.to_owned(),
                    to_top: segments.first().cloned().unwrap_or_default(),
                    from_module: source.module.clone(),
                    to_path: segments,
                });
            }
        }
    }
    found.into_iter().collect()
}

fn layer(krate: &str) -> usize {
    LAYERS
        .iter()
        .position(|l| *l == krate)
        .unwrap_or(LAYERS.len())
}

/// Imports of a crate of the same or a higher layer.
fn upward(imports: &[Import]) -> Vec<String> {
    imports
        .iter()
        .filter(|i| i.from_crate != i.to_crate && layer(&i.to_crate) >= layer(&i.from_crate))
        .map(|i| {
            format!(
                "{}: {} (layer {}) uses loaderbench_{}::{} (layer {})",
                i.file,
                i.from_crate,
                layer(&i.from_crate),
                i.to_crate,
                i.to_top,
                layer(&i.to_crate)
            )
        })
        .collect()
}

/// Where an import inside one crate runs between two children of one module: the
/// module (the crate root for top-level modules) and the two children, the importing
/// one first. `None` when one path lies inside the other (a module uses its parent or
/// its own child).
fn sibling_edge(i: &Import) -> Option<(Vec<String>, String, String)> {
    if i.from_crate != i.to_crate {
        return None;
    }
    let common = i
        .from_module
        .iter()
        .zip(&i.to_path)
        .take_while(|(a, b)| a == b)
        .count();
    let from = i.from_module.get(common)?;
    let to = i.to_path.get(common)?;
    Some((i.from_module[..common].to_vec(), from.clone(), to.clone()))
}

/// The cycles among the children of each module of each crate (its top-level modules,
/// and the submodules of any one module), each as `crate: a, b import each other` (with
/// `::parent` after the crate for submodules) with the files that make its edges.
fn cycles(imports: &[Import]) -> Vec<String> {
    type Graph = BTreeMap<String, BTreeSet<String>>;
    let mut graphs: BTreeMap<(String, Vec<String>), Graph> = BTreeMap::new();
    for i in imports {
        if let Some((parent, from, to)) = sibling_edge(i) {
            graphs
                .entry((i.from_crate.clone(), parent))
                .or_default()
                .entry(from)
                .or_default()
                .insert(to);
        }
    }
    let mut found = Vec::new();
    for ((krate, parent), graph) in &graphs {
        let graph: BTreeMap<&str, BTreeSet<&str>> = graph
            .iter()
            .map(|(from, to)| (from.as_str(), to.iter().map(String::as_str).collect()))
            .collect();
        for component in strongly_connected(&graph) {
            if component.len() > 1 {
                let files: BTreeSet<&str> = imports
                    .iter()
                    .filter(|i| {
                        sibling_edge(i).is_some_and(|(p, from, to)| {
                            i.from_crate == *krate
                                && p == *parent
                                && component.contains(&from.as_str())
                                && component.contains(&to.as_str())
                        })
                    })
                    .map(|i| i.file.as_str())
                    .collect();
                let within: String = parent.iter().map(|p| format!("::{p}")).collect();
                found.push(format!(
                    "{krate}{within}: {} import each other ({})",
                    component.join(", "),
                    files.into_iter().collect::<Vec<_>>().join(", ")
                ));
            }
        }
    }
    found
}

/// Tarjan's strongly connected components of `graph`.
fn strongly_connected<'a>(graph: &BTreeMap<&'a str, BTreeSet<&'a str>>) -> Vec<Vec<&'a str>> {
    struct State<'a> {
        index: BTreeMap<&'a str, usize>,
        low: BTreeMap<&'a str, usize>,
        stack: Vec<&'a str>,
        on_stack: BTreeSet<&'a str>,
        components: Vec<Vec<&'a str>>,
    }
    fn visit<'a>(
        node: &'a str,
        graph: &BTreeMap<&'a str, BTreeSet<&'a str>>,
        state: &mut State<'a>,
    ) {
        let n = state.index.len();
        state.index.insert(node, n);
        state.low.insert(node, n);
        state.stack.push(node);
        state.on_stack.insert(node);
        for &next in graph.get(node).into_iter().flatten() {
            if !state.index.contains_key(next) {
                visit(next, graph, state);
                let low = state.low[node].min(state.low[next]);
                state.low.insert(node, low);
            } else if state.on_stack.contains(next) {
                let low = state.low[node].min(state.index[next]);
                state.low.insert(node, low);
            }
        }
        if state.low[node] == state.index[node] {
            let mut component = Vec::new();
            while let Some(top) = state.stack.pop() {
                state.on_stack.remove(top);
                component.push(top);
                if top == node {
                    break;
                }
            }
            component.sort();
            state.components.push(component);
        }
    }
    let mut state = State {
        index: BTreeMap::new(),
        low: BTreeMap::new(),
        stack: Vec::new(),
        on_stack: BTreeSet::new(),
        components: Vec::new(),
    };
    for &node in graph.keys() {
        if !state.index.contains_key(node) {
            visit(node, graph, &mut state);
        }
    }
    state.components
}

/// Dependencies in a crate's Cargo.toml on a loaderbench crate of its layer or above.
fn manifest_upward(root: &Path) -> Vec<String> {
    let mut found = Vec::new();
    for (krate, src) in crate_dirs(root) {
        let manifest = src.parent().unwrap_or(root).join("Cargo.toml");
        let text = fs::read_to_string(&manifest).unwrap_or_default();
        let dependencies = text.split("[dev-dependencies]").next().unwrap_or("");
        for other in LAYERS {
            let named = dependencies.lines().any(|line| {
                line.trim_start()
                    .starts_with(&format!("loaderbench-{other}"))
            });
            if named && layer(other) >= layer(&krate) {
                found.push(format!(
                    "{}: {krate} depends on loaderbench-{other}",
                    manifest.display()
                ));
            }
        }
    }
    found
}

/// Fails the test with every finding, one a line, under `what`, unless there is none.
fn assert_none_found(found: &[String], what: &str) {
    assert!(found.is_empty(), "{what}:\n{}", found.join("\n"));
}

#[test]
fn no_import_goes_up_a_layer() {
    let found = upward(&imports(&sources(&root())));
    assert_none_found(&found, "imports up a layer");
    let found = manifest_upward(&root());
    assert_none_found(&found, "dependencies up a layer");
}

/// The loader takes its own settings, which the measurement layer builds from a config
/// (ARCHITECTURE.md: the loader knows nothing of plans).
#[test]
fn the_loader_knows_nothing_of_plans() {
    let found: Vec<String> = imports(&sources(&root()))
        .into_iter()
        .filter(|i| i.from_crate == "engine" && i.from_top == "loader")
        .filter(|i| i.to_crate == "engine" && i.to_top == "plan")
        .map(|i| i.file)
        .collect();
    assert!(found.is_empty(), "the loader imports plan in {found:?}");
}

#[test]
fn no_cycle_between_the_modules_of_a_crate() {
    let found = cycles(&imports(&sources(&root())));
    assert_none_found(&found, "module cycles");
}

#[test]
fn every_crate_of_the_tree_has_a_layer() {
    for (krate, _) in crate_dirs(&root()) {
        assert!(
            LAYERS.contains(&krate.as_str()),
            "crates/{krate} is in no layer"
        );
    }
}

#[test]
fn no_module_outgrows_its_job() {
    let long: Vec<String> = sources(&root())
        .iter()
        .map(|s| (s.path.display().to_string(), s.code.lines().count()))
        .filter(|(_, lines)| *lines > MODULE_LINES)
        .map(|(path, lines)| format!("{path}: {lines} lines before its tests"))
        .collect();
    assert_none_found(&long, "modules to split");
}

/// `code` with its comments, string literals and character literals blanked (their
/// newlines kept), so that the braces left are the code's own.
fn blank_literals(code: &str) -> String {
    let chars: Vec<char> = code.chars().collect();
    let mut out = String::with_capacity(code.len());
    let mut i = 0;
    while i < chars.len() {
        let end = literal_end(&chars, i);
        if end == i {
            out.push(chars[i]);
            i += 1;
        } else {
            out.extend(
                chars[i..end]
                    .iter()
                    .map(|&c| if c == '\n' { c } else { ' ' }),
            );
            i = end;
        }
    }
    out
}

/// Where the comment or literal starting at `i` ends (`i` itself when none starts there).
fn literal_end(chars: &[char], i: usize) -> usize {
    let at = |k: usize| chars.get(k).copied().unwrap_or('\0');
    let find = |from: usize, what: &[char]| {
        (from..chars.len())
            .find(|&k| chars[k..].starts_with(what))
            .map_or(chars.len(), |k| k + what.len())
    };
    let after_ident = i > 0 && is_ident(at(i - 1));
    match at(i) {
        '/' if at(i + 1) == '/' => find(i, &['\n']) - 1,
        '/' if at(i + 1) == '*' => find(i + 2, &['*', '/']),
        '"' => {
            let mut k = i + 1;
            while k < chars.len() && chars[k] != '"' {
                k += if chars[k] == '\\' { 2 } else { 1 };
            }
            k + 1
        }
        'r' if !after_ident || (at(i - 1) == 'b' && (i < 2 || !is_ident(at(i - 2)))) => {
            let hashes = chars[i + 1..].iter().take_while(|&&c| c == '#').count();
            if at(i + 1 + hashes) != '"' {
                return i;
            }
            let close: Vec<char> = std::iter::once('"')
                .chain(std::iter::repeat_n('#', hashes))
                .collect();
            find(i + 2 + hashes, &close)
        }
        '\'' if at(i + 1) == '\\' => find(i + 3, &['\'']),
        '\'' if at(i + 2) == '\'' => i + 3,
        _ => i,
    }
}

/// Each function in `code` (literals blanked): its name, the line of its `fn` (from 1)
/// and the lines it spans to its closing brace. Declarations without a body are left out.
fn function_spans(code: &str) -> Vec<(String, usize, usize)> {
    let chars: Vec<char> = code.chars().collect();
    let mut line_of = Vec::with_capacity(chars.len());
    let mut line = 0;
    for &c in &chars {
        line_of.push(line);
        line += usize::from(c == '\n');
    }
    let mut found = Vec::new();
    for start in 0..chars.len() {
        let keyword = chars[start..].starts_with(&['f', 'n'])
            && chars.get(start + 2).is_some_and(|c| c.is_whitespace())
            && (start == 0 || !is_ident(chars[start - 1]));
        if !keyword {
            continue;
        }
        let name: String = chars[start + 2..]
            .iter()
            .skip_while(|c| c.is_whitespace())
            .take_while(|c| is_ident(**c))
            .collect();
        let body = (start..chars.len()).find(|&k| chars[k] == '{' || chars[k] == ';');
        let Some(open) = body.filter(|&k| chars[k] == '{' && !name.is_empty()) else {
            continue;
        };
        let mut depth = 0_usize;
        let close = (open..chars.len()).find(|&k| {
            match chars[k] {
                '{' => depth += 1,
                '}' => depth -= 1,
                _ => {}
            }
            depth == 0
        });
        if let Some(close) = close {
            let lines = line_of[close] - line_of[start] + 1;
            found.push((name, line_of[start] + 1, lines));
        }
    }
    found
}

/// The functions of the gui crate under `root` longer than [`FUNCTION_LINES`], as
/// `file:line fn name: N lines`.
fn long_functions(root: &Path) -> Vec<String> {
    let mut files = Vec::new();
    rust_files(&root.join("crates/gui/src"), &mut files);
    files.sort();
    let mut found = Vec::new();
    for path in files {
        let text = fs::read_to_string(&path).unwrap_or_default();
        for (name, line, lines) in function_spans(&blank_literals(&before_tests(&text))) {
            if lines > FUNCTION_LINES {
                found.push(format!(
                    "{}:{line} fn {name}: {lines} lines",
                    path.display()
                ));
            }
        }
    }
    found
}

#[test]
fn no_function_of_the_app_is_longer_than_80_lines() {
    let found = long_functions(&root());
    assert_none_found(&found, "functions to split");
}

#[test]
fn the_checker_catches_a_planted_long_function() {
    let dir = tempfile::tempdir().expect("a temporary directory");
    let src = dir.path().join("crates/gui/src");
    fs::create_dir_all(&src).expect("a folder");
    // Braces in a string, a character, a raw string and a comment are not the code's.
    let body = "    let s = \"}}\"; let c = '{'; let r = r#\"}\"#; // }\n".repeat(79);
    let long = format!("fn long<'a>(x: &'a str) {{\n{body}}}\n");
    let short = format!("fn short() {{\n{}}}\n", "    f();\n".repeat(78));
    let tests =
        format!("#[cfg(test)]\nmod tests {{\n    fn long_test() {{\n{body}{body}    }}\n}}\n");
    fs::write(
        src.join("lib.rs"),
        format!("{long}{short}trait T {{ fn f(); }}\n{tests}"),
    )
    .expect("a file");
    let found = long_functions(dir.path());
    assert_eq!(found.len(), 1, "{found:?}");
    assert!(
        found[0].ends_with("lib.rs:1 fn long: 81 lines"),
        "{found:?}"
    );
}

/// The fields of `pub struct NAME` in `code`, one per line that declares one.
fn struct_fields(code: &str, name: &str) -> Vec<String> {
    let Some(start) = code.find(&format!("pub struct {name} {{")) else {
        return Vec::new();
    };
    code[start..]
        .lines()
        .skip(1)
        .take_while(|line| line.trim() != "}")
        .filter_map(|line| line.trim().split_once(':'))
        .map(|(field, _)| field.trim().to_owned())
        .collect()
}

/// The app composes its parts, each owning its state, rather than holding their state
/// itself.
#[test]
fn the_app_composes_at_most_12_parts() {
    let code = without_tests(
        &fs::read_to_string(root().join("crates/gui/src/app/mod.rs")).unwrap_or_default(),
    );
    let fields = struct_fields(&code, "App");
    assert!(!fields.is_empty(), "the checker found App's fields");
    assert!(
        fields.len() <= 12,
        "App has {} fields: {fields:?}",
        fields.len()
    );
    let planted = "pub struct App {\n    a: A,\n    /// b: a note\n    b: Vec<(B, C)>,\n}\n";
    assert_eq!(struct_fields(&without_tests(planted), "App"), ["a", "b"]);
}

/// A scratch tree of two crates, `engine` (with modules `a` and `b`) and `measure`.
fn scratch_tree(engine_a: &str, engine_b: &str) -> tempfile::TempDir {
    let dir = tempfile::tempdir().expect("a temporary directory");
    let write = |path: &str, text: &str| {
        let path = dir.path().join(path);
        fs::create_dir_all(path.parent().expect("a parent")).expect("a folder");
        fs::write(path, text).expect("a file");
    };
    write("crates/engine/Cargo.toml", "[dependencies]\n");
    write("crates/engine/src/lib.rs", "pub mod a;\npub mod b;\n");
    write("crates/engine/src/a.rs", engine_a);
    write("crates/engine/src/b/mod.rs", engine_b);
    write(
        "crates/measure/Cargo.toml",
        "[dependencies]\nloaderbench-engine.workspace = true\n",
    );
    write(
        "crates/measure/src/lib.rs",
        "use loaderbench_engine::a::Thing;\n",
    );
    write("src/main.rs", "fn main() {}\n");
    dir
}

#[test]
fn the_checker_catches_a_planted_upward_import() {
    let tree = scratch_tree("use loaderbench_measure::Run;\n", "use super::a::Thing;\n");
    let found = upward(&imports(&sources(tree.path())));
    assert_eq!(found.len(), 1, "{found:?}");
    assert!(found[0].contains("engine (layer 0) uses loaderbench_measure::Run (layer 1)"));
    assert!(cycles(&imports(&sources(tree.path()))).is_empty());
}

#[test]
fn the_checker_catches_a_planted_cycle() {
    let tree = scratch_tree(
        "use crate::b::Other;\n",
        "use super::a::Thing;\n#[cfg(test)]\nmod tests {\n    use crate::a::Thing;\n}\n",
    );
    let found = cycles(&imports(&sources(tree.path())));
    assert_eq!(found.len(), 1, "{found:?}");
    assert!(
        found[0].starts_with("engine: a, b import each other"),
        "{found:?}"
    );
}

#[test]
fn the_checker_reads_groups_and_nested_supers() {
    let paths = paths_after("use crate::{a::X, b::{c::Y, Z}};", "crate");
    let tops: Vec<&str> = paths.iter().map(|p| p[0].as_str()).collect();
    assert_eq!(tops, ["a", "b", "b"]);
    let tree = scratch_tree("fn f() {}\n", "mod c;\n");
    let nested = tree.path().join("crates/engine/src/b/c.rs");
    fs::write(nested, "use super::super::a::Thing;\n").expect("a file");
    let found = imports(&sources(tree.path()));
    assert!(
        found
            .iter()
            .any(|i| i.from_top == "b" && i.to_top == "a" && i.to_crate == "engine"),
        "{found:?}"
    );
}

#[test]
fn the_checker_catches_a_planted_cycle_between_submodules() {
    let tree = scratch_tree("fn f() {}\n", "mod c;\nmod d;\n");
    let b = tree.path().join("crates/engine/src/b");
    fs::write(b.join("c.rs"), "use super::d::Thing;\n").expect("a file");
    fs::write(b.join("d.rs"), "use crate::b::c::Other;\n").expect("a file");
    let found = cycles(&imports(&sources(tree.path())));
    assert_eq!(found.len(), 1, "{found:?}");
    assert!(
        found[0].starts_with("engine::b: c, d import each other"),
        "{found:?}"
    );
}
