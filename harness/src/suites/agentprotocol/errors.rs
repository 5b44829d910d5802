//! Error codes and refusals (agentprotocol.md, Error Codes): the cases of unknown
//! actions, invalid messages, input validation and rate limits; and how the fuzzer
//! judges a reply against what the spec fixes for the message as sent (`Expect`,
//! `judge`), filing a deviation under the rule of its subject.

use super::handshake::{cns_details_finding, hello_findings, Me};
use super::replies::{echo_finding, strings};
use super::wire::{case_verdict, describe, echo, own, refused, Other};
use crate::case::{Bindings, Case, Level, Stop};
use crate::finding::Finding;
use crate::fuzzing::verdict::{
    self, about, finding, skip as fuzz_skip, Codes, Expected, FuzzFinding, FuzzStep, FuzzStop,
    Observed, Oracle,
};
use crate::rules::{rules, Rule};
use serde_json::{json, Value};
use std::time::Duration;

rules! {
    UNKNOWN_ACTION_CODE {
        key: "agentprotocol/unknown-action:code",
        requirements: &["AGP-020", "AGP-026"],
        level: None,
        owner: "",
        summary: "an action the target lacks draws error CAPABILITY_NOT_SUPPORTED",
        fails: "a request for an unknown action answered with another code, a response, no body, or silence while the target answers other requests",
        passes: "error CAPABILITY_NOT_SUPPORTED",
    }
    INVALID_MESSAGE_ACCEPTED {
        // The ids depend on the variant: AGP-023 for no type and id 123, AGP-010
        // and AGP-023 for type "bogus", AGP-018 and AGP-023 for params as a string.
        key: "agentprotocol/invalid-message:accepted",
        requirements: &["AGP-010", "AGP-018", "AGP-023"],
        level: None,
        owner: "",
        summary: "a malformed request draws error INVALID_MESSAGE",
        fails: "a request with no type, id 123, type \"bogus\" or params as a string answered with another code, a response, no body or silence",
        passes: "error INVALID_MESSAGE for each variant",
    }
    INPUT_VALIDATION_NOT_REFUSED {
        key: "agentprotocol/input-validation:not-refused",
        requirements: &["AGP-038"],
        level: None,
        owner: "",
        summary: "odd payloads are validated and draw INVALID_MESSAGE",
        fails: "a request with action 7 or timeout \"soon\" answered with another code (INTERNAL_ERROR), a response, no body or silence",
        passes: "error INVALID_MESSAGE",
    }
    RATE_LIMIT_CODE {
        key: "agentprotocol/rate-limit:code",
        requirements: &["AGP-028"],
        level: None,
        owner: "",
        summary: "a throttled request draws error RATE_LIMITED",
        fails: "a request of a burst of 60 answered with something other than a response or error RATE_LIMITED",
        passes: "responses and RATE_LIMITED errors only",
    }
    RATE_LIMIT_NONE {
        key: "agentprotocol/rate-limit:none",
        requirements: &["AGP-037"],
        level: None,
        owner: "",
        summary: "incoming messages are rate-limited",
        fails: "a burst of 60 requests from one sender drew no RATE_LIMITED",
        passes: "at least one RATE_LIMITED in the burst",
    }
    RATE_LIMIT_NEVER_RESET {
        key: "agentprotocol/rate-limit:never-reset",
        requirements: &["AGP-028"],
        level: Some(Level::Profile),
        owner: "",
        summary: "a throttled sender is served again after the rate window the profile gives",
        fails: "one request past [agentprotocol] rate_window_ms after the burst still drew RATE_LIMITED",
        passes: "the request after the window is not RATE_LIMITED",
    }
}

/// The cases of this area, in the order they run.
pub const CASES: &[Case] = &[
    case!("unknown-action", "an action the target lacks draws CAPABILITY_NOT_SUPPORTED with details.requested and details.available",
        ["AGP-020", "AGP-022", "AGP-026"], Fact, |ctx| {
        // The error payload's shape, its correlationId and its code's spelling are
        // read by read_reply, whose findings on them this case owns.
        let mut me = Me::new(ctx);
        me.hello(ctx).await?;
        me.control(ctx).await?;
        let req = me.request("h-no-such-action", json!({}), json!({}));
        let r = match me.refusal(ctx, &req, "CAPABILITY_NOT_SUPPORTED", "unknown action").await? {
            Ok(r) => r,
            Err(got) => return Err(own(&UNKNOWN_ACTION_CODE, format!("an action the target lacks drew {got}, not error CAPABILITY_NOT_SUPPORTED (AGP-026)"))),
        };
        ctx.refusal_counts("a request for an action the target lacks")?;
        match cns_details_finding(&r["payload"], Some("h-no-such-action")) {
            Some(f) => Err(Stop::Finding(f)),
            None => Ok(()),
        }
    }),
    case!("invalid-message", "no type, id 123, type \"bogus\" and params as a string each draw INVALID_MESSAGE", ["AGP-010", "AGP-018", "AGP-023"], Fact, |ctx| {
        let mut me = Me::new(ctx);
        me.hello(ctx).await?;
        me.choose_sender(ctx).await?;
        // The replies' shape is read by read_reply: an error that is no message is
        // this case's error:not-a-message, whatever the control.
        ctx.claim("each malformed request is answered by an error message");
        let base = me.request(&echo(ctx), json!({"a": 1}), json!({}));
        let variants: Vec<(&str, &str, Value)> = vec![
            ("no type", "AGP-023", { let mut m = base.clone(); m.as_object_mut().map(|o| o.remove("type")); m }),
            ("id 123", "AGP-023", { let mut m = base.clone(); m["id"] = json!(123); m }),
            ("type \"bogus\"", "AGP-010", { let mut m = base.clone(); m["type"] = json!("bogus"); m }),
            ("params as a string", "AGP-018", { let mut m = base.clone(); m["payload"]["params"] = json!("a=1"); m }),
        ];
        let mut drew = Vec::new();
        for (what, req, mut m) in variants {
            m["id"] = if what == "id 123" { json!(123) } else { json!(reference_impl::wire::new_id()) };
            m["payload"]["correlationId"] = json!(format!("im-{}", &reference_impl::wire::new_id()[..8]));
            me.sign(&mut m);
            if let Err(got) = me.refusal(ctx, &m, "INVALID_MESSAGE", what).await? {
                drew.push((what, req, got));
            }
        }
        ctx.claim("the error is INVALID_MESSAGE, beside a valid request carried out");
        let row = |(what, req, got): &(&str, &str, Other)| format!("{what}: {got} ({req})");
        // A malformed request carried out needs no control: its response shows it.
        let mut wrong: Vec<String> = drew.iter().filter(|(_, _, got)| got.carried_out).map(row).collect();
        let refused_otherwise: Vec<String> = drew.iter().filter(|(_, _, got)| !got.carried_out).map(row).collect();
        if wrong.is_empty() || !refused_otherwise.is_empty() {
            let controlled = me.control(ctx).await;
            if ctx.needs(controlled)? {
                wrong.extend(refused_otherwise);
                if drew.is_empty() {
                    ctx.refusal_counts("each malformed request")?;
                }
            }
        }
        ctx.rows_wrong(&INVALID_MESSAGE_ACCEPTED, "malformed requests drew another answer than error INVALID_MESSAGE", &wrong);
        Ok(())
    }),
    case!("input-validation", "odd payloads draw INVALID_MESSAGE, never INTERNAL_ERROR or a dropped connection", ["AGP-038"], Should, |ctx| {
        let mut me = Me::new(ctx);
        me.hello(ctx).await?;
        me.choose_sender(ctx).await?;
        ctx.claim("each odd payload is answered by an error message");
        let mut drew = Vec::new();
        for (what, payload) in [
            ("action 7", json!({"action": 7, "correlationId": "c1"})),
            ("timeout \"soon\"", json!({"action": echo(ctx), "correlationId": "c2", "timeout": "soon"})),
        ] {
            let mut m = me.message("request", payload);
            me.sign(&mut m);
            if let Err(got) = me.refusal(ctx, &m, "INVALID_MESSAGE", what).await? {
                drew.push((what, got));
            }
        }
        ctx.claim("the error is INVALID_MESSAGE, beside a valid request carried out");
        let row = |(what, got): &(&str, Other)| format!("{what}: {got}");
        // An odd payload carried out needs no control: its response shows it.
        let mut wrong: Vec<String> = drew.iter().filter(|(_, got)| got.carried_out).map(row).collect();
        let controlled = me.control(ctx).await;
        if ctx.needs(controlled)? {
            wrong.extend(drew.iter().filter(|(_, got)| !got.carried_out).map(row));
            if drew.is_empty() {
                ctx.refusal_counts("each odd payload")?;
            }
        }
        ctx.rows_wrong(&INPUT_VALIDATION_NOT_REFUSED, "odd payloads drew another answer than error INVALID_MESSAGE (AGP-038)", &wrong);
        Ok(())
    }),
    case!("rate-limit", "a burst from one sender: throttled replies use RATE_LIMITED", ["AGP-028", "AGP-037"], Fact, |ctx| {
        let mut me = Me::new(ctx);
        let mut found: Vec<Finding> = Vec::new();
        me.hello(ctx).await?;
        me.control(ctx).await?;
        let n = 60;
        let (mut ok, mut limited) = (0, 0);
        for i in 0..n {
            let req = me.request(&echo(ctx), json!({"i": i}), json!({}));
            let r = me.send(ctx, &req).await?;
            match (r["type"].as_str(), r["payload"]["code"].as_str()) {
                (Some("response"), _) => ok += 1,
                (Some("error"), Some("RATE_LIMITED")) => limited += 1,
                _ => return Err(own(&RATE_LIMIT_CODE, format!("request {} of a burst drew {}; throttling must use RATE_LIMITED (AGP-028)", i + 1, describe(&r)))),
            }
        }
        ctx.note(format!("{n} requests: {ok} answered, {limited} RATE_LIMITED"));
        if limited == 0 {
            found.push(RATE_LIMIT_NONE.found(format!("{n} requests in a burst drew no RATE_LIMITED (AGP-037)")));
        }
        let window = ctx.profile().agentprotocol.rate_window_ms;
        if limited > 0 && window > 0 {
            // One request after the window is not too many (AGP-028).
            let wait = window + 200;
            ctx.note(format!("waiting {wait} ms, past the rate window the profile gives ([agentprotocol] rate_window_ms = {window}), before one more request"));
            tokio::time::sleep(Duration::from_millis(wait)).await;
            let req = me.request(&echo(ctx), json!({"after": "window"}), json!({}));
            let r = me.send(ctx, &req).await?;
            if r["type"] == "error" && r["payload"]["code"] == "RATE_LIMITED" {
                found.push(RATE_LIMIT_NEVER_RESET.found(format!("one request {wait} ms after the burst, past the rate window of {window} ms, still drew {} (AGP-028): the sender stays throttled; if the target's window is longer, set [agentprotocol] rate_window_ms", describe(&r))));
            } else {
                ctx.checked(format!("one request after the rate window drew {}", describe(&r)));
            }
        }
        case_verdict(ctx, found)
    }),
];

// ---------------------------------------------------------------------------
// Fuzzing

pub(super) const IM: &str = "INVALID_MESSAGE";

pub(super) const IS: &str = "INVALID_SIGNATURE";

pub(super) const UA: &str = "UNKNOWN_AGENT";

pub(super) const CNS: &str = "CAPABILITY_NOT_SUPPORTED";

pub(super) const TIMEOUT: &str = "TIMEOUT";

pub(super) const RATE_LIMITED: &str = "RATE_LIMITED";

/// How long to listen for a reply that should not come (WebSocket; HTTP answers at
/// once).
pub(super) const QUIET: Duration = Duration::from_millis(150);

/// How long to wait over WebSocket where no reply is one allowed answer (well past
/// [`LONG_MS`], so a delay carried out past its timeout is still seen).
pub(super) const SILENT_OK: Duration = Duration::from_millis(1000);

/// What came back for one message.
pub(super) enum Got {
    Silence,
    Reply(Value),
}

/// The verdict the spec fixes for one message (see the module doc).
#[derive(Debug, Default, Clone)]
pub(super) struct Expect {
    /// Codes of problems that require a rejection.
    pub(super) hard: Vec<&'static str>,
    /// Codes a target may answer instead of carrying the message out.
    soft: Vec<&'static str>,
    reasons: Vec<String>,
    /// A hard problem is the signature's.
    pub(super) sig_bad: bool,
    /// The rules of `run` the first hard problem breaks: carried out, and refused
    /// with another code (`None`: any refusal passes, as in `run`).
    subject: Option<Subject>,
    /// Any code is an acceptable rejection.
    pub(super) any_code: bool,
    /// Nothing fixed beyond the rejection a hard problem requires.
    pub(super) open: bool,
    /// No reply at all is acceptable, even where a rejection is required.
    pub(super) silence_ok: bool,
    /// The outcome depends on timing (a timeout close to the delay).
    pub(super) timing_open: bool,
    /// RATE_LIMITED is an acceptable answer (a burst).
    pub(super) rate_limit_ok: bool,
    pub(super) want: Shows,
    pub(super) correlation: Option<String>,
    pub(super) action: Option<String>,
    /// The action is one the target may or may not offer (AGP-A8): an
    /// INTERNAL_ERROR for it is the unknown-action case's wrong code.
    pub(super) action_open: bool,
    /// A valid message whose refusal with this code (or no answer in time) breaks
    /// this rule rather than refusing the case's control: a delay within its
    /// timeout answered TIMEOUT (timeout:within-timeout).
    pub(super) refused_as: Option<(&'static str, &'static Rule)>,
}

#[derive(Debug, Default, Clone, PartialEq)]
pub(super) enum Shows {
    #[default]
    Nothing,
    Hello,
    Echo(Option<Value>),
    Success,
}

/// What a success shows, as a finding's detail says it.
impl std::fmt::Display for Shows {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Shows::Nothing => f.write_str("no reply shape judged"),
            Shows::Hello => f.write_str("a hello"),
            Shows::Echo(Some(v)) => write!(f, "an echo of {v}"),
            Shows::Echo(None) => f.write_str("an echo"),
            Shows::Success => f.write_str("a success"),
        }
    }
}

/// The rules of `run` a message that must be refused breaks: carried out, and
/// refused with another code than the one due.
pub(super) type Subject = (&'static Rule, Option<&'static Rule>);

/// An invalid message answered otherwise than with INVALID_MESSAGE (the
/// invalid-message case's table: a wrong code is that rule's too).
const INVALID: Subject = (&INVALID_MESSAGE_ACCEPTED, Some(&INVALID_MESSAGE_ACCEPTED));

/// The rule of `subject` a finding of `oracle` breaks: a wrong code its code rule
/// (`None`: `run` takes any refusal), anything else its carried-out rule.
fn rule_of(subject: Subject, oracle: Oracle) -> Option<&'static Rule> {
    match (oracle, subject) {
        (Oracle::ErrorCode, (_, code)) => code,
        (_, (carried, _)) => Some(carried),
    }
}

impl Expect {
    /// A problem that requires a rejection: an invalid message's.
    pub(super) fn hard(&mut self, codes: &[&'static str], why: impl Into<String>) {
        self.hard_as(INVALID, codes, why);
    }

    /// A problem that requires a rejection, judged by the rules `subject`.
    pub(super) fn hard_as(
        &mut self,
        subject: Subject,
        codes: &[&'static str],
        why: impl Into<String>,
    ) {
        if self.hard.is_empty() {
            self.subject = Some(subject);
        }
        self.hard.extend_from_slice(codes);
        self.reasons.push(why.into());
    }

    /// A problem of the signature, which a message whose signature does not hold
    /// is judged by whatever else is wrong with it: `subject` is its rules, and
    /// the codes of the other problems stay acceptable refusals.
    pub(super) fn signature_hard(
        &mut self,
        subject: Subject,
        codes: &[&'static str],
        why: impl Into<String>,
    ) {
        self.sig_bad = true;
        self.hard_as(subject, codes, why);
        self.subject = Some(subject);
    }

    /// The signature edit the case made names its subject more exactly than the
    /// bytes can (another key, no signature): a message whose signature does not
    /// hold is judged by `subject`.
    pub(super) fn edited_signature(&mut self, subject: Subject) {
        if self.sig_bad {
            self.subject = Some(subject);
        }
    }

    /// The key of `run` a reply that broke the verdict is filed under: the first
    /// hard problem's rule for what the target did (the signature's first); a
    /// valid message refused, the rule that refusal breaks, else the refusal keyed
    /// by the target's words.
    fn key_for(&self, oracle: Oracle, reply: Option<&Value>) -> Option<String> {
        match self.subject {
            Some(subject) => rule_of(subject, oracle).map(|r| r.key.to_string()),
            None => {
                let r = reply.filter(|v| v["type"] == "error")?;
                match self.refused_as {
                    Some((code, rule)) if r["payload"]["code"] == code => {
                        Some(rule.key.to_string())
                    }
                    _ => Some(refused(r, "a valid message", &[]).key.to_string()),
                }
            }
        }
    }

    pub(super) fn soft(&mut self, codes: &[&'static str], why: impl Into<String>) {
        self.soft.extend_from_slice(codes);
        self.reasons.push(format!("may: {}", why.into()));
    }

    /// Input that is not JSON at all.
    pub(super) fn garbage() -> Expect {
        let mut e = Expect {
            silence_ok: true,
            ..Expect::default()
        };
        e.hard(&[IM, IS], "the bytes are not JSON (AGP-023)");
        e
    }

    /// JSON that is not I-JSON (duplicate names, inexact numbers): nothing fixed.
    pub(super) fn not_ijson() -> Expect {
        Expect {
            open: true,
            silence_ok: true,
            any_code: true,
            ..Expect::default()
        }
    }

    /// The verdict in the fuzzers' one vocabulary: a hard problem requires a
    /// rejection (with one of the codes named, or any code); else an open part
    /// leaves it open; else the message is carried out, and the codes of soft
    /// problems may answer it instead.
    fn verdict(&self) -> Expected<Shows, &'static str> {
        let named = |codes: Vec<&'static str>| {
            if self.any_code {
                Codes::Any
            } else {
                Codes::OneOf(codes)
            }
        };
        if !self.hard.is_empty() {
            let mut codes = self.hard.clone();
            codes.extend(self.soft.iter().copied());
            Expected::Reject(named(codes))
        } else if self.open {
            Expected::Open(self.reasons.join("; "))
        } else {
            Expected::Accept(self.want.clone(), named(self.soft.clone()))
        }
    }

    /// Whether no reply is an acceptable answer.
    pub(super) fn may_be_silent(&self) -> bool {
        self.silence_ok || (self.open && self.hard.is_empty())
    }

    fn describe(&self) -> String {
        let mut codes: Vec<&str> = self.hard.clone();
        codes.extend(self.soft.iter());
        codes.sort_unstable();
        codes.dedup();
        if self.hard.is_empty() {
            format!(
                "expected it carried out ({}; allowed codes {}): {}",
                self.want,
                crate::finding::json(&codes),
                self.reasons.join("; ")
            )
        } else {
            format!(
                "expected a rejection with one of {}{}: {}",
                crate::finding::json(&codes),
                if self.may_be_silent() {
                    " or no reply"
                } else {
                    ""
                },
                self.reasons.join("; ")
            )
        }
    }
}

/// Whether `v` holds only what every canonical form spells alike: ASCII text and
/// safe integers (AGP-A1).
pub(super) fn plain(v: &Value) -> bool {
    let ascii = |s: &str| s.bytes().all(|b| (0x20..0x7f).contains(&b));
    match v {
        Value::String(s) => ascii(s),
        Value::Number(n) => {
            n.as_i64().is_some_and(|i| i.unsigned_abs() <= 1 << 53)
                || n.as_u64().is_some_and(|u| u <= 1 << 53)
        }
        Value::Array(a) => a.iter().all(plain),
        Value::Object(o) => o.iter().all(|(k, x)| ascii(k) && plain(x)),
        _ => true,
    }
}

/// Oracles every reply gets, whatever the verdict.
pub(super) fn reply_oracles(v: &Value, e: &Expect) -> FuzzStep<()> {
    let ty = v["type"].as_str().unwrap_or_default();
    // The envelope (the hello's full, signature included; AGP-001, AGP-A6; an
    // unsigned reply elsewhere and a missing `to` are warnings, AGP-A3, AGP-A22) is
    // judged by the shared reading, whose failing findings fail the case.
    let p = &v["payload"];
    if ty == "error" {
        // A code outside the table is judged by the shared reading (expect/), which
        // records it as a warning (AGP-022).
        let code = p["code"].as_str().unwrap_or_default();
        if code == "INTERNAL_ERROR" {
            // To a message `run` judges a refusal of, it is that rule's wrong code.
            // So is it to an action the target may lack (the unknown-action case's).
            let rule = match e.subject {
                Some((_, Some(rule))) => Some(rule),
                None if e.action_open => Some(&UNKNOWN_ACTION_CODE),
                _ => None,
            };
            if let Some(rule) = rule {
                return Err(FuzzStop::Found(FuzzFinding {
                    oracle: Oracle::ErrorCode,
                    detail: format!("client input drew INTERNAL_ERROR (AGP-038): {p}"),
                    key: Some(rule.key.to_string()),
                }));
            }
            return finding(
                Oracle::ServerError,
                format!("client input drew INTERNAL_ERROR (AGP-038): {p}"),
            );
        }
        // The details by the unknown-action case's rule (unknown-action:details).
        if code == CNS {
            let found = cns_details_finding(p, e.action.as_deref());
            verdict::first_failing(found.into_iter().collect())?;
        }
    }
    // The correlationId echoed is the reply checks' rule (correlationId:not-echoed),
    // judged when the reply was read.
    Ok(())
}

/// The hello a target answers with: a hello (AGP-013), judged by the hello case's
/// rules (`hello_findings`: AGP-007, AGP-014 to AGP-016).
pub(super) fn hello_oracles(r: &Value) -> FuzzStep<()> {
    if r["type"] != "hello" {
        return finding(
            Oracle::Verdict,
            format!(
                "hello was answered with {} (AGP-013): {}",
                r["type"], r["payload"]
            ),
        );
    }
    verdict::first_failing(hello_findings(r, &strings(&r["from"]["capabilities"])))
}

/// What a reply says, for comparing two spellings.
pub(super) fn verdict_of(g: &Got) -> String {
    match g {
        Got::Silence => "no reply".into(),
        Got::Reply(v) if v["type"] == "error" => format!("error {}", v["payload"]["code"]),
        Got::Reply(v) => format!("{}", v["type"]),
    }
}

pub(super) fn judge(g: &Got, e: &Expect, what: &str) -> FuzzStep<()> {
    let v = match g {
        Got::Silence if e.may_be_silent() => return Ok(()),
        // A message that must be refused, dropped: refused otherwise than with the
        // code due, its subject's code rule (none: any refusal passes, as in `run`).
        Got::Silence if e.subject.is_some() => {
            return match e.key_for(Oracle::ErrorCode, None) {
                Some(key) => Err(FuzzStop::Found(FuzzFinding {
                    oracle: Oracle::ErrorCode,
                    detail: format!("{what} drew no reply; {}", e.describe()),
                    key: Some(key),
                })),
                None => Ok(()),
            };
        }
        Got::Silence => {
            return finding(
                Oracle::Verdict,
                format!("{what} drew no reply; {}", e.describe()),
            );
        }
        Got::Reply(v) => v,
    };
    let ty = v["type"].as_str().unwrap_or_default();
    let p = &v["payload"];
    let code = p["code"].as_str().unwrap_or_default();
    let (got, said) = if ty == "error" {
        if code == RATE_LIMITED {
            return if e.rate_limit_ok {
                Ok(())
            } else {
                fuzz_skip("the target rate-limited a fresh sender; the case cannot judge its input")
            };
        }
        (Observed::Refused(Some(code)), format!("error {code}"))
    } else {
        (Observed::Carried, format!("{ty} {p}"))
    };
    let carried = if e.sig_bad {
        Oracle::Signature
    } else {
        Oracle::Verdict
    };
    let want = e.verdict();
    let context = format!("{what} ({})", e.describe());
    let judged = verdict::judge(&want, &got, (Oracle::Verdict, carried), || said.clone());
    let judged = match judged {
        // A wrong code where `run` takes any refusal is no finding.
        Err(FuzzStop::Found(f))
            if f.oracle == Oracle::ErrorCode && e.key_for(f.oracle, Some(v)).is_none() =>
        {
            Ok(None)
        }
        Err(FuzzStop::Found(mut f)) if f.key.is_none() => {
            f.key = e.key_for(f.oracle, Some(v));
            Err(FuzzStop::Found(f))
        }
        other => other,
    };
    let shows = about(&context, judged)?;
    shows_oracles(shows, v, &context, &said)
}

/// What a message carried out must show in its reply: a hello, an echo of the
/// params (AGP-019), or a success.
fn shows_oracles(shows: Option<&Shows>, v: &Value, context: &str, said: &str) -> FuzzStep<()> {
    let ty = v["type"].as_str().unwrap_or_default();
    match shows {
        None | Some(Shows::Nothing) => Ok(()),
        Some(Shows::Hello) => hello_oracles(v),
        // A response carries it out whatever its status says (AGP-A11: a status other
        // than success is informational, as the echo-request case records it).
        Some(Shows::Echo(params)) => {
            let found = echo_finding(v, params.as_ref(), context);
            verdict::first_failing(found.into_iter().collect())
        }
        Some(Shows::Success) => {
            if ty != "response" {
                return finding(Oracle::Verdict, format!("{context}: drew {said}"));
            }
            Ok(())
        }
    }
}
