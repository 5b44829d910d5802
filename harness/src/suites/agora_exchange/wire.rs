//! The wire of agora-exchange (agora-exchange.txt §5): the calls (a request POSTed as
//! JSON, with its protocol sources by text or by URL where the profile says so; raw
//! bytes; the control request a refusal is judged against), the clock, and HTTPS.

use super::replies::{check_reply, transport_reply, Reply, REFUSED};
use crate::case::{fail, Bindings, Case, Step};
use crate::drive::Transport;
use crate::fuzzing::spec::FuzzCtx;
use crate::fuzzing::verdict::{self, FuzzStep};
use crate::rules::rules;
use crate::script::Ctx;
use reference_impl::agora_exchange::document::{is_sha1_hex, sha1_hex};
use serde_json::{json, Value};

rules! {
    REQUEST_PROTOCOL_SOURCES_OPTIONAL {
        key: "agora-exchange/request:protocol-sources-optional",
        requirements: &["AEX-016", "AEX-017"],
        level: None,
        owner: "",
        summary: "a new exchange is taken without protocolSources (optional, agora-exchange.txt sections 6.1 and 8.3)",
        fails: "a request without protocolSources refused with words naming it, and taken with protocolSources []; the rest of the run then sends protocolSources []",
        passes: "a new exchange without protocolSources taken, or refused for another reason",
    }
}

/// POSTs a JSON request to `path` (empty: the base URL).
///
/// A new exchange sent without `protocolSources` that is refused with words naming
/// that member is sent once more with `protocolSources: []`; when that is taken, the
/// target requires what §6.1 makes optional: one finding, and from then on every new
/// exchange of the run carries `protocolSources: []` (noted in each case), so that
/// the rest of the suite is judged. [`post_as_is`] never adds it.
pub async fn post(ctx: &mut Ctx, path: &str, request: &Value) -> Step<Reply> {
    if text_sources(request) {
        return post_sources(ctx, path, request).await;
    }
    let adaptable = path.is_empty()
        && request.get("body").is_some()
        && request.get("protocolSources").is_none();
    if !adaptable {
        return post_as_is(ctx, path, request).await;
    }
    let mut with_sources = request.clone();
    with_sources["protocolSources"] = json!([]);
    if ctx
        .shared
        .adapted
        .has(REQUEST_PROTOCOL_SOURCES_OPTIONAL.key)
    {
        ctx.note(format!(
            "protocolSources [] added: the target refuses a new exchange without it ({})",
            REQUEST_PROTOCOL_SOURCES_OPTIONAL.key
        ));
        return post_as_is(ctx, path, &with_sources).await;
    }
    let r = post_as_is(ctx, path, request).await?;
    let names_sources = |r: &Reply| {
        !r.is_success()
            && r.json.as_ref().is_some_and(|j| {
                j.to_string()
                    .to_ascii_lowercase()
                    .contains("protocolsources")
            })
    };
    if !names_sources(&r) {
        return Ok(r);
    }
    ctx.note("the refusal names protocolSources, which a client may leave out (§6.1): the same request once more with protocolSources []");
    let retry = post_as_is(ctx, path, &with_sources).await?;
    if !retry.is_success() {
        return Ok(r);
    }
    ctx.shared
        .adapted
        .adopt(REQUEST_PROTOCOL_SOURCES_OPTIONAL.key);
    ctx.finding(REQUEST_PROTOCOL_SOURCES_OPTIONAL.found(format!(
            "the target requires protocolSources, which agora-exchange.txt §6.1 and §8.3 make optional: a request without it drew {}, the same with protocolSources [] drew {}; the rest of the run sends protocolSources []",
            r.describe(),
            retry.describe()
        )));
    Ok(retry)
}

/// POSTs a JSON request to `path` exactly as given.
pub async fn post_as_is(ctx: &mut Ctx, path: &str, request: &Value) -> Step<Reply> {
    let bytes = serde_json::to_vec(request).unwrap_or_default();
    post_bytes(ctx, path, bytes, &[]).await
}

/// The case's control: a plain single-round request, which the target must take
/// before a refusal in the same case counts. A refusal of it is one finding, keyed
/// by the target's words, which blocks the case.
pub async fn control(ctx: &mut Ctx) -> Step<()> {
    let r = post(ctx, "", &json!({"protocolHash": null, "body": "ping"})).await?;
    let what = "a plain single-round request (the case's control)";
    if r.is_success() {
        ctx.control(what);
        return Ok(());
    }
    let status = r
        .status()
        .map(String::from)
        .unwrap_or_else(|| format!("HTTP {}", r.http));
    Err(ctx.block(crate::rules::refusal(
        (&REFUSED, "agora-exchange", &[]),
        &status,
        r.error().unwrap_or_default(),
        what,
    )))
}

/// The path of conversation `id`'s follow-ups (§7).
pub fn conversation_path(id: &str) -> String {
    format!(
        "conversations/{}",
        reference_impl::agora_exchange::client::percent_encode(id)
    )
}

/// The routes that take a request, for the checks each must make alike (a request
/// without body, malformed JSON): the base URL (`""`), and the follow-up route of
/// a conversation opened here, once a valid follow-up in it was taken (the
/// route's control). The follow-up route is left out, with a note, when the
/// target declines multi-round mode or takes no valid follow-up.
pub async fn request_routes(ctx: &mut Ctx) -> Step<Vec<(&'static str, String)>> {
    let mut routes = vec![("POST /", String::new())];
    let start = json!({"protocolHash": null, "body": "start", "multiround": true});
    let r = post(ctx, "", &start).await?;
    let Some(id) = r.conversation_id().filter(|_| r.is_success()) else {
        ctx.note(format!("the follow-up route is not judged: multiround true drew {}, no conversation to follow up (AEX-028 lets a target decline)", r.describe()));
        return Ok(routes);
    };
    let path = conversation_path(id);
    let next = post(ctx, &path, &json!({"body": "next"})).await?;
    if !next.is_success() {
        ctx.note(format!("the follow-up route is not judged: a valid follow-up to {path} drew {}, so a refusal there proves nothing", next.describe()));
        return Ok(routes);
    }
    ctx.checked(format!(
        "control of the follow-up route: a valid follow-up to {path} was taken"
    ));
    routes.push(("a follow-up (POST /conversations/{id})", path));
    Ok(routes)
}

/// POSTs raw bytes with `Content-Type: application/json` plus `headers`.
pub async fn post_bytes(
    ctx: &mut Ctx,
    path: &str,
    bytes: Vec<u8>,
    headers: &[(&str, &str)],
) -> Step<Reply> {
    let mut all = vec![("content-type", "application/json")];
    all.extend_from_slice(headers);
    let r = ctx
        .http(reqwest::Method::POST, path, &all, Some(bytes))
        .await?;
    check_reply(ctx, &r)
}

/// POSTs bytes the server cannot read as a request (malformed JSON, a JSON array):
/// the reply is read as a transport-level one whatever its status, so that a 2xx
/// body, which answers no Agora request, is judged by its status alone (its shape
/// would be a second finding of the same cause).
pub async fn post_unreadable(ctx: &mut Ctx, path: &str, bytes: Vec<u8>) -> Step<Reply> {
    let r = ctx
        .http(
            reqwest::Method::POST,
            path,
            &[("content-type", "application/json")],
            Some(bytes),
        )
        .await?;
    let reading = transport_reply(&r);
    for f in reading.findings {
        ctx.finding(f);
    }
    match reading.reply {
        Ok(r) => Ok(r),
        Err(f) => Err(ctx.block(f)),
    }
}

pub fn unix_now() -> i64 {
    time::OffsetDateTime::now_utc().unix_timestamp()
}

/// Milliseconds of Unix time.
pub fn unix_now_ms() -> i64 {
    (time::OffsetDateTime::now_utc().unix_timestamp_nanos() / 1_000_000) as i64
}

pub fn is_hex40(s: &str) -> bool {
    is_sha1_hex(s)
}

/// The run's adaptation to a target that takes protocol documents only by
/// reference: the rest of the run sends each as a loopback URL. No finding:
/// agora-exchange.txt §6.1 allows "the full text or references".
pub const SOURCES_BY_URL: &str = "agora-exchange/adapted:protocol-sources-url";

fn is_url(s: &str) -> bool {
    s.starts_with("http://") || s.starts_with("https://")
}

/// The request carries protocol documents as text in `protocolSources`.
pub(super) fn text_sources(request: &Value) -> bool {
    request
        .get("protocolSources")
        .and_then(Value::as_array)
        .is_some_and(|a| !a.is_empty() && a.iter().all(|s| s.as_str().is_some_and(|t| !is_url(t))))
}

/// The request with each document of its `protocolSources` replaced by the URL at
/// which the harness serves it on loopback (`Documents`).
async fn by_reference(ctx: &mut Ctx, request: &Value) -> Step<Value> {
    let mut r = request.clone();
    let texts: Vec<String> = r["protocolSources"]
        .as_array()
        .map(|a| {
            a.iter()
                .filter_map(|s| s.as_str().map(String::from))
                .collect()
        })
        .unwrap_or_default();
    let mut urls = Vec::new();
    for t in texts {
        let name = format!("{}.md", sha1_hex(t.as_bytes()));
        match ctx.shared.documents.serve(&name, &t).await {
            Ok(url) => urls.push(json!(url)),
            Err(e) => return crate::case::skip(e),
        }
    }
    ctx.note(format!(
        "protocolSources by reference: the harness serves the document at {}",
        crate::finding::json(&urls)
    ));
    r["protocolSources"] = Value::Array(urls);
    Ok(r)
}

/// POSTs a request whose `protocolSources` holds documents as text, in the form
/// the profile names (`[agora-exchange] protocol_sources`). A refusal in words
/// naming the sources is answered by the same request with the documents by
/// reference; when that is taken, the rest of the run sends references
/// ([`SOURCES_BY_URL`]), with a note and no finding.
pub(super) async fn post_sources(ctx: &mut Ctx, path: &str, request: &Value) -> Step<Reply> {
    let by_url = ctx.profile().agora_exchange.protocol_sources == crate::profile::SourcesForm::Url
        || ctx.shared.adapted.has(SOURCES_BY_URL);
    if by_url {
        let r = by_reference(ctx, request).await?;
        return post_as_is(ctx, path, &r).await;
    }
    let r = post_as_is(ctx, path, request).await?;
    let names_sources = !r.is_success()
        && r.json
            .as_ref()
            .is_some_and(|j| j.to_string().to_ascii_lowercase().contains("source"));
    if !names_sources {
        return Ok(r);
    }
    ctx.note("the refusal names the protocol's sources: the same request once more with the document by reference (agora-exchange.txt §6.1 allows the text or a reference)");
    let referenced = by_reference(ctx, request).await?;
    let retry = post_as_is(ctx, path, &referenced).await?;
    if !retry.is_success() {
        return Ok(r);
    }
    ctx.shared.adapted.adopt(SOURCES_BY_URL);
    ctx.note(format!(
        "the target takes protocol documents by reference only: the text drew {}, the reference {}; the rest of the run sends references ({SOURCES_BY_URL}; set [agora-exchange] protocol_sources = \"url\")",
        r.describe(),
        retry.describe()
    ));
    Ok(retry)
}

/// The cases of this area, in the order they run.
pub const CASES: &[Case] = &[case!(
    "https-transport",
    "exchanges run over HTTPS (plain http:// is informational outside production)",
    ["AEX-001", "AEX-002"],
    Must,
    false,
    |ctx| {
        let r = post(ctx, "", &json!({"protocolHash": null, "body": "ping"})).await?;
        if ctx.url.to_ascii_lowercase().starts_with("https://") {
            // The exchange went over TLS: an https:// request never falls back to plain
            // text, and the harness checked the certificate as the run trusts (none
            // under --insecure). One more handshake says what was negotiated.
            let tls = ctx.shared.tls.clone();
            let verified = if tls.verifies() {
                format!("the certificate verified against {}", tls.trust())
            } else {
                "the certificate was not verified (--insecure)".to_string()
            };
            match tls.handshake(&ctx.url, ctx.limits().timeout).await {
                Ok(h) => ctx.checked(format!(
                    "{} over TLS ({}, {}, ALPN {}); {verified}",
                    r.describe(),
                    h.version,
                    h.cipher_suite,
                    h.alpn.as_deref().unwrap_or("none")
                )),
                Err(e) => {
                    ctx.checked(format!("{} over TLS; {verified}", r.describe()));
                    ctx.note(format!(
                        "a second handshake, to read what TLS negotiated, failed: {e}"
                    ));
                }
            }
            if !tls.verifies() {
                ctx.note("informational: under --insecure the certificate is not judged; --ca-file or the platform's roots judge it");
            }
            return Ok(());
        }
        if ctx.profile().agora_exchange.production {
            return fail(
                "the target is reached over plain http:// in a production profile (AEX-002)",
            );
        }
        ctx.note("informational: the target is reached over plain http://; agora-exchange.txt requires HTTPS in production (AEX-A16)");
        Ok(())
    }
)];

// ---------------------------------------------------------------------------
// Fuzzing

/// What a campaign counts of what it leaves on the target: conversations, which
/// stay until they expire (`fuzz --max-created`).
pub(super) const CONVERSATIONS: &str = "conversations";

/// POSTs `bytes` and applies the reply checks `run` applies (`check_reply`:
/// its shape, a failure's string error, its Content-Type), whose first failing
/// finding stops the case. A 5xx is judged by the caller ([`judge`],
/// [`no_server_error`]): to a request the spec rejects it is the rule of that
/// request's subject, as in `run`; else a crash.
pub(super) async fn fuzz_post(f: &mut FuzzCtx, path: &str, bytes: Vec<u8>) -> FuzzStep<Reply> {
    let from = f.ctx.findings().len();
    // A request that asks for a conversation takes one of the campaign's cap before
    // it is sent, and gives it back when the reply opened none.
    let asks = path.is_empty()
        && serde_json::from_slice::<Value>(&bytes).is_ok_and(|v| v["multiround"] == true);
    if asks {
        f.create(CONVERSATIONS)?;
    }
    let r = post_bytes(&mut f.ctx, path, bytes, &[]).await;
    let opened = r.as_ref().ok().and_then(|r| {
        let j = r.json.as_ref()?;
        j.get("conversationId").filter(|c| !c.is_null())?;
        Some(j["conversationExpires"].as_u64())
    });
    match (asks, opened) {
        (true, None) => f.created.give_back(CONVERSATIONS),
        // Gone by itself once its conversationExpires has passed.
        (true, Some(Some(at))) => f.created.expires(CONVERSATIONS, at.saturating_add(1)),
        _ => {}
    }
    let r = r?;
    if r.http < 500 {
        verdict::rules_since(&f.ctx, from)?;
    }
    Ok(r)
}

pub(super) async fn send(f: &mut FuzzCtx, path: &str, req: Value) -> FuzzStep<Reply> {
    let bytes = serde_json::to_vec(&req).unwrap_or_default();
    f.fuzzed(&bytes);
    fuzz_post(f, path, bytes).await
}
