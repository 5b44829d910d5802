//! The context a case runs in, and its send/expect vocabulary.
//!
//! A case reads as a script: build a message, `send` it, then check what came back
//! (`expect_*` helpers of the suite's expectation module). Every send and every
//! reply lands in the transcript, with the time since the case started.

use crate::drive::http::HttpReply;
use crate::drive::{DriveError, Driver, Limits, Received, Transport};
use crate::finding::Finding;
use crate::profile::Profile;
use crate::schemas::Schemas;
use crate::verdict::{Entry, Met, Step, Stop};
use reference_impl::wire::keys::Keypair;
use std::collections::HashSet;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// Longest text kept for one transcript entry.
pub const ENTRY_CAP: usize = 8 * 1024;
/// Most transcript entries kept for one case.
pub const TRANSCRIPT_CAP: usize = 400;
/// Most transcript text kept for one case.
pub const CASE_TRANSCRIPT_BYTES: usize = 256 * 1024;
/// Most transcript text kept for a whole run (every case together): the report,
/// and the memory that holds it, stay bounded whatever the target sends.
pub const RUN_TRANSCRIPT_BYTES: usize = 4 * 1024 * 1024;

/// The transcript text a run may still keep, shared by its cases.
#[derive(Debug, Clone)]
pub struct TranscriptBudget(Arc<std::sync::atomic::AtomicUsize>);

impl Default for TranscriptBudget {
    fn default() -> Self {
        TranscriptBudget(Arc::new(std::sync::atomic::AtomicUsize::new(
            RUN_TRANSCRIPT_BYTES,
        )))
    }
}

impl TranscriptBudget {
    /// No run-wide budget, only the per-case caps: for fuzz campaigns, which keep a
    /// case's transcript only while the case runs (and write a finding's out at
    /// once).
    pub fn per_case_only() -> TranscriptBudget {
        TranscriptBudget(Arc::new(std::sync::atomic::AtomicUsize::new(usize::MAX)))
    }

    /// Takes `n` bytes of the budget; false (and nothing taken) when too few are
    /// left.
    pub fn take(&self, n: usize) -> bool {
        use std::sync::atomic::Ordering;
        self.0
            .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |left| {
                left.checked_sub(n)
            })
            .is_ok()
    }
}

/// What every case of a run shares.
pub struct RunShared {
    pub profile: Profile,
    /// The harness's signing key for this run.
    pub key: Keypair,
    /// A second key, for wrong-key cases.
    pub other_key: Keypair,
    pub schemas: Schemas,
    /// The transcript text the run may still keep ([`RUN_TRANSCRIPT_BYTES`]).
    pub transcript_budget: TranscriptBudget,
    /// The run's HTTP client, built from `tls` ([`crate::drive::Tls::http_client`]).
    pub http: reqwest::Client,
    /// Whom the run trusts over `https://` and `wss://`: every WebSocket connect
    /// uses it.
    pub tls: crate::drive::Tls,
    /// The forms the target was found to need where its spec leaves the choice to
    /// the client ([`Adaptations`]).
    pub adapted: Adaptations,
    /// The target is the embedded reference, whose every setting (ttls, expiries,
    /// spaces) the harness chose: a MUST case that skips there fails instead.
    pub embedded: bool,
    /// The ids a client under test must keep unique, as its cases met them: a
    /// client that reuses one across its whole run is seen, not only within a case
    /// ([`Ctx::reused`]).
    pub client_ids: ClientIds,
    /// Documents the harness serves on loopback for the target to fetch (a
    /// protocol document sent by reference), started on first use.
    pub documents: Documents,
}

/// A loopback HTTP server of documents the harness hands a target by URL (an
/// agora-exchange protocol document in `protocolSources`), each at
/// `/documents/<name>`; at most [`Documents::CAP`] are kept. It runs on the run's
/// runtime and ends with it.
#[derive(Debug, Default)]
pub struct Documents {
    served: tokio::sync::OnceCell<(String, DocumentMap)>,
}

type DocumentMap = Arc<std::sync::Mutex<std::collections::HashMap<String, String>>>;

impl Documents {
    /// The most documents a run serves: a run sends a handful, each of at most
    /// the request cap, and they stay in memory until the run ends.
    pub const CAP: usize = 64;

    /// The URL at which `text` is served as `name` (a file name: letters, digits,
    /// `-`, `.`), the server started first if it is not yet.
    pub async fn serve(&self, name: &str, text: &str) -> Result<String, String> {
        let (base, map) = self
            .served
            .get_or_try_init(|| async {
                let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
                    .await
                    .map_err(|e| format!("cannot serve documents on loopback: {e}"))?;
                let at = listener
                    .local_addr()
                    .map_err(|e| format!("cannot serve documents on loopback: {e}"))?;
                let map: DocumentMap = Arc::default();
                let docs = map.clone();
                let router = axum::Router::new().route(
                    "/documents/{name}",
                    axum::routing::get(
                        move |axum::extract::Path(name): axum::extract::Path<String>| {
                            let docs = docs.clone();
                            async move {
                                let found = docs
                                    .lock()
                                    .unwrap_or_else(|p| p.into_inner())
                                    .get(&name)
                                    .cloned();
                                match found {
                                    Some(t) => (axum::http::StatusCode::OK, t),
                                    None => (axum::http::StatusCode::NOT_FOUND, String::new()),
                                }
                            }
                        },
                    ),
                );
                tokio::spawn(async move {
                    let _ = axum::serve(listener, router).await;
                });
                Ok::<_, String>((format!("http://{at}/documents/"), map))
            })
            .await?;
        let mut m = map.lock().unwrap_or_else(|p| p.into_inner());
        if !m.contains_key(name) && m.len() >= Self::CAP {
            return Err(format!("at most {} documents are served", Self::CAP));
        }
        m.insert(name.to_string(), text.to_string());
        Ok(format!("{base}{name}"))
    }
}

/// The ids a client sent in a run (message ids, job ids, correlation ids), each
/// with the case and binding that first carried it and a digest of that message;
/// at most [`ClientIds::CAP`] are kept.
#[derive(Debug, Default)]
pub struct ClientIds {
    sent: std::sync::Mutex<std::collections::HashMap<String, (String, u64)>>,
    /// The identity the client under test acts as throughout the run, when the
    /// profile gives none ([`Ctx::client_identity`]).
    identity: std::sync::OnceLock<String>,
}

impl ClientIds {
    /// The most ids a run keeps: a run's client cases send a few hundred, a fuzz
    /// campaign one or two a case.
    pub const CAP: usize = 20_000;

    /// Records that `case` sent `id` (of `kind`) in the message whose digest is
    /// `digest`; where another case, or this case in another message, carried it
    /// first, that case.
    pub fn first_use(&self, kind: &str, id: &str, case: &str, digest: u64) -> Option<String> {
        let mut m = self.sent.lock().unwrap_or_else(|p| p.into_inner());
        let key = format!("{kind}\u{0}{id}");
        match m.get(&key) {
            Some((c, d)) if c != case || *d != digest => Some(c.clone()),
            Some(_) => None,
            None => {
                if m.len() < Self::CAP {
                    m.insert(key, (case.to_string(), digest));
                }
                None
            }
        }
    }
}

/// Choices the spec leaves to a client that the target turned out to need: when a
/// refusal names a cause (an optional member left out) and the other choice is
/// taken, that is one finding, and the rest of the run sends the working form
/// (each case notes it), so that the rest of the suite is judged.
#[derive(Debug, Default)]
pub struct Adaptations(std::sync::Mutex<std::collections::BTreeSet<String>>);

impl Adaptations {
    /// Records that the run sends the working form `key` (a finding key) from now on.
    pub fn adopt(&self, key: &str) {
        self.0
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .insert(key.to_string());
    }

    /// Whether the run sends the working form `key`.
    pub fn has(&self, key: &str) -> bool {
        self.0
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .contains(key)
    }
}

pub struct Ctx {
    pub shared: Arc<RunShared>,
    pub transport: Transport,
    pub url: String,
    driver: Driver,
    started: Instant,
    transcript: Vec<Entry>,
    dropped_entries: usize,
    /// The transcript text kept so far.
    transcript_bytes: usize,
    warnings: Vec<String>,
    notes: Vec<String>,
    findings: Vec<Met>,
    /// The case being run (its id), when the context runs a conformance case.
    pub case_id: Option<&'static str>,
    /// Fuzzing: a blocking finding stops the script as that finding, which the
    /// fuzz engine files under its rule's key.
    pub fuzzing: bool,
    /// Ids of messages the harness sent in this case.
    pub sent_ids: HashSet<String>,
    /// Ids of messages the target sent in this case.
    pub reply_ids: HashSet<String>,
    /// The suite whose rules the context judges by: the case's, the fuzzed or
    /// proxied suite's.
    pub suite_id: Option<&'static str>,
    /// The time replies are judged at, when pinned (an offline vector is judged at
    /// the time its replies were received); else the clock.
    pub pinned_clock: Option<time::OffsetDateTime>,
    /// The valid message of this case that the target accepted ([`Ctx::control`]).
    control: Option<String>,
    /// The case whose pass is this case's control ([`Ctx::controlled_by`]).
    pub control_case: Option<&'static str>,
    /// The claims the case has made so far ([`Ctx::claim`]).
    claims: Vec<crate::verdict::ClaimMark>,
}

/// `text` with the word "reply" (not "replies", not "replied") said of `as_what`:
/// a leading "reply" becomes "the {as_what}", any other "reply" `as_what`.
fn reword(text: &str, as_what: &str) -> String {
    let text = match text.strip_prefix("reply ") {
        Some(rest) => format!("the {as_what} {rest}"),
        None => text.to_string(),
    };
    let mut out = String::with_capacity(text.len());
    let mut rest = text.as_str();
    while let Some(i) = rest.find("reply") {
        let before = rest[..i].chars().next_back();
        let after = rest[i + 5..].chars().next();
        let word =
            !before.is_some_and(char::is_alphanumeric) && !after.is_some_and(char::is_alphanumeric);
        out.push_str(&rest[..i]);
        out.push_str(if word { as_what } else { "reply" });
        rest = &rest[i + 5..];
    }
    out.push_str(rest);
    out
}

/// A transcript entry, cut at the cap.
pub fn clip_entry(text: &str) -> String {
    if text.len() <= ENTRY_CAP {
        return text.to_string();
    }
    let mut end = ENTRY_CAP;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}… ({} bytes in all)", &text[..end], text.len())
}

/// [`clip_entry`] of bytes read as UTF-8, without decoding more of them than the
/// entry keeps.
pub fn clip_bytes(bytes: &[u8]) -> String {
    if bytes.len() <= ENTRY_CAP {
        return clip_entry(&String::from_utf8_lossy(bytes));
    }
    format!(
        "{}… ({} bytes in all)",
        String::from_utf8_lossy(&bytes[..ENTRY_CAP]),
        bytes.len()
    )
}

/// Whether `text` is a transcript entry [`clip_entry`] cut short.
pub fn was_clipped(text: &str) -> bool {
    text.ends_with(" bytes in all)") && text.contains("… (")
}

impl Ctx {
    pub fn new(shared: Arc<RunShared>, transport: Transport, url: &str) -> Ctx {
        let driver = new_driver(&shared, transport, url);
        Ctx::with_driver(shared, transport, url, driver)
    }

    /// A context on a connection the caller already holds (the fuzz engine keeps
    /// one per worker); [`Ctx::into_driver`] hands it back.
    pub fn with_driver(
        shared: Arc<RunShared>,
        transport: Transport,
        url: &str,
        driver: Driver,
    ) -> Ctx {
        Ctx {
            shared,
            transport,
            url: url.to_string(),
            driver,
            started: Instant::now(),
            transcript: Vec::new(),
            dropped_entries: 0,
            transcript_bytes: 0,
            warnings: Vec::new(),
            notes: Vec::new(),
            findings: Vec::new(),
            case_id: None,
            fuzzing: false,
            sent_ids: HashSet::new(),
            reply_ids: HashSet::new(),
            pinned_clock: None,
            suite_id: None,
            control: None,
            control_case: None,
            claims: Vec::new(),
        }
    }

    /// The time a reply is judged at (see [`Ctx::pinned_clock`]).
    pub fn clock(&self) -> time::OffsetDateTime {
        self.pinned_clock
            .unwrap_or_else(time::OffsetDateTime::now_utc)
    }

    pub fn profile(&self) -> &Profile {
        &self.shared.profile
    }

    pub fn key(&self) -> &Keypair {
        &self.shared.key
    }

    pub fn limits(&self) -> Limits {
        Limits {
            timeout: Duration::from_millis(self.profile().timing.case_timeout_ms),
            max_bytes: self.profile().timing.max_response_bytes,
        }
    }

    fn log(&mut self, kind: &'static str, text: &str, http_status: Option<u16>) {
        let n = text.len().min(ENTRY_CAP + 64);
        if self.transcript.len() >= TRANSCRIPT_CAP
            || self.transcript_bytes + n > CASE_TRANSCRIPT_BYTES
            || !self.shared.transcript_budget.take(n)
        {
            self.dropped_entries += 1;
            return;
        }
        self.transcript_bytes += n;
        self.transcript.push(Entry {
            at_ms: self.started.elapsed().as_millis() as u64,
            kind,
            text: clip_entry(text),
            http_status,
        });
    }

    /// Records an observation that does not change the outcome.
    pub fn note(&mut self, text: impl Into<String>) {
        let t = text.into();
        self.log("note", &t, None);
        self.notes.push(t);
    }

    /// Notes it when `r` is an HTTP reply to a request sent twice because its
    /// connection closed before the reply ([`crate::drive::http::request`]).
    pub fn note_if_retried(&mut self, r: &Received) {
        if let Received::Http {
            retried: Some(first),
            ..
        } = r
        {
            self.note_retry(first);
        }
    }

    /// [`Ctx::note_if_retried`] with the first attempt's error.
    fn note_retry(&mut self, first: &str) {
        self.note(format!(
            "the target closed the connection before replying ({first}); the request \
             was sent once more, on another connection"
        ));
    }

    /// Records an HTTP reply received on a side connection, with its status, as the
    /// case's own replies are recorded (so the reply a finding was made on reads
    /// as the target's body and status).
    pub fn log_http_reply(&mut self, status: u16, body: &[u8]) {
        self.log("recv", &clip_bytes(body), Some(status));
    }

    /// Records a frame sent or received on a side connection (`who` names it).
    pub fn log_frame(&mut self, kind: &'static str, who: &str, text: &str) {
        self.log(kind, &format!("[{who}] {text}"), None);
    }

    /// Records a check that passed.
    pub fn checked(&mut self, text: impl AsRef<str>) {
        self.log("check", text.as_ref(), None);
    }

    /// Records a violation that warns without failing.
    pub fn warn(&mut self, text: impl Into<String>) {
        let t = text.into();
        self.log("check", &format!("warning: {t}"), None);
        self.warnings.push(t);
    }

    pub fn warnings(&self) -> &[String] {
        &self.warnings
    }

    /// Records an incidental finding: a rule another case owns, met on the way to
    /// this case's subject. The case goes on; the same key is kept once.
    pub fn finding(&mut self, f: Finding) {
        self.record(f, false);
    }

    /// Records a deviation of this case's own subject without stopping, so that the
    /// case can go on to judge the rest of it.
    pub fn deviation(&mut self, f: Finding) {
        self.record(f, true);
    }

    /// Records the rows of a table-driven case that the target got wrong, each named:
    /// one finding of `rule` (none when it got every row right), its summary `lead`
    /// then every wrong row. The case goes on, so a row never hides the next.
    pub fn rows_wrong(&mut self, rule: &'static crate::rules::Rule, lead: &str, wrong: &[String]) {
        if let Some(said) = crate::verdict::rows_said(lead, wrong) {
            self.deviation(rule.found(said));
        }
    }

    /// One row of a table-driven case, judged by a check that ends in a stop: its
    /// failure is the row as a wrong one (for [`Ctx::rows_wrong`]), a finding of its
    /// own is recorded and the table goes on; a block or a transport failure still
    /// ends the case (the rows after it cannot be judged).
    pub fn row(&mut self, judged: Step<()>) -> Step<Option<String>> {
        match judged {
            Ok(()) => Ok(None),
            Err(Stop::Fail(m)) => Ok(Some(m)),
            Err(Stop::Finding(f)) => {
                self.deviation(f);
                Ok(None)
            }
            Err(e) => Err(e),
        }
    }

    fn record(&mut self, f: Finding, own: bool) {
        if let Some(m) = self.findings.iter_mut().find(|m| m.finding.key == f.key) {
            m.own |= own;
            return;
        }
        self.log(
            "check",
            &format!("finding {} ({}): {}", f.key, f.outcome, f.summary),
            None,
        );
        self.findings.push(Met { finding: f, own });
    }

    /// Records an incidental finding the case cannot read past, and the stop that
    /// says so: `return Err(ctx.block(f))`.
    /// Fuzzing, the stop is the finding itself: the case failed for it, under its
    /// rule's key.
    pub fn block(&mut self, f: Finding) -> Stop {
        let key = f.key.clone();
        if self.fuzzing {
            self.finding(f.clone());
            Stop::Finding(f)
        } else {
            self.finding(f);
            Stop::Blocked(key)
        }
    }

    /// Records that the target accepted `what`, a valid message of this case: the
    /// control that makes a refusal in the same case mean something. A target that
    /// refuses everything looks like one that checks everything; one that took the
    /// valid twin does not.
    pub fn control(&mut self, what: impl Into<String>) {
        let what = what.into();
        self.checked(format!("control: the target accepted {what}"));
        self.control = Some(what);
    }

    /// Begins the claim `name`: what the case judges from here to its next claim.
    /// A case of several claims judges each apart, so that a refused control
    /// blocks only the claims that need it ([`Ctx::needs`]) and the others are
    /// still judged. The control of one claim is not the next one's: each states
    /// its own.
    pub fn claim(&mut self, name: impl Into<String>) {
        let name = name.into();
        self.log("check", &format!("claim: {name}"), None);
        self.control = None;
        self.claims.push(crate::verdict::ClaimMark {
            name,
            from: self.findings.len(),
            blocked_by: None,
            moot: None,
        });
    }

    /// The current claim cannot be judged on this target, for `why` (the target's
    /// answer made it moot: it wants hello first, or another claim already showed
    /// the same cause): the claim is a skip with that reason, never a pass.
    pub fn moot(&mut self, why: impl Into<String>) {
        let why = why.into();
        self.note(format!("the claim is not judged: {why}"));
        if let Some(c) = self.claims.last_mut() {
            c.moot = Some(why);
        }
    }

    /// What the current claim needs (its control, most often) went through:
    /// `Ok(true)`. When a finding blocked it (a valid twin refused), the claim is
    /// blocked by that finding and `Ok(false)` lets the case go on to its other
    /// claims. A transport failure still stops the case: a target that does not
    /// answer cannot be judged on anything else.
    pub fn needs(&mut self, step: Step<()>) -> Step<bool> {
        match step {
            Ok(()) => Ok(true),
            Err(Stop::Blocked(key))
                if !self.is_transport_failure(&key) && !self.claims.is_empty() =>
            {
                self.note(format!(
                    "the claim is blocked by {key}; the case goes on to its other claims"
                ));
                if let Some(c) = self.claims.last_mut() {
                    c.blocked_by.get_or_insert(key.to_string());
                }
                Ok(false)
            }
            Err(e) => Err(e),
        }
    }

    /// Whether the finding recorded under `key` is a transport failure.
    pub fn is_transport_failure(&self, key: &str) -> bool {
        self.findings
            .iter()
            .any(|m| m.finding.key == key && m.finding.is_transport())
    }

    /// The claims made, for the runner to settle once the case has ended.
    pub fn take_claims(&mut self) -> Vec<crate::verdict::ClaimMark> {
        std::mem::take(&mut self.claims)
    }

    /// Whether `id`, of `kind` ("job_id", "message id"), which a client must keep
    /// unique, was carried before in this run by another case's message, or by
    /// another message of this case (`message`: the bytes that carry it; the same
    /// message sent again is a retry, not a reuse). The case that carried it first,
    /// with its binding. A run's cases and a fuzz campaign's keep ids; the proxy
    /// has its own memory.
    pub fn reused(&mut self, kind: &str, id: &str, message: &[u8]) -> Option<String> {
        use std::hash::{Hash, Hasher};
        let case = match self.case_id {
            Some(id) => format!("{id} [{}]", self.transport),
            // Every fuzz case drives the client anew: one campaign is one run.
            None if self.fuzzing => "an earlier fuzz case".to_string(),
            None => return None,
        };
        let mut h = std::collections::hash_map::DefaultHasher::new();
        message.hash(&mut h);
        let first = self
            .shared
            .client_ids
            .first_use(kind, id, &case, h.finish())?;
        Some(if first == case {
            "an earlier message of this case".to_string()
        } else {
            first
        })
    }

    /// The identity the client under test acts as (a chorus orchestrator_id): the
    /// profile's `[client] identity`, else one fresh UUID for the whole run, as a
    /// real client keeps one identity, so that ids it derives from it are seen
    /// reused across cases ([`Ctx::reused`]).
    pub fn client_identity(&self) -> String {
        if let Some(id) = &self.profile().client.identity {
            return id.clone();
        }
        self.shared
            .client_ids
            .identity
            .get_or_init(reference_impl::wire::new_id)
            .clone()
    }

    /// The control this case has, if any.
    pub fn has_control(&self) -> Option<&str> {
        self.control.as_deref()
    }

    /// Names another case, run on the same binding, whose pass is this case's
    /// control (the client role: the same client must have taken the valid reply).
    /// The runner blocks this case when that one did not pass.
    pub fn controlled_by(&mut self, case: &'static str) {
        self.note(format!(
            "control: {case} on the same binding, which must pass for a refusal here to count"
        ));
        self.control_case = Some(case);
    }

    /// A refusal this case expected has come: it counts only beside a control. `Ok`
    /// with a note that names the control; without one, the stop that blocks the
    /// case ("a refusal proves nothing").
    pub fn refusal_counts(&mut self, what: &str) -> Step<()> {
        if let Some(c) = self.control.clone() {
            self.note(format!(
                "{what} was refused; its control: the target accepted {c}"
            ));
            return Ok(());
        }
        if let Some(c) = self.control_case {
            self.note(format!(
                "{what} was refused; its control: {c}, on the same binding"
            ));
            return Ok(());
        }
        let suite = self.suite();
        Err(self.block(crate::rules::CONTROL_NONE.found_in(suite, "", format!("{what} was refused, but no valid message was accepted beside it, so a refusal proves nothing"))))
    }

    /// The suite of the case being run ("target" outside a suite).
    pub fn suite(&self) -> &'static str {
        self.suite_id.unwrap_or("target")
    }

    /// A transport failure as a finding, and the stop: whatever the case wanted, it
    /// cannot go on without an answer. One key per kind of failure, so that a silent
    /// target is one deviation however many cases meet it.
    fn transport_stop(&mut self, e: &DriveError) -> Stop {
        let msg = describe_drive_error(e);
        self.log("note", &msg, None);
        let kind = e.kind();
        let suite = self.suite();
        self.block(crate::rules::TRANSPORT.found_in(suite, kind, msg))
    }

    /// Rewords the findings recorded since the first `from` of them: `reply` becomes
    /// `as_what` (a client's message is judged by the rules of a target's reply; its
    /// findings should not call it a reply).
    pub fn reword_since(&mut self, from: usize, as_what: &str) {
        for m in self.findings.iter_mut().skip(from) {
            m.finding.summary = reword(&m.finding.summary, as_what);
        }
    }

    /// Every finding met so far.
    pub fn findings(&self) -> &[Met] {
        &self.findings
    }

    pub fn take_findings(&mut self) -> Vec<Met> {
        std::mem::take(&mut self.findings)
    }

    pub fn notes(&self) -> &[String] {
        &self.notes
    }

    pub fn take_transcript(&mut self) -> Vec<Entry> {
        if self.dropped_entries > 0 {
            let n = self.dropped_entries;
            self.dropped_entries = 0;
            self.transcript.push(Entry {
                at_ms: self.started.elapsed().as_millis() as u64,
                kind: "note",
                text: format!(
                    "{n} more transcript entries were left out (at most {TRANSCRIPT_CAP} entries and {CASE_TRANSCRIPT_BYTES} bytes per case, {RUN_TRANSCRIPT_BYTES} bytes per run)"
                ),
                http_status: None,
            });
        }
        std::mem::take(&mut self.transcript)
    }

    fn log_received(&mut self, r: &Received) {
        self.note_if_retried(r);
        match r {
            Received::Http { status, body, .. } => {
                self.log("recv", &clip_bytes(body), Some(*status))
            }
            Received::Frame(b) => self.log("recv", &clip_bytes(b), None),
            Received::Silence => self.log("note", "no reply within the deadline", None),
        }
    }

    /// Sends raw bytes on the case's connection and returns the reply.
    pub async fn send_bytes(&mut self, bytes: Vec<u8>) -> Step<Received> {
        self.log("send", &clip_bytes(&bytes), None);
        let limits = self.limits();
        match self.driver.exchange(bytes, limits).await {
            Ok(r) => {
                self.log_received(&r);
                Ok(r)
            }
            Err(e) => Err(self.transport_stop(&e)),
        }
    }

    /// Waits `wait` for a message the target sends unprompted (WebSocket only).
    pub async fn listen(&mut self, wait: Duration) -> Step<Option<Vec<u8>>> {
        let limits = Limits {
            timeout: wait,
            max_bytes: self.profile().timing.max_response_bytes,
        };
        match self.driver.listen(limits).await {
            Ok(Some(b)) => {
                self.log("recv", &clip_bytes(&b), None);
                Ok(Some(b))
            }
            Ok(None) => Ok(None),
            Err(e) => Err(self.transport_stop(&e)),
        }
    }

    /// One HTTP request to `path` below the target URL (joined with exactly one
    /// slash), recorded in the transcript with its status and content type.
    pub async fn http(
        &mut self,
        method: reqwest::Method,
        path: &str,
        headers: &[(&str, &str)],
        body: Option<Vec<u8>>,
    ) -> Step<HttpReply> {
        let base = self.url.clone();
        self.http_at(&base, method, path, headers, body).await
    }

    /// [`Ctx::http`] against another base URL (a separate ledger, an agent's endpoint).
    pub async fn http_at(
        &mut self,
        base: &str,
        method: reqwest::Method,
        path: &str,
        headers: &[(&str, &str)],
        body: Option<Vec<u8>>,
    ) -> Step<HttpReply> {
        let url = join_url(base, path);
        let shown = match &body {
            Some(b) => format!("{method} {url}\n{}", clip_bytes(b)),
            None => format!("{method} {url}"),
        };
        self.log("send", &shown, None);
        let limits = self.limits();
        match crate::drive::http::request(&self.shared.http, method, &url, headers, body, limits)
            .await
        {
            Ok(r) => {
                if let Some(first) = &r.retried {
                    self.note_retry(first);
                }
                let text = format!(
                    "Content-Type: {}\n{}",
                    r.content_type.as_deref().unwrap_or("(none)"),
                    clip_bytes(&r.body)
                );
                self.log("recv", &text, Some(r.status));
                Ok(r)
            }
            Err(e) => Err(self.transport_stop(&e)),
        }
    }

    /// A second, independent connection to the same target.
    pub fn new_connection(&self) -> Driver {
        new_driver(&self.shared, self.transport, &self.url)
    }

    /// The case's connection, open, for the next case on it.
    pub fn into_driver(self) -> Driver {
        self.driver
    }

    pub async fn close(&mut self) {
        if let Driver::Ws(d) = &mut self.driver {
            d.close().await;
        }
    }
}

/// A new connection to `url` over `transport`.
pub fn new_driver(shared: &RunShared, transport: Transport, url: &str) -> Driver {
    match transport {
        Transport::Http => Driver::Http(crate::drive::http::HttpDriver::new(
            shared.http.clone(),
            url,
        )),
        Transport::Ws => Driver::Ws(crate::drive::ws::WsDriver::new(url, &shared.tls)),
        Transport::File => Driver::File(crate::drive::file::FileDriver::new(url)),
    }
}

pub fn describe_drive_error(e: &DriveError) -> String {
    match e {
        DriveError::Timeout(ms) => format!("the target did not answer within {ms} ms"),
        DriveError::TooLarge(n) => format!("the target's reply exceeds the {n}-byte cap"),
        DriveError::Connect(m) => format!("cannot reach the target: {m}"),
        DriveError::Io(m) => format!("transport failure: {m}"),
        DriveError::Closed => "the target closed the connection".into(),
    }
}

/// `text` with the character at `at` changed (`A` becomes `B`, anything else `A`):
/// a signature spoiled on purpose by a scripted counterparty.
pub fn spoil(text: &str, at: usize) -> String {
    text.chars()
        .enumerate()
        .map(|(i, c)| match (i == at, c) {
            (true, 'A') => 'B',
            (true, _) => 'A',
            (false, c) => c,
        })
        .collect()
}

/// Joins a base URL and a path with exactly one slash (an empty path is the base).
pub fn join_url(base: &str, path: &str) -> String {
    if path.is_empty() {
        return base.to_string();
    }
    format!(
        "{}/{}",
        base.trim_end_matches('/'),
        path.trim_start_matches('/')
    )
}

#[cfg(test)]
mod tests {
    #[test]
    fn reword_says_whose_message() {
        let w = |t: &str| super::reword(t, "client's message");
        assert_eq!(
            w("reply timestamp 1 is away"),
            "the client's message timestamp 1 is away"
        );
        assert_eq!(
            w("the reply's signature does not verify"),
            "the client's message's signature does not verify"
        );
        assert_eq!(w("two replies; a reply"), "two replies; a client's message");
        assert_eq!(w("the replies"), "the replies");
    }
}
