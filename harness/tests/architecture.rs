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
