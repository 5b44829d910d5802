//! What `agentconform init` finds of an agora-spaces hub: whether it wants a
//! connection token, a public space two connections can join and a space of
//! capacity 1 among those it lists (space.list), and whether it creates a space
//! on join (ambiguity ASP-A8 allows either; the cases that need a space of
//! their own skip where it does not).

use crate::init::{DiscoverFuture, Entry};
use crate::script::Ctx;
use crate::suites::agora_spaces::connection::{Attempt, Peer};
use crate::suites::agora_spaces::wire::{said_error, user_space};
use serde_json::{json, Value};

const S: &str = "agora-spaces";

pub fn discover(ctx: &mut Ctx) -> DiscoverFuture<'_> {
    Box::pin(async move {
        let mut out = Vec::new();
        let token = ctx.profile().target.token.clone();
        let id = format!("init-{}", &reference_impl::wire::new_id()[..8]);
        match Peer::attempt(ctx, Some(&id), token.as_deref()).await {
            Ok(Attempt::Open(mut p)) => {
                match token {
                    Some(t) => out.push(Entry::found("target", "token", t, "the hub took a connection with the token the profile given to init names")),
                    None => out.push(Entry::missing("target", "token", "the hub took a connection without a token: none is needed (the UNAUTHORIZED case is skipped without one)")),
                }
                public_space(ctx, &mut p, &mut out).await;
                p.close().await;
            }
            Ok(Attempt::Refused(s)) => out.push(Entry::missing("target", "token", format!("the hub refused a connection with HTTP {s}: set it to the connection token the hub wants"))),
            _ => out.push(Entry::missing("target", "token", "a WebSocket connection to the hub could not be opened")),
        }
        if !out.iter().any(|e| e.name() == (S, "full_space")) {
            out.push(no_full_space("no connection to the hub could be opened"));
        }
        out
    })
}

/// The spaces a space.list reply names.
fn listed(v: &Value) -> Vec<String> {
    v["spaces"]
        .as_array()
        .map(|a| {
            a.iter()
                .filter_map(|s| s["id"].as_str().or_else(|| s.as_str()))
                .map(String::from)
                .collect()
        })
        .unwrap_or_default()
}

/// A user space name (`[a-z0-9_-]+`), not one of the harness's fresh ones.
fn is_user_space(name: &str) -> bool {
    !name.is_empty()
        && !name.starts_with("h_")
        && name
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'_' || b == b'-')
}

/// Whether the probe's connection can join `space`: the answer to a space.join
/// (left again when joined and `leave`), or none the harness could read.
async fn joins(ctx: &mut Ctx, p: &mut Peer, space: &str, id: &str, leave: bool) -> Option<Value> {
    let wait = Peer::case_wait(ctx);
    p.send(
        ctx,
        &json!({"type": "space.join", "id": id, "space": space}),
    )
    .await
    .ok()?;
    let v = p
        .wait_for(ctx, wait, |v| v["id"] == id || v["request_id"] == id)
        .await
        .ok()
        .flatten()?;
    if leave && v["type"] == "space.joined" {
        let _ = p
            .send(
                ctx,
                &json!({"type": "space.leave", "id": format!("{id}-leave"), "space": space}),
            )
            .await;
    }
    Some(v)
}

/// What two connections' joins of a space show: both taken (a space cases can
/// share), the second refused SPACE_FULL (a space of capacity 1), or why not.
enum Shared {
    Both,
    Full,
    Not(String),
}

async fn two_join(ctx: &mut Ctx, p: &mut Peer, q: &mut Peer, space: &str, i: usize) -> Shared {
    let first = joins(ctx, p, space, &format!("init-a{i}"), false).await;
    match first {
        Some(v) if v["type"] == "space.joined" => {}
        Some(v) => return Shared::Not(said_error(&v)),
        None => return Shared::Not("no answer".into()),
    }
    let second = joins(ctx, q, space, &format!("init-b{i}"), true).await;
    let _ = p
        .send(
            ctx,
            &json!({"type": "space.leave", "id": format!("init-a{i}-leave"), "space": space}),
        )
        .await;
    match second {
        Some(v) if v["type"] == "space.joined" => Shared::Both,
        Some(v) if v["code"] == "SPACE_FULL" => Shared::Full,
        Some(v) => Shared::Not(format!("a second member: {}", said_error(&v))),
        None => Shared::Not("a second member: no answer".into()),
    }
}

/// The public space: the profile's when the hub lists it and two connections
/// can join it, else the first user space it lists that they can; a listed space
/// a second member cannot join for SPACE_FULL is the full space; and whether a
/// join of a fresh name creates the space.
async fn public_space(ctx: &mut Ctx, p: &mut Peer, out: &mut Vec<Entry>) {
    let creates = match joins(ctx, p, &user_space(), "init-join", true).await {
        Some(v) if v["type"] == "space.joined" => "the hub creates a space on join",
        Some(v) if v["code"] == "SPACE_NOT_FOUND" => "the hub does not create a space on join (SPACE_NOT_FOUND; ambiguity ASP-A8 allows it): the cases that need a space of their own skip, and the others run in this one",
        _ => "whether the hub creates a space on join is not known (no answer the harness could read)",
    };
    let default = ctx.profile().agora_spaces.public_space.clone();
    let wait = Peer::case_wait(ctx);
    let list = match p
        .send(ctx, &json!({"type": "space.list", "id": "init-list"}))
        .await
    {
        Ok(()) => p
            .wait_for(ctx, wait, |v| {
                v["type"] == "space.list" && v["id"] == "init-list"
            })
            .await
            .ok()
            .flatten(),
        Err(_) => None,
    };
    let Some(list) = list else {
        out.push(Entry::missing(S, "public_space", format!("space.list drew no answer the harness could read; the default {default:?} is used. Set it to a space the hub serves ({creates}).")));
        out.push(no_full_space(
            "space.list drew no answer the harness could read",
        ));
        return;
    };
    let names = listed(&list);
    let token = ctx.profile().target.token.clone();
    let id = format!("init-{}", &reference_impl::wire::new_id()[..8]);
    let mut q = match Peer::attempt(ctx, Some(&id), token.as_deref()).await {
        Ok(Attempt::Open(q)) => *q,
        _ => {
            out.push(Entry::missing(S, "public_space", format!("a second connection could not be opened to try a space with two members; the default {default:?} is used ({creates}).")));
            return;
        }
    };
    let mut refused = Vec::new();
    let (mut public, mut full) = (None, None);
    let candidates = names
        .iter()
        .filter(|s| **s == default)
        .chain(names.iter().filter(|s| **s != default && is_user_space(s)));
    for (i, s) in candidates.take(8).enumerate() {
        match two_join(ctx, p, &mut q, s, i).await {
            Shared::Both if public.is_none() => public = Some(s.clone()),
            Shared::Both => {}
            Shared::Full if full.is_none() => full = Some(s.clone()),
            Shared::Full => {}
            Shared::Not(why) => refused.push(format!("{s}: {why}")),
        }
        if public.is_some() && full.is_some() {
            break;
        }
    }
    q.close().await;
    out.push(match public {
        Some(s) if s == default => Entry::found_by_cases(S, "public_space", s, format!("space.list lists it and two connections joined it; {creates}")),
        Some(s) => Entry::found(S, "public_space", s, format!("space.list lists no {default:?} two connections can join, but this user space, which they joined; {creates}")),
        None => Entry::missing(S, "public_space", format!("space.list lists no user space two connections can join (listed: {}; refused: {}); the default {default:?} is used. Set it to a space the hub serves ({creates}).", crate::finding::json(&names), refused.join(", "))),
    });
    out.push(match full {
        Some(s) => Entry::found(
            S,
            "full_space",
            s,
            "space.list lists it, one connection joined it and a second drew SPACE_FULL",
        ),
        None => no_full_space(
            "no listed space took one connection and refused a second with SPACE_FULL",
        ),
    });
}

fn no_full_space(why: &str) -> Entry {
    Entry::missing(S, "full_space", format!("{why}: set it to a space of capacity 1 the hub serves, or leave it unset (the SPACE_FULL case is skipped)"))
}
