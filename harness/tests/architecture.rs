//! ARCHITECTURE.md stays true to the tree: every path it names exists, and every
//! source file of the harness and the reference implementation is covered by a path it
//! names (the file itself, its folder, or a `<suite>` pattern).

use std::path::{Path, PathBuf};

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .map(Path::to_path_buf)
        .unwrap_or_default()
}

const SUITES: [&str; 5] = [
    "agora_v1",
    "agora_exchange",
    "chorus",
    "agora_spaces",
    "agentprotocol",
];

/// A named path with `<suite>` expanded to every suite's module name.
fn expand(p: &str) -> Vec<String> {
    if p.contains("<suite>") {
        SUITES.iter().map(|s| p.replace("<suite>", s)).collect()
    } else {
        vec![p.to_string()]
    }
}

/// The backquoted paths of ARCHITECTURE.md that name files or folders of the tree.
fn named_paths(text: &str) -> Vec<String> {
    text.split('`')
        .skip(1)
        .step_by(2)
        .map(|p| p.split("::").next().unwrap_or_default().to_string())
        .filter(|p| {
            (p.starts_with("harness/") || p.starts_with("reference-impl/")) && !p.contains(' ')
        })
        .collect()
}

fn sources(dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for e in entries.flatten() {
        let p = e.path();
        if p.is_dir() {
            sources(&p, out);
        } else if p.extension().is_some_and(|x| x == "rs") {
            out.push(p);
        }
    }
}

#[test]
fn every_named_path_exists() {
    let root = root();
    let text = std::fs::read_to_string(root.join("ARCHITECTURE.md")).expect("ARCHITECTURE.md");
    let mut missing = Vec::new();
    for p in named_paths(&text) {
        let found = expand(&p).iter().any(|c| {
            let c = c.trim_end_matches('/');
            root.join(c).exists() || root.join(format!("{c}.rs")).exists()
        });
        if !found {
            missing.push(p);
        }
    }
    assert!(
        missing.is_empty(),
        "ARCHITECTURE.md names paths that do not exist: {missing:?}"
    );
}

#[test]
fn every_source_file_is_on_the_map() {
    let root = root();
    let text = std::fs::read_to_string(root.join("ARCHITECTURE.md")).expect("ARCHITECTURE.md");
    let named = named_paths(&text);
    let covers = |file: &str| {
        named.iter().any(|n| {
            expand(n).iter().any(|p| {
                let p = p.trim_end_matches('/');
                file == p || file.starts_with(&format!("{p}/"))
            })
        })
    };
    let mut unmapped = Vec::new();
    for top in ["harness/src", "reference-impl/src"] {
        let mut files = Vec::new();
        sources(&root.join(top), &mut files);
        for f in files {
            let rel = f
                .strip_prefix(&root)
                .map(|r| r.to_string_lossy().into_owned())
                .unwrap_or_default();
            let name = rel.rsplit('/').next().unwrap_or_default();
            if matches!(name, "lib.rs" | "main.rs" | "mod.rs") {
                continue;
            }
            if !covers(&rel) {
                unmapped.push(rel);
            }
        }
    }
    unmapped.sort();
    assert!(
        unmapped.is_empty(),
        "source files ARCHITECTURE.md does not place: {unmapped:?}"
    );
}

// ---------- which way imports run ----------

/// A source file's code outside its `#[cfg(test)]` module and its comments: what
/// the build of the binary imports (a unit test may reach any module, and a doc
/// comment may name any item).
fn code_of(text: &str) -> String {
    let code = match text.find("#[cfg(test)]\nmod tests") {
        Some(i) => &text[..i],
        None => text,
    };
    code.lines()
        .filter(|l| !l.trim_start().starts_with("//"))
        .collect::<Vec<_>>()
        .join("\n")
}

/// The module paths written after each `prefix` (`crate::`, `super::`) in `code`,
/// as `a/b/c` (one per mention, in `use` lines and in paths written inline, without
/// the braces' inner names), where the prefix starts a path: not `$crate::` in a
/// macro, not the end of another name, not the second `super::` of a chain.
fn paths_after(code: &str, prefix: &str) -> Vec<String> {
    let mut out = Vec::new();
    for (i, _) in code.match_indices(prefix) {
        if code[..i].ends_with(|c: char| c.is_alphanumeric() || matches!(c, '_' | ':' | '$')) {
            continue;
        }
        let path: String = code[i + prefix.len()..]
            .chars()
            .take_while(|c| c.is_alphanumeric() || *c == '_' || *c == ':')
            .collect();
        let segments: Vec<&str> = path.split("::").filter(|s| !s.is_empty()).collect();
        out.push(segments.join("/"));
    }
    out
}

/// The modules of the crate that `code` names.
fn crate_paths(code: &str) -> Vec<String> {
    paths_after(code, "crate::")
}

/// An import that runs up: `rel` (a path below harness/src) names a module it must
/// not. Engines and the case model never name the suites (the command line resolves
/// a suite and hands each engine its part), and the case model names no engine.
fn upward(rel: &str, path: &str) -> Option<String> {
    const ENGINES: [&str; 10] = [
        "fuzzing",
        "init",
        "load",
        "runner",
        "proxy",
        "export",
        "explain",
        "report",
        "counterparty",
        "interop",
    ];
    let top = path.split('/').next().unwrap_or_default();
    let own_top = rel
        .split('/')
        .next()
        .unwrap_or_default()
        .trim_end_matches(".rs");
    let above_suites = matches!(own_top, "suites" | "cli" | "main" | "lib");
    if top == "suites" && !above_suites {
        return Some(format!(
            "{rel} names crate::{} (an engine or the case model into suites/)",
            path.replace('/', "::")
        ));
    }
    if rel == "case.rs" && ENGINES.contains(&top) {
        return Some(format!(
            "case.rs names crate::{} (the case model into an engine)",
            path.replace('/', "::")
        ));
    }
    None
}

/// Every import of harness/src that runs up, as `upward` words it.
fn upward_imports(files: &[(String, String)]) -> Vec<String> {
    let mut found = Vec::new();
    for (rel, text) in files {
        for path in crate_paths(&code_of(text)) {
            found.extend(upward(rel, &path));
        }
    }
    found.sort();
    found.dedup();
    found
}

/// Every source file of harness/src, by its path below it, with its text.
fn harness_sources() -> Vec<(String, String)> {
    let src = root().join("harness/src");
    let mut files = Vec::new();
    sources(&src, &mut files);
    files
        .into_iter()
        .map(|f| {
            let rel = f
                .strip_prefix(&src)
                .map(|r| r.to_string_lossy().into_owned())
                .unwrap_or_default();
            let text = std::fs::read_to_string(&f).unwrap_or_default();
            (rel, text)
        })
        .collect()
}

#[test]
fn no_import_runs_up() {
    let found = upward_imports(&harness_sources());
    assert!(
        found.is_empty(),
        "imports that run up:\n{}",
        found.join("\n")
    );
}

/// The test of the test: an engine file that names a suite, and a case model that
/// names the fuzzer, are caught; the same names in a unit test module, and a
/// suite that names an engine, are not.
#[test]
fn a_planted_upward_import_is_caught() {
    let planted = vec![
        (
            "runner.rs".to_string(),
            "use crate::suites::chorus::SUITE;\n".to_string(),
        ),
        (
            "fuzzing/corpus.rs".to_string(),
            "fn f() { crate::suites::by_id(\"x\"); }\n".to_string(),
        ),
        (
            "case.rs".to_string(),
            "pub fuzzer: &'static crate::fuzzing::spec::Spec,\n".to_string(),
        ),
        (
            "export.rs".to_string(),
            "fn ok() {}\n#[cfg(test)]\nmod tests {\n use crate::suites::all;\n}\n".to_string(),
        ),
        (
            "suites/chorus/fuzz.rs".to_string(),
            "use crate::fuzzing::spec::Spec;\n".to_string(),
        ),
    ];
    let found = upward_imports(&planted);
    assert_eq!(found.len(), 3, "{found:#?}");
    assert!(found
        .iter()
        .any(|f| f.starts_with("runner.rs names crate::suites::chorus::SUITE")));
    assert!(found
        .iter()
        .any(|f| f.starts_with("fuzzing/corpus.rs names crate::suites::by_id")));
    assert!(found
        .iter()
        .any(|f| f.starts_with("case.rs names crate::fuzzing::spec::Spec")));
}

// ---------- circles ----------

/// The file of harness/src that a module path (`a/b/c`, from `crate::a::b::c`) is
/// in: the longest prefix that names a file.
fn file_of(files: &[(String, String)], path: &str) -> Option<String> {
    let segs: Vec<&str> = path.split('/').collect();
    for n in (1..=segs.len()).rev() {
        let base = segs[..n].join("/");
        for candidate in [format!("{base}.rs"), format!("{base}/mod.rs")] {
            if files.iter().any(|(rel, _)| *rel == candidate) {
                return Some(candidate);
            }
        }
    }
    None
}

/// The file a `super::…` path of `rel` names.
fn super_file(files: &[(String, String)], rel: &str, path: &str) -> Option<String> {
    let dir = rel.rsplit_once('/').map_or("", |(d, _)| d);
    // In `a/b.rs` and in `a/mod.rs` alike, `super` is the module `a`'s parent scope
    // for `b.rs`, and `a`'s parent for `mod.rs`.
    let parent = if rel.ends_with("/mod.rs") {
        dir.rsplit_once('/').map_or("", |(d, _)| d)
    } else {
        dir
    };
    let full = if parent.is_empty() {
        path.to_string()
    } else {
        format!("{parent}/{path}")
    };
    file_of(files, &full)
}

/// Which files each file imports (within harness/src, outside its tests).
fn imports(files: &[(String, String)]) -> Vec<(String, Vec<String>)> {
    files
        .iter()
        .map(|(rel, text)| {
            let code = code_of(text);
            let mut to: Vec<String> = crate_paths(&code)
                .iter()
                .filter_map(|p| file_of(files, p))
                .collect();
            for path in paths_after(&code, "super::") {
                to.extend(super_file(files, rel, &path));
            }
            to.retain(|t| t != rel && !t.ends_with("lib.rs"));
            to.sort();
            to.dedup();
            (rel.clone(), to)
        })
        .collect()
}

/// The circles of the import graph: its strongly connected parts of two files or
/// more (Tarjan).
fn circles(graph: &[(String, Vec<String>)]) -> Vec<Vec<String>> {
    struct T<'a> {
        g: &'a [(String, Vec<String>)],
        index: Vec<Option<usize>>,
        low: Vec<usize>,
        on: Vec<bool>,
        stack: Vec<usize>,
        next: usize,
        out: Vec<Vec<String>>,
    }
    fn visit(t: &mut T, v: usize) {
        t.index[v] = Some(t.next);
        t.low[v] = t.next;
        t.next += 1;
        t.stack.push(v);
        t.on[v] = true;
        let edges: Vec<usize> = t.g[v]
            .1
            .iter()
            .filter_map(|to| t.g.iter().position(|(f, _)| f == to))
            .collect();
        for w in edges {
            match t.index[w] {
                None => {
                    visit(t, w);
                    t.low[v] = t.low[v].min(t.low[w]);
                }
                Some(iw) if t.on[w] => t.low[v] = t.low[v].min(iw),
                Some(_) => {}
            }
        }
        if Some(t.low[v]) == t.index[v] {
            let mut part = Vec::new();
            while let Some(w) = t.stack.pop() {
                t.on[w] = false;
                part.push(t.g[w].0.clone());
                if w == v {
                    break;
                }
            }
            if part.len() > 1 {
                part.sort();
                t.out.push(part);
            }
        }
    }
    let n = graph.len();
    let mut t = T {
        g: graph,
        index: vec![None; n],
        low: vec![0; n],
        on: vec![false; n],
        stack: Vec::new(),
        next: 0,
        out: Vec::new(),
    };
    for v in 0..n {
        if t.index[v].is_none() {
            visit(&mut t, v);
        }
    }
    t.out
}

#[test]
fn no_import_circle() {
    let found = circles(&imports(&harness_sources()));
    assert!(found.is_empty(), "import circles: {found:#?}");
}

#[test]
fn a_planted_circle_is_caught() {
    let files = vec![
        ("a.rs".to_string(), "use crate::b::X;\n".to_string()),
        ("b.rs".to_string(), "use crate::c::Y;\n".to_string()),
        ("c/mod.rs".to_string(), "use crate::a::Z;\n".to_string()),
        ("d.rs".to_string(), "use crate::a::Z;\n".to_string()),
    ];
    assert_eq!(
        circles(&imports(&files)),
        vec![vec!["a.rs".to_string(), "b.rs".into(), "c/mod.rs".into()]]
    );
}

// ---------- areas joined ----------

/// The areas of a suite laid out by spec area (its mod.rs joins the areas' lists
/// with `crate::joined!`) whose `rules!` block or `CASES` the joined lists leave
/// out: a rule or case written in an area but never run or explained.
fn unjoined(mod_rs: &str, areas: &[(String, String)]) -> Vec<String> {
    let mut out = Vec::new();
    for (stem, text) in areas {
        let code = code_of(text);
        if code.contains("rules! {") && !mod_rs.contains(&format!("{stem}::RULES")) {
            out.push(format!("{stem}::RULES"));
        }
        if code.contains("pub const CASES") && !mod_rs.contains(&format!("{stem}::CASES")) {
            out.push(format!("{stem}::CASES"));
        }
    }
    out
}

#[test]
fn every_areas_rules_and_cases_are_joined() {
    for suite in SUITES {
        let dir = root().join("harness/src/suites").join(suite);
        let mod_rs = std::fs::read_to_string(dir.join("mod.rs")).expect("mod.rs");
        if !mod_rs.contains("crate::joined!") {
            continue;
        }
        let mut areas = Vec::new();
        for e in std::fs::read_dir(&dir).expect("suite folder").flatten() {
            let p = e.path();
            let stem = p.file_stem().and_then(|s| s.to_str()).unwrap_or_default();
            if stem != "mod" && p.extension().is_some_and(|x| x == "rs") {
                let text = std::fs::read_to_string(&p).expect("area file");
                areas.push((stem.to_string(), text));
            }
        }
        let left = unjoined(&mod_rs, &areas);
        assert!(left.is_empty(), "{suite}: not joined in mod.rs: {left:?}");
    }
}

#[test]
fn an_unjoined_area_is_caught() {
    let mod_rs = "pub const CASES: &[Case] = crate::joined!(Case; a::CASES,);\nrules: crate::joined!(&Rule; a::RULES,),";
    let areas = vec![
        (
            "a".to_string(),
            "rules! {\n}\npub const CASES: &[Case] = &[];\n".to_string(),
        ),
        ("b".to_string(), "rules! {\n}\n".to_string()),
        ("c".to_string(), "fn f() {}\n".to_string()),
    ];
    assert_eq!(unjoined(mod_rs, &areas), vec!["b::RULES".to_string()]);
}

// ---------- function length ----------

/// The longest a function of harness/src may be, in lines from `fn` to its `}`.
const LONGEST_FN: usize = 80;

/// Each function of `text` (an item `fn` whose body closes at its own indentation)
/// with its first line and its length in lines.
fn functions(text: &str) -> Vec<(String, usize, usize)> {
    let lines: Vec<&str> = text.lines().collect();
    let mut out = Vec::new();
    let mut i = 0;
    while i < lines.len() {
        let l = lines[i];
        let trimmed = l.trim_start();
        let indent = &l[..l.len() - trimmed.len()];
        let head = trimmed
            .trim_start_matches("pub(crate) ")
            .trim_start_matches("pub(super) ")
            .trim_start_matches("pub ")
            .trim_start_matches("async ")
            .trim_start_matches("const ")
            .trim_start_matches("unsafe ");
        if let Some(rest) = head.strip_prefix("fn ") {
            let name: String = rest
                .chars()
                .take_while(|c| c.is_alphanumeric() || *c == '_')
                .collect();
            let mut j = i;
            while j < lines.len()
                && !lines[j].trim_end().ends_with('{')
                && !lines[j].trim_end().ends_with(';')
            {
                j += 1;
            }
            if j < lines.len() && lines[j].trim_end().ends_with('{') {
                let close = format!("{indent}}}");
                let end = (j + 1..lines.len())
                    .find(|k| lines[*k] == close)
                    .unwrap_or(lines.len() - 1);
                out.push((name, i + 1, end - i + 1));
                i = j;
            }
        }
        i += 1;
    }
    out
}

#[test]
fn no_function_is_longer_than_80_lines() {
    let mut long = Vec::new();
    for (rel, text) in harness_sources() {
        for (name, line, n) in functions(&text) {
            if n > LONGEST_FN {
                long.push(format!("harness/src/{rel}:{line} {name}: {n} lines"));
            }
        }
    }
    assert!(
        long.is_empty(),
        "functions over {LONGEST_FN} lines:\n{}",
        long.join("\n")
    );
}

#[test]
fn function_lengths_are_counted() {
    let text = "fn a() {\n    x();\n}\n\n    pub async fn b(\n        y: u8,\n    ) -> u8 {\n        y\n    }\nfn c();\n";
    assert_eq!(
        functions(text),
        vec![("a".to_string(), 1, 3), ("b".to_string(), 5, 5)]
    );
}
