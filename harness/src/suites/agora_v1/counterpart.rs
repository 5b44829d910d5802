//! The scripted counterpart of the client role: the provider the harness plays for a
//! requesting agent under test (`Provider`), the plan it answers by (`Provide`), and
//! the ways it spoils a reply on purpose (`Spoil`).

use super::wire::{now, wire};
use crate::fuzzing::mutate::{edit_bytes, respell, ByteEdit, Val, WireForm};
use arbitrary::Arbitrary;
use reference_impl::agora_v1::envelope::{self, SigVariant};
use reference_impl::wire::clock::format_timestamp;
use reference_impl::wire::keys::{self, Keypair};
use reference_impl::wire::new_id;
use serde_json::{json, Value};
use time::OffsetDateTime;

// ---------------------------------------------------------------------------
// The client role: the harness as the provider a requester under test talks to.

/// How the harness, as provider, answers a requester's REQUEST.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Provide {
    /// A RESULT at once (the direct flow).
    Direct,
    /// An OFFER at this cost, then a RESULT for its ACCEPT; `stale` stamps the
    /// OFFER ten minutes in the past, `bad_signature` breaks its signature.
    Offer {
        cost: f64,
        stale: bool,
        bad_signature: bool,
    },
    /// An ERROR with this code.
    Error(i64),
}

/// The requests agora-v1.md defines for a provider's HTTP binding: POST to the
/// endpoint (the base URL).
pub fn defined(method: &str, path: &str) -> bool {
    method == "POST" && path == "/"
}

/// The requests a real client may send through the proxy: agora-v1.md's HTTP binding is one POST of a message to
/// the provider's endpoint, and the proxy's URL may stand for that endpoint or for the
/// base below which it lies, so any POST is a message; any other method is outside
/// the spec.
pub fn proxied(method: &str, _path: &str) -> bool {
    method == "POST"
}

/// How the harness's provider spoils one reply, for a client case that serves a
/// reply the client must refuse or report (the client side of a server fault).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Spoil {
    None,
    /// The RESULT carries protocol `agora/1.1` (AV1-003; `wrong-protocol-tag`).
    ResultProtocol,
    /// The RESULT reuses the REQUEST's id (AV1-004; `reuse-request-id`).
    ResultReusesId,
    /// The RESULT's request_id names the OFFER (AV1-042; `result-links-offer`).
    ResultNamesOffer,
    /// The OFFER's request_id names another request (AV1-037).
    OfferNamesOther,
    /// The OFFER is fresh (stamped 5 s ago) but its ttl of 1 s has run out (AV1-039).
    OfferExpired,
    /// The RESULT is stamped ten minutes ago (AV1-007; `stale-reply-timestamp`).
    ResultStale,
    /// The RESULT's signature is empty (`unsigned-replies`).
    ResultUnsigned,
    /// The RESULT is signed with a key other than its sender.id's (`reply-wrong-key`).
    ResultWrongKey,
    /// The RESULT is signed over its members in insertion order and sent so
    /// (`sign-non-canonical`).
    ResultInsertionOrder,
    /// The RESULT is signed over sorted-key JSON with non-ASCII text escaped
    /// (AV1-017, AV1-023), its data holding such text.
    ResultSortedKeys,
    /// The RESULT is signed over Python's `json.dumps(v, sort_keys=True)` with its
    /// default separators (", " and ": "), the form a verifier that also tries it
    /// takes (AV1-017, AV1-023).
    ResultPythonDumps,
    /// The REQUEST is refused with a bare `{"error", "code"}` and HTTP 401
    /// (`bare-error-replies`).
    BareError,
    /// The ERROR's code is a string (`error-code-string`).
    ErrorCodeString,
    /// The ERROR goes out with HTTP 200, code and message nested under
    /// payload.error (`error-code-nested`).
    ErrorNested,
    /// The ACCEPT is answered ERROR 404 (`offer-id-in-payload`).
    AcceptRefused,
}

/// The provider's answers, signed with `key`: REQUEST as `plan` says, ACCEPT with a
/// RESULT for the REQUEST, anything else with ERROR 400.
pub fn provider(key: Keypair, plan: Provide) -> crate::counterparty::Answer {
    spoiled_provider(key, plan, Spoil::None)
}

/// [`provider`], with one reply spoiled as `spoil` says.
pub fn spoiled_provider(key: Keypair, plan: Provide, spoil: Spoil) -> crate::counterparty::Answer {
    let mut p = Provider {
        key,
        plan,
        spoil,
        other_key: Keypair::generate(),
        request: None,
        offer_id: String::new(),
    };
    Box::new(move |_path: &str, bytes: &[u8]| p.answer(bytes))
}

/// The scripted provider's state: the REQUEST it answered with an OFFER, and the
/// OFFER's id.
struct Provider {
    key: Keypair,
    plan: Provide,
    spoil: Spoil,
    /// Signs the RESULT of `Spoil::ResultWrongKey`.
    other_key: Keypair,
    request: Option<(String, Value)>,
    offer_id: String,
}

/// The reply the plan gives a message, before its envelope: type, payload, the
/// timestamp it is stamped with, and whether its signature is to be spoiled.
struct Planned {
    ty: &'static str,
    payload: Value,
    at: OffsetDateTime,
    bad_signature: bool,
}

impl Provider {
    /// The HTTP status and body answering one message of the client.
    fn answer(&mut self, bytes: &[u8]) -> (u16, Vec<u8>) {
        let msg: Value = serde_json::from_slice(bytes).unwrap_or(Value::Null);
        let id = msg["id"].as_str().unwrap_or_default().to_string();
        let planned = self.plan_reply(&msg, &id);
        let bad = planned.bad_signature;
        let (result, error) = (planned.ty == "RESULT", planned.ty == "ERROR");
        let mut env = self.envelope(planned, &id);
        let body = match self.spoil_signed(&mut env, result, error) {
            Ok(body) => body,
            Err(early) => return early,
        };
        if bad {
            let spoiled =
                crate::script::spoil(env["sender"]["signature"].as_str().unwrap_or_default(), 5);
            env["sender"]["signature"] = json!(spoiled);
        }
        let code = if error {
            env["payload"]["code"]
                .as_u64()
                .and_then(|c| u16::try_from(c).ok())
                .or_else(|| env["payload"]["code"].as_str().and_then(|c| c.parse().ok()))
                .unwrap_or(400)
        } else {
            200
        };
        (code, body.unwrap_or_else(|| wire(&env)))
    }

    /// What the plan answers `msg` (of id `id`) with.
    fn plan_reply(&mut self, msg: &Value, id: &str) -> Planned {
        let ty = msg["type"].as_str().unwrap_or_default();
        let planned = |ty, payload| Planned {
            ty,
            payload,
            at: now(),
            bad_signature: false,
        };
        let error = |payload| planned("ERROR", payload);
        match (ty, self.plan) {
            ("REQUEST", Provide::Direct) => planned(
                "RESULT",
                json!({"request_id": id, "status": "success", "data": msg["payload"]["params"]}),
            ),
            (
                "REQUEST",
                Provide::Offer {
                    cost,
                    stale,
                    bad_signature,
                },
            ) => self.offer(msg, id, cost, stale, bad_signature),
            ("REQUEST", Provide::Error(code)) => {
                error(json!({"code": code, "message": "refused by the harness", "request_id": id}))
            }
            ("ACCEPT", _) if self.spoil == Spoil::AcceptRefused => error(
                json!({"code": 404, "message": "unknown offer (refused by the harness on purpose)", "request_id": id}),
            ),
            ("ACCEPT", _) => match &self.request {
                Some((rid, params)) => {
                    let names = if self.spoil == Spoil::ResultNamesOffer {
                        self.offer_id.clone()
                    } else {
                        rid.clone()
                    };
                    planned(
                        "RESULT",
                        json!({"request_id": names, "status": "success", "data": params}),
                    )
                }
                None => error(json!({"code": 404, "message": "no offer was made"})),
            },
            _ => error(json!({"code": 400, "message": "unexpected message"})),
        }
    }

    /// The OFFER answering a REQUEST, stale or expired or naming another request as
    /// the spoil says.
    fn offer(&mut self, msg: &Value, id: &str, cost: f64, stale: bool, bad: bool) -> Planned {
        self.request = Some((id.to_string(), msg["payload"]["params"].clone()));
        let mut at = now();
        let mut ttl = 30_000;
        if stale {
            // Outside the 60 s window, but within its own ttl: only the freshness
            // check refuses it.
            at -= time::Duration::minutes(2);
            ttl = 900_000;
        }
        if self.spoil == Spoil::OfferExpired {
            at -= time::Duration::seconds(5);
            ttl = 1000;
        }
        let names = if self.spoil == Spoil::OfferNamesOther {
            new_id()
        } else {
            id.to_string()
        };
        Planned {
            ty: "OFFER",
            payload: json!({"request_id": names, "cost": cost, "ttl": ttl, "eta": 10}),
            at,
            bad_signature: bad,
        }
    }

    /// The reply's signed envelope, with the spoils of its payload, id, timestamp,
    /// protocol and signer.
    fn envelope(&mut self, planned: Planned, id: &str) -> Value {
        let Planned {
            ty,
            mut payload,
            mut at,
            ..
        } = planned;
        let result = ty == "RESULT";
        if result && self.spoil == Spoil::ResultSortedKeys {
            payload["data"] = json!({"text": "déjà vu, naïve café"});
        }
        if result && self.spoil == Spoil::ResultStale {
            at -= time::Duration::minutes(10);
        }
        let reply_id = if result && self.spoil == Spoil::ResultReusesId {
            self.request
                .as_ref()
                .map_or(id.to_string(), |(rid, _)| rid.clone())
        } else {
            new_id()
        };
        let mut env = envelope::build(ty, &reply_id, at, &self.key.did(), payload);
        if ty == "OFFER" {
            // The OFFER's envelope id names it (AV1-A11); the payload says so too.
            env["payload"]["offer_id"] = env["id"].clone();
            self.offer_id = reply_id.clone();
        }
        if result && self.spoil == Spoil::ResultProtocol {
            env["protocol"] = json!("agora/1.1");
        }
        let signer = if result && self.spoil == Spoil::ResultWrongKey {
            &self.other_key
        } else {
            &self.key
        };
        let _ = envelope::sign(&mut env, signer, SigVariant::Blank);
        env
    }

    /// The spoils of a signed reply: `Ok` with the body to send as is (else the
    /// envelope's wire form), `Err` with a whole reply in its place.
    fn spoil_signed(
        &self,
        env: &mut Value,
        result: bool,
        error: bool,
    ) -> Result<Option<Vec<u8>>, (u16, Vec<u8>)> {
        let key = &self.key;
        match self.spoil {
            Spoil::ResultUnsigned if result => env["sender"]["signature"] = json!(""),
            Spoil::ResultInsertionOrder if result => {
                env["sender"]["signature"] = json!("");
                let text = serde_json::to_vec(&*env).unwrap_or_default();
                env["sender"]["signature"] = json!(keys::b64url(&key.sign(&text).to_bytes()));
                return Ok(serde_json::to_vec(&*env).ok());
            }
            Spoil::ResultSortedKeys | Spoil::ResultPythonDumps if result => {
                env["sender"]["signature"] = json!("");
                let compact = self.spoil == Spoil::ResultSortedKeys;
                let text = reference_impl::wire::pyjson::python_sorted_json(env, compact);
                env["sender"]["signature"] =
                    json!(keys::b64url(&key.sign(text.as_bytes()).to_bytes()));
            }
            Spoil::BareError if error => {
                return Err((
                    401,
                    json!({"error": "untrusted sender (refused by the harness on purpose)", "code": 401})
                        .to_string()
                        .into_bytes(),
                ));
            }
            Spoil::ErrorCodeString if error => {
                env["payload"]["code"] = json!(env["payload"]["code"].to_string());
                let _ = envelope::sign(env, key, SigVariant::Blank);
            }
            Spoil::ErrorNested if error => {
                let code = env["payload"]["code"].clone();
                let message = env["payload"]["message"].clone();
                env["payload"] = json!({"error": {"code": code, "message": message}});
                let _ = envelope::sign(env, key, SigVariant::Blank);
                return Err((200, wire(env)));
            }
            _ => {}
        }
        Ok(None)
    }
}

// ---------------------------------------------------------------------------
// Fuzzing

/// What is done to the provider's reply.
#[derive(Debug, Clone, Default, Arbitrary)]
pub(super) enum ReplyMut {
    #[default]
    None,
    /// The signature of the reply no longer verifies.
    BadSignature,
    /// No signature at all.
    NoSignature,
    /// Signed over Python's `json.dumps(v, sort_keys=True)`, compact (`true`) or
    /// with its default separators, not over RFC 8785 (AV1-017).
    PythonSigned(bool),
    /// Stamped this many seconds outside the replay window (in the past when
    /// `false`).
    Stale(u16, bool),
    /// The reply names another request.
    OtherRequest,
    /// The reply carries protocol "agora/1.1" (AV1-003).
    OtherProtocol,
    /// The reply's id is the REQUEST's (AV1-004).
    ReusedId,
    /// An OFFER stamped 5 s ago with a ttl of 1000 ms (AV1-039); other replies
    /// are left as they are.
    LapsedTtl,
    /// The same reply in another spelling (it still verifies).
    Respell(WireForm),
    /// Raw byte edits of the reply.
    Bytes(Vec<ByteEdit>),
    /// The reply's payload member set to a drawn value (re-signed).
    Member(u8, Val),
}

impl ReplyMut {
    /// Whether a requester must refuse the reply (an OFFER when `offer`).
    pub(super) fn must_refuse(&self, offer: bool) -> bool {
        matches!(
            self,
            ReplyMut::BadSignature
                | ReplyMut::NoSignature
                | ReplyMut::PythonSigned(_)
                | ReplyMut::Stale(..)
                | ReplyMut::OtherRequest
                | ReplyMut::OtherProtocol
                | ReplyMut::ReusedId
        ) || (offer && matches!(self, ReplyMut::LapsedTtl))
    }
}

/// A reply's edit as a finding's detail says it (never a debug form).
impl std::fmt::Display for ReplyMut {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ReplyMut::None => f.write_str("the reply as planned"),
            ReplyMut::BadSignature => f.write_str("a signature that does not verify"),
            ReplyMut::NoSignature => f.write_str("no signature"),
            ReplyMut::PythonSigned(compact) => write!(
                f,
                "signed over Python's json.dumps(sort_keys=True){}, not RFC 8785",
                if *compact { " compact" } else { "" }
            ),
            ReplyMut::Stale(s, future) => write!(
                f,
                "stamped {s} s {} the replay window",
                if *future { "ahead of" } else { "behind" }
            ),
            ReplyMut::OtherRequest => f.write_str("naming another request"),
            ReplyMut::OtherProtocol => f.write_str("protocol agora/1.1"),
            ReplyMut::ReusedId => f.write_str("the REQUEST's id"),
            ReplyMut::LapsedTtl => f.write_str("an OFFER whose ttl has lapsed"),
            ReplyMut::Respell(w) => write!(f, "respelled with {w}"),
            ReplyMut::Bytes(b) => write!(f, "{} raw byte edits", b.len()),
            ReplyMut::Member(i, v) => write!(f, "payload member {i} set to {}", v.json()),
        }
    }
}

/// The provider, with `how` applied to its first reply, or to its RESULT when
/// `on_result`.
pub(super) fn mutated_provider(
    ctx: &crate::script::Ctx,
    how: ReplyMut,
    on_result: bool,
    offer: Option<f64>,
) -> crate::counterparty::Answer {
    let key = ctx.shared.key.clone();
    let plan = match offer {
        Some(cost) => Provide::Offer {
            cost,
            stale: false,
            bad_signature: false,
        },
        None => Provide::Direct,
    };
    let mut inner = provider(key.clone(), plan);
    let mut n = 0;
    Box::new(move |path: &str, bytes: &[u8]| {
        let (status, out) = inner(path, bytes);
        n += 1;
        let target = if on_result { 2 } else { 1 };
        if n != target {
            return (status, out);
        }
        (status, mutate_reply(&key, &how, out))
    })
}

fn mutate_reply(key: &Keypair, how: &ReplyMut, out: Vec<u8>) -> Vec<u8> {
    let Ok(mut v) = serde_json::from_slice::<Value>(&out) else {
        return out;
    };
    let resign = |v: &mut Value| {
        let _ = envelope::sign(v, key, SigVariant::Blank);
    };
    match how {
        ReplyMut::None => return out,
        ReplyMut::BadSignature => {
            let spoiled =
                crate::script::spoil(v["sender"]["signature"].as_str().unwrap_or_default(), 7);
            v["sender"]["signature"] = json!(spoiled);
        }
        ReplyMut::NoSignature => v["sender"]["signature"] = json!(""),
        ReplyMut::PythonSigned(compact) => {
            v["sender"]["signature"] = json!("");
            let mut text = reference_impl::wire::pyjson::python_sorted_json(&v, *compact);
            // An ASCII reply of integers has the same compact bytes in both forms
            // (its signature is sound): the default separators always differ.
            let canonical = reference_impl::wire::jcs::canonicalize_serde(&v).unwrap_or_default();
            if text.as_bytes() == canonical.as_slice() {
                text = reference_impl::wire::pyjson::python_sorted_json(&v, false);
            }
            v["sender"]["signature"] = json!(reference_impl::wire::keys::b64url(
                &key.sign(text.as_bytes()).to_bytes()
            ));
        }
        ReplyMut::Stale(extra, future) => {
            let secs = 65 + i64::from(*extra % 3600);
            let at = now() + time::Duration::seconds(if *future { secs } else { -secs });
            v["timestamp"] = json!(format_timestamp(at));
            resign(&mut v);
        }
        ReplyMut::OtherRequest => {
            v["payload"]["request_id"] = json!(reference_impl::wire::new_id());
            resign(&mut v);
        }
        ReplyMut::OtherProtocol => {
            v["protocol"] = json!("agora/1.1");
            resign(&mut v);
        }
        ReplyMut::ReusedId => {
            v["id"] = v["payload"]["request_id"].clone();
            if v["type"] == "OFFER" {
                v["payload"]["offer_id"] = v["id"].clone();
            }
            resign(&mut v);
        }
        ReplyMut::LapsedTtl => {
            if v["type"] != "OFFER" {
                return out;
            }
            v["timestamp"] = json!(format_timestamp(now() - time::Duration::seconds(5)));
            v["payload"]["ttl"] = json!(1000);
            resign(&mut v);
        }
        ReplyMut::Respell(w) => return respell(&v, *w),
        ReplyMut::Bytes(edits) => return edit_bytes(out, edits),
        ReplyMut::Member(i, val) => {
            let k = ["cost", "ttl", "eta", "data", "status", "offer_id"][usize::from(*i) % 6];
            v["payload"][k] = val.json();
            resign(&mut v);
        }
    }
    wire(&v)
}
