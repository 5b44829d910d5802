//! The crash corpus of a live campaign: every fuzz finding gets a [`Signature`], and
//! the corpus keeps one crash file per signature (the input of the case that showed
//! it first, with that case's detail, request and reply; that input shrunk; how
//! many cases hit it), leaves out what a baseline already knows, and
//! lists the signatures in `OUT/findings.json`.
//!
//! A signature is what a user would call one bug:
//! - a crash class (an HTTP 5xx, a non-JSON reply where JSON is due, a reset, a
//!   timeout, the target's death) with the endpoint and the kind of input;
//! - else the rule key a finding of the suite's rules carries (the key `run`,
//!   `rules` and `explain` use);
//! - else the one rule (or case) whose requirements hold every requirement id the
//!   fuzz oracle's detail cites;
//! - else the fuzz oracle and the endpoint.
//!
//! Nothing here names a suite: the endpoint and the input come from the transcript
//! and the bytes a case sent.

use super::spec::CaseRun;
use super::verdict::{FuzzFinding, Oracle};
use crate::drive::Transport;
use crate::verdict::{Entry, Role};
use serde_json::{json, Value};
use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};
use std::sync::Mutex;

/// A crash class: the target failed as a program, whatever the message meant.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Class {
    /// An HTTP 5xx.
    ServerError,
    /// A reply that is not JSON where the protocol answers JSON (an HTML error page).
    NotJson,
    /// The connection failed: reset, closed, refused.
    Reset,
    /// No reply within the deadline.
    Timeout,
    /// The target stopped answering the liveness probe.
    Death,
    /// A client under test ended abnormally on a served reply (a signal, an exit
    /// code other than 0 or 1).
    ClientCrash,
    /// A client under test was still running at its deadline.
    ClientHang,
}

impl Class {
    /// Every class, for look-ups by name.
    pub const ALL: &'static [Class] = &[
        Class::ServerError,
        Class::NotJson,
        Class::Reset,
        Class::Timeout,
        Class::Death,
        Class::ClientCrash,
        Class::ClientHang,
    ];

    /// What the fuzzer saw fail, in words (`explain` of a crash signature).
    pub fn describe(self) -> &'static str {
        match self {
            Class::ServerError => "the target answered with a server error: an HTTP 5xx, or one it said in its protocol (ERROR 500, INTERNAL_ERROR)",
            Class::NotJson => "the target answered with a reply that is not JSON where the protocol answers JSON (an HTML error page, a text frame)",
            Class::Reset => "the connection failed: reset, closed or refused in the middle of an exchange",
            Class::Timeout => "the target gave no reply within the deadline",
            Class::Death => "the target stopped answering the fuzzer's liveness probe: it went down or hangs",
            Class::ClientCrash => "the client under test ended abnormally on a served reply (a signal, an exit code other than 0 or 1)",
            Class::ClientHang => "the client under test was still running at its deadline",
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            Class::ServerError => "server-error",
            Class::NotJson => "not-json",
            Class::Reset => "reset",
            Class::Timeout => "timeout",
            Class::Death => "death",
            Class::ClientCrash => "client-crash",
            Class::ClientHang => "client-hang",
        }
    }
}

/// What one fuzz finding is an instance of.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum Signature {
    Crash {
        class: Class,
        /// `POST /conversations/{id}`, `WS join`; `None` for a death.
        endpoint: Option<String>,
        /// The JSON type of the input (`object`, `array`, `not JSON`, `no body`).
        input: String,
    },
    /// A rule of the suite, by its key.
    Rule(String),
    /// A fuzz oracle that no rule of the suite keys: the oracle and the endpoint
    /// (the detail, with its ids, values and requirement ids, varies from case to
    /// case for one cause).
    Oracle {
        oracle: Oracle,
        endpoint: Option<String>,
    },
}

impl Signature {
    /// The stable text of the signature: what findings.json and a baseline match.
    pub fn id(&self, suite: &str) -> String {
        match self {
            Signature::Crash {
                class,
                endpoint,
                input,
            } => match endpoint {
                Some(e) => format!("{suite}/crash:{} {e} ({input})", class.name()),
                None => format!("{suite}/crash:{}", class.name()),
            },
            Signature::Rule(key) => key.clone(),
            Signature::Oracle { oracle, endpoint } => {
                let mut s = format!("{suite}/fuzz:{oracle}");
                if let Some(e) = endpoint {
                    s.push_str(&format!(" at {e}"));
                }
                s
            }
        }
    }

    pub fn class(&self) -> Option<Class> {
        match self {
            Signature::Crash { class, .. } => Some(*class),
            _ => None,
        }
    }
}

/// The request a case sent last, as its transcript recorded it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Request {
    /// `POST`, `GET`, …; `WS` for a WebSocket frame.
    pub method: String,
    /// The absolute URL (HTTP), or the target URL (WS).
    pub url: String,
    /// The endpoint in a signature: path with ids left out, or the frame's type.
    pub endpoint: String,
    /// The bytes of the body or frame, as the transcript kept them.
    pub body: String,
}

/// The reply a case received last.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Reply {
    pub http_status: Option<u16>,
    pub body: String,
}

const METHODS: &[&str] = &["GET", "POST", "PUT", "DELETE", "PATCH", "HEAD", "OPTIONS"];

/// The last request of `transcript`; `target` and `transport` say where a bare
/// body went (the HTTP driver POSTs it to the target URL), and `kinds` which types
/// a frame's endpoint may name ([`super::spec::Spec::kinds`]).
pub fn last_request(
    transcript: &[Entry],
    target: &str,
    transport: Transport,
    kinds: &[&str],
) -> Option<Request> {
    let e = transcript.iter().rev().find(|e| e.kind == "send")?;
    Some(read_request(&e.text, target, transport, kinds))
}

fn read_request(text: &str, target: &str, transport: Transport, kinds: &[&str]) -> Request {
    let (first, rest) = text.split_once('\n').unwrap_or((text, ""));
    if let Some((method, url)) = first.split_once(' ') {
        if METHODS.contains(&method) && url.contains("://") && !url.contains(' ') {
            return Request {
                method: method.to_string(),
                url: url.to_string(),
                endpoint: format!("{method} {}", endpoint_path(url)),
                body: rest.to_string(),
            };
        }
    }
    // A frame on a side connection is logged "[who] text".
    let body = match text.strip_prefix('[').and_then(|t| t.split_once("] ")) {
        Some((_, b)) => b,
        None => text,
    };
    if transport == Transport::Http {
        return Request {
            method: "POST".into(),
            url: target.to_string(),
            endpoint: format!("POST {}", endpoint_path(target)),
            body: body.to_string(),
        };
    }
    let kind = serde_json::from_str::<Value>(body)
        .ok()
        .and_then(|v| {
            ["type", "event", "kind", "action"]
                .iter()
                .find_map(|k| v.get(*k).and_then(Value::as_str).map(String::from))
        })
        .map_or_else(
            || "frame".to_string(),
            |t| match kinds.iter().find(|k| k.eq_ignore_ascii_case(&t)) {
                Some(k) => k.to_string(),
                None if kinds.is_empty() => ids_left_out(&t),
                None => "frame (unknown type)".to_string(),
            },
        );
    Request {
        method: "WS".into(),
        url: target.to_string(),
        endpoint: format!("WS {kind}"),
        body: body.to_string(),
    }
}

/// The path of `url` with its ids left out: a segment with a digit in it, or one
/// longer than 24 characters, is `{id}`.
fn endpoint_path(url: &str) -> String {
    let after_scheme = url.split_once("://").map_or(url, |(_, r)| r);
    let path = after_scheme.find('/').map_or("/", |i| &after_scheme[i..]);
    let path = path.split(['?', '#']).next().unwrap_or("/");
    let segments: Vec<String> = path.split('/').map(ids_left_out).collect();
    let joined = segments.join("/");
    if joined.is_empty() {
        "/".into()
    } else {
        joined
    }
}

fn ids_left_out(segment: &str) -> String {
    if segment.len() > 24 || segment.chars().any(|c| c.is_ascii_digit()) {
        "{id}".into()
    } else {
        segment.to_string()
    }
}

/// The last reply of `transcript` (HTTP: its status and body without the
/// Content-Type line the context writes before it).
pub fn last_reply(transcript: &[Entry]) -> Option<Reply> {
    let e = transcript.iter().rev().find(|e| e.kind == "recv")?;
    let body = match e.text.strip_prefix("Content-Type: ") {
        Some(rest) => rest.split_once('\n').map_or("", |(_, b)| b),
        None => e.text.as_str(),
    };
    let body = match body.strip_prefix('[').and_then(|t| t.split_once("] ")) {
        Some((_, b)) if e.http_status.is_none() => b,
        _ => body,
    };
    Some(Reply {
        http_status: e.http_status,
        body: body.to_string(),
    })
}

/// What kind of input `bytes` are: a JSON object, other JSON, not JSON, or no
/// body (a protocol of JSON objects meets the other kinds as one mistake).
pub fn input_kind(bytes: &[u8]) -> String {
    if bytes.iter().all(u8::is_ascii_whitespace) {
        return "no body".into();
    }
    match serde_json::from_slice::<Value>(bytes) {
        Ok(Value::Object(_)) => "object",
        Ok(_) => "JSON, not an object",
        Err(_) => "not JSON",
    }
    .into()
}

/// Requirement ids a text cites that the inventory knows, sorted, each once.
pub fn cited_requirements(text: &str) -> Vec<String> {
    let mut ids = crate::inventory::ids_in(text);
    ids.sort();
    ids
}

/// Whether a reply body is JSON (a clipped body is taken as JSON when it starts
/// like JSON: the clip, not the target, cut it).
fn looks_json(body: &str) -> bool {
    if crate::script::was_clipped(body) {
        return body.trim_start().starts_with(['{', '[', '"']);
    }
    serde_json::from_str::<Value>(body).is_ok()
}

/// The crash class a finding shows, from its oracle and the last reply. A reply
/// without an HTTP status is a frame: the target's own when `role` is the server's,
/// and what the harness logged of the client's run otherwise (its connections,
/// its requests), never a crash by its form. A server error the target said in its
/// protocol (ERROR 500, INTERNAL_ERROR) is a server error like an HTTP 5xx.
pub fn crash_class(found: &FuzzFinding, reply: Option<&Reply>, role: Role) -> Option<Class> {
    match found.oracle {
        Oracle::ServerError => return Some(Class::ServerError),
        Oracle::Timeout => return Some(Class::Timeout),
        Oracle::Transport => return Some(Class::Reset),
        Oracle::Liveness if found.key.as_deref() == Some(DEATH) => return Some(Class::Death),
        Oracle::Crash => return Some(Class::ClientCrash),
        Oracle::Hang => return Some(Class::ClientHang),
        _ => {}
    }
    // A finding a rule made (of `run`, or the fuzzer's attribution) is that rule's,
    // whatever the reply: only a finding of no rule is classed by its reply.
    if found.key.is_some() {
        return None;
    }
    let r = reply?;
    if r.http_status.is_some_and(|s| s >= 500) {
        return Some(Class::ServerError);
    }
    let targets = r.http_status.is_some() || role == Role::Server;
    if targets && !r.body.trim().is_empty() && !looks_json(&r.body) {
        return Some(Class::NotJson);
    }
    None
}

/// Whether the finding was made on a fixed request (a fixture, discovery, a
/// registration) rather than on the fuzzed input: the request that drew it is not
/// the one that carried the case's fuzzed bytes.
fn is_fixed(request: Option<&Request>, sent: &[u8]) -> bool {
    let Some(r) = request else {
        return sent.is_empty();
    };
    if sent.is_empty() {
        return true;
    }
    if r.body == crate::script::clip_bytes(sent) {
        return false;
    }
    // A fuzzed request line (`GET /discover?…`) names the request's method and the
    // end of its URL.
    let line = String::from_utf8_lossy(sent);
    !line.split_once(' ').is_some_and(|(method, path)| {
        method == r.method && !path.is_empty() && r.url.ends_with(path.trim_start_matches('/'))
    })
}

/// Why a finding of `run` proves nothing, when the reply it was made on says the
/// target is busy or limits the rate (HTTP 503 or 429): a target under a fuzzer's
/// load may say so to anything, and the case is a skip, not a deviation.
pub fn busy(run: &CaseRun, found: &FuzzFinding) -> Option<String> {
    let status = last_reply(upto(&run.transcript, found))?.http_status?;
    matches!(status, 429 | 503).then(|| {
        format!("the target answered HTTP {status} (busy or limiting the rate), so the case judged nothing")
    })
}

/// The key a death finding carries.
pub const DEATH: &str = "death";

/// The transcript up to where `found` was made: a rule's finding is logged as a
/// check entry when it is recorded (`finding KEY (…)`), and a case may send more
/// after it; any other finding ends its case.
pub fn upto<'t>(transcript: &'t [Entry], found: &FuzzFinding) -> &'t [Entry] {
    let Some(key) = &found.key else {
        return transcript;
    };
    let mark = format!("finding {key} (");
    match transcript
        .iter()
        .position(|e| e.kind == "check" && e.text.starts_with(&mark))
    {
        Some(at) => &transcript[..at],
        None => transcript,
    }
}

/// The signature of `found`, met by the case `run` against `target`.
pub fn signature(
    found: &FuzzFinding,
    run: &CaseRun,
    target: &str,
    (transport, kinds): (Transport, &[&str]),
    role: Role,
) -> Signature {
    let seen = upto(&run.transcript, found);
    let request = last_request(seen, target, transport, kinds);
    let endpoint = request.as_ref().map(|r| r.endpoint.clone());
    if let Some(class) = crash_class(found, last_reply(seen).as_ref(), role) {
        let input = if run.sent.is_empty() {
            request
                .as_ref()
                .map_or_else(|| "no body".into(), |r| input_kind(r.body.as_bytes()))
        } else {
            input_kind(&run.sent)
        };
        // A frame that is not JSON has no type the target could read: its
        // endpoint is the frame, whatever its garbled text still looks like.
        let endpoint = match &request {
            Some(r) if r.method == "WS" && input == "not JSON" => Some("WS frame".to_string()),
            _ => endpoint,
        };
        return Signature::Crash {
            class,
            endpoint: endpoint.filter(|_| class != Class::Death),
            input,
        };
    }
    if let Some(key) = found.key.as_ref().filter(|k| k.as_str() != DEATH) {
        return Signature::Rule(key.clone());
    }
    Signature::Oracle {
        oracle: found.oracle,
        endpoint,
    }
}

/// The signature a finding of `run` is filed under, as `record` files it and
/// `replay` compares it: its crash class, else its rule key, else the one rule or
/// case of `suite` whose requirements hold the ids the fuzz oracle cites, else the
/// oracle and endpoint. `at` is the target's URL, its binding and the message types
/// a frame's endpoint may name.
pub fn filed_signature(
    (suite, role): (&crate::case::Suite, Role),
    (target, transport, kinds): (&str, Transport, &[&str]),
    found: &FuzzFinding,
    run: &CaseRun,
) -> Signature {
    let sig = signature(found, run, target, (transport, kinds), role);
    // A fuzz oracle that cites a rule's requirements is that rule's finding.
    if let Signature::Oracle { .. } = &sig {
        let cited = cited_requirements(&found.detail);
        if let Some(key) = rule_for(suite, role, &cited) {
            return Signature::Rule(key);
        }
    }
    sig
}

/// The one rule, else the one case, of `suite`'s `role` whose requirements hold
/// every id in `cited` (the fewest of them when several do): the key `run` gives
/// a deviation of those requirements. `None` when no id is cited or the choice is
/// not one.
pub fn rule_for(
    s: &crate::case::Suite,
    role: crate::verdict::Role,
    cited: &[String],
) -> Option<String> {
    if cited.is_empty() {
        return None;
    }
    let covers = |reqs: &[&str]| cited.iter().all(|c| reqs.contains(&c.as_str()));
    let client = role == crate::verdict::Role::Client;
    let rules = s
        .rules
        .iter()
        .filter(|r| !r.key.ends_with('*') && r.key.contains("/client:") == client)
        .filter(|r| covers(r.requirements))
        .map(|r| (r.key, r.requirements.len()));
    let cases = s
        .cases_of(role)
        .iter()
        .filter(|c| covers(c.requirements))
        .map(|c| (c.id, c.requirements.len()));
    let one = |found: Vec<(&str, usize)>| -> Option<String> {
        let fewest = found.iter().map(|(_, n)| *n).min()?;
        let best: Vec<&str> = found
            .iter()
            .filter(|(_, n)| *n == fewest)
            .map(|(k, _)| *k)
            .collect();
        match best.as_slice() {
            [k] => Some(k.to_string()),
            _ => None,
        }
    };
    one(rules.collect()).or_else(|| one(cases.collect()))
}

/// An earlier campaign in a folder, to go on with (`fuzz --resume DIR`).
#[derive(Debug, Clone)]
pub struct Resume {
    pub suite: String,
    pub seed: u64,
    /// The index of the next case: the cases it ran.
    pub next: u64,
    /// The signatures it filed.
    pub signatures: Vec<Value>,
}

impl Resume {
    /// Reads `DIR/findings.json`.
    pub fn read(dir: &Path) -> Result<Resume, String> {
        let path = dir.join("findings.json");
        let shown = path.display().to_string();
        let text = std::fs::read(&path).map_err(|e| format!("cannot resume from {shown}: {e}"))?;
        let v: Value = serde_json::from_slice(&text)
            .map_err(|e| format!("cannot resume from {shown}: {e}"))?;
        let field = |k: &str| format!("cannot resume from {shown}: no {k}");
        Ok(Resume {
            suite: v["suite"]
                .as_str()
                .ok_or_else(|| field("suite"))?
                .to_string(),
            seed: v["seed"].as_u64().ok_or_else(|| field("seed"))?,
            next: v["cases"].as_u64().ok_or_else(|| field("cases"))?,
            signatures: v["signatures"]
                .as_array()
                .ok_or_else(|| field("signatures"))?
                .clone(),
        })
    }

    /// What it filed, for the resumed campaign to leave out.
    pub fn known(&self, source: &Path) -> Known {
        Known {
            ids: self
                .signatures
                .iter()
                .filter_map(|s| s["signature"].as_str().map(String::from))
                .collect(),
            source: Some(source.join("findings.json").display().to_string()),
        }
    }
}

/// What a baseline or an earlier report already knows: finding keys and signatures.
#[derive(Debug, Clone, Default)]
pub struct Known {
    ids: HashSet<String>,
    /// Where they were read from.
    pub source: Option<String>,
}

impl Known {
    /// Reads a baseline (`baseline write`, TOML or JSON), a `run` report.json, or an
    /// earlier campaign's findings.json.
    pub fn load(path: &Path) -> Result<Known, String> {
        let shown = path.display().to_string();
        let text =
            std::fs::read_to_string(path).map_err(|e| format!("cannot read {shown}: {e}"))?;
        let mut ids = HashSet::new();
        let as_json = serde_json::from_str::<Value>(&text).ok();
        match as_json.as_ref() {
            // A run report: every finding it lists.
            Some(v) if v["findings"].is_array() && v["tool"].is_object() => {
                for f in v["findings"].as_array().into_iter().flatten() {
                    if let Some(k) = f["key"].as_str() {
                        ids.insert(k.to_string());
                    }
                }
            }
            // An earlier campaign's findings.json.
            Some(v) if v["signatures"].is_array() => {
                for s in v["signatures"].as_array().into_iter().flatten() {
                    if let Some(k) = s["signature"].as_str() {
                        ids.insert(k.to_string());
                    }
                }
            }
            _ => {
                let b = crate::report::baseline::Baseline::load(path)?;
                ids.extend(b.expected.into_iter().filter_map(|e| e.finding));
            }
        }
        Ok(Known {
            ids,
            source: Some(shown),
        })
    }

    /// What a baseline of these finding keys or signatures knows.
    pub fn of<S: Into<String>>(ids: impl IntoIterator<Item = S>, source: &str) -> Known {
        Known {
            ids: ids.into_iter().map(Into::into).collect(),
            source: Some(source.to_string()),
        }
    }

    /// Adds what `other` knows.
    pub fn extend(&mut self, other: Known) {
        self.ids.extend(other.ids);
        self.source = match (self.source.take(), other.source) {
            (Some(a), Some(b)) => Some(format!("{a} and {b}")),
            (a, b) => a.or(b),
        };
    }

    pub fn contains(&self, id: &str) -> bool {
        self.ids.contains(id)
    }
}

/// One input of a signature: the case that sent it and its bytes.
#[derive(Debug, Clone)]
pub struct Sample {
    pub index: u64,
    pub bytes: Vec<u8>,
}

/// How a signature's input was shrunk.
#[derive(Debug, Clone, Default, serde::Serialize)]
pub struct Shrunk {
    /// Whether the input, sent alone as the same request, showed the signature
    /// again (then `replay` sends the smallest input alone too).
    pub alone: bool,
    /// Candidates sent to the target.
    pub tried: u64,
    /// Candidates that still showed the signature.
    pub kept: u64,
    /// Why it was not shrunk (further), when it was not.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub not_shrunk: Option<String>,
}

/// Everything the corpus keeps of one signature.
#[derive(Debug, Clone)]
pub struct Filed {
    /// Its number, in order of discovery (names its crash file).
    pub no: usize,
    pub signature: Signature,
    pub id: String,
    /// The first finding's oracle, detail and case.
    pub first: FuzzFinding,
    pub first_input: Sample,
    /// The request that drew it, when the transcript kept it.
    pub request: Option<Request>,
    pub reply: Option<Reply>,
    /// Made before the case sent its fuzzed input: a deviation of a fixed reply
    /// (a fixture, discovery, a registration), attributed to that request.
    pub fixed: bool,
    pub smallest: Sample,
    /// Every request the case sent up to its finding, in order (the last
    /// [`MAX_STEPS`]): the case's reproducer where its input needs the case's
    /// state.
    pub steps: Vec<Request>,
    pub count: u64,
    /// How long into the campaign it was first filed.
    pub found_after: std::time::Duration,
    pub transcript: Vec<Entry>,
    pub shrunk: Option<Shrunk>,
    /// The last inputs sent before a death, newest last.
    pub last_inputs: Vec<Sample>,
}

/// What the corpus did with one finding.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Recorded {
    /// A new signature (its number).
    New(usize),
    /// One seen before.
    Again,
    /// One the baseline knows: left out.
    Known,
}

/// Where a campaign's crash files go, and what they are about.
/// The two signing keys of a campaign (the run's own and its other), by their
/// seeds: throwaway keys, recorded in a crash file of a suite that signs so that
/// a replay signs as the campaign did (a target may remember a sender's key: its
/// replay window, its greeted senders).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Keys {
    pub key: [u8; 32],
    pub other_key: [u8; 32],
}

impl Keys {
    /// The keys `shared` signs with.
    pub fn of(shared: &crate::script::RunShared) -> Keys {
        Keys {
            key: shared.key.seed(),
            other_key: shared.other_key.seed(),
        }
    }

    /// As a crash file records them: each seed in standard base64.
    pub fn to_json(self) -> serde_json::Value {
        use reference_impl::wire::keys::b64std;
        serde_json::json!({"key": b64std(&self.key), "other_key": b64std(&self.other_key)})
    }

    /// Read back from a crash file's record; `None` when absent or malformed.
    pub fn from_json(v: &serde_json::Value) -> Option<Keys> {
        let seed = |k: &str| -> Option<[u8; 32]> {
            let b = reference_impl::wire::keys::b64std_decode(v[k].as_str()?)?;
            b.try_into().ok()
        };
        Some(Keys {
            key: seed("key")?,
            other_key: seed("other_key")?,
        })
    }
}

#[derive(Debug, Clone)]
pub struct Meta {
    pub out: PathBuf,
    pub suite: &'static crate::case::Suite,
    /// The message types a frame's endpoint may name (`Spec::kinds`).
    pub kinds: &'static [&'static str],
    pub role: crate::verdict::Role,
    pub target: String,
    pub transport: Transport,
    pub seed: u64,
    /// The signatures an earlier campaign filed in `out` (its findings.json), when
    /// this one resumes it.
    pub previous: Vec<Value>,
    /// The profile file the campaign ran with, recorded in every crash file.
    pub profile_file: Option<crate::profile::ProfileFile>,
    /// The signing keys the campaign used (a suite that signs), recorded in every
    /// crash file so that a replay signs with them.
    pub keys: Option<Keys>,
    /// The faults of the embedded reference the campaign ran against, if it started
    /// one: recorded, so that a replay without --target starts it again.
    pub embedded: Option<Vec<String>>,
}

/// The corpus of one campaign.
pub struct Corpus {
    pub meta: Meta,
    known: Known,
    started: std::time::Instant,
    state: Mutex<State>,
}

#[derive(Default)]
struct State {
    entries: Vec<Filed>,
    by_id: HashMap<String, usize>,
    hits: u64,
    known_hits: u64,
}

impl Corpus {
    pub fn new(meta: Meta, known: Known) -> Corpus {
        Corpus {
            meta,
            known,
            started: std::time::Instant::now(),
            state: Mutex::default(),
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Files one finding of case `index`: a new signature gets its crash file at
    /// once; one seen before counts, and keeps the smaller input.
    pub fn record(&self, index: u64, run: &CaseRun, found: &FuzzFinding) -> Recorded {
        let m = &self.meta;
        let sig = filed_signature(
            (m.suite, m.role),
            (&m.target, m.transport, m.kinds),
            found,
            run,
        );
        let id = sig.id(self.meta.suite.id);
        let seen = upto(&run.transcript, found);
        let request = last_request(
            seen,
            &self.meta.target,
            self.meta.transport,
            self.meta.kinds,
        );
        let fixed = is_fixed(request.as_ref(), &run.sent);
        // A fixed reply's input is the request that drew it.
        let bytes = match (&request, fixed) {
            (Some(r), true) if r.body.is_empty() => format!("{} {}", r.method, r.url).into_bytes(),
            (Some(r), true) => r.body.as_bytes().to_vec(),
            _ => run.sent.clone(),
        };
        let mut st = self.lock();
        st.hits += 1;
        if self.known.contains(&id) || found.key.as_ref().is_some_and(|k| self.known.contains(k)) {
            st.known_hits += 1;
            return Recorded::Known;
        }
        if let Some(&i) = st.by_id.get(&id) {
            // Counted only: the file keeps the input, detail, request and reply of
            // the case that showed its signature first, which shrinking makes
            // smaller; another case's input never stands in for it.
            st.entries[i].count += 1;
            return Recorded::Again;
        }
        let no = self.meta.previous.len() + st.entries.len() + 1;
        let sample = Sample { index, bytes };
        let entry = Filed {
            no,
            signature: sig,
            id: id.clone(),
            first: found.clone(),
            first_input: sample.clone(),
            reply: last_reply(seen),
            request,
            fixed,
            smallest: sample,
            steps: steps_of(seen, &self.meta),
            count: 1,
            found_after: self.started.elapsed(),
            transcript: kept_transcript(&run.transcript),
            shrunk: None,
            last_inputs: Vec::new(),
        };
        let _ = write_crash(&self.meta, &entry);
        let at = st.entries.len();
        st.by_id.insert(id, at);
        st.entries.push(entry);
        Recorded::New(no)
    }

    /// Files the target's death, with the last inputs sent before it.
    pub fn record_death(&self, index: u64, detail: String, last: Vec<Sample>) {
        let found = FuzzFinding {
            oracle: Oracle::Liveness,
            detail,
            key: Some(DEATH.into()),
        };
        let run = CaseRun {
            label: String::new(),
            sent: last.last().map(|s| s.bytes.clone()).unwrap_or_default(),
            transcript: Vec::new(),
            outcome: super::verdict::Outcome::Finding(found.clone()),
        };
        if let Recorded::New(no) = self.record(index, &run, &found) {
            let mut st = self.lock();
            if let Some(e) = st.entries.iter_mut().find(|e| e.no == no) {
                e.last_inputs = last;
                e.fixed = true;
                let _ = write_crash(&self.meta, e);
            }
        }
    }

    /// Distinct signatures filed, finding cases in all, and finding cases left out
    /// as known.
    pub fn counts(&self) -> (usize, u64, u64) {
        let st = self.lock();
        (st.entries.len(), st.hits, st.known_hits)
    }

    /// The signatures filed so far, in order.
    pub fn entries(&self) -> Vec<Filed> {
        self.lock().entries.clone()
    }

    /// Replaces an entry (after shrinking) and writes its crash file again.
    pub fn update(&self, e: Filed) {
        let _ = write_crash(&self.meta, &e);
        let mut st = self.lock();
        if let Some(slot) = st.entries.iter_mut().find(|x| x.no == e.no) {
            *slot = e;
        }
    }

    /// Writes `OUT/findings.json`: every signature with its count and crash file,
    /// and what the campaign left on the target (`left`).
    pub fn write_findings(
        &self,
        cases: u64,
        left: &super::spec::Created,
    ) -> std::io::Result<PathBuf> {
        let st = self.lock();
        let mut sigs = self.meta.previous.clone();
        sigs.extend(st.entries.iter().map(|e| {
            json!({
                "signature": e.id,
                "class": e.signature.class().map(Class::name),
                "oracle": e.first.oracle.name(),
                "count": e.count,
                "found_after_ms": e.found_after.as_millis() as u64,
                "detail": e.first.detail,
                "crash_file": format!("crashes/{}.json", stem(e)),
                "smallest_bytes": e.smallest.bytes.len(),
            })
        }));
        let doc = json!({
            "suite": self.meta.suite.id,
            "target": self.meta.target,
            "seed": self.meta.seed,
            "cases": cases,
            "finding_cases": st.hits,
            "known": {"source": self.known.source, "cases_left_out": st.known_hits},
            "signatures": sigs,
            "left_behind": {"by_kind": left.counts(), "made_by_kind": left.made(), "cap_per_kind": left.cap()},
        });
        std::fs::create_dir_all(&self.meta.out)?;
        let path = self.meta.out.join("findings.json");
        std::fs::write(&path, serde_json::to_vec_pretty(&doc).unwrap_or_default())?;
        Ok(path)
    }
}

/// Transcript bytes the corpus keeps of one signature (its last entries): a
/// campaign of `--max-findings` signatures stays within memory.
const KEPT_TRANSCRIPT_BYTES: usize = 32 * 1024;

/// The last entries of `t` within [`KEPT_TRANSCRIPT_BYTES`], after a note of how
/// many earlier ones were left out.
/// Requests a crash file lists as its case's steps, at most.
pub const MAX_STEPS: usize = 64;

/// The requests of `seen` (a case's transcript up to its finding), the last
/// [`MAX_STEPS`] of them.
fn steps_of(seen: &[Entry], m: &Meta) -> Vec<Request> {
    let sent: Vec<&Entry> = seen.iter().filter(|e| e.kind == "send").collect();
    sent[sent.len().saturating_sub(MAX_STEPS)..]
        .iter()
        .map(|e| read_request(&e.text, &m.target, m.transport, m.kinds))
        .collect()
}

fn kept_transcript(t: &[Entry]) -> Vec<Entry> {
    let mut bytes = 0;
    let from = t
        .iter()
        .rposition(|e| {
            bytes += e.text.len();
            bytes > KEPT_TRANSCRIPT_BYTES
        })
        .map_or(0, |i| i + 1);
    let mut kept = Vec::with_capacity(t.len() - from + 1);
    if from > 0 {
        kept.push(Entry {
            at_ms: t[0].at_ms,
            kind: "note",
            text: format!("{from} earlier transcript entries left out (the crash file keeps the last {KEPT_TRANSCRIPT_BYTES} bytes)"),
            http_status: None,
        });
    }
    kept.extend_from_slice(&t[from..]);
    kept
}

/// The stem of an entry's crash files: its number and oracle.
pub fn stem(e: &Filed) -> String {
    format!("{:03}-{}", e.no, e.first.oracle)
}

/// An input as a crash file shows it: the JSON bytes sent as text (never a debug
/// form), else the bytes as UTF-8 with what could not be read replaced.
pub fn shown(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

/// Writes `DIR/crashes/<no>-<oracle>.bin` (the smallest input) and `.json`.
pub fn write_crash(meta: &Meta, e: &Filed) -> std::io::Result<PathBuf> {
    let dir = meta.out.join("crashes");
    std::fs::create_dir_all(&dir)?;
    let stem = stem(e);
    let bin = dir.join(format!("{stem}.bin"));
    std::fs::write(&bin, &e.smallest.bytes)?;
    let meta_path = dir.join(format!("{stem}.json"));
    let mut record = json!({
        "suite": meta.suite.id,
        "target": meta.target,
        "signature": e.id,
        "class": e.signature.class().map(Class::name),
        "oracle": e.first.oracle.name(),
        "rule": e.first.key.as_deref().filter(|k| *k != DEATH),
        "detail": e.first.detail,
        "count": e.count,
        "input": shown(&e.first_input.bytes),
        "first": {"index": e.first_input.index, "input": shown(&e.first_input.bytes)},
        "smallest": {"index": e.smallest.index, "input": shown(&e.smallest.bytes),
                     "bytes": e.smallest.bytes.len()},
        "shrunk": e.shrunk,
        "fixed_request": e.fixed,
        "request": e.request.as_ref().map(|r| json!({"method": r.method, "url": r.url, "endpoint": r.endpoint})),
        "steps": e.steps.iter().map(|r| json!({"method": r.method, "url": r.url, "body": r.body})).collect::<Vec<_>>(),
        "reply": e.reply.as_ref().map(|r| json!({"http_status": r.http_status, "body": r.body})),
        "seed": meta.seed,
        "index": e.first_input.index,
        "transcript": e.transcript,
        "bytes": bin.file_name().map(|n| n.to_string_lossy().into_owned()),
        "written_at": reference_impl::wire::clock::format_timestamp(time::OffsetDateTime::now_utc()),
    });
    if !e.last_inputs.is_empty() {
        record["last_inputs"] = e
            .last_inputs
            .iter()
            .map(|s| json!({"index": s.index, "input": shown(&s.bytes)}))
            .collect();
    }
    if meta.role == crate::verdict::Role::Client {
        record["role"] = json!("client");
    }
    if let Some(p) = &meta.profile_file {
        record["profile"] = json!({"path": p.path, "toml": p.text});
    }
    if let Some(k) = meta.keys {
        record["keys"] = k.to_json();
    }
    // A campaign against the embedded reference replays against it started anew
    // with the same faults; one against a target, against that target.
    record["replay"] = match &meta.embedded {
        Some(faults) => {
            record["embedded"] = json!({ "faults": faults });
            json!(format!("agentconform replay {}", meta_path.display()))
        }
        None => json!(format!(
            "agentconform replay {} --target {}",
            meta_path.display(),
            meta.target
        )),
    };
    std::fs::write(
        &meta_path,
        serde_json::to_vec_pretty(&record).unwrap_or_default(),
    )?;
    Ok(meta_path)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The keys a crash file records read back as the same seeds, and a record
    /// without them, or with a seed of the wrong length, reads as none.
    #[test]
    fn keys_read_back_as_recorded() {
        let k = Keys {
            key: [7; 32],
            other_key: [9; 32],
        };
        assert_eq!(Keys::from_json(&k.to_json()), Some(k));
        assert_eq!(Keys::from_json(&serde_json::Value::Null), None);
        let mut short = k.to_json();
        short["key"] = serde_json::json!("AAAA");
        assert_eq!(Keys::from_json(&short), None);
    }

    /// The signature of `found` met on the HTTP server at `target`.
    fn http_signature(found: &FuzzFinding, run: &CaseRun, target: &str) -> Signature {
        signature(found, run, target, (Transport::Http, &[]), Role::Server)
    }

    fn entry(kind: &'static str, text: &str, status: Option<u16>) -> crate::verdict::Entry {
        crate::verdict::Entry {
            at_ms: 0,
            kind,
            text: text.into(),
            http_status: status,
        }
    }

    fn run(sent: &[u8], transcript: Vec<crate::verdict::Entry>) -> CaseRun {
        CaseRun {
            label: String::new(),
            sent: sent.to_vec(),
            transcript,
            outcome: super::super::verdict::Outcome::Pass,
        }
    }

    fn finding(oracle: Oracle, detail: &str, key: Option<&str>) -> FuzzFinding {
        FuzzFinding {
            oracle,
            detail: detail.into(),
            key: key.map(String::from),
        }
    }

    #[test]
    fn a_5xx_is_a_crash_class_by_endpoint_and_input_kind() {
        let t = vec![
            entry(
                "send",
                "POST http://127.0.0.1:9/conversations/abc123\n[1,2]",
                None,
            ),
            entry(
                "recv",
                "Content-Type: text/html\n<html>boom</html>",
                Some(500),
            ),
        ];
        let f = finding(Oracle::ServerError, "the target answered 500", None);
        let s = http_signature(&f, &run(b"[1,2]", t), "http://127.0.0.1:9/");
        assert_eq!(
            s.id("s"),
            "s/crash:server-error POST /conversations/{id} (JSON, not an object)"
        );
    }

    #[test]
    fn an_html_error_page_is_not_json() {
        let t = vec![
            entry("send", "POST http://127.0.0.1:9/\n{}", None),
            entry(
                "recv",
                "Content-Type: text/html\n<html>no</html>",
                Some(400),
            ),
        ];
        let f = finding(Oracle::Verdict, "x", None);
        let s = http_signature(&f, &run(b"{}", t), "http://127.0.0.1:9/");
        assert_eq!(s.class(), Some(Class::NotJson));
    }

    #[test]
    fn a_target_frame_that_is_not_json_is_a_crash_class_unless_a_rule_made_it() {
        let t = vec![
            entry(
                "send",
                "[alice] {\"type\":\"space.join\",\"space\":1}",
                None,
            ),
            entry("recv", "[alice] Traceback (most recent call last):", None),
        ];
        // A finding of no rule is classed by the reply it was made on.
        let unruled = finding(Oracle::ReplyCheck, "a server frame is not JSON", None);
        let r = run(b"{\"type\":\"space.join\",\"space\":1}", t);
        let s = signature(
            &unruled,
            &r,
            "ws://127.0.0.1:9/ws",
            (Transport::Ws, &[]),
            Role::Server,
        );
        assert_eq!(s.id("s"), "s/crash:not-json WS space.join (object)");
        // A rule's finding is that rule's, as `run` files it: one file for it,
        // whichever frame showed it.
        let f = finding(
            Oracle::ReplyCheck,
            "a server frame is not JSON",
            Some("s/frame:not-json"),
        );
        let ruled = signature(
            &f,
            &r,
            "ws://127.0.0.1:9/ws",
            (Transport::Ws, &[]),
            Role::Server,
        );
        assert_eq!(ruled, Signature::Rule("s/frame:not-json".into()));
        // In the client role a frame without a status is the harness's log of the
        // client's run, never the client's crash by its form.
        let c = signature(
            &f,
            &r,
            "ws://127.0.0.1:9/ws",
            (Transport::Ws, &[]),
            Role::Client,
        );
        assert_eq!(c, Signature::Rule("s/frame:not-json".into()));
    }

    #[test]
    fn a_rule_key_is_the_signature_whatever_the_detail() {
        let t = vec![
            entry("send", "POST http://h/jobs\n{\"hirer\":\"a\"}", None),
            entry("recv", "Content-Type: application/json\n{}", Some(400)),
        ];
        let a = finding(Oracle::ReplyCheck, "hirer a", Some("chorus/error-code"));
        let b = finding(Oracle::ReplyCheck, "hirer b", Some("chorus/error-code"));
        let r = run(b"{}", t);
        assert_eq!(
            http_signature(&a, &r, "http://h/"),
            http_signature(&b, &r, "http://h/")
        );
    }

    #[test]
    fn an_oracle_signature_is_its_oracle_and_endpoint_not_its_detail() {
        let t = vec![
            entry("send", "POST http://h/\n{}", None),
            entry("recv", "{}", Some(200)),
        ];
        let a = finding(
            Oracle::Verdict,
            "hirer 123 refused (AEX-049, AEX-008)",
            None,
        );
        let s = http_signature(&a, &run(b"{}", t), "http://h/");
        assert_eq!(s.id("s"), "s/fuzz:verdict at POST /");
    }

    #[test]
    fn a_finding_read_past_is_the_request_that_drew_it() {
        let t = vec![
            entry("send", "GET http://h/discover?skill=a", None),
            entry("recv", "Content-Type: application/json\n{}", Some(200)),
            entry("check", "finding s/discover:shape (fail): x", None),
            entry("send", "POST http://h/jobs\n{\"job\":1}", None),
            entry("recv", "Content-Type: application/json\n{}", Some(200)),
        ];
        let f = finding(Oracle::ReplyCheck, "x", Some("s/discover:shape"));
        let seen = upto(&t, &f);
        let r = last_request(seen, "http://h/", Transport::Http, &[]);
        assert_eq!(r.map(|r| r.endpoint), Some("GET /discover".to_string()));
        assert!(is_fixed(
            last_request(seen, "http://h/", Transport::Http, &[]).as_ref(),
            b"{\"job\":1}"
        ));
        assert!(!is_fixed(
            last_request(seen, "http://h/", Transport::Http, &[]).as_ref(),
            b"GET /discover?skill=a"
        ));
    }

    #[test]
    fn an_oracle_citing_a_rules_requirements_is_that_rule() {
        let server = crate::verdict::Role::Server;
        assert_eq!(
            rule_for(
                &crate::suites::agora_exchange::SUITE,
                server,
                &["AEX-038".to_string()]
            )
            .as_deref(),
            Some("agora-exchange/wellknown:document-hash")
        );
        // Two rules of one case cite AEX-049 (malformed JSON answered with a 2xx,
        // or with another status): the case is the signature.
        assert_eq!(
            rule_for(
                &crate::suites::agora_exchange::SUITE,
                server,
                &["AEX-049".to_string()]
            )
            .as_deref(),
            Some("agora-exchange/malformed-json")
        );
        assert_eq!(
            rule_for(&crate::suites::agora_exchange::SUITE, server, &[]),
            None
        );
    }

    #[test]
    fn a_long_transcript_keeps_its_end() {
        let big = "x".repeat(10 * 1024);
        let t: Vec<_> = (0..10).map(|_| entry("send", &big, None)).collect();
        let kept = kept_transcript(&t);
        assert_eq!(kept.len(), 4, "a note and the last three entries");
        assert_eq!(kept[0].kind, "note");
        assert_eq!(kept_transcript(&t[..2]).len(), 2);
    }

    #[test]
    fn a_busy_answer_proves_nothing() {
        let t = |status| {
            vec![
                entry("send", "POST http://h/\n{}", None),
                entry("recv", "Content-Type: application/json\n{}", Some(status)),
            ]
        };
        let f = finding(Oracle::ValidRejected, "refused", None);
        assert!(busy(&run(b"{}", t(503)), &f).is_some());
        assert!(busy(&run(b"{}", t(429)), &f).is_some());
        assert!(busy(&run(b"{}", t(500)), &f).is_none());
        assert!(busy(&run(b"{}", t(400)), &f).is_none());
    }

    #[test]
    fn a_frame_names_its_type_and_a_garbled_type_is_no_endpoint_of_its_own() {
        let kinds = ["space.join", "ACCEPT"];
        let frame = |text: &str, kinds: &[&str]| {
            read_request(text, "ws://h/", Transport::Ws, kinds).endpoint
        };
        let join = "[alice] {\"type\":\"space.join\",\"id\":\"7\"}";
        assert_eq!(frame(join, &kinds), "WS space.join");
        assert_eq!(frame(join, &[]), "WS space.join");
        assert_eq!(frame("{\"type\":\"accept\"}", &kinds), "WS ACCEPT");
        for garbled in ["{\"type\":\"ACCET\"}", "{\"type\":\"ACCEP\u{fffd}T\"}"] {
            assert_eq!(
                frame(garbled, &kinds),
                "WS frame (unknown type)",
                "{garbled}"
            );
        }
        assert_eq!(frame("{\"type\":\"ACCET\"}", &[]), "WS ACCET");
    }

    #[test]
    fn cited_requirements_are_ids_only() {
        assert_eq!(
            cited_requirements("see AEX-049 and AEX-008; not UTF-8 nor X-1a"),
            vec!["AEX-008".to_string(), "AEX-049".into()]
        );
    }

    #[test]
    fn one_file_per_signature_with_its_first_input_and_a_count() {
        let dir = std::env::temp_dir().join(format!("ac-corpus-{}", std::process::id()));
        let c = Corpus::new(
            Meta {
                out: dir.clone(),
                suite: &crate::suites::agora_v1::SUITE,
                kinds: &[],
                role: crate::verdict::Role::Server,
                target: "http://h/".into(),
                transport: Transport::Http,
                seed: 1,
                previous: Vec::new(),
                profile_file: None,
                keys: None,
                embedded: None,
            },
            Known::default(),
        );
        let t = |b: &str| {
            vec![
                entry("send", &format!("POST http://h/\n{b}"), None),
                entry("recv", "Content-Type: text/html\n<p>", Some(500)),
            ]
        };
        let f = finding(Oracle::ServerError, "500", None);
        assert_eq!(
            c.record(1, &run(b"[1,2,3]", t("[1,2,3]")), &f),
            Recorded::New(1)
        );
        assert_eq!(c.record(2, &run(b"[1]", t("[1]")), &f), Recorded::Again);
        assert_eq!(c.record(3, &run(b"{}", t("{}")), &f), Recorded::New(2));
        let files = std::fs::read_dir(dir.join("crashes"))
            .map(|d| d.count())
            .unwrap_or(0);
        assert_eq!(files, 4, "a .json and a .bin per signature");
        // Another case's smaller input never stands in for the first's: the file's
        // input, detail and request are one case's (shrinking makes it smaller).
        let e = &c.entries()[0];
        assert_eq!((e.count, e.smallest.bytes.as_slice()), (2, &b"[1,2,3]"[..]));
        let steps: Vec<(&str, &str)> = e
            .steps
            .iter()
            .map(|r| (r.endpoint.as_str(), r.body.as_str()))
            .collect();
        assert_eq!(
            steps,
            [("POST /", "[1,2,3]")],
            "the case's requests, in order"
        );
        let _ = std::fs::remove_dir_all(dir);
    }
}
