//! The wire of agora-v1 (agora-v1.md §1): the envelope as the harness builds, signs and
//! sends it, and the reply as read off the wire (`Env`: its type, payload and ERROR
//! code wherever a target puts them).

use crate::case::{Bindings, Step};
use crate::drive::Received;
use crate::finding::{quote, Finding};
use crate::profile::OfferIdSource;
use crate::script::Ctx;
use reference_impl::agora_v1::envelope::{self, SigVariant};
use reference_impl::wire::keys::{B64Flavor, KeyForm, Keypair};
use reference_impl::wire::{jcs, new_id};
use serde_json::{json, Value};
use time::OffsetDateTime;

/// A reply read as an envelope: every rule it breaks is a finding already (see
/// [`check_reply`]), and what follows is read leniently.
#[derive(Debug, Clone)]
pub struct Env {
    /// The type, in upper case when the target spelled a known type in another case
    /// (a finding says so).
    pub ty: String,
    pub id: String,
    pub payload: Value,
    pub whole: Value,
    pub http_status: Option<u16>,
    /// How the signature verified; `None` when it did not (a finding says so).
    pub verified: Option<(SigVariant, KeyForm)>,
    /// The base64 flavour of the signature, when it was base64 of 64 bytes.
    pub sig_flavor: Option<B64Flavor>,
    /// Why the signature could not be judged, when it did not verify: the finding
    /// recorded for it, which blocks a case whose subject needs the signature.
    pub sig_problem: Option<Finding>,
    /// For an OFFER: the id the target knows it by, when that is not the id the
    /// profile says to quote (learned from a refused ACCEPT, see [`accept_offer`]).
    pub offer_ref: Option<String>,
    /// When the harness had read and checked it.
    pub received_at: std::time::Instant,
}

/// Members where real implementations put an ERROR's code when not in `code`.
const CODE_PLACES: &[&[&str]] = &[
    &["code"],
    &["error", "code"],
    &["error_code"],
    &["errorCode"],
    &["status_code"],
    &["status"],
];

/// Members where real implementations put an ERROR's message when not in `message`.
const MESSAGE_PLACES: &[&[&str]] = &[
    &["message"],
    &["error", "message"],
    &["error"],
    &["detail"],
    &["msg"],
    &["description"],
];

fn at<'a>(v: &'a Value, path: &[&str]) -> Option<&'a Value> {
    path.iter().try_fold(v, |v, k| v.get(*k))
}

fn pointer(path: &[&str]) -> String {
    path.iter().map(|k| format!("/{k}")).collect()
}

/// An ERROR payload's code, read leniently: an integer (or a string of digits) in
/// `code` or one of the other members real implementations use, with where it was.
pub fn error_code_of(payload: &Value) -> Option<(i64, String)> {
    CODE_PLACES.iter().find_map(|path| {
        let code = match at(payload, path)? {
            Value::Number(n) => n.as_i64(),
            Value::String(s) => s.trim().parse::<i64>().ok(),
            _ => None,
        }?;
        Some((code, pointer(path)))
    })
}

/// An ERROR payload's message, read leniently, with where it was.
pub fn error_message_of(payload: &Value) -> Option<(&str, String)> {
    MESSAGE_PLACES
        .iter()
        .find_map(|path| Some((at(payload, path)?.as_str()?, pointer(path))))
}

impl Env {
    pub fn str(&self, key: &str) -> Option<&str> {
        self.payload.get(key).and_then(Value::as_str)
    }

    /// The ERROR code, if this is an ERROR (read leniently: a finding says where the
    /// code was when not an integer in `code`; with no code at all, an HTTP status
    /// of 400 or more stands for it).
    pub fn error_code(&self) -> Option<i64> {
        if self.ty != "ERROR" {
            return None;
        }
        error_code_of(&self.payload)
            .map(|(c, _)| c)
            .or_else(|| self.http_status.filter(|s| *s >= 400).map(i64::from))
    }

    /// The ERROR message, read leniently.
    pub fn error_message(&self) -> Option<&str> {
        error_message_of(&self.payload).map(|(m, _)| m)
    }

    /// A RESULT's output: `data`, else the member a target put it in instead
    /// (`result`, `output`; the schema finding says so).
    pub fn data(&self) -> &Value {
        ["data", "result", "output"]
            .iter()
            .find_map(|k| self.payload.get(*k))
            .unwrap_or(&Value::Null)
    }

    /// The reply in the target's own words, for a report line: the type, and for
    /// an ERROR its code and message.
    pub fn said(&self) -> String {
        if self.ty != "ERROR" {
            return self.ty.clone();
        }
        let code = self
            .error_code()
            .map(|c| c.to_string())
            .unwrap_or_else(|| "without a code".into());
        match self.error_message() {
            Some(m) => format!("ERROR {code} {}", quote(m)),
            None => format!("ERROR {code}"),
        }
    }
}

pub fn now() -> OffsetDateTime {
    OffsetDateTime::now_utc()
}

/// A new unsigned envelope from the harness, stamped now.
pub fn message(ctx: &Ctx, ty: &str, payload: Value) -> Value {
    message_at(ctx, ty, payload, now())
}

pub fn message_at(ctx: &Ctx, ty: &str, payload: Value, at: OffsetDateTime) -> Value {
    envelope::build(ty, &new_id(), at, &ctx.key().did(), payload)
}

/// A new envelope from another sender than the case's: the run's second key, as
/// its own `sender.id`, signed by it.
pub fn from_other_sender(ctx: &Ctx, ty: &str, payload: Value) -> Step<Value> {
    let other = &ctx.shared.other_key;
    let mut env = envelope::build(ty, &new_id(), now(), &other.did(), payload);
    sign_with(&mut env, other, SigVariant::Blank)?;
    Ok(env)
}

/// Signs `env` in place with `key` (the `sender.id` is left as it is).
pub fn sign_with(env: &mut Value, key: &Keypair, variant: SigVariant) -> Step<()> {
    envelope::sign(env, key, variant).map(|_| ()).map_err(|e| {
        crate::case::Stop::Skip(format!("the harness could not sign its own message: {e}"))
    })
}

/// The bytes sent for an envelope: its canonical form (plain text when the case
/// built something that has none on purpose).
pub fn wire(env: &Value) -> Vec<u8> {
    jcs::canonicalize_serde(env)
        .or_else(|_| serde_json::to_vec(env))
        .unwrap_or_default()
}

/// A REQUEST payload.
pub fn request_payload(resource: &str, params: Value) -> Value {
    json!({"resource": resource, "params": params})
}

/// Signs with the run key and sends; records the id as the harness's.
pub async fn send(ctx: &mut Ctx, mut env: Value) -> Step<Received> {
    sign_with(&mut env, &ctx.shared.key, SigVariant::Blank)?;
    send_as_is(ctx, &env).await
}

/// Sends an envelope exactly as built (signed or not).
pub async fn send_as_is(ctx: &mut Ctx, env: &Value) -> Step<Received> {
    if let Some(id) = env.get("id").and_then(Value::as_str) {
        ctx.sent_ids.insert(id.to_string());
    }
    ctx.send_bytes(wire(env)).await
}

pub(super) fn reply_bytes(r: &Received) -> Option<(&[u8], Option<u16>)> {
    match r {
        Received::Http { status, body, .. } => Some((body, Some(*status))),
        Received::Frame(b) => Some((b, None)),
        Received::Silence => None,
    }
}

/// What a reply turned out to be.
pub(super) enum Read {
    Env(Box<Env>),
    /// Not an envelope at all: the finding that says so, the HTTP status, and the
    /// bare object when it is one (`{"type": "ERROR", "code": 401, …}`).
    Bare(Finding, Option<u16>, Option<Value>),
}

/// The ERROR code of a reply, read without recording anything (the caller judges
/// the reply itself afterwards).
pub(super) fn peek_error_code(r: &Received) -> Option<i64> {
    let (bytes, _) = reply_bytes(r)?;
    let v: Value = serde_json::from_slice(bytes).ok()?;
    if !v["type"].as_str()?.eq_ignore_ascii_case("ERROR") {
        return None;
    }
    error_code_of(&v["payload"]).map(|(c, _)| c)
}

/// The id an ACCEPT quotes for `offer`: the one learned from a refused ACCEPT, else
/// the OFFER's envelope id (AV1-A11) or, with `[agora-v1] offer_id = "payload"`, the
/// `offer_id` in its payload.
pub fn offer_ref(ctx: &Ctx, offer: &Env) -> String {
    if let Some(r) = &offer.offer_ref {
        return r.clone();
    }
    match ctx.profile().agora_v1.offer_id {
        OfferIdSource::Payload => offer.str("offer_id").unwrap_or(&offer.id).to_string(),
        OfferIdSource::Envelope => offer.id.clone(),
    }
}

/// A REQUEST for the direct resource, signed, with `mutate` applied to the payload
/// before signing.
pub fn request_with(ctx: &Ctx, mutate: impl FnOnce(&mut Value)) -> Value {
    let resource = ctx.profile().agora_v1.direct_resource.clone();
    let mut payload = request_payload(&resource, json!({"text": "hi"}));
    mutate(&mut payload);
    message(ctx, "REQUEST", payload)
}

pub(super) const ANY: Bindings = Bindings::Any;

pub(super) fn is_uuid_v4(s: &str) -> bool {
    let b = s.as_bytes();
    b.len() == 36
        && b.iter().enumerate().all(|(i, c)| match i {
            8 | 13 | 18 | 23 => *c == b'-',
            14 => *c == b'4',
            19 => matches!(c, b'8' | b'9' | b'a' | b'b' | b'A' | b'B'),
            _ => c.is_ascii_hexdigit(),
        })
}
