//! Security and canonicalization (agora-v1.md §2): RFC 8785 canonical form, Ed25519
//! signatures in base64url, verification against sender.id; their cases, and the
//! fuzzer's unsigned and respelled messages.

use super::errors::{
    control, exchange, expect_processed, expect_rejection, expect_reply, CodeRule, ANY_CODE,
};
use super::lifecycle::{check_result, complete_request};
use super::messages::{apply, signed, FieldMut, Template, ToSend};
use super::wire::{message, request_with, send_as_is, sign_with, wire, ANY};
use crate::case::{fail, Case};
use crate::finding::quote;
use crate::fuzzing::mutate::{respell, WireForm};
use crate::fuzzing::spec::FuzzCtx;
use crate::fuzzing::verdict::{finding, under, Codes, Expected, FuzzStep, Oracle};
use crate::rules::rules;
use reference_impl::agora_v1::envelope::{self, SigVariant};
use reference_impl::wire::keys::{self};
use serde_json::{json, Value};

rules! {
    REPLY_SENDER_ID_FORM {
        key: "agora-v1/reply:sender-id-form",
        requirements: &["AV1-013"],
        level: None,
        owner: "",
        summary: "the target's sender.id is a did:key, the preferred form",
        fails: "a sender.id in another form, such as a raw public key (allowed, AV1-A4): a warning",
        passes: "a sender.id starting did:key:",
    }
}

/// The cases of this area, in the order they run.
pub const CASES: &[Case] = &[
    case!("sender-did-key", "the target's sender.id is a did:key", ["AV1-013"], Should, ANY, false, |ctx| {
        // Judged from the id itself: a raw key is allowed (AV1-A4) and used by the
        // signature check; the form is this case's one finding.
        let (_, result) = complete_request(ctx, json!({})).await?;
        let id = result.whole["sender"]["id"].as_str().unwrap_or_default().to_string();
        if id.starts_with("did:key:") {
            ctx.checked(format!("sender.id {id:?} is a did:key"));
            return Ok(());
        }
        let form = match result.verified {
            Some((_, form)) => form.to_string(),
            None => keys::candidate_keys(&id)
                .ok()
                .and_then(|c| c.first().map(|(_, f)| f.to_string()))
                .unwrap_or_else(|| "no key form the harness knows".into()),
        };
        ctx.deviation(REPLY_SENDER_ID_FORM.found(format!("sender.id {} is a {form}, not a did:key (preferred by agora-v1.md §1)", quote(&id))));
        Ok(())
    }),
    case!("reply-signature-encoding", "reply signatures are 64 bytes in Base64Url", ["AV1-021"], Fact, ANY, false, |ctx| {
        // check_reply judges the encoding (hex fails, standard base64 warns per
        // AV1-A1) and this case owns those findings; without a signature that
        // verifies there is no encoding to judge.
        let (_, result) = complete_request(ctx, json!({})).await?;
        match (result.sig_flavor, &result.sig_problem) {
            (Some(f), None) => ctx.checked(format!("signature in {f}")),
            (None, None) => ctx.checked("the signature verifies once read in another encoding"),
            (_, Some(problem)) => return Err(ctx.block(problem.clone())),
        }
        Ok(())
    }),
    case!("reject-unsigned", "REQUESTs with an empty or missing signature are rejected with 401", ["AV1-016", "AV1-024"], Fact, ANY, false, |ctx| {
        let req = request_with(ctx, |_| {});
        let r = send_as_is(ctx, &req).await?; // signature ""
        expect_rejection(ctx, &r, &[401], CodeRule::Strict, "signature \"\"").await?;
        let mut req = request_with(ctx, |_| {});
        if let Some(s) = req["sender"].as_object_mut() { s.remove("signature"); }
        let r = send_as_is(ctx, &req).await?;
        expect_rejection(ctx, &r, &[401], CodeRule::Strict, "signature missing").await
    }),
    case!("accept-noncanonical-spelling", "a REQUEST sent with another key order, white space, 1.0, 1e2 and \\u00e9 but signed over its RFC 8785 form is accepted", ["AV1-017", "AV1-018"], Must, ANY, false, |ctx| {
        let resource = ctx.profile().agora_v1.direct_resource.clone();
        let mut req = message(ctx, "REQUEST", json!({"resource": resource, "params": {"ratio": 1.0, "count": 100, "word": "café"}}));
        sign_with(&mut req, &ctx.shared.key, SigVariant::Blank)?;
        let id = req["id"].as_str().unwrap_or_default().to_string();
        ctx.sent_ids.insert(id.clone());
        let text = format!(
            "{{\n  \"type\" : \"REQUEST\",\n  \"timestamp\" : {ts},\n  \"payload\" : {{\n    \"params\" : {{ \"word\" : \"caf\\u00e9\", \"ratio\" : 1.0, \"count\" : 1e2 }},\n    \"resource\" : {res}\n  }},\n  \"sender\" : {{ \"signature\" : {sig}, \"id\" : {sid} }},\n  \"id\" : {id},\n  \"protocol\" : \"agora/1.0\"\n}}\n",
            ts = req["timestamp"], res = req["payload"]["resource"], sig = req["sender"]["signature"],
            sid = req["sender"]["id"], id = req["id"],
        );
        let r = ctx.send_bytes(text.into_bytes()).await?;
        let env = expect_processed(ctx, &r, &["RESULT", "OFFER"]).await?;
        if env.ty == "RESULT" {
            check_result(ctx, &env, &id, false);
            let data = env.data();
            if data["word"] != json!("café") || data["count"].as_f64() != Some(100.0) || data["ratio"].as_f64() != Some(1.0) {
                return fail(format!("the echo of the params differs in value: {data}"));
            }
        }
        Ok(())
    }),
    case!("reject-ecdsa-sender", "a REQUEST from a P-256 did:key draws ERROR 401", ["AV1-019", "AV1-024"], Must, ANY, false, |ctx| {
        let mut req = request_with(ctx, |_| {});
        req["sender"]["id"] = json!("did:key:zDnaerDaTF5BXEavCrfRZEk316dpbLsfPDZ3WJ5hRTPFU2169");
        req["sender"]["signature"] = json!(keys::b64url(&[7u8; 64]));
        let r = send_as_is(ctx, &req).await?;
        expect_rejection(ctx, &r, &[401], CodeRule::Strict, "ECDSA P-256 sender").await
    }),
    case!("accept-removed-signature-variant", "a REQUEST signed with sender.signature removed (not blanked) is accepted", ["AV1-020"], Fact, ANY, false, |ctx| {
        let mut req = request_with(ctx, |_| {});
        sign_with(&mut req, &ctx.shared.key, SigVariant::Removed)?;
        let r = send_as_is(ctx, &req).await?;
        let env = expect_reply(ctx, &r)?;
        if env.ty == "ERROR" {
            control(ctx).await?;
            ctx.warn(format!("the removed-signature variant was rejected (code {}); peers that sign that way cannot interoperate (AV1-A2)", env.payload["code"]));
        }
        Ok(())
    }),
    case!("accept-padded-signature", "signatures in padded base64url and standard base64 (informational)", ["AV1-021"], Fact, ANY, false, |ctx| {
        for (label, recode) in [("padded base64url", 0), ("standard base64", 1)] {
            let mut req = request_with(ctx, |_| {});
            sign_with(&mut req, &ctx.shared.key, SigVariant::Blank)?;
            let sig = req["sender"]["signature"].as_str().unwrap_or_default().to_string();
            let bytes = keys::b64_decode_any(&sig).map(|b| b.0).unwrap_or_default();
            req["sender"]["signature"] = json!(if recode == 0 { format!("{sig}{}", "=".repeat((4 - sig.len() % 4) % 4)) } else { keys::b64std(&bytes) });
            let r = send_as_is(ctx, &req).await?;
            let env = expect_reply(ctx, &r)?;
            ctx.note(format!("signature in {label}: answered {}", env.ty));
        }
        Ok(())
    }),
    case!("reject-tampered-payload", "a REQUEST whose payload changed after signing draws ERROR 401", ["AV1-022", "AV1-024"], Fact, ANY, false, |ctx| {
        let mut req = request_with(ctx, |_| {});
        sign_with(&mut req, &ctx.shared.key, SigVariant::Blank)?;
        req["payload"]["params"]["text"] = json!("hj");
        let r = send_as_is(ctx, &req).await?;
        expect_rejection(ctx, &r, &[401], CodeRule::Strict, "tampered payload").await
    }),
    case!("reject-wrong-key", "a REQUEST signed by one key but naming another in sender.id draws ERROR 401", ["AV1-023", "AV1-024"], Fact, ANY, false, |ctx| {
        let mut req = request_with(ctx, |_| {});
        sign_with(&mut req, &ctx.shared.other_key, SigVariant::Blank)?;
        let r = send_as_is(ctx, &req).await?;
        expect_rejection(ctx, &r, &[401], CodeRule::Strict, "signature by another key").await
    }),
];

// ---------------------------------------------------------------------------
// Fuzzing

/// The bytes a verifier computes for `v` (signature blanked), if it has any.
fn signing_bytes(v: &Value) -> Option<Vec<u8>> {
    let tree = reference_impl::wire::json::Value::from_serde(v);
    envelope::signing_bytes(tree, SigVariant::Blank).ok()
}

/// A field mutated after signing: refused, with 401 when only the signature is
/// wrong (AV1-046).
pub(super) fn unsigned(f: &mut FuzzCtx, t: Template, mu: &FieldMut) -> FuzzStep<ToSend> {
    let mut m = signed(f, t)?;
    let before = signing_bytes(&m);
    apply(&mut m, mu);
    let want = if signing_bytes(&m) == before {
        Expected::Open("the change left the signed form as it was".into())
    } else if f.ctx.shared.schemas.check("agora-v1/envelope", &m).is_ok()
        && matches!(mu, FieldMut::ShiftTimestamp(_) | FieldMut::SenderId(0))
    {
        // Only the signature is wrong: ERROR 401 (AV1-046).
        Expected::Reject(Codes::OneOf(vec![401]))
    } else {
        Expected::Reject(ANY_CODE)
    };
    Ok((wire(&m), want, (Oracle::Verdict, Oracle::Signature)))
}

/// Another spelling of the same message draws the verdict of its canonical twin.
pub(super) async fn wire_form(f: &mut FuzzCtx, t: Template, w: WireForm) -> FuzzStep<()> {
    let twin = signed(f, t)?;
    let m = signed(f, t)?;
    let (first, first_env) = exchange(f, wire(&twin)).await?;
    let (v, env) = exchange(f, respell(&m, w)).await?;
    if v != first {
        let other = finding(
            Oracle::WireForm,
            format!(
                "the canonical form drew {}, this spelling {}",
                first.said(first_env.as_ref()),
                v.said(env.as_ref())
            ),
        );
        return under(Some("agora-v1/accept-noncanonical-spelling"), other);
    }
    Ok(())
}
