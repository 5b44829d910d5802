//! agora-v1 expectations: how the harness builds messages and judges replies.
//!
//! Verdicts come from the project's schemas and the checks here, using only the wire
//! primitives of reference-impl (canonical form, keys), never the reference agent's
//! own validation.

use crate::case::{fail, skip, Level, Step};
use crate::drive::Received;
use crate::finding::{quote, schema_findings, Finding};
use crate::script::Ctx;
use reference_impl::agora_v1::envelope::{self, SigVariant, ERROR_CODES, PROTOCOL};
use reference_impl::wire::clock::{format_timestamp, parse_timestamp};
use reference_impl::wire::keys::{B64Flavor, KeyForm, Keypair};
use reference_impl::wire::{jcs, json, new_id};
use serde_json::{json, Value};
use time::{Duration, OffsetDateTime};

/// A reply that passed the checks every target message must pass.
#[derive(Debug, Clone)]
pub struct Env {
    pub ty: String,
    pub id: String,
    pub payload: Value,
    pub whole: Value,
    pub http_status: Option<u16>,
    /// How the signature verified; `None` when it did not (a finding says so).
    pub verified: Option<(SigVariant, KeyForm)>,
    pub sig_flavor: Option<B64Flavor>,
    /// When the harness had read and checked it.
    pub received_at: std::time::Instant,
}

impl Env {
    pub fn str(&self, key: &str) -> Option<&str> {
        self.payload.get(key).and_then(Value::as_str)
    }

    /// The ERROR code, if this is an ERROR with an integer code.
    pub fn error_code(&self) -> Option<i64> {
        if self.ty == "ERROR" {
            self.payload.get("code").and_then(Value::as_i64)
        } else {
            None
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
    sign_with(&mut env, &ctx.shared.key.clone(), SigVariant::Blank)?;
    send_as_is(ctx, &env).await
}

/// Sends an envelope exactly as built (signed or not).
pub async fn send_as_is(ctx: &mut Ctx, env: &Value) -> Step<Received> {
    if let Some(id) = env.get("id").and_then(Value::as_str) {
        ctx.sent_ids.insert(id.to_string());
    }
    ctx.send_bytes(wire(env)).await
}

fn reply_bytes(r: &Received) -> Option<(&[u8], Option<u16>)> {
    match r {
        Received::Http { status, body } => Some((body, Some(*status))),
        Received::Frame(b) => Some((b, None)),
        Received::Silence => None,
    }
}

/// The case that owns the shape of every target message: a reply that breaks it is
/// one finding of that case, whichever case met it.
pub const SHAPE_OWNER: &str = "agora-v1/echo-direct";

/// Checks what every target message must be (AV1-001…003, 006, 009, 012, 014…017,
/// 019, 020, 021, 046 and the profile's HTTP status rule). `Ok(None)` on silence.
///
/// A deviation that leaves the message readable (a schema breach, another protocol
/// string, a timestamp out of the window, a signature that does not verify, an HTTP
/// status off the profile's rule) is recorded as a finding and the message is read
/// on, so that the case still judges its own subject. Only a reply that is not a
/// JSON object, or has no string `type`, blocks the case.
pub fn check_reply(ctx: &mut Ctx, r: &Received) -> Step<Option<Env>> {
    let Some((bytes, http_status)) = reply_bytes(r) else {
        return Ok(None);
    };
    let said = |b: &[u8]| quote(&String::from_utf8_lossy(b));
    let tree = match json::parse(bytes) {
        Ok(t) => t,
        Err(e) => {
            let f = Finding::new(
                "agora-v1/reply:not-json",
                &["AV1-001"],
                format!("the reply is not JSON ({e}): {}", said(bytes)),
            );
            return Err(ctx.block(f.owned_by(SHAPE_OWNER)));
        }
    };
    let whole = tree.to_serde();
    if !whole.is_object() {
        let f = Finding::new(
            "agora-v1/reply:not-object",
            &["AV1-001"],
            format!("the reply is not a JSON object: {}", said(bytes)),
        );
        return Err(ctx.block(f.owned_by(SHAPE_OWNER)));
    }
    let shape = schema_findings(
        &ctx.shared.schemas,
        "agora-v1/envelope",
        &whole,
        &["AV1-002"],
    );
    // A member the schema already found at fault is not judged again below.
    let flagged = |member: &str| {
        shape
            .iter()
            .any(|f| f.key.ends_with(&format!(":/{member}")))
    };
    let protocol_flagged = flagged("protocol");
    for f in shape {
        ctx.finding(f.owned_by(SHAPE_OWNER));
    }
    let Some(ty) = whole["type"].as_str().map(String::from) else {
        let f = Finding::new(
            "agora-v1/reply:no-type",
            &["AV1-002"],
            format!("the reply has no string type: {}", said(bytes)),
        );
        return Err(ctx.block(f.owned_by(SHAPE_OWNER)));
    };
    // The schema pins protocol, types, member types; these are the rest.
    let protocol = whole["protocol"].as_str().unwrap_or_default();
    if protocol != PROTOCOL && !protocol_flagged {
        ctx.finding(
            Finding::new(
                "agora-v1/reply:protocol",
                &["AV1-003"],
                format!("reply protocol is {}, not \"agora/1.0\"", whole["protocol"]),
            )
            .owned_by(SHAPE_OWNER),
        );
    }
    let id = whole["id"].as_str().unwrap_or_default().to_string();
    if ctx.sent_ids.contains(&id) {
        ctx.finding(
            Finding::new(
                "agora-v1/reply:id-reused",
                &["AV1-004"],
                format!("the reply reuses the id {id:?} of a message the harness sent"),
            )
            .owned_by("agora-v1/ids-unique"),
        );
    }
    if !ctx.reply_ids.insert(id.clone()) {
        ctx.finding(
            Finding::new(
                "agora-v1/reply:id-repeated",
                &["AV1-004"],
                format!("the reply id {id:?} was already used by an earlier reply"),
            )
            .owned_by("agora-v1/ids-unique"),
        );
    }
    let ts_text = whole["timestamp"].as_str().unwrap_or_default();
    match parse_timestamp(ts_text) {
        Err(e) => ctx.finding(
            Finding::new(
                "agora-v1/reply:timestamp-format",
                &["AV1-006"],
                format!("reply timestamp {}: {e}", whole["timestamp"]),
            )
            .owned_by("agora-v1/reply-timestamp-fresh"),
        ),
        Ok(ts) => {
            let window = Duration::seconds(ctx.profile().timing.replay_window_s as i64);
            let skew = now() - ts;
            if skew.abs() > window {
                ctx.finding(Finding::new(
                    "agora-v1/reply:timestamp-skew",
                    &["AV1-006"],
                    format!(
                        "reply timestamp {ts_text} is {} s away from the harness clock ({}), outside the {} s window a peer accepts",
                        skew.whole_seconds(),
                        format_timestamp(now()),
                        window.whole_seconds()
                    ),
                ).owned_by("agora-v1/reply-timestamp-fresh"));
            }
        }
    }
    let v = envelope::verify_tree(tree);
    match v.verified {
        Some((sig_variant, key_form)) => ctx.checked(format!(
            "signature verifies ({sig_variant}, key {key_form}, {})",
            v.signature_flavor
                .map(|f| f.to_string())
                .unwrap_or_default()
        )),
        None => ctx.finding(
            Finding::new(
                "agora-v1/reply:signature",
                &["AV1-016", "AV1-017", "AV1-020"],
                format!(
                    "the reply's signature does not verify: {}",
                    v.problem.clone().unwrap_or_default()
                ),
            )
            .owned_by(SHAPE_OWNER),
        ),
    }
    let payload = whole["payload"].clone();
    if let Some(status) = http_status {
        let code = payload.get("code").and_then(Value::as_i64);
        let ok = status == 200 || (ty == "ERROR" && code == Some(i64::from(status)));
        if !ok {
            ctx.finding(
                Finding::new(
                    "agora-v1/reply:http-status",
                    &[],
                    format!(
                        "HTTP status {status} for a {ty} reply (code {}): the profile requires 200 or the ERROR code",
                        payload.get("code").cloned().unwrap_or(Value::Null)
                    ),
                )
                .at(Level::Profile)
                .owned_by(SHAPE_OWNER),
            );
        }
    }
    if ty == "ERROR" {
        if let Some(code) = payload.get("code").and_then(Value::as_i64) {
            if !ERROR_CODES.contains(&code) {
                ctx.finding(
                    Finding::new(
                        format!("agora-v1/reply:error-code:{code}"),
                        &["AV1-046"],
                        format!(
                            "ERROR code {code} is not in the table of agora-v1.md §5 ({})",
                            quote(payload["message"].as_str().unwrap_or_default())
                        ),
                    )
                    .at(Level::Should),
                );
            }
        }
    }
    Ok(Some(Env {
        ty,
        id,
        payload,
        whole,
        http_status,
        verified: v.verified,
        sig_flavor: v.signature_flavor,
        received_at: std::time::Instant::now(),
    }))
}

/// A reply must be there and pass [`check_reply`].
pub fn expect_reply(ctx: &mut Ctx, r: &Received) -> Step<Env> {
    match check_reply(ctx, r)? {
        Some(env) => Ok(env),
        None => fail("no reply within the deadline"),
    }
}

/// The reply must be of one of `types`.
pub fn expect_type(ctx: &mut Ctx, r: &Received, types: &[&str]) -> Step<Env> {
    let env = expect_reply(ctx, r)?;
    if !types.contains(&env.ty.as_str()) {
        let detail = if env.ty == "ERROR" {
            format!(
                " (code {}, {:?})",
                env.payload["code"],
                env.payload["message"].as_str().unwrap_or("")
            )
        } else {
            String::new()
        };
        return fail(format!(
            "expected {}, got {}{detail}",
            types.join(" or "),
            env.ty
        ));
    }
    ctx.checked(format!("reply is {}", env.ty));
    Ok(env)
}

/// The reply must be an ERROR with exactly `code`.
pub fn expect_error(ctx: &mut Ctx, r: &Received, code: i64) -> Step<Env> {
    let env = expect_type(ctx, r, &["ERROR"])?;
    match env.error_code() {
        Some(c) if c == code => {
            ctx.checked(format!("ERROR code {code}"));
            Ok(env)
        }
        _ => fail(format!(
            "expected ERROR code {code}, got code {}",
            env.payload["code"]
        )),
    }
}

/// How strictly a rejection's code is judged.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CodeRule {
    /// Another code fails.
    Strict,
    /// Another code warns.
    Lenient,
}

/// The target must not process the message: an ERROR (with one of `codes`) or
/// silence passes; an OFFER or RESULT (or any non-ERROR reply) fails.
pub fn expect_rejection(
    ctx: &mut Ctx,
    r: &Received,
    codes: &[i64],
    rule: CodeRule,
    what: &str,
) -> Step<()> {
    let Some(env) = check_reply(ctx, r)? else {
        ctx.note(format!(
            "{what}: no reply (a silent drop counts as a rejection)"
        ));
        return Ok(());
    };
    if env.ty != "ERROR" {
        return fail(format!(
            "{what}: the target processed it and answered {}",
            env.ty
        ));
    }
    let code = env.error_code();
    match code {
        Some(c) if codes.contains(&c) => {
            ctx.checked(format!("{what}: rejected with ERROR {c}"));
            Ok(())
        }
        _ => {
            let msg = format!(
                "{what}: rejected, but with code {} instead of {}",
                env.payload["code"],
                codes
                    .iter()
                    .map(|c| c.to_string())
                    .collect::<Vec<_>>()
                    .join(" or ")
            );
            match rule {
                CodeRule::Strict => fail(msg),
                CodeRule::Lenient => {
                    ctx.warn(msg);
                    Ok(())
                }
            }
        }
    }
}

/// Sends a REQUEST for the direct resource and completes it, following an OFFER
/// with an ACCEPT if the target negotiates (AV1-A12). Returns (request id, RESULT).
pub async fn complete_request(ctx: &mut Ctx, params: Value) -> Step<(String, Env)> {
    let resource = ctx.profile().agora_v1.direct_resource.clone();
    let req = message(ctx, "REQUEST", request_payload(&resource, params));
    let req_id = req["id"].as_str().unwrap_or_default().to_string();
    let r = send(ctx, req).await?;
    let first = expect_type(ctx, &r, &["RESULT", "OFFER"])?;
    let result = if first.ty == "OFFER" {
        ctx.note("the target negotiates the direct resource (OFFER first); accepting it");
        let r = accept_offer(ctx, &first, json!({})).await?;
        expect_type(ctx, &r, &["RESULT"])?
    } else {
        first
    };
    check_result(ctx, &result, &req_id)?;
    Ok((req_id, result))
}

/// RESULT rules: schema, link to the request, status, data (AV1-042…044).
pub fn check_result(ctx: &mut Ctx, env: &Env, req_id: &str) -> Step<()> {
    if let Err(e) = ctx.shared.schemas.check("agora-v1/result", &env.payload) {
        return fail(format!("RESULT payload: {e}"));
    }
    let linked = env.str("request_id").unwrap_or_default();
    if linked != req_id {
        return fail(format!(
            "RESULT.request_id is {linked:?}, not the REQUEST's id {req_id:?} (AV1-042)"
        ));
    }
    ctx.checked("RESULT links to the REQUEST and has status and data");
    Ok(())
}

/// OFFER rules: schema, link, cost/ttl/eta (AV1-037, AV1-038).
pub fn check_offer(ctx: &mut Ctx, env: &Env, req_id: &str) -> Step<()> {
    if let Err(e) = ctx.shared.schemas.check("agora-v1/offer", &env.payload) {
        return fail(format!("OFFER payload (AV1-038): {e}"));
    }
    let linked = env.str("request_id").unwrap_or_default();
    if linked != req_id {
        return fail(format!(
            "OFFER.request_id is {linked:?}, not the REQUEST's id {req_id:?} (AV1-037)"
        ));
    }
    ctx.checked("OFFER links to the REQUEST; cost, ttl and eta are well formed");
    Ok(())
}

/// Sends an ACCEPT of `offer` with `payload` (offer_id added). When the target answers
/// ERROR 408 but the harness itself needed longer than the offer's ttl to send the
/// ACCEPT, the case cannot judge the target and is skipped with that reason.
pub async fn accept_offer(ctx: &mut Ctx, offer: &Env, mut payload: Value) -> Step<Received> {
    payload["offer_id"] = json!(offer.id);
    let accept = message(ctx, "ACCEPT", payload);
    let waited = offer.received_at.elapsed();
    let r = send(ctx, accept).await?;
    let ttl = offer.payload["ttl"].as_u64().unwrap_or(u64::MAX);
    if waited.as_millis() >= u128::from(ttl) {
        if let Ok(Some(env)) = check_reply(ctx, &r) {
            if env.error_code() == Some(408) {
                return skip(format!(
                    "the harness needed {} ms to ACCEPT an offer whose ttl is {ttl} ms; the expiry is not the target's fault",
                    waited.as_millis()
                ));
            }
        }
    }
    Ok(r)
}

/// Obtains an OFFER for the negotiated resource. Returns (request id, OFFER).
pub async fn obtain_offer(ctx: &mut Ctx) -> Step<(String, Env)> {
    let resource = ctx.profile().agora_v1.negotiated_resource.clone();
    let req = message(
        ctx,
        "REQUEST",
        request_payload(&resource, json!({"text": "quote me"})),
    );
    let req_id = req["id"].as_str().unwrap_or_default().to_string();
    let r = send(ctx, req).await?;
    let offer = expect_type(ctx, &r, &["OFFER"])?;
    check_offer(ctx, &offer, &req_id)?;
    Ok((req_id, offer))
}

/// A REQUEST for the direct resource, signed, with `mutate` applied to the payload
/// before signing.
pub fn request_with(ctx: &Ctx, mutate: impl FnOnce(&mut Value)) -> Value {
    let resource = ctx.profile().agora_v1.direct_resource.clone();
    let mut payload = request_payload(&resource, json!({"text": "hi"}));
    mutate(&mut payload);
    message(ctx, "REQUEST", payload)
}
