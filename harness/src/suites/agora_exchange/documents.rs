//! Protocol documents and hashing (agora-exchange.txt §8), and the /wellknown reader
//! that publishes them (§9): the fixture protocol, hash forms, document metadata,
//! unsupported protocols and protocol-level errors; the cases, and the fuzzer's
//! fixture.

use super::errors::{expect_rejected, expect_success};
use super::replies::{content_type_finding, is_json_media_type, said_bytes, Reply};
use super::wire::{control, is_hex40, post};
use crate::case::{fail, skip, Bindings, Case, Level, Step, Stop};
use crate::drive::Transport;
use crate::finding::{quote, Finding};
use crate::fuzzing::mutate::Val;
use crate::fuzzing::spec::FuzzCtx;
use crate::fuzzing::verdict::FuzzStep;
use crate::rules::{rules, Rule};
use crate::script::Ctx;
use arbitrary::Arbitrary;
use reference_impl::agora_exchange::document::{
    self, hash_form, is_sha1_hex, sha1_hex, HashForm, ECHO_DOCUMENT,
};
use reference_impl::wire::json;
use serde_json::{json, Map, Value};

rules! {
    // `Stop::Finding`), where the code calls no `.owned_by`.
    REQUEST_PROTOCOL_HASH_OPTIONAL {
        key: "agora-exchange/request:protocol-hash-optional",
        requirements: &["AEX-015"],
        level: None,
        owner: "agora-exchange/single-round",
        summary: "protocolHash null or absent means no formal protocol; such a request is taken",
        fails: "one of the two forms (protocolHash null, protocolHash absent) refused while the other is taken",
        passes: "both forms answered with HTTP 200 and status success",
    }
    PROTOCOL_HASH_FORM {
        key: "agora-exchange/protocol-hash:form",
        requirements: &["AEX-039"],
        level: None,
        owner: "agora-exchange/wellknown",
        summary: "a protocol hash is the 40 hex digits of the SHA1 of its document",
        fails: "a /wellknown key, or the profile's protocol_hash, in another form (base64, a prefix, upper-case hex and the like); it is used as given and reported once",
        passes: "40 hex digits",
    }
    PROFILE_PROTOCOL_HASH {
        key: "agora-exchange/profile:protocol_hash",
        requirements: &[],
        level: Some(Level::Profile),
        owner: "",
        summary: "a protocol to run the cases under: the profile's [agora-exchange] protocol_hash, else one /wellknown lists",
        fails: "the target has no /wellknown (or lists no protocol) and the profile names none; the cases that need one are blocked by this key",
        passes: "a protocol found",
        setting: Some("[agora-exchange] protocol_hash"),
    }
    PROFILE_PROTOCOL_UNSUPPORTED {
        key: "agora-exchange/profile:protocol-unsupported",
        requirements: &[],
        level: Some(Level::Profile),
        owner: "",
        summary: "the profile's [agora-exchange] protocol_hash names a protocol the target supports",
        fails: "the target refuses the profile's protocol_hash as unsupported; the cases that use it are blocked",
        passes: "the profile's protocol taken",
        setting: Some("[agora-exchange] protocol_hash"),
    }
    UNSUPPORTED_PROTOCOL_REPLY {
        key: "agora-exchange/unsupported-protocol:reply",
        requirements: &["AEX-041", "AEX-052"],
        level: None,
        owner: "agora-exchange/unsupported-protocol",
        summary: "an unsupported protocolHash draws HTTP 200 with {\"status\": \"failure\", \"error\": \"Unsupported protocol\"}",
        fails: "an unsupported protocol refused otherwise: an HTTP 4xx or 5xx, or a reply that is not an Agora-level failure",
        passes: "HTTP 200 with status failure",
    }
    WELLKNOWN_HTTP_STATUS {
        key: "agora-exchange/wellknown:http-status",
        requirements: &["AEX-045"],
        level: None,
        owner: "agora-exchange/wellknown",
        summary: "GET /wellknown answers HTTP 200, or 404, 405 or 501 when there is no such endpoint",
        fails: "another status for GET /wellknown; the case is blocked",
        passes: "HTTP 200 with the document, or no endpoint",
    }
    WELLKNOWN_NOT_JSON {
        key: "agora-exchange/wellknown:not-json",
        requirements: &["AEX-045"],
        level: None,
        owner: "agora-exchange/wellknown",
        summary: "the /wellknown document is JSON",
        fails: "a /wellknown body that does not parse as JSON; the case is blocked",
        passes: "a JSON body",
    }
    WELLKNOWN_NOT_OBJECT {
        key: "agora-exchange/wellknown:not-object",
        requirements: &["AEX-045"],
        level: None,
        owner: "agora-exchange/wellknown",
        summary: "the /wellknown document is a JSON object of protocol hashes",
        fails: "a /wellknown document that is an array or another JSON value; the case is blocked",
        passes: "a JSON object",
    }
    WELLKNOWN_WRAPPED {
        key: "agora-exchange/wellknown:wrapped",
        requirements: &["AEX-045"],
        level: None,
        owner: "agora-exchange/wellknown",
        summary: "/wellknown is the map of protocol hashes itself, not an object that wraps it",
        fails: "a /wellknown whose members map to no source lists, one of them an object that does ({\"status\": \"success\", \"protocols\": {…}}); read from inside to go on",
        passes: "hash keys at the top, each mapped to its sources",
    }
    WELLKNOWN_SOURCES {
        key: "agora-exchange/wellknown:sources",
        requirements: &["AEX-045"],
        level: None,
        owner: "agora-exchange/wellknown",
        summary: "/wellknown maps each protocol hash to a non-empty list of document sources (strings)",
        fails: "a protocol mapped to an empty list, a list with a non-string, or something other than a list",
        passes: "a non-empty list of strings for every key",
    }
    WELLKNOWN_DOCUMENT_HASH {
        key: "agora-exchange/wellknown:document-hash",
        requirements: &["AEX-038"],
        level: None,
        owner: "agora-exchange/wellknown",
        summary: "each /wellknown key is the SHA1 of its document",
        fails: "a 40-hex key that is the SHA1 of none of its sources, alone or joined",
        passes: "a key that matches its document (sources given as URLs are not fetched)",
    }
    WELLKNOWN_METADATA {
        key: "agora-exchange/wellknown:metadata",
        requirements: &["AEX-036", "AEX-037"],
        level: None,
        owner: "agora-exchange/wellknown",
        summary: "a protocol document listed in /wellknown has well-formed metadata",
        fails: "a document whose metadata block is missing or malformed",
        passes: "a document with well-formed metadata",
    }
    WELLKNOWN_LISTED_UNSUPPORTED {
        key: "agora-exchange/wellknown:listed-unsupported",
        requirements: &["AEX-046"],
        level: None,
        owner: "agora-exchange/wellknown-hashes-supported",
        summary: "every protocol listed in /wellknown is accepted without protocolSources",
        fails: "a listed protocol refused as unsupported (HTTP 200 failure or a 4xx whose error says \"unsupported\")",
        passes: "every listed protocol taken, or refused for another reason than being unsupported",
    }
}

/// A protocol the target supports: its hash, its text when known, and bodies that
/// follow and break it when known.
#[derive(Debug, Clone)]
pub struct Fixture {
    pub hash: String,
    pub text: Option<String>,
    pub valid_body: Value,
    pub invalid_body: Option<Value>,
    /// The hash names the agentconform echo document (in any form).
    pub echo: bool,
    /// The hash comes from the profile, not from /wellknown.
    pub from_profile: bool,
}

/// A protocol identifier that is not 40 hex digits (AEX-039): one finding however it
/// is met (in /wellknown, in the profile), owned by the wellknown case.
pub fn hash_form_finding(what: &str, form: Option<HashForm>) -> Finding {
    let how = match form {
        Some(f) => format!("; it is the {f} form of the SHA1 of its document"),
        None => "; it is no form of the SHA1 of its document the harness recognises".into(),
    };
    PROTOCOL_HASH_FORM.found(format!(
        "{what} is not the 40 hex digits of a SHA1 digest{how}"
    ))
}

/// The profile's protocol_hash, when it is not 40 hex digits: used as given, and
/// reported once (AEX-039).
pub fn check_profile_hash(ctx: &mut Ctx) {
    let p = ctx.profile().agora_exchange.clone();
    let Some(hash) = p.protocol_hash else {
        return;
    };
    if is_sha1_hex(&hash) {
        return;
    }
    let form = p
        .protocol_document
        .as_deref()
        .and_then(|t| hash_form(&hash, t.as_bytes()))
        .or_else(|| hash_form(&hash, document::ECHO_DOCUMENT.as_bytes()));
    ctx.finding(hash_form_finding(
        &format!("the protocol hash {hash:?} (profile [agora-exchange] protocol_hash)"),
        form,
    ));
}

/// An unsupported protocol refused otherwise than with HTTP 200 and status failure
/// (AEX-041, AEX-052), owned by the unsupported-protocol case.
pub fn unsupported_reply_finding(r: &Reply) -> Finding {
    UNSUPPORTED_PROTOCOL_REPLY.found(format!(
            "an unsupported protocolHash drew {}; an Agora-level error needs HTTP 200 with {{\"status\": \"failure\", \"error\": \"Unsupported protocol\"}}",
            r.describe()
        ))
}

/// What each /wellknown entry's documents say, as the wellknown case judges them: a
/// 40-hex key that is the SHA1 of none of its sources, alone or joined (AEX-038),
/// and a document whose metadata does not parse (AEX-036, AEX-037). Sources given as
/// URLs are not fetched, and a key in another form is the hash-form finding alone.
/// What passed is noted in `ctx`.
pub fn document_findings(ctx: &mut Ctx, map: &Map<String, Value>) -> Vec<Finding> {
    let mut found = Vec::new();
    for (key, sources) in map {
        let list = sources.as_array().cloned().unwrap_or_default();
        let strings: Vec<&str> = list.iter().filter_map(Value::as_str).collect();
        if !strings.is_empty()
            && strings
                .iter()
                .all(|s| s.starts_with("http://") || s.starts_with("https://"))
        {
            ctx.note(format!(
                "{key}: sources are references; not fetched (AEX-A7)"
            ));
            continue;
        }
        match identify(key, &list) {
            None if !is_hex40(key) => {}
            None => found.push(WELLKNOWN_DOCUMENT_HASH.found(format!(
                "no source of {key} (alone or joined) has that SHA1: {}",
                quote(&sources.to_string())
            ))),
            Some((text, form)) => match document::metadata(&text) {
                Err(e) => found.push(WELLKNOWN_METADATA.found(format!("document {key}: {e}"))),
                Ok(_) => ctx.checked(format!(
                    "{key}: {form} of the SHA1 of its document; metadata verified"
                )),
            },
        }
    }
    found
}

/// The text among a /wellknown entry's sources that `key` names, and the form in
/// which it names it (AEX-A7: each string alone, the concatenation, the
/// newline-joined concatenation; AEX-A8: hex in either case).
pub fn identify(key: &str, sources: &[Value]) -> Option<(String, HashForm)> {
    let strings: Vec<&str> = sources.iter().filter_map(Value::as_str).collect();
    let mut candidates: Vec<String> = strings.iter().map(|s| s.to_string()).collect();
    candidates.push(strings.concat());
    candidates.push(strings.join("\n"));
    candidates
        .into_iter()
        .find_map(|c| hash_form(key, c.as_bytes()).map(|f| (c, f)))
}

/// The strings of a /wellknown entry that `key` names (see [`identify`]).
pub fn document_for(key: &str, sources: &[Value]) -> Option<String> {
    identify(key, sources).map(|(t, _)| t)
}

/// The protocol the cases use: the profile's, else the agentconform echo document when
/// the target lists it, else the first /wellknown entry. Skips when there is none.
/// A hash in another form than 40 hex digits is used as the target spells it, and
/// reported once.
pub async fn fixture(ctx: &mut Ctx) -> Step<Fixture> {
    let echo_text = document::ECHO_DOCUMENT;
    let names_echo = |k: &str| hash_form(k, echo_text.as_bytes()).is_some();
    let p = ctx.profile().agora_exchange.clone();
    let parse = |s: &Option<String>| {
        s.as_deref()
            .and_then(|t| serde_json::from_str::<Value>(t).ok())
    };
    if let Some(hash) = p.protocol_hash {
        check_profile_hash(ctx);
        let is_echo = names_echo(&hash);
        return Ok(Fixture {
            text: p
                .protocol_document
                .or(is_echo.then(|| echo_text.to_string())),
            valid_body: parse(&p.valid_body).unwrap_or_else(|| json!({"text": "hi"})),
            invalid_body: parse(&p.invalid_body).or(is_echo.then(|| json!({"txt": 1}))),
            hash,
            echo: is_echo,
            from_profile: true,
        });
    }
    let Some(known) = wellknown(ctx).await? else {
        return Err(no_protocol(ctx, "the target has no /wellknown"));
    };
    let key = match known
        .keys()
        .find(|k| names_echo(k))
        .or_else(|| known.keys().next())
    {
        Some(k) => k.clone(),
        None => return Err(no_protocol(ctx, "/wellknown lists no protocol")),
    };
    let is_echo = names_echo(&key);
    let text = known
        .get(&key)
        .and_then(Value::as_array)
        .and_then(|s| document_for(&key, s));
    Ok(Fixture {
        hash: key,
        text,
        valid_body: parse(&p.valid_body).unwrap_or_else(|| {
            if is_echo {
                json!({"text": "hi"})
            } else {
                json!("hello")
            }
        }),
        invalid_body: parse(&p.invalid_body).or(is_echo.then(|| json!({"txt": 1}))),
        echo: is_echo,
        from_profile: false,
    })
}

/// No protocol to run the cases under: neither the profile nor /wellknown names
/// one. A setting the run lacks, not a deviation: the case is blocked by the key
/// to set.
fn no_protocol(ctx: &mut Ctx, why: &str) -> Stop {
    ctx.block(
        PROFILE_PROTOCOL_HASH.found(format!("{why} and the profile names no protocol: set [agora-exchange] protocol_hash to the hash of a protocol the target supports, as it spells it, and protocol_document to its text (agentconform init writes what it can find)")),
    )
}

/// Whether a reply refuses a protocol as unsupported (HTTP 200 failure, or a 4xx,
/// whose text says so).
pub fn refuses_as_unsupported(r: &Reply) -> bool {
    (r.is_agora_failure() || r.is_client_error())
        && r.error()
            .is_some_and(|e| e.to_ascii_lowercase().contains("unsupported"))
}

/// A request under the fixture protocol that the target refuses as unsupported: the
/// case cannot judge its subject under that protocol and is blocked by the finding
/// that says so (a listed protocol refused, or a profile protocol the target does
/// not support).
pub fn fixture_refused(ctx: &mut Ctx, fx: &Fixture, r: &Reply) -> Step<()> {
    if !refuses_as_unsupported(r) {
        return Ok(());
    }
    let f = if fx.from_profile {
        PROFILE_PROTOCOL_UNSUPPORTED.found(format!(
                "the profile's protocol_hash {:?} is refused as unsupported ({}); set [agora-exchange] protocol_hash to a protocol the target supports",
                fx.hash,
                r.describe()
            ))
    } else {
        listed_unsupported(&fx.hash, r)
    };
    Err(ctx.block(f))
}

/// A random 40-hex hash no target supports.
pub fn random_hash() -> String {
    sha1_hex(reference_impl::wire::new_id().as_bytes())
}

/// Reads `GET {url}/wellknown`: `Ok(None)` when the target has no such endpoint
/// (404, 405, 501). Its deviations are findings of the wellknown case; a reply with
/// nothing usable blocks.
pub async fn wellknown(ctx: &mut Ctx) -> Step<Option<Map<String, Value>>> {
    let r = ctx
        .http(reqwest::Method::GET, "wellknown", &[], None)
        .await?;
    if matches!(r.status, 404 | 405 | 501) {
        ctx.note(format!("GET /wellknown: HTTP {} (no endpoint)", r.status));
        return Ok(None);
    }
    let block = |ctx: &mut Ctx, rule: &'static Rule, summary: String| -> Stop {
        ctx.block(rule.found(summary))
    };
    if r.status != 200 {
        return Err(block(
            ctx,
            &WELLKNOWN_HTTP_STATUS,
            format!(
                "GET /wellknown answered HTTP {}: {}",
                r.status,
                said_bytes(&r.body)
            ),
        ));
    }
    if !is_json_media_type(r.content_type.as_deref()) {
        ctx.finding(content_type_finding(r.content_type.as_deref()));
    }
    let v: Value = match json::parse(&r.body) {
        Ok(t) => t.to_serde(),
        Err(e) => {
            return Err(block(
                ctx,
                &WELLKNOWN_NOT_JSON,
                format!("/wellknown is not JSON ({e}): {}", said_bytes(&r.body)),
            ))
        }
    };
    let Value::Object(map) = v else {
        return Err(block(
            ctx,
            &WELLKNOWN_NOT_OBJECT,
            format!("/wellknown is not a JSON object: {}", quote(&v.to_string())),
        ));
    };
    let map = match unwrapped(&map) {
        Some((member, inner)) => {
            let beside: Vec<&String> = map.keys().filter(|k| **k != member).collect();
            ctx.finding(WELLKNOWN_WRAPPED.found(format!(
                "GET /wellknown wraps its map of protocols under {member:?}{}: the reply is the map itself, each SHA1 key mapped to its sources (AEX-045); read from inside to go on: {}",
                if beside.is_empty() { String::new() } else { format!(" beside {}", crate::finding::json(&beside)) },
                said_bytes(&r.body)
            )));
            inner
        }
        None => map,
    };
    for (key, sources) in &map {
        let ok = sources
            .as_array()
            .is_some_and(|a| !a.is_empty() && a.iter().all(Value::is_string));
        if !ok {
            ctx.finding(WELLKNOWN_SOURCES.found(format!(
                "/wellknown maps {key:?} to {}, not a non-empty list of document sources",
                quote(&sources.to_string())
            )));
        }
        if !is_sha1_hex(key) {
            let list = sources.as_array().cloned().unwrap_or_default();
            let form = identify(key, &list).map(|(_, f)| f);
            ctx.finding(hash_form_finding(
                &format!("the /wellknown protocol key {key:?}"),
                form,
            ));
        }
    }
    Ok(Some(map))
}

/// The map a /wellknown wraps, with the member that holds it: no member maps to a
/// list (a source list), and exactly one is a non-empty object whose members all
/// do. `None` for a map that is the reply itself.
fn unwrapped(map: &Map<String, Value>) -> Option<(String, Map<String, Value>)> {
    if map.values().any(Value::is_array) {
        return None;
    }
    let mut holders = map.iter().filter_map(|(k, v)| {
        let inner = v.as_object()?;
        (!inner.is_empty() && inner.values().all(Value::is_array))
            .then(|| (k.clone(), inner.clone()))
    });
    let first = holders.next()?;
    holders.next().is_none().then_some(first)
}

/// A listed protocol refused as unsupported (AEX-046), owned by the
/// wellknown-hashes-supported case.
pub fn listed_unsupported(hash: &str, r: &Reply) -> Finding {
    WELLKNOWN_LISTED_UNSUPPORTED.found(format!(
        "protocol {hash:?} is listed in /wellknown but refused: {}",
        r.describe()
    ))
}

/// The cases of this area, in the order they run.
pub const CASES: &[Case] = &[
    case!("protocol-sources", "a supported protocol sent with its full text in protocolSources is processed", ["AEX-017"], Fact, false, |ctx| {
        let fx = fixture(ctx).await?;
        let Some(text) = fx.text.clone() else {
            return skip("the protocol's full text is not known (not in /wellknown as text, not in the profile)");
        };
        let r = post(ctx, "", &json!({"protocolHash": fx.hash, "protocolSources": [text], "body": fx.valid_body})).await?;
        if r.is_success() {
            return Ok(());
        }
        if refuses_as_unsupported(&r) {
            // Refused without sources too: the protocol is not supported at all.
            let plain = post(ctx, "", &json!({"protocolHash": fx.hash, "body": fx.valid_body})).await?;
            fixture_refused(ctx, &fx, &plain)?;
        }
        expect_success(&r, "request with protocolSources")
    }),
    case!("unsupported-protocol", "an unsupported protocolHash draws HTTP 200, status failure, error \"Unsupported protocol\"", ["AEX-040", "AEX-041", "AEX-052"], Must, false, |ctx| {
        let r = post(ctx, "", &json!({"protocolHash": random_hash(), "body": "ping"})).await?;
        if r.is_success() {
            return fail(format!("an unsupported protocol was answered with success; the server must check protocolHash (AEX-040): {}", r.describe()));
        }
        if !r.is_agora_failure() {
            return Err(Stop::Finding(unsupported_reply_finding(&r)));
        }
        match r.error() {
            Some(e) if e.eq_ignore_ascii_case("unsupported protocol") => Ok(()),
            other => {
                ctx.warn(format!("error is {}, not \"Unsupported protocol\" (AEX-041, AEX-A10)", crate::finding::json(&other)));
                Ok(())
            }
        }
    }),
    case!("unknown-hash-with-sources", "an unknown protocol sent with its text is adopted or refused as unsupported", ["AEX-042"], May, false, |ctx| {
        let text = format!("name: harness probe\ndescription: probe {}\nmultiround: false\n---\nAnything goes.\n", reference_impl::wire::new_id());
        let r = post(ctx, "", &json!({"protocolHash": sha1_hex(text.as_bytes()), "protocolSources": [text], "body": "ping"})).await?;
        if r.is_success() || r.is_agora_failure() {
            ctx.note(format!("unknown protocol with sources: {}", r.describe()));
            Ok(())
        } else if r.is_client_error() && refuses_as_unsupported(&r) {
            // Refused as unsupported, in the form the unsupported-protocol case judges.
            ctx.finding(unsupported_reply_finding(&r));
            Ok(())
        } else {
            fail(format!("expected success or \"Unsupported protocol\", got {}", r.describe()))
        }
    }),
    case!("malformed-hash", "a protocolHash that is not 40 hex digits is rejected (an HTTP 4xx or status failure)", ["AEX-040"], Must, false, |ctx| {
        control(ctx).await?;
        let r = post(ctx, "", &json!({"protocolHash": "xyz", "body": "ping"})).await?;
        expect_rejected(ctx, &r, "protocolHash \"xyz\"")
    }),
    case!("protocol-level-error", "a body that breaks the protocol document draws status success with the error inside body", ["AEX-053", "AEX-054"], Must, false, |ctx| {
        let fx = fixture(ctx).await?;
        let Some(bad) = fx.invalid_body.clone() else {
            return skip("no body known to break the target's protocol (set [agora-exchange] invalid_body)");
        };
        let r = post(ctx, "", &json!({"protocolHash": fx.hash, "body": bad})).await?;
        fixture_refused(ctx, &fx, &r)?;
        expect_success(&r, "protocol-level error")?;
        let body = r.get("body").cloned().unwrap_or(Value::Null);
        if body.is_null() {
            return fail("the protocol-level error is not described in body (AEX-054)");
        }
        if fx.echo && !body["error"].is_string() {
            return fail(format!("the echo protocol prescribes body.error; got body {body} (AEX-054)"));
        }
        Ok(())
    }),
];

// ---------------------------------------------------------------------------
// Fuzzing

#[derive(Debug, Clone, Default, Arbitrary)]
pub(super) enum HashVal {
    #[default]
    Unknown,
    Uppercase,
    Short,
    NonHex,
    Null,
    Other(Val),
}

/// The protocol fixture, learnt once per run.
pub(super) struct Fx {
    pub(super) hash: String,
    /// Every hash /wellknown lists (lowercase).
    pub(super) known: Vec<String>,
    pub(super) text: Option<String>,
    /// Whether the fixture is the agentconform echo protocol, whose rules are known.
    pub(super) echo: bool,
    pub(super) valid_body: Value,
}

pub(super) async fn fx(f: &mut FuzzCtx) -> FuzzStep<Fx> {
    let memo = match f.recall() {
        Some(m) => m,
        None => {
            let fixture = fixture(&mut f.ctx).await?;
            let known: Vec<String> = match wellknown(&mut f.ctx).await? {
                Some(m) => m.keys().map(|k| k.to_ascii_lowercase()).collect(),
                None => vec![fixture.hash.to_ascii_lowercase()],
            };
            let m = json!({"hash": fixture.hash, "known": known, "text": fixture.text,
                           "valid_body": fixture.valid_body});
            f.remember(m.clone());
            m
        }
    };
    let echo = reference_impl::agora_exchange::document::ProtocolDocument::new(ECHO_DOCUMENT);
    let hash = memo["hash"].as_str().unwrap_or_default().to_string();
    Ok(Fx {
        echo: hash.eq_ignore_ascii_case(&echo.hash),
        known: memo["known"]
            .as_array()
            .map(|a| {
                a.iter()
                    .filter_map(|s| s.as_str().map(String::from))
                    .collect()
            })
            .unwrap_or_default(),
        text: memo["text"].as_str().map(String::from),
        valid_body: memo["valid_body"].clone(),
        hash,
    })
}
