//! Signature verification (agentprotocol.md, Signature Verification): the cases of
//! tampered, wrongly keyed and unsigned messages and of the canonical form, checked
//! before and after hello; and the fuzzer's signature edits with the rule each one's
//! deviation is filed under.

use super::errors::{Expect, Subject, IM, IS};
use super::handshake::Me;
use super::messages::{other_id, remove, set, FuzzCase};
use super::wire::{case_verdict, describe, echo, Answer};
use crate::case::{Bindings, Case, Level, Step};
use crate::finding::Finding;
use crate::fuzzing::mutate::Val;
use crate::rules::rules;
use crate::script::Ctx;
use arbitrary::Arbitrary;
use reference_impl::agentprotocol::message::{self, SigProblem};
use reference_impl::wire::json::Value as Tree;
use reference_impl::wire::keys::{self, Keypair};
use serde_json::{json, Value};
use std::time::Duration;

rules! {
    REJECT_TAMPERED_CARRIED_OUT {
        // The ids depend on what was changed: AGP-024 for the payload, AGP-033 for
        // to.broadcast; each with AGP-035.
        key: "agentprotocol/reject-tampered:carried-out",
        requirements: &["AGP-024", "AGP-033", "AGP-035"],
        level: None,
        owner: "",
        summary: "a message changed after signing is not carried out",
        fails: "a request whose payload or to.broadcast was changed after signing answered with a response",
        passes: "error INVALID_SIGNATURE",
    }
    REJECT_TAMPERED_CODE {
        // Ids as for reject-tampered:carried-out.
        key: "agentprotocol/reject-tampered:code",
        requirements: &["AGP-024", "AGP-033", "AGP-035"],
        level: None,
        owner: "",
        summary: "a message changed after signing draws error INVALID_SIGNATURE",
        fails: "a request changed after signing refused with another code, or answered with no body or silence",
        passes: "error INVALID_SIGNATURE",
    }
    VERIFY_BEFORE_HELLO {
        key: "agentprotocol/verify:before-hello",
        requirements: &["AGP-024", "AGP-034", "AGP-035"],
        level: None,
        owner: "agentprotocol/reject-tampered",
        summary: "signatures are verified from a sender that never said hello, as after hello",
        fails: "a tampered or wrongly signed request from a sender that never said hello carried out, while after hello the same drew INVALID_SIGNATURE",
        passes: "INVALID_SIGNATURE (or another refusal) before hello too; a target that wants hello first is not judged",
    }
    REJECT_WRONG_KEY_CARRIED_OUT {
        key: "agentprotocol/reject-wrong-key:carried-out",
        requirements: &["AGP-034", "AGP-035"],
        level: None,
        owner: "",
        summary: "a message signed by another key than from.agentId's is not carried out",
        fails: "a request signed by another key answered with a response",
        passes: "error INVALID_SIGNATURE",
    }
    REJECT_WRONG_KEY_CODE {
        key: "agentprotocol/reject-wrong-key:code",
        requirements: &["AGP-034", "AGP-035"],
        level: None,
        owner: "",
        summary: "a message signed by another key than from.agentId's draws error INVALID_SIGNATURE",
        fails: "a request signed by another key refused with another code, or answered with no body or silence",
        passes: "error INVALID_SIGNATURE",
    }
    UNSIGNED_REQUEST_CARRIED_OUT {
        key: "agentprotocol/unsigned-request:carried-out",
        requirements: &["AGP-030", "AGP-035"],
        level: None,
        owner: "",
        summary: "an unsigned request is refused, above all by a target that advertises signed-messages",
        fails: "an unsigned request answered with a response (a warning, AGP-A3)",
        passes: "an error, no message, or a silent drop while the target stays alive",
    }
    NON_ASCII_CANONICAL_FORM_REJECTED {
        key: "agentprotocol/non-ascii-canonical-form:rejected",
        requirements: &["AGP-031", "AGP-A1"],
        level: Some(Level::Info),
        owner: "",
        summary: "a request signed over RFC 8785 with non-ASCII text and exponent numbers is accepted (informational, AGP-A1)",
        fails: "such a request drew INVALID_SIGNATURE: the target's canonical form differs from RFC 8785",
        passes: "anything but INVALID_SIGNATURE",
    }
}

/// A request for `action` from `me`, signed by another key than its from.agentId's.
fn wrong_key(me: &Me, action: &str) -> Value {
    let mut m = me.message(
        "request",
        json!({"action": action, "correlationId": "wk", "params": {}, "timeout": 30000}),
    );
    let other = Keypair::generate();
    let _ = reference_impl::agentprotocol::message::sign(&mut m, &other);
    m
}

/// An identity of the case's own that never says hello: it addresses the target by
/// the id `me` learned from its hello. The verification duty does not depend on the
/// handshake (agentprotocol.md, Signature Verification).
fn stranger(ctx: &Ctx, me: &Me) -> Me {
    let mut s = Me::new(ctx);
    s.target = me.target.clone();
    s
}

/// From a sender that never said hello, `twin` (valid) must be carried out, then
/// `bad` refused. The finding when `bad` is carried out there: after the same fault
/// was refused after hello (`after_hello` judged), the target verifies only after
/// hello; when the sender that said hello could not be judged (its control
/// refused), the carried-out message is the case's own rule `carried_out`. A
/// target that wants hello before anything else makes the claim moot.
async fn before_hello(
    ctx: &mut Ctx,
    s: &mut Me,
    (twin, bad): (&Value, &Value),
    what: &str,
    (after_hello, carried_out): (bool, &'static crate::rules::Rule),
) -> Step<Option<Finding>> {
    let r = s.send(ctx, twin).await?;
    if r["type"] != "response" {
        ctx.moot(format!("from a sender that never said hello, a valid request drew {}: the target wants hello first", describe(&r)));
        return Ok(None);
    }
    ctx.control("a valid request from a sender that never said hello");
    match s.refusal(ctx, bad, "INVALID_SIGNATURE", &format!("{what}, from a sender that never said hello")).await? {
        Err(got) if got.carried_out && after_hello => Ok(Some(VERIFY_BEFORE_HELLO.found(format!("{what} from a sender that never said hello was carried out ({got}), while after hello the same drew INVALID_SIGNATURE: the target verifies signatures only after hello (AGP-024, AGP-034)")))),
        Err(got) if got.carried_out => Ok(Some(carried_out.found(
            format!("{what}, from a sender that never said hello, was carried out ({got}) beside a valid request of the same sender, not refused with INVALID_SIGNATURE ({})", carried_out.requirements[0])))),
        Err(got) => {
            ctx.note(format!("{what} from a sender that never said hello drew {got}: refused, with another code than INVALID_SIGNATURE"));
            Ok(None)
        }
        Ok(_) => ctx.refusal_counts(&format!("{what}, from a sender that never said hello")).map(|()| None),
    }
}

/// The cases of this area, in the order they run.
pub const CASES: &[Case] = &[
    case!("reject-tampered", "a message changed after signing draws INVALID_SIGNATURE and is not carried out", ["AGP-024", "AGP-033", "AGP-035"], Fact, |ctx| {
        let mut me = Me::new(ctx);
        me.keep_sender();
        me.hello(ctx).await?;
        ctx.claim("a message changed after signing, from a sender that said hello, draws INVALID_SIGNATURE");
        let twin = me.request(&echo(ctx), json!({"text": "signed"}), json!({}));
        let taken = me.twin(ctx, &twin, "the same echo request, unchanged after signing").await;
        // Whether the sender that said hello was judged, and kept to the rule.
        let mut after: Option<bool> = None;
        if ctx.needs(taken)? {
            let mut payload_changed = me.request(&echo(ctx), json!({"text": "signed"}), json!({}));
            payload_changed["payload"]["params"]["text"] = json!("changed");
            let mut to_changed = me.request(&echo(ctx), json!({"text": "signed"}), json!({}));
            to_changed["to"]["broadcast"] = json!(true);
            let mut kept = true;
            for (what, m, req) in [("a payload changed after signing", payload_changed, "AGP-024"), ("to.broadcast changed after signing", to_changed, "AGP-033")] {
                if let Err(got) = me.refusal(ctx, &m, "INVALID_SIGNATURE", what).await? {
                    let rule = if got.carried_out { &REJECT_TAMPERED_CARRIED_OUT } else { &REJECT_TAMPERED_CODE };
                    ctx.deviation(rule.found(format!("a message with {what} drew {got}, not error INVALID_SIGNATURE ({req})")));
                    kept = false;
                }
            }
            if kept {
                ctx.refusal_counts("each message changed after signing")?;
            }
            after = Some(kept);
        }
        ctx.claim("the same, from a sender that never said hello");
        if after == Some(false) {
            ctx.moot("a sender that said hello already had a message changed after signing taken: the same cause");
        } else {
            let mut s = stranger(ctx, &me);
            let twin = s.request(&echo(ctx), json!({"text": "signed"}), json!({}));
            let mut bad = s.request(&echo(ctx), json!({"text": "signed"}), json!({}));
            bad["payload"]["params"]["text"] = json!("changed");
            let judged = (after.is_some(), &REJECT_TAMPERED_CARRIED_OUT);
            if let Some(f) = before_hello(ctx, &mut s, (&twin, &bad), "a payload changed after signing", judged).await? {
                ctx.deviation(f);
            }
        }
        Ok(())
    }),
    case!("reject-wrong-key", "a message signed by one key but naming another in from.agentId draws INVALID_SIGNATURE", ["AGP-034", "AGP-035"], Fact, |ctx| {
        let mut me = Me::new(ctx);
        me.keep_sender();
        me.hello(ctx).await?;
        ctx.claim("a message signed by another key than its from.agentId's, from a sender that said hello, draws INVALID_SIGNATURE");
        let mut twin = me.message("request", json!({"action": echo(ctx), "correlationId": "wk", "params": {}, "timeout": 30000}));
        me.sign(&mut twin);
        let taken = me.twin(ctx, &twin, "the same request signed by from.agentId's own key").await;
        let mut after: Option<bool> = None;
        if ctx.needs(taken)? {
            let m = wrong_key(&me, &echo(ctx));
            if let Err(got) = me.refusal(ctx, &m, "INVALID_SIGNATURE", "signature by another key").await? {
                let rule = if got.carried_out { &REJECT_WRONG_KEY_CARRIED_OUT } else { &REJECT_WRONG_KEY_CODE };
                ctx.deviation(rule.found(format!("a message signed by another key than from.agentId's drew {got}, not error INVALID_SIGNATURE (AGP-034)")));
                after = Some(false);
            } else {
                ctx.refusal_counts("a message signed by another key")?;
                after = Some(true);
            }
        }
        ctx.claim("the same, from a sender that never said hello");
        if after == Some(false) {
            ctx.moot("a sender that said hello already had a message signed by another key taken: the same cause");
            return Ok(());
        }
        let mut s = stranger(ctx, &me);
        let mut twin = s.message("request", json!({"action": echo(ctx), "correlationId": "wk", "params": {}, "timeout": 30000}));
        s.sign(&mut twin);
        let bad = wrong_key(&s, &echo(ctx));
        let judged = (after.is_some(), &REJECT_WRONG_KEY_CARRIED_OUT);
        match before_hello(ctx, &mut s, (&twin, &bad), "a message signed by another key", judged).await? {
            // Owned by reject-tampered: one finding for a target that verifies only after hello.
            Some(f) if after.is_some() => ctx.finding(f),
            Some(f) => ctx.deviation(f),
            None => {}
        }
        Ok(())
    }),
    case!("unsigned-request", "an unsigned request to a target that advertises signed-messages is refused", ["AGP-030", "AGP-035"], Should, |ctx| {
        let mut me = Me::new(ctx);
        let mut found: Vec<Finding> = Vec::new();
        me.hello(ctx).await?;
        let payload = json!({"action": echo(ctx), "correlationId": "us", "params": {}, "timeout": 30000});
        let mut twin = me.message("request", payload.clone());
        me.sign(&mut twin);
        me.twin(ctx, &twin, "the same request, signed").await?;
        // Built after the twin: from the sender the twin left the case with.
        let m = me.message("request", payload);
        let advertises = me.target_features.iter().any(|f| f == "signed-messages");
        match me.send_answer(ctx, &m, Duration::from_millis(ctx.profile().timing.case_timeout_ms)).await? {
            Answer::Reply(r) if r["type"] == "response" => {
                let why = if advertises { "although the target advertises signed-messages (AGP-A3)" } else { "(a warning, AGP-A3)" };
                found.push(UNSIGNED_REQUEST_CARRIED_OUT.found(format!("an unsigned request was carried out {why}: {}", describe(&r))));
            }
            Answer::Reply(_) | Answer::Empty(_) => ctx.refusal_counts("an unsigned request")?,
            Answer::Silence => {
                // A silent refusal, if the target is alive.
                if me.probe(ctx).await?.is_none() {
                    return Err(ctx.block(crate::rules::TRANSPORT.found_in("agentprotocol", "no-answer", "the target did not answer an unsigned request, nor a signed one after it")));
                }
                ctx.refusal_counts("an unsigned request (dropped silently)")?;
            }
        }
        case_verdict(ctx, found)
    }),
    case!("non-ascii-canonical-form", "a request with non-ASCII text and numbers like 1e21, signed over RFC 8785, is accepted (informational)",
        ["AGP-031"], Fact, |ctx| {
        let mut me = Me::new(ctx);
        let mut found: Vec<Finding> = Vec::new();
        me.hello(ctx).await?;
        me.control(ctx).await?;
        let req = me.request(&echo(ctx), json!({"text": "café 日本語 🙂", "big": 1e21, "ratio": 0.1, "tiny": 1e-7}), json!({}));
        let r = me.send(ctx, &req).await?;
        if r["type"] == "error" && r["payload"]["code"] == "INVALID_SIGNATURE" {
            found.push(NON_ASCII_CANONICAL_FORM_REJECTED.found(format!("a request signed over RFC 8785 with non-ASCII text and exponent numbers drew {}: the target's canonical form differs (informational, AGP-A1)", describe(&r))));
        }
        case_verdict(ctx, found)
    }),
];

// ---------------------------------------------------------------------------
// Fuzzing

/// Edits of the signature or the signer.
#[derive(Debug, Clone, Default, Arbitrary)]
pub(super) enum SigMut {
    #[default]
    Remove,
    Empty,
    NotString(Val),
    Truncate(u8),
    Flip(u8),
    /// The same signature in URL-safe base64 without padding (AGP-A4).
    UrlSafe,
    /// Signed by another key; from.agentId unchanged (AGP-034).
    WrongKey,
    /// from.agentId set to another key after signing (AGP-034).
    ClaimOther,
    /// from.agentId and signature of another key: a valid message of another sender.
    OtherSender,
    /// from.agentId in URL-safe base64, re-signed (AGP-A4).
    AgentUrlSafe,
    Random,
}

/// A signature that does not verify (reject-tampered).
pub(super) const TAMPERED: Subject = (&REJECT_TAMPERED_CARRIED_OUT, Some(&REJECT_TAMPERED_CODE));

/// A signature by another key than the sender's (reject-wrong-key).
const WRONG_KEY: Subject = (&REJECT_WRONG_KEY_CARRIED_OUT, Some(&REJECT_WRONG_KEY_CODE));

/// An unsigned request to a target that advertises signed-messages: `run` judges
/// only that it is not carried out.
const UNSIGNED: Subject = (&UNSIGNED_REQUEST_CARRIED_OUT, None);

/// Whether `s` is standard padded base64 of `len` bytes.
fn standard_b64(s: &str, len: usize) -> bool {
    keys::b64std_decode(s).is_some_and(|b| b.len() == len && keys::b64std(&b) == s)
}

pub(super) fn signature(v: &Value, c: &FuzzCase, e: &mut Expect) {
    match v.get("signature") {
        None => unsigned_expect(v, c, e),
        // An empty signature is one that does not verify, not none.
        Some(Value::String(s)) if s.is_empty() => e.signature_hard(
            TAMPERED,
            &[IS, IM],
            "the signature is empty (AGP-012, AGP-024)",
        ),
        Some(Value::String(s)) => {
            let agent = v["from"]["agentId"].as_str().unwrap_or_default();
            // A message as this case's identity signed it needs no second check.
            let own = agent == c.me.id
                && message::signing_bytes(Tree::from_serde(v)).is_ok_and(|b| c.me.signed(s, &b));
            let verdict = if own {
                Ok(())
            } else {
                message::verify_tree(Tree::from_serde(v))
            };
            match verdict {
                Ok(()) if standard_b64(s, 64) && standard_b64(agent, 32) => {}
                Ok(()) => e.soft(
                    &[IS, IM],
                    "signature or from.agentId not in standard padded base64 (AGP-A4)",
                ),
                Err(SigProblem::Mismatch) => {
                    e.signature_hard(
                        TAMPERED,
                        &[IS],
                        "the signature does not verify (AGP-024, AGP-033, AGP-034)",
                    );
                }
                Err(p) => {
                    e.signature_hard(
                        TAMPERED,
                        &[IS, IM],
                        format!("the signature cannot be verified: {p} (AGP-012, AGP-024)"),
                    );
                }
            }
        }
        Some(_) => {
            e.signature_hard(TAMPERED, &[IS, IM], "signature is not a string (AGP-012)");
        }
    }
}

/// An unsigned message: a request to a target that advertises signed-messages
/// must be refused (the unsigned-request case); any other may be.
fn unsigned_expect(v: &Value, c: &FuzzCase, e: &mut Expect) {
    if c.signed_messages && v["type"] == "request" {
        e.signature_hard(
            UNSIGNED,
            &[IS, IM],
            "unsigned, and the target advertises signed-messages (AGP-030, AGP-A3)",
        );
    } else {
        e.soft(&[IS, IM], "unsigned (AGP-030, AGP-A3)");
    }
}

pub(super) fn apply_sig(m: &mut Value, s: &SigMut, me: &Me) {
    let sig = m["signature"].as_str().unwrap_or_default().to_string();
    match s {
        SigMut::Remove => remove(m, &[], "signature"),
        SigMut::Empty => set(m, &[], "signature", json!("")),
        SigMut::NotString(v) => set(m, &[], "signature", v.json()),
        SigMut::Truncate(n) => {
            let keep = sig.len().saturating_sub(1 + usize::from(*n % 8));
            set(m, &[], "signature", json!(sig[..keep]));
        }
        SigMut::Flip(at) => {
            let mut b = sig.into_bytes();
            if !b.is_empty() {
                let i = usize::from(*at) % b.len();
                b[i] = if b[i] == b'A' { b'B' } else { b'A' };
            }
            set(m, &[], "signature", json!(String::from_utf8_lossy(&b)));
        }
        SigMut::UrlSafe => {
            if let Some((b, _)) = keys::b64_decode_any(&sig) {
                set(m, &[], "signature", json!(keys::b64url(&b)));
            }
        }
        SigMut::WrongKey => {
            let _ = message::sign(m, &Keypair::generate());
        }
        SigMut::ClaimOther => set(m, &["from"], "agentId", json!(other_id())),
        SigMut::OtherSender => {
            let other = Keypair::generate();
            set(m, &["from"], "agentId", json!(message::agent_id(&other)));
            let _ = message::sign(m, &other);
        }
        SigMut::AgentUrlSafe => {
            set(
                m,
                &["from"],
                "agentId",
                json!(keys::b64url(me.key.public().as_bytes())),
            );
            me.sign(m);
        }
        SigMut::Random => {
            let junk = Keypair::generate().sign(b"fz").to_bytes();
            set(m, &[], "signature", json!(keys::b64std(&junk)));
        }
    }
}

/// The conformance case whose subject a signature edit is: a fuzz finding on it is
/// filed under that case's key, the key `run` gives the same deviation; `None` for
/// an edit no one case owns.
pub(super) fn signature_subject(s: &SigMut) -> Option<Subject> {
    match s {
        SigMut::Remove => Some(UNSIGNED),
        SigMut::Empty => Some(TAMPERED),
        SigMut::WrongKey | SigMut::ClaimOther => Some(WRONG_KEY),
        SigMut::Truncate(_) | SigMut::Flip(_) => Some(TAMPERED),
        _ => None,
    }
}
