//! The wire of agentprotocol (agentprotocol.md, Message Format and Transport Bindings):
//! the endpoint of each binding, what was asked and what came back (`Asked`, `Answer`),
//! and how an answer is described in a finding.

use crate::case::{Step, Stop};
use crate::drive::file::FileDriver;
use crate::drive::http::HttpDriver;
use crate::drive::ws::WsDriver;
use crate::drive::{DriveError, Driver, Limits, Transport};
use crate::finding::{quote, Finding};
use crate::fuzzing::spec::FuzzCtx;
use crate::rules::Rule;
use crate::script::{describe_drive_error, join_url, Ctx};
use serde_json::Value;
use std::time::Duration;

/// A finding key of this suite.
pub fn key(rule: &str) -> String {
    format!("agentprotocol/{rule}")
}

/// A case's own deviation, as the stop that ends it.
pub fn own(rule: &'static Rule, summary: impl Into<String>) -> Stop {
    Stop::Finding(rule.found(summary))
}

/// JSON equality with numbers compared by value (4 and 4.0 are one number).
pub(super) fn json_eq(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Number(x), Value::Number(y)) => match (x.as_i64(), y.as_i64()) {
            (Some(i), Some(j)) => i == j,
            _ => match (x.as_u64(), y.as_u64()) {
                (Some(i), Some(j)) => i == j,
                _ => x.as_f64() == y.as_f64(),
            },
        },
        (Value::Array(x), Value::Array(y)) => {
            x.len() == y.len() && x.iter().zip(y).all(|(p, q)| json_eq(p, q))
        }
        (Value::Object(x), Value::Object(y)) => {
            x.len() == y.len()
                && x.iter()
                    .all(|(k, p)| y.get(k).is_some_and(|q| json_eq(p, q)))
        }
        _ => a == b,
    }
}

/// What a reply answers, to hold it to.
#[derive(Debug, Clone, Default)]
pub struct Asked {
    /// The agentId the reply must be addressed to.
    pub sender: Option<String>,
    /// The agent that said hello: the reply must come from it.
    pub target: Option<String>,
    /// The request's correlationId (a string), which a response or error echoes.
    pub correlation: Option<String>,
}

/// What came back for one message.
#[derive(Debug, Clone)]
pub enum Answer {
    /// A message, as read by [`read_reply`].
    Reply(Value),
    /// An HTTP answer below 400 with no body: the target took the message and sent
    /// nothing in the response.
    Empty(u16),
    /// Nothing within the wait (WebSocket, files).
    Silence,
}

/// Signatures [`Me`] remembers.
pub(super) const REMEMBERED_SIGNATURES: usize = 8;

/// Where each binding's endpoint lies below the target URL (target-profile.md); the
/// suite's descriptor lists them.
pub const ENDPOINT_PATHS: &[(Transport, &str)] = &[
    (Transport::Http, "agentprotocol"),
    (Transport::Ws, "agentprotocol/ws"),
];

/// A new connection to the target's endpoint of the case's binding.
pub fn endpoint_driver(ctx: &Ctx) -> Driver {
    let at = |t: Transport| {
        let path = ENDPOINT_PATHS
            .iter()
            .find(|(b, _)| *b == t)
            .map_or("", |(_, p)| *p);
        join_url(&ctx.url, path)
    };
    match ctx.transport {
        Transport::Http => Driver::Http(HttpDriver::new(
            ctx.shared.http.clone(),
            &at(Transport::Http),
        )),
        Transport::Ws => Driver::Ws(WsDriver::new(&at(Transport::Ws), &ctx.shared.tls)),
        Transport::File => Driver::File(FileDriver::new(&ctx.url)),
    }
}

/// JSON the target sent, shortened to fit one report line (unlike [`quote`], not
/// escaped again).
pub fn shown(text: &str) -> String {
    crate::finding::clipped(&text.trim().replace(['\n', '\r'], " "), 200)
}

/// What came instead of the refusal a message should draw.
#[derive(Debug, Clone)]
pub struct Other {
    /// In the target's words (see [`describe`]).
    pub text: String,
    /// The target answered with a response: it carried the message out.
    pub carried_out: bool,
}

impl std::fmt::Display for Other {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.text)
    }
}

pub(super) fn case_wait(ctx: &Ctx) -> Duration {
    Duration::from_millis(ctx.profile().timing.case_timeout_ms)
}

/// A transport failure as the suite's transport finding (the keys `Ctx` uses).
pub fn transport_finding(e: &DriveError) -> Finding {
    let kind = e.kind();
    crate::rules::TRANSPORT.found_in("agentprotocol", kind, describe_drive_error(e))
}

/// Nothing came where a reply was needed.
pub(super) fn no_answer(a: &Answer, wait: Duration) -> Finding {
    let text = match a {
        Answer::Empty(s) => format!(
            "HTTP {s} with no body: no reply message in the response (AGP-040; delivery elsewhere, AGP-A10, is not something the profile can declare)"
        ),
        _ => format!("the target did not answer within {} ms", wait.as_millis()),
    };
    crate::rules::TRANSPORT.found_in("agentprotocol", "no-answer", text)
}

pub(super) fn answer_text(a: &Answer) -> String {
    match a {
        Answer::Reply(v) => describe(v),
        Answer::Empty(s) => format!("HTTP {s} with no body"),
        Answer::Silence => "no reply".into(),
    }
}

/// What a reply says, in the target's words: its type, and the code and message of
/// an error or the status of a response.
pub fn describe(r: &Value) -> String {
    let p = &r["payload"];
    match r["type"].as_str() {
        Some("error") => {
            let code = p["code"].as_str().unwrap_or("(no code)");
            match p["message"].as_str() {
                Some(m) => format!("error {code}: {}", quote(m)),
                None => format!("error {code}"),
            }
        }
        Some("response") => format!(
            "a response with status {} and result {}",
            p["status"],
            shown(&p["result"].to_string())
        ),
        Some(t) => format!("{t} {}", shown(&p.to_string())),
        None => shown(&r.to_string()),
    }
}

/// An error answering a message the harness built valid: the refusal finding,
/// keyed by the error's code and message ([`crate::rules::refusal`]).
/// `ids` are the requirements that make the refused message due an answer (AGP-013
/// for hello, AGP-018 for a request).
pub fn refused(r: &Value, what: &str, ids: &[&str]) -> Finding {
    let p = &r["payload"];
    crate::rules::refusal(
        (&crate::rules::REFUSED, "agentprotocol", ids),
        p["code"].as_str().unwrap_or_default(),
        p["message"].as_str().unwrap_or_default(),
        what,
    )
}

pub(super) const SHORT: Duration = Duration::from_millis(800);

pub(super) fn echo(ctx: &Ctx) -> String {
    ctx.profile().agentprotocol.echo_action.clone()
}

/// Ends a case with what it found of its own subject: nothing, or the strongest
/// finding as its stop (its summary becomes the case's message), the others
/// recorded beside it.
pub(super) fn case_verdict(ctx: &mut Ctx, mut found: Vec<Finding>) -> Step<()> {
    found.sort_by_key(|f| std::cmp::Reverse(f.level.strength()));
    let mut it = found.into_iter();
    let Some(first) = it.next() else {
        return Ok(());
    };
    for f in it {
        ctx.deviation(f);
    }
    Err(Stop::Finding(first))
}

// ---------------------------------------------------------------------------
// Fuzzing

pub(super) fn new_driver(f: &FuzzCtx) -> Driver {
    endpoint_driver(&f.ctx)
}

pub(super) fn limits(f: &FuzzCtx, wait: Duration) -> Limits {
    Limits {
        timeout: wait,
        max_bytes: f.ctx.profile().timing.max_response_bytes,
    }
}

pub(super) fn fuzz_wait(f: &FuzzCtx) -> Duration {
    Duration::from_millis(f.ctx.profile().timing.case_timeout_ms)
}

/// The sender a reply to `v` is addressed to, when `v` names one.
pub(super) fn sender_of(v: &Value) -> Option<String> {
    v.get("from")
        .and_then(|f| f.get("agentId"))
        .and_then(Value::as_str)
        .map(String::from)
}
