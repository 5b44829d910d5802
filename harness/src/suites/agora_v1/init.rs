//! What `agentconform init` finds of an agora-v1 provider: the resources its
//! WELCOME lists (a signed HELLO), and among the profile's defaults and those, one
//! it answers with a RESULT (the direct resource) and one it answers with an OFFER
//! (the negotiated resource), each found by one REQUEST as the cases send it.

use super::wire::{message, reply_bytes, request_payload, send};
use crate::init::{DiscoverFuture, Entry};
use crate::script::Ctx;
use serde_json::{json, Value};

const S: &str = "agora-v1";

/// The most resources init sends a REQUEST for.
const MOST_PROBED: usize = 8;

pub fn discover(ctx: &mut Ctx) -> DiscoverFuture<'_> {
    Box::pin(async move {
        let p = ctx.profile().agora_v1.clone();
        let listed = welcome(ctx).await;
        let mut tried: Vec<(String, String)> = Vec::new();
        let mut candidates = vec![p.direct_resource.clone(), p.negotiated_resource.clone()];
        for r in listed.as_ref().map(Vec::as_slice).unwrap_or_default() {
            if !candidates.contains(r) {
                candidates.push(r.clone());
            }
        }
        for r in candidates.into_iter().take(MOST_PROBED) {
            let answer = answer_to(ctx, &r).await;
            tried.push((r, answer));
        }
        let source = match &listed {
            Ok(l) => format!("the WELCOME to a HELLO lists {}", json!(l)),
            Err(why) => why.clone(),
        };
        vec![
            pick(
                &tried,
                &source,
                ("direct_resource", &p.direct_resource, "RESULT"),
            ),
            pick(
                &tried,
                &source,
                ("negotiated_resource", &p.negotiated_resource, "OFFER"),
            ),
        ]
    })
}

/// The resources a WELCOME lists, or why none are known.
async fn welcome(ctx: &mut Ctx) -> Result<Vec<String>, String> {
    let hello = message(ctx, "HELLO", json!({}));
    let reply = send(ctx, hello)
        .await
        .map_err(|_| "a HELLO drew no reply".to_string())?;
    let v = reply_bytes(&reply)
        .and_then(|(b, _)| serde_json::from_slice::<Value>(b).ok())
        .ok_or("a HELLO drew no JSON reply")?;
    if !v["type"]
        .as_str()
        .is_some_and(|t| t.eq_ignore_ascii_case("WELCOME"))
    {
        return Err(format!(
            "a HELLO drew {} (no WELCOME)",
            crate::finding::json(&v["type"])
        ));
    }
    Ok(v["payload"]["resources"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|r| r.as_str().map(String::from))
        .collect())
}

/// The type of the reply to one REQUEST for `resource` (upper case), or what came
/// instead.
async fn answer_to(ctx: &mut Ctx, resource: &str) -> String {
    let req = message(
        ctx,
        "REQUEST",
        request_payload(resource, json!({"text": "init"})),
    );
    let Ok(reply) = send(ctx, req).await else {
        return "no reply".into();
    };
    let v = reply_bytes(&reply).and_then(|(b, _)| serde_json::from_slice::<Value>(b).ok());
    match v.as_ref().and_then(|v| v["type"].as_str()) {
        Some(t) => t.to_ascii_uppercase(),
        None => "a reply that is no envelope".into(),
    }
}

/// The entry for `key`: the default where the provider answers it with `want`
/// (the cases use it), else the first other resource it answers so; else why not.
fn pick(
    tried: &[(String, String)],
    source: &str,
    (key, default, want): (&'static str, &str, &str),
) -> Entry {
    let answered = |r: &str| tried.iter().find(|(t, _)| t == r).map(|(_, a)| a.as_str());
    let a = if want.starts_with('O') { "an" } else { "a" };
    if answered(default) == Some(want) {
        return Entry::found_by_cases(
            S,
            key,
            default.to_string(),
            format!("a REQUEST for it was answered with {a} {want}"),
        );
    }
    if let Some((r, _)) = tried.iter().find(|(r, a)| a == want && r != default) {
        return Entry::found(S, key, r.clone(), format!("{source}; a REQUEST for it was answered with {a} {want} (the default {default:?} drew {})", answered(default).unwrap_or("nothing")));
    }
    // A direct resource that negotiates: the cases accept its OFFER and go on.
    if want == "RESULT" && answered(default) == Some("OFFER") {
        return Entry::found_by_cases(S, key, default.to_string(), "a REQUEST for it was answered with an OFFER, which the cases accept before its RESULT (AV1-A12); no resource the harness tried is answered with a RESULT at once");
    }
    let seen: Vec<String> = tried.iter().map(|(r, a)| format!("{r:?}: {a}")).collect();
    Entry::missing(S, key, format!("{source}; no resource the harness tried was answered with {a} {want} ({}). Set it to a resource the provider answers with {a} {want}.", seen.join(", ")))
}
