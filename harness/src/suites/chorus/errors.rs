//! Refusals (chorus.md §5): the codes a refusal must carry and the HTTP status it comes
//! with, and what the spec fixes for a fuzzed message (carried out, or refused with
//! which codes) and the rule of `run` a reply that broke it is filed under.

use super::wire::{Class, Resp, CODES};
use crate::case::{fail, Step};
use crate::finding::Rule;
use crate::fuzzing::spec::FuzzCtx;
use crate::fuzzing::verdict::{self, about, finding, Codes, Expected, FuzzStep, Observed, Oracle};
use crate::rules::rules;
use crate::script::Ctx;
use serde_json::Value;

rules! {
    REFUSAL_HTTP_200 {
        key: "chorus/refusal-http-200",
        requirements: &["CHO-A5"],
        level: None,
        owner: "chorus/register-rejects-invalid",
        summary: "a refusal comes as a 4xx/5xx status or a FAILURE job result",
        fails: "an invalid message refused in a 2xx reply that says no (a failure status word), without a chorus.md section 5 code",
        passes: "a 4xx/5xx, or a FAILURE result",
    }
    REFUSAL_HTTP_200_SKILL_MISMATCH {
        key: "chorus/refusal-http-200:SKILL_MISMATCH",
        requirements: &["CHO-027", "CHO-A5"],
        level: None,
        owner: "chorus/job-skill-mismatch",
        summary: "a SKILL_MISMATCH refusal comes as a 4xx/5xx status or a FAILURE job result",
        fails: "the refusal with SKILL_MISMATCH came in a 2xx reply",
        passes: "SKILL_MISMATCH with a 4xx/5xx, or in a FAILURE result",
    }
    REFUSAL_HTTP_200_BUDGET_INSUFFICIENT {
        key: "chorus/refusal-http-200:BUDGET_INSUFFICIENT",
        requirements: &["CHO-028", "CHO-A5"],
        level: None,
        owner: "chorus/job-budget-insufficient",
        summary: "a BUDGET_INSUFFICIENT refusal comes as a 4xx/5xx status or a FAILURE job result",
        fails: "the refusal with BUDGET_INSUFFICIENT came in a 2xx reply",
        passes: "BUDGET_INSUFFICIENT with a 4xx/5xx, or in a FAILURE result",
    }
    REFUSAL_HTTP_200_AGENT_OFFLINE {
        key: "chorus/refusal-http-200:AGENT_OFFLINE",
        requirements: &["CHO-037", "CHO-A5"],
        level: None,
        owner: "chorus/job-skill-mismatch",
        summary: "an AGENT_OFFLINE refusal comes as a 4xx/5xx status or a FAILURE job result",
        fails: "the refusal with AGENT_OFFLINE came in a 2xx reply",
        passes: "AGENT_OFFLINE with a 4xx/5xx, or in a FAILURE result",
    }
    REFUSAL_HTTP_200_EXECUTION_ERROR {
        key: "chorus/refusal-http-200:EXECUTION_ERROR",
        requirements: &["CHO-036", "CHO-A5"],
        level: None,
        owner: "chorus/job-skill-mismatch",
        summary: "an EXECUTION_ERROR refusal comes as a 4xx/5xx status or a FAILURE job result",
        fails: "the refusal with EXECUTION_ERROR came in a 2xx reply",
        passes: "EXECUTION_ERROR with a 4xx/5xx, or in a FAILURE result",
    }
    REFUSAL_HTTP_200_TRANSFER_FAILED {
        key: "chorus/refusal-http-200:TRANSFER_FAILED",
        requirements: &["CHO-040", "CHO-A5"],
        level: None,
        owner: "chorus/transfer-insufficient",
        summary: "a TRANSFER_FAILED refusal comes as a 4xx/5xx status",
        fails: "the refusal with TRANSFER_FAILED came in a 2xx reply",
        passes: "TRANSFER_FAILED with a 4xx/5xx",
    }
    REFUSAL_WITHOUT_CODE_SKILL_MISMATCH {
        key: "chorus/refusal-without-code:SKILL_MISMATCH",
        requirements: &["CHO-027"],
        level: None,
        owner: "chorus/job-skill-mismatch",
        summary: "a refusal where chorus.md names SKILL_MISMATCH carries SKILL_MISMATCH",
        fails: "the refusal carries no SKILL_MISMATCH (in any top-level member, or a FAILURE result's error_message); one finding however many cases meet it",
        passes: "SKILL_MISMATCH in the refusal",
    }
    REFUSAL_WITHOUT_CODE_BUDGET_INSUFFICIENT {
        key: "chorus/refusal-without-code:BUDGET_INSUFFICIENT",
        requirements: &["CHO-028"],
        level: None,
        owner: "chorus/job-budget-insufficient",
        summary: "a refusal where chorus.md names BUDGET_INSUFFICIENT carries BUDGET_INSUFFICIENT",
        fails: "the refusal carries no BUDGET_INSUFFICIENT (in any top-level member, or a FAILURE result's error_message); one finding however many cases meet it",
        passes: "BUDGET_INSUFFICIENT in the refusal",
    }
    REFUSAL_WITHOUT_CODE_TRANSFER_FAILED {
        key: "chorus/refusal-without-code:TRANSFER_FAILED",
        requirements: &["CHO-040"],
        level: None,
        owner: "chorus/transfer-insufficient",
        summary: "a refusal where chorus.md names TRANSFER_FAILED carries TRANSFER_FAILED",
        fails: "the refusal carries no TRANSFER_FAILED (in any top-level member, or a FAILURE result's error_message); one finding however many cases meet it",
        passes: "TRANSFER_FAILED in the refusal",
    }
    REFUSAL_WITHOUT_CODE {
        key: "chorus/refusal-without-code:*",
        requirements: &["CHO-A5"],
        level: None,
        owner: "",
        summary: "a refusal where chorus.md names a code carries that code",
        fails: "a refusal without the code chorus.md names for it, for a code without a rule of its own; the detail names the code",
        passes: "the code in the refusal",
    }
}

// ---------------------------------------------------------------------------
// Refusals

/// The case that owns a code's rule, and the requirement that defines the code.
fn code_id(code: &str) -> &'static str {
    match code {
        "BUDGET_INSUFFICIENT" => "CHO-028",
        "TRANSFER_FAILED" => "CHO-040",
        "AGENT_OFFLINE" => "CHO-037",
        "EXECUTION_ERROR" => "CHO-036",
        _ => "CHO-027",
    }
}

/// The rule keyed `chorus/<head>:<code>`, where the suite has one for that code.
fn rule_for_code(head: &str, code: &str) -> Option<&'static crate::rules::Rule> {
    let key = format!("chorus/{head}:{code}");
    RULES.iter().copied().find(|r| r.key == key)
}

/// A refusal that came with a 2xx status and no FAILURE result: chorus.md names no
/// status, and a 4xx/5xx or a FAILURE result is what its codes come with (CHO-A5).
fn refusal_status_finding(ctx: &mut Ctx, r: &Resp, code: Option<&str>, what: &str) {
    let f = match code {
        Some(c) => rule_for_code("refusal-http-200", c).unwrap_or(&REFUSAL_HTTP_200).found(format!(
                    "{what}: the refusal with {c} came as {}: a 4xx/5xx status, or a FAILURE job result, carries a chorus.md §5 code",
                    r.describe()
                )),
        None => REFUSAL_HTTP_200.found(format!(
                "{what}: the refusal came as {}, not as a 4xx/5xx status or a FAILURE job result",
                r.describe()
            )),
    };
    ctx.finding(f);
}

/// The case's own rule: a refusal that carries `code` (CHO-A5: in any top-level
/// member, or a FAILURE result's error_message; any 4xx/5xx status).
pub fn expect_code(ctx: &mut Ctx, r: &Resp, code: &str, what: &str) -> Step<()> {
    let id = code_id(code);
    let has = r.codes().iter().any(|c| c == code);
    if r.http >= 400 || r.is_failure_result() {
        if !has {
            return without_code(ctx, r, code, what);
        }
    } else if r.refusal_in_2xx() {
        if !has {
            return without_code(ctx, r, code, what);
        }
        refusal_status_finding(ctx, r, Some(code), what);
    } else {
        return fail(format!(
            "{what}: expected a refusal with {code}, got {} ({id})",
            r.describe()
        ));
    }
    ctx.checked(format!("{what}: {code}"));
    Ok(())
}

/// A refusal that carries no `code` where chorus.md names it: one finding keyed by
/// what the target did (`chorus/refusal-without-code:<CODE>`), owned by the case
/// whose subject the code is, however many cases meet it; the refusal itself is
/// what the case wanted, so it goes on.
fn without_code(ctx: &mut Ctx, r: &Resp, code: &str, what: &str) -> Step<()> {
    let id = code_id(code);
    let summary = format!(
        "{what}: refused with {}, which carries no {code} ({id})",
        r.describe()
    );
    ctx.finding(match rule_for_code("refusal-without-code", code) {
        Some(rule) => rule.found(summary),
        None => REFUSAL_WITHOUT_CODE.found_as(code, summary),
    });
    Ok(())
}

/// Rejected: a 4xx, or a FAILURE result; a 2xx that says no is read as a refusal,
/// with a finding.
/// Judges one row of a table of bad messages: `None` when the target refused it (a
/// refusal in a 2xx is the refusal rule's finding), else the row as a wrong one
/// names it, with what the target answered.
pub fn rejected_row(ctx: &mut Ctx, r: &Resp, what: &str) -> Option<String> {
    if (400..500).contains(&r.http) || (r.ok() && r.is_failure_result()) {
        ctx.checked(format!("{what}: rejected ({})", r.http));
        None
    } else if r.refusal_in_2xx() {
        let code = r.codes().into_iter().find(|c| CODES.contains(&c.as_str()));
        refusal_status_finding(ctx, r, code.as_deref(), what);
        None
    } else {
        Some(format!("{what}: {}", r.describe()))
    }
}

/// The message a model judges: the rules of `run` whose finding each way of getting
/// it wrong is, so that the fuzzer files a deviation under the key `run` gives it.
/// Each area names its own (`REGISTRATION_SUBJECT`, `JOB_SUBJECT`,
/// `TRANSFER_SUBJECT`).
#[derive(Debug, Clone, Copy)]
pub(super) struct Subject {
    /// A message the model rejects, carried out (the first reason to reject it
    /// names a rule of its own where it has one: [`Model::note_as`]).
    pub(super) taken: &'static Rule,
    /// A valid message refused.
    pub(super) refused: &'static Rule,
    /// A reply neither carried out nor a refusal.
    pub(super) odd: &'static Rule,
}

/// The case of `run` that judges a refusal carrying `code` (chorus.md §5).
pub(super) fn coded_case(code: &str) -> &'static str {
    match code {
        "SKILL_MISMATCH" => "chorus/job-skill-mismatch",
        "BUDGET_INSUFFICIENT" => "chorus/job-budget-insufficient",
        _ => "chorus/transfer-insufficient",
    }
}

/// What the spec fixes for one message.
#[derive(Debug, Clone)]
pub(super) struct Model {
    subject: Subject,
    /// A reason to reject that carries no code.
    reject: bool,
    /// The spec leaves part of the message open.
    open: bool,
    /// Reasons to reject that carry a code.
    coded: Vec<&'static str>,
    why: Vec<String>,
    /// The key of the first reason to reject, where it names one of its own.
    taken: Option<&'static str>,
}

/// What the spec fixes for a chorus message (no success shape beyond the
/// checks of each case; refusals by their code of chorus.md §5).
type Verdict = Expected<(), &'static str>;

impl Model {
    pub(super) fn of(subject: Subject) -> Model {
        Model {
            subject,
            reject: false,
            open: false,
            coded: Vec::new(),
            why: Vec::new(),
            taken: None,
        }
    }

    pub(super) fn rejecting(subject: Subject) -> Model {
        let mut m = Model::of(subject);
        m.note(Class::Reject, "the body is no JSON object");
        m
    }

    pub(super) fn unsure(subject: Subject) -> Model {
        let mut m = Model::of(subject);
        m.note(Class::Open, "JSON readers disagree on the body");
        m
    }

    /// A reason to reject whose deviation is rule `key`'s, not the subject's.
    pub(super) fn note_as(&mut self, c: Class, key: &'static str, why: impl Into<String>) {
        if c == Class::Reject && !self.reject {
            self.taken = Some(key);
        }
        self.note(c, why);
    }

    /// The key of `run` a reply that broke the verdict `want` is filed under.
    pub(super) fn key_for(&self, got: &Observed<&str>) -> &'static str {
        let coded = self.coded.first().map(|c| coded_case(c));
        match got {
            Observed::Carried if self.reject => self.taken.unwrap_or(self.subject.taken.key),
            Observed::Carried => coded.unwrap_or(self.subject.taken.key),
            Observed::Refused(_) if self.reject || !self.coded.is_empty() => {
                coded.unwrap_or(self.subject.refused.key)
            }
            Observed::Refused(_) => self.subject.refused.key,
        }
    }

    pub(super) fn note(&mut self, c: Class, why: impl Into<String>) {
        match c {
            Class::Ok => return,
            Class::Open => self.open = true,
            Class::Reject => self.reject = true,
        }
        self.why.push(format!("{c:?}: {}", why.into()));
    }

    pub(super) fn code(&mut self, code: &'static str, why: impl Into<String>) {
        self.coded.push(code);
        self.why.push(format!("{code}: {}", why.into()));
    }

    pub(super) fn verdict(&self) -> Verdict {
        if self.reject || (self.open && !self.coded.is_empty()) {
            Expected::Reject(Codes::Any)
        } else if !self.coded.is_empty() {
            Expected::Reject(Codes::OneOf(self.coded.clone()))
        } else if self.open {
            Expected::Open(self.explain())
        } else {
            Expected::Accept((), Codes::none())
        }
    }

    pub(super) fn explain(&self) -> String {
        if self.why.is_empty() {
            "a valid message".into()
        } else {
            self.why.join("; ")
        }
    }
}

/// Members beyond the spec's: chorus.md does not say whether they are ignored.
pub(super) fn extras(m: &mut Model, o: &serde_json::Map<String, Value>, known: &[&str]) {
    if let Some(k) = o.keys().find(|k| !known.contains(&k.as_str())) {
        m.note(
            Class::Open,
            format!("a member {k:?} beyond the spec's (CHO-A11)"),
        );
    }
}

pub(super) fn status_of(r: &Resp) -> Option<&str> {
    r.get("status").and_then(Value::as_str)
}

/// A refusal as `run` reads it: a 4xx, a FAILURE result, or a 2xx that says no
/// (whose status is the rule refusal-http-200's to judge).
pub(super) fn is_rejection(r: &Resp) -> bool {
    (400..500).contains(&r.http) || (r.ok() && (r.is_failure_result() || r.refusal_in_2xx()))
}

pub(super) fn no_server_error(r: &Resp, what: &str) -> FuzzStep<()> {
    if r.http >= 500 {
        return finding(Oracle::ServerError, format!("{what} drew {}", r.describe()));
    }
    Ok(())
}

/// The verdict checks every reply gets. A reply that breaks the verdict is filed
/// under the key `run` gives the same deviation ([`Model::key_for`]).
pub(super) fn judge(
    f: &mut FuzzCtx,
    r: &Resp,
    m: &Model,
    what: &str,
    oracle: Oracle,
) -> FuzzStep<()> {
    let want = m.verdict();
    if matches!(want, Expected::Reject(_)) && r.http >= 500 {
        // A bad message answered with a 5xx is not refused: `run` rows it under the
        // rule for bad messages taken, and so is it filed here, not as a crash.
        let not_refused = finding(
            Oracle::Verdict,
            format!("{what} drew {} where a 4xx refusal is due", r.describe()),
        );
        return verdict::under(Some(m.key_for(&Observed::Carried)), not_refused);
    }
    no_server_error(r, what)?;
    if is_rejection(r) && !matches!(want, Expected::Accept(..)) {
        // A refusal due: its code and its status judged by `run`'s own checks
        // (refusal-without-code, refusal-http-200), their findings under their keys.
        let from = f.ctx.findings().len();
        match (&want, m.reject) {
            (Expected::Reject(Codes::OneOf(codes)), false) if !codes.is_empty() => {
                // The code the reply carries, else the first the model names.
                let carried = r.codes();
                let code = codes
                    .iter()
                    .find(|c| carried.iter().any(|x| x == *c))
                    .unwrap_or(&codes[0]);
                expect_code(&mut f.ctx, r, code, what)?;
            }
            _ => {
                rejected_row(&mut f.ctx, r, what);
            }
        }
        verdict::rules_since(&f.ctx, from)?;
    }
    let context = format!("{what} ({})", m.explain());
    let codes = r.codes();
    let got = if !is_rejection(r) && r.ok() {
        Observed::Carried
    } else if !is_rejection(r) {
        if matches!(want, Expected::Open(_)) {
            return Ok(());
        }
        let odd = finding(
            oracle,
            format!(
                "{context}: neither carried out nor refused: {}",
                r.describe()
            ),
        );
        return verdict::under(Some(m.subject.odd.key), odd);
    } else {
        // Of the codes the reply carries, the one the verdict names, if any.
        let code = match &want {
            Expected::Reject(Codes::OneOf(named)) | Expected::Accept(_, Codes::OneOf(named)) => {
                codes
                    .iter()
                    .find(|c| named.contains(&c.as_str()))
                    .or(codes.first())
            }
            _ => codes.first(),
        };
        Observed::Refused(code.map(String::as_str))
    };
    // Which of chorus.md §5's codes a refusal carries is judged where the verdict
    // names one; beyond that, CHO-046 asks only that codes come from the table (a
    // warning of the reply checks).
    let judged = verdict::judge(&want, &got, (oracle, oracle), || r.describe());
    verdict::under(Some(m.key_for(&got)), about(&context, judged))?;
    Ok(())
}
