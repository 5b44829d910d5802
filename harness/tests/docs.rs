//! The docs stay true to the code: README.md and docs/ are checked, not just read.
//!
//! - Commands. Every `agentconform …` line, and every `cargo run -p agentconform -- …`
//!   line, of a fenced block of README.md and docs/**/*.md whose language is `sh`,
//!   `bash`, `shell` or none parses with the binary's own parser (`Cli::try_parse_from`).
//!   A block of language `text` is synopsis (`[--flag]`, `A|B`, `...`) or a transcript,
//!   and is deliberately not parsed: that choice is visible in the docs source as the
//!   block's language (docs/architecture.md says so for writers). Lines are joined at a
//!   trailing `\`, split as the shell would (shlex: quotes, `#` comments), and cut into
//!   commands at `|`, `||`, `&&`, `;` and `&`; redirections are dropped. Placeholders
//!   such as `URL` or `PORT` stay: clap takes them as strings.
//! - Profile keys. Every TOML block of docs/profile.md parses as a profile
//!   (`Profile::from_toml` rejects an unknown key), and every key the profile parser
//!   takes is written there as `key = value`. The parser's keys are asked of the parser
//!   itself: see `parser_keys`.
//! - Links. Every relative link of README.md, docs/**/*.md, ARCHITECTURE.md and
//!   harness/benches/BENCHMARKS.md names an existing file or folder, and a `#anchor`
//!   names a heading of the Markdown file it points to (GitHub's anchors).
//! - The README has at most 250 lines, and links every page of docs/.
//!
//! Each checker is a function of text, so that the tests at the end can show it
//! failing on a broken input.

use agentconform::cli::Cli;
use agentconform::profile::Profile;
use clap::Parser;
use std::collections::{BTreeMap, BTreeSet};
use std::path::{Component, Path, PathBuf};

/// The most lines README.md may have.
const README_MAX_LINES: usize = 250;

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .map(Path::to_path_buf)
        .unwrap_or_default()
}

// ---------------------------------------------------------------------------------
// Markdown

/// A fenced code block: its language (the info string's first word, lower case; empty
/// without one), the line of its opening fence (1-based), and its lines with the
/// fence's indentation taken off.
#[derive(Debug)]
struct Block {
    lang: String,
    line: usize,
    lines: Vec<String>,
}

/// An opening or closing fence: its indentation, character and length, and the rest.
fn fence(line: &str) -> Option<(usize, char, usize, &str)> {
    let indent = line.len() - line.trim_start().len();
    let t = line.trim_start();
    let c = t.chars().next()?;
    if c != '`' && c != '~' {
        return None;
    }
    let n = t.chars().take_while(|&x| x == c).count();
    (n >= 3).then(|| (indent, c, n, &t[n..]))
}

/// The fenced code blocks of a Markdown text (also inside list items).
fn code_blocks(md: &str) -> Vec<Block> {
    let mut blocks = Vec::new();
    let mut open: Option<(usize, char, usize, Block)> = None;
    for (i, line) in md.lines().enumerate() {
        match open.take() {
            None => {
                if let Some((indent, c, n, info)) = fence(line) {
                    let lang = info.split_whitespace().next().unwrap_or("").to_lowercase();
                    open = Some((
                        indent,
                        c,
                        n,
                        Block {
                            lang,
                            line: i + 1,
                            lines: Vec::new(),
                        },
                    ));
                }
            }
            Some((indent, c, n, mut block)) => {
                let closes = fence(line)
                    .is_some_and(|(_, c2, n2, rest)| c2 == c && n2 >= n && rest.trim().is_empty());
                if closes {
                    blocks.push(block);
                } else {
                    let strip = line.len() - line.trim_start().len();
                    block.lines.push(line[strip.min(indent)..].to_string());
                    open = Some((indent, c, n, block));
                }
            }
        }
    }
    blocks
}

/// The lines of a Markdown text outside fenced code blocks, with their numbers.
fn prose_lines(md: &str) -> Vec<(usize, &str)> {
    let mut out = Vec::new();
    let mut open: Option<(char, usize)> = None;
    for (i, line) in md.lines().enumerate() {
        match (open, fence(line)) {
            (None, Some((_, c, n, _))) => open = Some((c, n)),
            (None, None) => out.push((i + 1, line)),
            (Some((c, n)), Some((_, c2, n2, rest)))
                if c2 == c && n2 >= n && rest.trim().is_empty() =>
            {
                open = None
            }
            (Some(_), _) => {}
        }
    }
    out
}

/// A line with each inline code span replaced by `code`, so that neither its text nor
/// brackets in it are read as links.
fn without_code_spans(line: &str) -> String {
    let mut out = String::new();
    let mut rest = line;
    while let Some(start) = rest.find('`') {
        out.push_str(&rest[..start]);
        let after = &rest[start..];
        let ticks = after.chars().take_while(|&c| c == '`').count();
        let delim = &after[..ticks];
        match after[ticks..].find(delim) {
            Some(end) => {
                out.push_str("code");
                rest = &after[ticks + end + ticks..];
            }
            None => {
                out.push_str(after);
                rest = "";
            }
        }
    }
    out.push_str(rest);
    out
}

// ---------------------------------------------------------------------------------
// Commands

/// Languages of fenced blocks whose lines are commands to run; any other language
/// (`text` above all) is not parsed.
const RUNNABLE: [&str; 4] = ["", "sh", "bash", "shell"];

/// Shell operators that end one command and start the next.
const SEPARATORS: [&str; 5] = ["|", "||", "&&", ";", "&"];

/// Redirections written apart from their file (`> out.txt`).
const REDIRECTIONS: [&str; 7] = [">", ">>", "<", "2>", "2>>", "&>", "&>>"];

/// The command lines of a block: lines joined at a trailing backslash, with the line
/// each starts on.
fn logical_lines(block: &Block) -> Vec<(usize, String)> {
    let mut out = Vec::new();
    let mut current: Option<(usize, String)> = None;
    for (i, line) in block.lines.iter().enumerate() {
        let (start, mut text) = current
            .take()
            .unwrap_or((block.line + 1 + i, String::new()));
        match line.strip_suffix('\\') {
            Some(head) => {
                text.push_str(head);
                text.push(' ');
                current = Some((start, text));
            }
            None => {
                text.push_str(line);
                out.push((start, text));
            }
        }
    }
    out.extend(current);
    out
}

/// The arguments of each `agentconform` command on one shell line (the program name
/// first), or why the line cannot be read.
fn agentconform_commands(line: &str) -> Result<Vec<Vec<String>>, String> {
    let words = shlex::split(line).ok_or("unbalanced quotes")?;
    let mut commands: Vec<Vec<String>> = vec![Vec::new()];
    let mut skip_next = false;
    for w in words {
        if skip_next {
            skip_next = false;
        } else if SEPARATORS.contains(&w.as_str()) {
            commands.push(Vec::new());
        } else if REDIRECTIONS.contains(&w.as_str()) {
            // `> file`: the redirection and its file.
            skip_next = true;
        } else if ["<", ">", "2>", "&>"].iter().any(|r| w.starts_with(r)) {
            // `>file`, `2>&1`: one word.
        } else if let Some(last) = commands.last_mut() {
            last.push(w);
        }
    }
    let mut out = Vec::new();
    for mut words in commands {
        // A prompt (`$ agentconform …`) and environment assignments
        // (`NO_COLOR=1 agentconform …`) before the program.
        while words.first().is_some_and(|w| {
            w == "$"
                || w.split_once('=').is_some_and(|(k, _)| {
                    !k.is_empty() && k.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
                })
        }) {
            words.remove(0);
        }
        match words.first().map(String::as_str) {
            // The binary by name or by path (`target/release/agentconform`).
            Some(w) if w == "agentconform" || w.ends_with("/agentconform") => out.push(words),
            Some("cargo") if words.get(1).is_some_and(|w| w == "run") => {
                let dashes = words.iter().position(|w| w == "--");
                let head = &words[..dashes.unwrap_or(words.len())];
                let ours = head
                    .windows(2)
                    .any(|p| (p[0] == "-p" || p[0] == "--package") && p[1] == "agentconform")
                    || head
                        .iter()
                        .any(|w| w == "--package=agentconform" || w == "-p=agentconform");
                if ours {
                    let mut args = vec!["agentconform".to_string()];
                    if let Some(d) = dashes {
                        args.extend(words[d + 1..].iter().cloned());
                    }
                    out.push(args);
                }
            }
            _ => {}
        }
    }
    Ok(out)
}

/// Each `agentconform` command of the runnable blocks of a Markdown text that the
/// command line parser refuses: `name:line: command: error`.
fn command_errors(name: &str, md: &str) -> Vec<String> {
    let mut errors = Vec::new();
    for block in code_blocks(md) {
        if !RUNNABLE.contains(&block.lang.as_str()) {
            continue;
        }
        for (line, text) in logical_lines(&block) {
            if !text.contains("agentconform") {
                continue;
            }
            let commands = match agentconform_commands(&text) {
                Ok(c) => c,
                Err(e) => {
                    errors.push(format!("{name}:{line}: {}: {e}", text.trim()));
                    continue;
                }
            };
            for args in commands {
                if let Err(e) = Cli::try_parse_from(&args) {
                    use clap::error::ErrorKind;
                    if matches!(e.kind(), ErrorKind::DisplayHelp | ErrorKind::DisplayVersion) {
                        continue;
                    }
                    let first = e.to_string();
                    let first = first.lines().next().unwrap_or_default().to_string();
                    errors.push(format!("{name}:{line}: {}: {first}", args.join(" ")));
                }
            }
        }
    }
    errors
}

// ---------------------------------------------------------------------------------
// Profile keys

/// A key of the profile: its table (`timing`, `chorus.setup_requests`; empty at the
/// top) and its name.
type Key = (String, String);

/// The name no profile has, which the parser is asked about.
const PROBE: &str = "zz_probe_key";

/// The keys the parser accepts in the table that `header` opens (`""` for the top,
/// `[timing]`, `[[chorus.setup_requests]]`), or None when that is not a table of
/// named keys.
///
/// Why ask the parser: `Profile` derives only `Deserialize` (nothing to serialize a
/// default from), and walking profile.rs's structs would re-implement serde's renames
/// and skips. Instead a profile with one unknown key is handed to
/// `Profile::from_toml`; serde's `deny_unknown_fields` refuses it naming every field
/// the struct accepts ("unknown field `zz_probe_key`, expected one of `a`, `b`", or
/// "expected `a` or `b`", "expected `a`", "there are no fields"), exactly as the
/// parser spells them, renames applied and skipped fields left out. Should that wording
/// ever change, the top level yields no key and `profile_keys_are_documented` fails
/// saying so, rather than passing on nothing.
fn table_keys(header: &str) -> Option<BTreeSet<String>> {
    let text = format!("{header}\n{PROBE} = 1\n");
    let err = Profile::from_toml(&text, "probe").err()?.to_string();
    let marker = format!("unknown field `{PROBE}`");
    let rest = &err[err.find(&marker)? + marker.len()..];
    Some(
        rest.split('`')
            .skip(1)
            .step_by(2)
            .map(str::to_string)
            .collect(),
    )
}

/// Every key the profile parser takes: the top level's tables, each table's keys, and
/// the keys of a table nested in one (`[[chorus.setup_requests]]`).
fn parser_keys() -> BTreeSet<Key> {
    let mut keys = BTreeSet::new();
    for section in table_keys("").unwrap_or_default() {
        keys.insert((String::new(), section.clone()));
        let Some(inner) = table_keys(&format!("[{section}]")) else {
            continue;
        };
        for key in inner {
            keys.insert((section.clone(), key.clone()));
            let path = format!("{section}.{key}");
            for header in [format!("[[{path}]]"), format!("[{path}]")] {
                if let Some(nested) = table_keys(&header) {
                    for k in nested {
                        keys.insert((path.clone(), k));
                    }
                    break;
                }
            }
        }
    }
    keys
}

/// The TOML blocks of a Markdown text: their opening line and text.
fn toml_blocks(md: &str) -> Vec<(usize, String)> {
    code_blocks(md)
        .into_iter()
        .filter(|b| b.lang == "toml")
        .map(|b| (b.line, b.lines.join("\n") + "\n"))
        .collect()
}

/// The keys a TOML block documents: every `key = value` line under its table header,
/// and each table a header opens as a key of its parent (`[[chorus.setup_requests]]`
/// documents `setup_requests` of `chorus`).
fn documented_keys(toml: &str) -> BTreeSet<Key> {
    let mut keys = BTreeSet::new();
    let mut table = String::new();
    for line in toml.lines() {
        let t = line.trim();
        if t.starts_with('[') {
            let name = t
                .split('#')
                .next()
                .unwrap_or_default()
                .trim()
                .trim_matches(['[', ']'])
                .trim()
                .to_string();
            let mut parent = String::new();
            for part in name.split('.') {
                keys.insert((parent.clone(), part.to_string()));
                parent = if parent.is_empty() {
                    part.to_string()
                } else {
                    format!("{parent}.{part}")
                };
            }
            table = name;
        } else if let Some((key, _)) = t.split_once(" = ") {
            if !key.starts_with('#') && !key.contains(' ') {
                keys.insert((table.clone(), key.to_string()));
            }
        }
    }
    keys
}

fn show(key: &Key) -> String {
    if key.0.is_empty() {
        format!("[{}]", key.1)
    } else {
        format!("[{}] {}", key.0, key.1)
    }
}

/// What is wrong with the profile reference `md` against the parser's keys: a TOML
/// block the parser refuses, a key it documents that the parser does not take, a key
/// the parser takes that it does not document.
fn profile_doc_errors(md: &str, parser: &BTreeSet<Key>) -> Vec<String> {
    let mut errors = Vec::new();
    let mut documented = BTreeSet::new();
    let blocks = toml_blocks(md);
    if blocks.is_empty() {
        errors.push("no TOML block".to_string());
    }
    for (line, text) in blocks {
        if let Err(e) = Profile::from_toml(&text, &format!("the TOML block of line {line}")) {
            errors.push(e.to_string());
        }
        documented.extend(documented_keys(&text));
    }
    for k in documented.difference(parser) {
        errors.push(format!(
            "{} is documented, but the parser takes no such key",
            show(k)
        ));
    }
    for k in parser.difference(&documented) {
        errors.push(format!(
            "{} is taken by the parser, but not documented",
            show(k)
        ));
    }
    errors
}

// ---------------------------------------------------------------------------------
// Links

/// What the link checker reads: whether a file or folder exists, and a text file.
trait Tree {
    fn exists(&self, path: &Path) -> bool;
    fn read(&self, path: &Path) -> Option<String>;
}

struct Disk;

impl Tree for Disk {
    fn exists(&self, path: &Path) -> bool {
        path.exists()
    }
    fn read(&self, path: &Path) -> Option<String> {
        std::fs::read_to_string(path).ok()
    }
}

/// A path with `.` and `..` resolved without the file system.
fn normalize(path: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for c in path.components() {
        match c {
            Component::CurDir => {}
            Component::ParentDir => {
                if !out.pop() {
                    out.push("..");
                }
            }
            other => out.push(other),
        }
    }
    out
}

/// GitHub's anchor of a heading: its text (a link as its text) in lower case, without
/// what is neither a letter, a digit, a space, '-' nor '_', each space a '-'.
fn slug(heading: &str) -> String {
    let mut text = String::new();
    let mut rest = heading;
    // [text](url) reads as text.
    while let Some(open) = rest.find('[') {
        let after = &rest[open + 1..];
        match after
            .find("](")
            .and_then(|close| after[close..].find(')').map(|end| (close, close + end)))
        {
            Some((close, end)) => {
                text.push_str(&rest[..open]);
                text.push_str(&after[..close]);
                rest = &after[end + 1..];
            }
            None => {
                text.push_str(&rest[..=open]);
                rest = after;
            }
        }
    }
    text.push_str(rest);
    text.to_lowercase()
        .chars()
        .filter(|c| c.is_alphanumeric() || *c == ' ' || *c == '-' || *c == '_')
        .map(|c| if c == ' ' { '-' } else { c })
        .collect()
}

/// The anchors of a Markdown text's headings, a repeated one suffixed `-1`, `-2`, … as
/// GitHub does.
fn anchors(md: &str) -> BTreeSet<String> {
    let mut seen: BTreeMap<String, usize> = BTreeMap::new();
    let mut out = BTreeSet::new();
    for (_, line) in prose_lines(md) {
        let hashes = line.chars().take_while(|&c| c == '#').count();
        if !(1..=6).contains(&hashes) || !line[hashes..].starts_with(' ') {
            continue;
        }
        let text = line[hashes..].trim().trim_end_matches('#').trim();
        let base = slug(text);
        let n = seen.entry(base.clone()).or_insert(0);
        out.insert(if *n == 0 {
            base.clone()
        } else {
            format!("{base}-{n}")
        });
        *n += 1;
    }
    out
}

/// The link targets of a Markdown text outside code: inline links and images
/// `[text](target "title")`, and reference definitions `[label]: target`.
fn links(md: &str) -> Vec<(usize, String)> {
    let mut out = Vec::new();
    for (n, line) in prose_lines(md) {
        let line = without_code_spans(line);
        let t = line.trim_start();
        if t.starts_with('[') {
            if let Some((label, target)) = t.split_once("]: ") {
                if !label.contains(']') {
                    if let Some(target) = target.split_whitespace().next() {
                        out.push((n, target.to_string()));
                    }
                    continue;
                }
            }
        }
        let mut rest = line.as_str();
        while let Some(i) = rest.find("](") {
            let after = &rest[i + 2..];
            let end = after.find(')').unwrap_or(after.len());
            let target = after[..end].split_whitespace().next().unwrap_or_default();
            let target = target.trim_start_matches('<').trim_end_matches('>');
            out.push((n, target.to_string()));
            rest = &after[end.min(after.len())..];
        }
    }
    out
}

/// `%20` and the like in a link target.
fn percent_decode(s: &str) -> String {
    let bytes = s.as_bytes();
    let mut out = Vec::new();
    let mut i = 0;
    while i < bytes.len() {
        let hex = bytes
            .get(i + 1..i + 3)
            .filter(|h| h.iter().all(u8::is_ascii_hexdigit));
        if let (b'%', Some(h)) = (bytes[i], hex) {
            // Two ASCII hex digits: valid UTF-8, and a byte in base 16.
            let byte = std::str::from_utf8(h)
                .ok()
                .and_then(|h| u8::from_str_radix(h, 16).ok());
            if let Some(b) = byte {
                out.push(b);
                i += 3;
                continue;
            }
        }
        out.push(bytes[i]);
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// Each relative link of the Markdown file `file` (its text `md`) that names no file or
/// folder of `tree`, or a heading its target lacks.
fn link_errors(tree: &dyn Tree, file: &Path, md: &str) -> Vec<String> {
    let mut errors = Vec::new();
    let dir = file.parent().unwrap_or(Path::new(""));
    for (line, target) in links(md) {
        let scheme = target
            .split_once(':')
            .is_some_and(|(s, _)| !s.is_empty() && !s.contains(['/', '#', '.']));
        if target.is_empty() || scheme {
            continue;
        }
        let (path, anchor) = match target.split_once('#') {
            Some((p, a)) => (p, Some(a)),
            None => (target.as_str(), None),
        };
        let resolved = if path.is_empty() {
            file.to_path_buf()
        } else {
            normalize(&dir.join(percent_decode(path)))
        };
        let at = format!("{}:{line}: {target}", file.display());
        if !tree.exists(&resolved) {
            errors.push(format!("{at}: no such file"));
            continue;
        }
        let is_md = resolved.extension().is_some_and(|e| e == "md");
        if let (Some(anchor), true) = (anchor, is_md) {
            let text = tree.read(&resolved).unwrap_or_default();
            if !anchors(&text).contains(&percent_decode(anchor).to_lowercase()) {
                errors.push(format!("{at}: no heading with that anchor"));
            }
        }
    }
    errors
}

// ---------------------------------------------------------------------------------
// The files

/// docs/**/*.md, relative to the root, sorted.
fn docs_pages() -> Vec<PathBuf> {
    fn walk(root: &Path, dir: &Path, out: &mut Vec<PathBuf>) {
        let Ok(entries) = std::fs::read_dir(root.join(dir)) else {
            return;
        };
        for e in entries.flatten() {
            let rel = dir.join(e.file_name());
            if e.path().is_dir() {
                walk(root, &rel, out);
            } else if rel.extension().is_some_and(|x| x == "md") {
                out.push(rel);
            }
        }
    }
    let mut out = Vec::new();
    walk(&root(), Path::new("docs"), &mut out);
    out.sort();
    out
}

fn read(rel: &Path) -> String {
    std::fs::read_to_string(root().join(rel))
        .unwrap_or_else(|e| panic!("cannot read {}: {e}", rel.display()))
}

/// README.md and the pages of docs/: where commands are checked.
fn command_docs() -> Vec<PathBuf> {
    let mut files = vec![PathBuf::from("README.md")];
    files.extend(docs_pages());
    files
}

// ---------------------------------------------------------------------------------
// The checks on the real docs

#[test]
fn readme_is_short() {
    let lines = read(Path::new("README.md")).lines().count();
    assert!(
        lines <= README_MAX_LINES,
        "README.md has {lines} lines, more than {README_MAX_LINES}: move the detail to docs/"
    );
}

#[test]
fn every_documented_command_parses() {
    let mut errors = Vec::new();
    let mut checked = 0;
    for f in command_docs() {
        let md = read(&f);
        for b in code_blocks(&md) {
            if RUNNABLE.contains(&b.lang.as_str()) {
                for (_, l) in logical_lines(&b) {
                    checked += agentconform_commands(&l).map(|c| c.len()).unwrap_or(0);
                }
            }
        }
        errors.extend(command_errors(&f.display().to_string(), &md));
    }
    assert!(checked >= 10, "only {checked} commands found in the docs");
    assert!(
        errors.is_empty(),
        "commands in the docs that agentconform refuses (a synopsis belongs in a `text` block):\n{}",
        errors.join("\n")
    );
}

/// The long flags each subcommand's `agentconform SUB` lines of docs/commands.md's
/// synopsis name (a line, with the indented lines that continue it), by subcommand.
fn synopsis_flags(md: &str) -> BTreeMap<String, BTreeSet<String>> {
    let mut out: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    let Some(b) = code_blocks(md).into_iter().find(|b| b.lang == "text") else {
        return out;
    };
    let mut current: Option<String> = None;
    for line in b.lines.iter().map(String::as_str) {
        if let Some(rest) = line.strip_prefix("agentconform ") {
            current = rest.split_whitespace().next().map(String::from);
        } else if !line.starts_with(' ') {
            current = None;
        }
        let Some(sub) = &current else { continue };
        let code = line.split(" # ").next().unwrap_or(line);
        let flags = code
            .split(|c: char| !(c.is_ascii_alphanumeric() || c == '-'))
            .filter(|w| w.starts_with("--") && w.len() > 2)
            .map(String::from);
        out.entry(sub.clone()).or_default().extend(flags);
    }
    out
}

/// docs/commands.md's synopsis names every long flag of every subcommand (the
/// binary's own parser says which there are), so that it cannot lag behind.
#[test]
fn the_synopsis_names_every_flag() {
    use clap::CommandFactory;
    let md = read(Path::new("docs/commands.md"));
    let named = synopsis_flags(&md);
    let mut missing = Vec::new();
    for sub in Cli::command().get_subcommands() {
        let name = sub.get_name().to_string();
        if name == "help" {
            continue;
        }
        let have = named.get(&name).cloned().unwrap_or_default();
        // A subcommand with subcommands of its own (baseline write, attest verify)
        // lists their flags on its lines too.
        let args = sub
            .get_arguments()
            .chain(sub.get_subcommands().flat_map(|s| s.get_arguments()));
        for a in args {
            let Some(long) = a.get_long() else { continue };
            if a.is_hide_set() || ["help", "version"].contains(&long) {
                continue;
            }
            if !have.contains(&format!("--{long}")) {
                missing.push(format!("agentconform {name} --{long}"));
            }
        }
    }
    assert!(
        missing.is_empty(),
        "docs/commands.md's synopsis lacks:\n{}",
        missing.join("\n")
    );
}

/// docs/profile.md shows the default outcome body as the parser has it.
#[test]
fn the_default_outcome_body_is_the_parsers() {
    let md = read(Path::new("docs/profile.md"));
    let line = format!(
        "outcome_body = '{}'",
        agentconform::profile::CHORUS_OUTCOME_BODY
    );
    assert!(
        md.contains(&line),
        "docs/profile.md does not show the default outcome_body: {line}"
    );
}

/// Each suite page names where its spec is published, as the suite says
/// (`Suite::spec`): repository, path, commit, and how the text the suite follows
/// stands to it.
#[test]
fn each_suite_page_names_where_its_spec_is_published() {
    for suite in agentconform::suites::all() {
        let page = format!("docs/suites/{}.md", suite.id);
        let md = read(Path::new(&page));
        let s = suite.spec;
        let line = format!(
            "Where the spec is published: repository {}, path `{}`, commit {}.",
            s.repository, s.path, s.commit
        );
        assert!(md.contains(&line), "{page} does not say: {line}");
        assert!(
            md.contains(&format!("The suite follows {}, which ", s.file)) && md.contains(s.form),
            "{page} does not say how {} stands to the published text ({})",
            s.file,
            s.form
        );
    }
}

#[test]
fn profile_keys_are_documented() {
    let parser = parser_keys();
    assert!(
        parser.iter().any(|(t, k)| t.is_empty() && k == "timing")
            && parser
                .iter()
                .any(|(t, k)| t == "timing" && k == "case_timeout_ms"),
        "the profile parser named no keys when asked (its error wording changed?): {parser:?}"
    );
    let errors = profile_doc_errors(&read(Path::new("docs/profile.md")), &parser);
    assert!(
        errors.is_empty(),
        "docs/profile.md and the profile parser disagree:\n{}",
        errors.join("\n")
    );
}

#[test]
fn relative_links_resolve() {
    let root = root();
    let mut files = command_docs();
    files.push(PathBuf::from("ARCHITECTURE.md"));
    files.push(PathBuf::from("harness/benches/BENCHMARKS.md"));
    let mut errors = Vec::new();
    for f in files {
        let md = read(&f);
        for e in link_errors(&Disk, &root.join(&f), &md) {
            errors.push(e.replace(&format!("{}/", root.display()), ""));
        }
    }
    assert!(errors.is_empty(), "dead links:\n{}", errors.join("\n"));
}

#[test]
fn readme_links_every_docs_page() {
    let root = root();
    let readme = read(Path::new("README.md"));
    let linked: BTreeSet<PathBuf> = links(&readme)
        .into_iter()
        .map(|(_, t)| normalize(&root.join(t.split('#').next().unwrap_or_default())))
        .collect();
    let missing: Vec<String> = docs_pages()
        .into_iter()
        .filter(|p| !linked.contains(&normalize(&root.join(p))))
        .map(|p| p.display().to_string())
        .collect();
    assert!(
        missing.is_empty(),
        "README.md's \"Read on\" does not link {missing:?}"
    );
}

#[test]
fn every_docs_page_says_what_it_is_for_and_links_back() {
    let mut errors = Vec::new();
    for p in docs_pages() {
        let md = read(&p);
        let lines: Vec<&str> = md.lines().collect();
        if !lines.first().is_some_and(|l| l.starts_with("# ")) {
            errors.push(format!("{}: does not open with a title", p.display()));
        }
        if !lines
            .get(2)
            .is_some_and(|l| !l.trim().is_empty() && !l.starts_with('#'))
        {
            errors.push(format!("{}: no purpose line under its title", p.display()));
        }
        if !links(&md).iter().any(|(_, t)| t.contains("README.md")) {
            errors.push(format!("{}: no link back to the README", p.display()));
        }
    }
    assert!(errors.is_empty(), "{}", errors.join("\n"));
}

// ---------------------------------------------------------------------------------
// The checkers fail on broken input

#[test]
fn a_bad_command_is_found() {
    let md = "```sh\n\
              agentconform run --suite all --no-such-flag\n\
              cargo run -p agentconform -- frobnicate\n\
              cargo run -q -p agentconform -- run --suite all   # fine\n\
              $ ./target/debug/agentconform run --suite\n\
              ```\n";
    let errors = command_errors("t.md", md);
    assert_eq!(errors.len(), 3, "{errors:?}");
    assert!(errors[0].starts_with("t.md:2: agentconform run --suite all --no-such-flag"));
    assert!(errors[1].starts_with("t.md:3: agentconform frobnicate"));
    assert!(errors[2].starts_with("t.md:5: ./target/debug/agentconform run --suite:"));
}

#[test]
fn a_good_command_passes_and_a_synopsis_is_skipped() {
    let md = "Text `agentconform --bogus` in prose is not a command.\n\n\
              ```sh\n\
              NO_COLOR=1 agentconform run --suite agora-v1 \\\n\
              \x20   --client \"python3 d.py {url}\" --role client > out.txt 2>&1 &\n\
              echo '{\"a\": 1}' | agentconform canon - && agentconform list\n\
              $ ./target/release/agentconform keygen > key.txt\n\
              ```\n\n\
              ```text\n\
              agentconform run --suite S|all [--target URL] ...\n\
              ```\n\n\
              1. In a list:\n\n   ```sh\n   agentconform keygen\n   ```\n";
    assert_eq!(command_errors("t.md", md), Vec::<String>::new());
    let blocks = code_blocks(md);
    assert_eq!(blocks.len(), 3);
    assert_eq!(blocks[2].lines, vec!["agentconform keygen".to_string()]);
    let cmds = agentconform_commands(&logical_lines(&blocks[0])[0].1).expect("splits");
    assert_eq!(
        cmds[0],
        [
            "agentconform",
            "run",
            "--suite",
            "agora-v1",
            "--client",
            "python3 d.py {url}",
            "--role",
            "client"
        ]
    );
}

#[test]
fn a_synopsis_in_a_runnable_block_is_found() {
    let md = "```sh\nagentconform run --suite S|all [--target URL]\n```\n";
    assert!(!command_errors("t.md", md).is_empty());
    let unbalanced = "```sh\nagentconform run --client \"python3\n```\n";
    assert!(command_errors("t.md", unbalanced)[0].contains("unbalanced quotes"));
}

#[test]
fn an_undocumented_or_unknown_key_is_found() {
    let parser = parser_keys();
    // One key documented of many: the others are found undocumented.
    let md = "```toml\n[timing]\ncase_timeout_ms = 5000   # deadline\n```\n";
    let errors = profile_doc_errors(md, &parser);
    assert!(
        errors
            .iter()
            .any(|e| e == "[timing] replay_window_s is taken by the parser, but not documented"),
        "{errors:?}"
    );
    assert!(errors
        .iter()
        .any(|e| e == "[chorus.setup_requests] path is taken by the parser, but not documented"));
    // A key the parser does not take: the block is refused and the key named.
    let md = "```toml\n[timing]\ncase_timeout_ms = 5000\nno_such_key = 1\n```\n";
    let errors = profile_doc_errors(md, &parser);
    assert!(
        errors
            .iter()
            .any(|e| e.contains("unknown field `no_such_key`")),
        "{errors:?}"
    );
    assert!(errors
        .iter()
        .any(|e| e == "[timing] no_such_key is documented, but the parser takes no such key"));
    // No TOML at all.
    assert_eq!(profile_doc_errors("no blocks", &parser)[0], "no TOML block");
}

#[test]
fn documented_keys_reads_tables_and_arrays_of_tables() {
    let keys = documented_keys(
        "[timing]\ncase_timeout_ms = 1  # c\n[[chorus.setup_requests]]   # note\non = \"owner\"\n",
    );
    let want: BTreeSet<Key> = [
        ("", "timing"),
        ("timing", "case_timeout_ms"),
        ("", "chorus"),
        ("chorus", "setup_requests"),
        ("chorus.setup_requests", "on"),
    ]
    .into_iter()
    .map(|(a, b)| (a.to_string(), b.to_string()))
    .collect();
    assert_eq!(keys, want);
}

/// An in-memory tree for the link checker.
struct Mem(BTreeMap<PathBuf, String>);

impl Tree for Mem {
    fn exists(&self, path: &Path) -> bool {
        // A file, or a folder: a prefix of a file's path.
        self.0.keys().any(|k| k.starts_with(path))
    }
    fn read(&self, path: &Path) -> Option<String> {
        self.0.get(path).cloned()
    }
}

#[test]
fn a_dead_link_is_found() {
    let tree = Mem([
        ("README.md", ""),
        (
            "docs/a.md",
            "# Page A\n\n## Proxy: a real client and a real server\n",
        ),
        ("docs/guides/b.md", "# B\n"),
        ("schemas/x.json", "{}"),
    ]
    .into_iter()
    .map(|(p, t)| (PathBuf::from(p), t.to_string()))
    .collect());
    let md = "# B\n\n\
              [ok](../a.md#proxy-a-real-client-and-a-real-server) and [up](../../README.md)\n\
              [folder](../../schemas/) ![img](../../schemas/x.json) [web](https://example.com/x)\n\
              [self](#b) `[not a link](nowhere.md)`\n\n\
              ```sh\n[nor this](nowhere.md)\n```\n\
              [dead](../c.md) [bad anchor](../a.md#proxy) [bad self](#nope)\n\
              [ref]: ../missing.md\n";
    let errors = link_errors(&tree, Path::new("docs/guides/b.md"), md);
    assert_eq!(
        errors,
        vec![
            "docs/guides/b.md:10: ../c.md: no such file",
            "docs/guides/b.md:10: ../a.md#proxy: no heading with that anchor",
            "docs/guides/b.md:10: #nope: no heading with that anchor",
            "docs/guides/b.md:11: ../missing.md: no such file",
        ]
    );
}

#[test]
fn slugs_follow_github() {
    assert_eq!(
        slug("Proxy: a real client and a real server"),
        "proxy-a-real-client-and-a-real-server"
    );
    assert_eq!(slug("3. Your own agent"), "3-your-own-agent");
    assert_eq!(slug("The `[agora-v1]` keys_x"), "the-agora-v1-keys_x");
    assert_eq!(slug("See [the page](x.md) now"), "see-the-page-now");
    let a = anchors("# T\n\n## Usage\n\n```sh\n# not a heading\n```\n\n## Usage\n");
    assert_eq!(
        a,
        ["t", "usage", "usage-1"]
            .into_iter()
            .map(String::from)
            .collect::<BTreeSet<_>>()
    );
}

// ---------------------------------------------------------------------------------
// Running the examples

/// The pages whose command blocks are run, not only parsed: the quickstart and each
/// guide.
fn runnable_pages() -> Vec<PathBuf> {
    docs_pages()
        .into_iter()
        .filter(|p| p == Path::new("docs/quickstart.md") || p.starts_with("docs/guides"))
        .collect()
}

/// The exit code a command line states (`# exit N` in its comment), else 0.
fn stated_exit(line: &str) -> i32 {
    line.split('#')
        .skip(1)
        .find_map(|c| c.trim().strip_prefix("exit ")?.get(..1)?.parse().ok())
        .unwrap_or(0)
}

/// Why an example cannot be run as it stands, if so: a word the reader replaces
/// (`S`, `URL`, `DIR/report.json`, `<NNN>`), or a script of the reader's that does
/// not exist.
fn placeholder(args: &[String], work: &Path) -> Option<String> {
    for a in args.iter().skip(1) {
        let head = a.split(['/', '.', '=']).next().unwrap_or_default();
        let upper = !head.is_empty()
            && head.len() <= 8
            && head.chars().all(|c| c.is_ascii_uppercase())
            && !a.starts_with("http");
        if upper || a.contains('<') {
            return Some(format!("{a} is a word the reader replaces"));
        }
    }
    let scripts = args
        .iter()
        .flat_map(|a| a.split_whitespace())
        .filter(|w| [".py", ".sh", ".js"].iter().any(|x| w.ends_with(x)));
    for s in scripts {
        if !work.join(s).exists() {
            return Some(format!("{s} is the reader's own script"));
        }
    }
    None
}

/// A server an example started (`agentconform serve … &`), stopped when dropped.
struct Served(std::process::Child);

impl Drop for Served {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// Starts `agentconform serve` with `args` in `work`: the server and the URL it
/// prints first.
fn serve_in(work: &Path, args: &[String]) -> Result<(Served, String), String> {
    use std::io::BufRead;
    let mut child = std::process::Command::new(env!("CARGO_BIN_EXE_agentconform"))
        .args(args)
        .current_dir(work)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::null())
        .spawn()
        .map_err(|e| format!("serve: {e}"))?;
    let stdout = child.stdout.take().ok_or("serve: no stdout")?;
    let served = Served(child);
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let mut lines = std::io::BufReader::new(stdout).lines();
        let _ = tx.send(lines.next().and_then(Result::ok));
        // Keep reading so that the server never blocks on a full pipe.
        for _ in lines {}
    });
    match rx.recv_timeout(std::time::Duration::from_secs(60)) {
        Ok(Some(url)) => Ok((served, url.trim().to_string())),
        _ => Err(format!("serve {args:?} printed no URL within 60 s")),
    }
}

/// Runs `args` in `work`: its exit code and output, killed after `limit`.
fn run_in(
    work: &Path,
    args: &[String],
    limit: std::time::Duration,
) -> Result<(i32, String), String> {
    let out_file = work.join(".example-output");
    let file = std::fs::File::create(&out_file).map_err(|e| e.to_string())?;
    let err = file.try_clone().map_err(|e| e.to_string())?;
    let mut child = std::process::Command::new(env!("CARGO_BIN_EXE_agentconform"))
        .args(args)
        .current_dir(work)
        .stdin(std::process::Stdio::null())
        .stdout(file)
        .stderr(err)
        .spawn()
        .map_err(|e| e.to_string())?;
    let start = std::time::Instant::now();
    let code = loop {
        if let Some(s) = child.try_wait().map_err(|e| e.to_string())? {
            break s.code().unwrap_or(-1);
        }
        if start.elapsed() > limit {
            let _ = child.kill();
            let _ = child.wait();
            return Err(format!("did not end within {} s", limit.as_secs()));
        }
        std::thread::sleep(std::time::Duration::from_millis(50));
    };
    Ok((code, std::fs::read_to_string(&out_file).unwrap_or_default()))
}

/// The `--suite` of a command.
fn suite_of(args: &[String]) -> Option<&str> {
    args.windows(2)
        .find(|w| w[0] == "--suite")
        .map(|w| w[1].as_str())
}

/// What running one page's examples showed: the commands run, and each skip and
/// failure with its line.
#[derive(Default)]
struct Ran {
    run: usize,
    skipped: Vec<String>,
    failed: Vec<String>,
}

/// Runs the `agentconform` commands of one page's runnable blocks in `work`, block
/// by block: a `serve … &` line starts a server whose URL stands for
/// `127.0.0.1:PORT` in the lines after it; the "own agent" URL
/// `http://127.0.0.1:8000/` is the suite's reference, served for the page; each
/// command must exit as its line states (`# exit N`, else 0).
fn run_page(page: &Path, work: &Path) -> Ran {
    let md = read(page);
    let mut ran = Ran::default();
    let mut own: BTreeMap<String, (Served, String)> = BTreeMap::new();
    let tmp = format!("{}/", work.display());
    for block in code_blocks(&md) {
        if !RUNNABLE.contains(&block.lang.as_str()) {
            continue;
        }
        let mut served: Vec<(Served, String)> = Vec::new();
        for (line, text) in logical_lines(&block) {
            let at = format!("{}:{line}", page.display());
            let code = text
                .split(" #")
                .next()
                .unwrap_or_default()
                .trim()
                .to_string();
            if code.is_empty() || code.starts_with('#') {
                continue;
            }
            let commands = agentconform_commands(&text).unwrap_or_default();
            if commands.is_empty() {
                ran.skipped
                    .push(format!("{at}: {code}: not an agentconform command"));
                continue;
            }
            for mut args in commands {
                args.remove(0);
                if let Some(why) = placeholder(&args, work) {
                    ran.skipped.push(format!("{at}: {why}"));
                    continue;
                }
                if args.iter().any(|a| a.contains("python3")) && !has_python() {
                    // Under AGENTCONFORM_REQUIRE_TOOLS a missing tool fails, as in
                    // every other test that needs one.
                    let required = std::env::var_os("AGENTCONFORM_REQUIRE_TOOLS")
                        .is_some_and(|v| !v.is_empty() && v != "0");
                    let list = match required {
                        true => &mut ran.failed,
                        false => &mut ran.skipped,
                    };
                    list.push(format!(
                        "{at}: needs python3, not installed here (Debian: apt-get install python3)"
                    ));
                    continue;
                }
                let mut unserved = false;
                let suite = suite_of(&args).unwrap_or("agora-v1").to_string();
                for a in args.iter_mut() {
                    *a = a.replace("/tmp/", &tmp);
                    if a.contains("127.0.0.1:PORT") {
                        match served.last() {
                            Some((_, url)) => *a = url.clone(),
                            None => unserved = true,
                        }
                    } else if a == "http://127.0.0.1:8000/" {
                        if !own.contains_key(&suite) {
                            let serve = vec!["serve".to_string(), "--suite".into(), suite.clone()];
                            match serve_in(work, &serve) {
                                Ok(s) => {
                                    own.insert(suite.clone(), s);
                                }
                                Err(e) => ran.failed.push(format!("{at}: {e}")),
                            }
                        }
                        if let Some((_, url)) = own.get(&suite) {
                            *a = url.clone();
                        }
                    }
                }
                if unserved {
                    ran.skipped
                        .push(format!("{at}: no server of the block stands for PORT"));
                    continue;
                }
                if args.first().is_some_and(|c| c == "serve") && code.ends_with('&') {
                    match serve_in(work, &args) {
                        Ok(s) => served.push(s),
                        Err(e) => ran.failed.push(format!("{at}: {e}")),
                    }
                    continue;
                }
                let want = stated_exit(&text);
                ran.run += 1;
                let began = std::time::Instant::now();
                match run_in(work, &args, std::time::Duration::from_secs(300)) {
                    Ok((got, _)) if got == want => {
                        eprintln!("ran {at} in {:.1} s", began.elapsed().as_secs_f64())
                    }
                    Ok((got, out)) => ran.failed.push(format!(
                        "{at}: agentconform {}: exit {got}, the page states {want}\n{}",
                        args.join(" "),
                        out.lines()
                            .rev()
                            .take(8)
                            .collect::<Vec<_>>()
                            .into_iter()
                            .rev()
                            .collect::<Vec<_>>()
                            .join("\n")
                    )),
                    Err(e) => ran
                        .failed
                        .push(format!("{at}: agentconform {}: {e}", args.join(" "))),
                }
            }
        }
    }
    ran
}

fn has_python() -> bool {
    std::process::Command::new("python3")
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success())
}

/// The quickstart's and the guides' examples run against the embedded reference and
/// exit as their pages state: a replay example replays a file the example before it
/// wrote, a deviation's example exits 1. Each page runs in a folder of its own that
/// sees the repository's harness/, fuzz/ and vectors/; what cannot run as it stands
/// (a word the reader replaces, the reader's own script, a command that is not
/// agentconform's) is listed, not run.
#[test]
fn the_quickstart_and_guides_run_as_shown() {
    let mut failed = Vec::new();
    let mut run = 0;
    for page in runnable_pages() {
        let stem = page
            .file_stem()
            .map(|s| s.to_string_lossy().into_owned())
            .unwrap_or_default();
        let work =
            std::env::temp_dir().join(format!("agentconform-docs-{}-{stem}", std::process::id()));
        let _ = std::fs::remove_dir_all(&work);
        std::fs::create_dir_all(&work).expect("a temporary folder");
        for dir in ["harness", "fuzz", "vectors", "schemas"] {
            #[cfg(unix)]
            let _ = std::os::unix::fs::symlink(root().join(dir), work.join(dir));
        }
        let ran = run_page(&page, &work);
        for s in &ran.skipped {
            eprintln!("not run: {s}");
        }
        run += ran.run;
        failed.extend(ran.failed);
        let _ = std::fs::remove_dir_all(&work);
    }
    eprintln!("{run} examples ran");
    assert!(run >= 15, "only {run} examples ran");
    assert!(
        failed.is_empty(),
        "examples that do not do what their page says:\n{}",
        failed.join("\n\n")
    );
}
