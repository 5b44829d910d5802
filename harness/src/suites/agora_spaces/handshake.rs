//! The handshake (agora-spaces.zh.md, 握手): a connection by URL, its agent_id and token,
//! the agent.registered that answers it, refusals; the cases, and the fuzzer's drawn
//! URLs.

use super::connection::{distinct_connections, Peer, Refusal};
use super::errors::{code_of, is_error};
use super::replies::registered_finding;
use super::wire::{
    agent_id, clip, fresh_agent, hex, now_s, rid_of, said_error, timeout, url_for, RATE_LIMITED,
};
use crate::case::{fail, skip, Bindings, Case, Stop};
use crate::drive::Transport;
use crate::fuzzing::spec::FuzzCtx;
use crate::fuzzing::verdict::{finding, FuzzStep, Oracle};
use crate::script::{describe_drive_error, Ctx};
use arbitrary::Arbitrary;
use serde_json::{json, Value};
use std::time::Duration;

/// The cases of this area, in the order they run.
pub const CASES: &[Case] = &[
    case!(
        "handshake",
        "after connecting, agent.registered names the agent and a connection id",
        ["ASP-001", "ASP-002", "ASP-003", "ASP-005", "ASP-007", "ASP-008", "ASP-020"],
        Fact,
        false,
        None,
        |ctx| {
            let me = agent_id("hs");
            let (mut p, reg, unsolicited) = Peer::join_as(ctx, &me).await?;
            if !unsolicited {
                ctx.warn("agent.registered did not arrive unprompted after connecting; it came only in answer to agent.register (ASP-007)");
            }
            if let Some(f) = registered_finding(&reg, &me) {
                return Err(Stop::Finding(f));
            }
            if reg.get("jsonrpc").is_some() {
                ctx.note("events carry a jsonrpc member (informational, ASP-002)");
            }
            p.close().await;
            Ok(())
        }
    ),
    case!(
        "connection-ids-distinct",
        "two connections get different connection ids",
        ["ASP-009"],
        Fact,
        false,
        None,
        |ctx| {
            let (mut a, ra, _) = Peer::join_as(ctx, &agent_id("c1")).await?;
            let (mut b, rb, _) = Peer::join_as(ctx, &agent_id("c2")).await?;
            if let Some(f) = distinct_connections(ctx, &ra, &rb)? {
                return Err(Stop::Finding(f));
            }
            a.close().await;
            b.close().await;
            Ok(())
        }
    ),
    case!(
        "missing-agent-id",
        "a connection without agent_id is refused and never registered",
        ["ASP-004"],
        Must,
        false,
        None,
        |ctx| {
            let token = ctx.profile().target.token.clone();
            let attempt = Peer::attempt(ctx, None, token.as_deref()).await?;
            let what = "a connection without agent_id";
            if let Refusal::Error(v) =
                Peer::expect_refusal(ctx, attempt, what, "ASP-004", None).await?
            {
                // The refusal is the subject; its code is the error shape's (read leniently).
                if !(is_error(&v, "INVALID_REQUEST") || is_error(&v, "UNAUTHORIZED")) {
                    ctx.note(format!("{what} was refused with {} (INVALID_REQUEST or UNAUTHORIZED expected, ASP-A21)", said_error(&v)));
                }
            }
            Ok(())
        }
    ),
    case!(
        "unauthorized",
        "a wrong token draws UNAUTHORIZED and no registration",
        ["ASP-006"],
        Profile,
        false,
        None,
        |ctx| {
            if ctx.profile().target.token.is_none() {
                return skip("the profile sets no token, so the target is taken not to require one ([target] token)");
            }
            let me = agent_id("auth");
            let attempt = Peer::attempt(ctx, Some(&me), Some("h-wrong-token")).await?;
            match Peer::expect_refusal(
                ctx,
                attempt,
                "a connection with a wrong token",
                "ASP-006",
                Some(&me),
            )
            .await?
            {
                Refusal::Error(v) => {
                    let code = code_of(ctx, &v)?;
                    if code != "UNAUTHORIZED" {
                        return fail(format!(
                            "a wrong token drew {}, not UNAUTHORIZED (ASP-006)",
                            said_error(&v)
                        ));
                    }
                }
                Refusal::Http(s) if s != 401 && s != 403 => {
                    ctx.note(format!("a wrong token was refused with HTTP {s} (401 or 403 would say UNAUTHORIZED)"));
                }
                Refusal::Http(_) | Refusal::Closed => {}
            }
            Ok(())
        }
    ),
];

// ---------------------------------------------------------------------------
// Fuzzing

#[derive(Debug, Clone, Default, Arbitrary)]
pub(super) enum AgentIdKind {
    #[default]
    Plain,
    Drawn(String),
    Reserved,
    Unicode,
    Long(u8),
    Empty,
    Missing,
}

#[derive(Debug, Clone, Default, Arbitrary)]
pub(super) enum TokenKind {
    #[default]
    Profile,
    Missing,
    Wrong(String),
}

/// A connection URL with a drawn agent id and token.
pub(super) async fn connect_case(f: &mut FuzzCtx, a: AgentIdKind, t: TokenKind) -> FuzzStep<()> {
    let u = drawn_url(f, &a, &t);
    f.fuzzed(url_for(&f.ctx.url, u.id.as_deref(), u.token.as_deref()).as_bytes());
    let ctx = &mut f.ctx;
    let Some(mut p) = open_drawn(ctx, &u).await? else {
        return Ok(());
    };
    let must_refuse = u.id.is_none() || u.bad_token;
    let wait = timeout(ctx);
    let got = first_registration(ctx, &mut p, &u, must_refuse, wait).await?;
    match got {
        Some(v) if v["type"] == "agent.registered" => judge_url_registered(&v, &u)?,
        Some(v) => judge_url_error(&v, &u)?,
        None => judge_url_silence(p.closed, must_refuse, wait, &u)?,
    }
    p.close().await;
    Ok(())
}

/// A connection URL as drawn: its agent id and token, and the profile's token.
struct DrawnUrl {
    /// The agent_id query value; `None`: the URL has none.
    id: Option<String>,
    /// The token query value; `None`: the URL has none.
    token: Option<String>,
    profile_token: Option<String>,
    /// The profile sets a token and the URL carries another one or none.
    bad_token: bool,
    /// The agent id is a plain one.
    plain: bool,
}

impl DrawnUrl {
    /// A plain agent id with the profile's token: a connection that must work.
    fn must_work(&self) -> bool {
        self.plain && !self.bad_token && self.profile_token == self.token
    }
}

/// Builds the URL's agent id (a fresh suffix drawn first) and token from the kinds
/// drawn.
fn drawn_url(f: &FuzzCtx, a: &AgentIdKind, t: &TokenKind) -> DrawnUrl {
    let suffix = hex(8);
    let id = match a {
        AgentIdKind::Plain => Some(fresh_agent("conn")),
        AgentIdKind::Drawn(s) => Some(format!("{}-{suffix}", clip(s, 32))),
        AgentIdKind::Reserved => Some(format!("fz a&b=c?d#e%f+g/{suffix}")),
        AgentIdKind::Unicode => Some(format!("fz-日本語-🙂-{suffix}")),
        AgentIdKind::Long(n) => Some(format!("fz-{}-{suffix}", "l".repeat(usize::from(*n)))),
        AgentIdKind::Empty => Some(String::new()),
        AgentIdKind::Missing => None,
    };
    let profile_token = f.ctx.profile().target.token.clone();
    let token = match t {
        TokenKind::Profile => profile_token.clone(),
        TokenKind::Missing => None,
        TokenKind::Wrong(s) => Some(format!("fz-wrong-{}", clip(s, 32))),
    };
    let bad_token = profile_token.is_some() && token != profile_token;
    DrawnUrl {
        id,
        token,
        profile_token,
        bad_token,
        plain: matches!(a, AgentIdKind::Plain),
    }
}

/// Opens a connection to the drawn URL; `None` when the upgrade is refused
/// (ambiguity ASP-A21), which is a finding only where the connection must work.
async fn open_drawn(ctx: &mut Ctx, u: &DrawnUrl) -> FuzzStep<Option<Peer>> {
    match Peer::connect_raw(ctx, u.id.as_deref(), u.token.as_deref()).await? {
        // A refusal of the upgrade (ambiguity ASP-A21); a plain connection must work.
        Err(e) if u.must_work() => finding(
            Oracle::Handshake,
            format!(
                "a connection as a plain agent id was refused: {}",
                describe_drive_error(&e)
            ),
        ),
        Err(_) => Ok(None),
        Ok(p) => Ok(Some(p)),
    }
}

/// Waits for agent.registered or an error: unsolicited (for up to 5 s where the
/// connection may be registered, else `wait`), and then, where the connection may
/// be registered and is still open, in answer to an explicit agent.register
/// (ambiguity ASP-A3). `None`: neither arrived.
async fn first_registration(
    ctx: &mut Ctx,
    p: &mut Peer,
    u: &DrawnUrl,
    must_refuse: bool,
    wait: Duration,
) -> FuzzStep<Option<Value>> {
    let first_wait = if must_refuse {
        wait
    } else {
        Duration::from_secs(5)
    };
    let got = p
        .wait_for(ctx, first_wait, |v| {
            v["type"] == "agent.registered" || v["type"] == "error"
        })
        .await?;
    Ok(match got {
        None if !p.closed && !must_refuse => {
            // No unsolicited registration: register explicitly (ambiguity ASP-A3).
            let rid = rid_of("reg");
            let reg = json!({"type": "agent.register", "id": rid, "timestamp": now_s(),
                             "agent": {"id": u.id.clone().unwrap_or_default(), "type": "process", "capabilities": ["text"]}});
            p.send(ctx, &reg).await?;
            p.wait_for(ctx, wait, |v| {
                v["type"] == "agent.registered" || v["type"] == "error"
            })
            .await?
        }
        other => other,
    })
}

/// Judges an agent.registered for the drawn URL: never without agent_id (ASP-004)
/// nor with a wrong or missing token (ASP-006); it names the URL's agent_id
/// (ASP-008).
fn judge_url_registered(v: &Value, u: &DrawnUrl) -> FuzzStep<()> {
    if u.id.is_none() {
        return finding(
            Oracle::Handshake,
            format!("a connection without agent_id was registered (ASP-004): {v}"),
        );
    }
    if u.bad_token {
        return finding(
            Oracle::Auth,
            format!("a connection with a wrong or missing token was registered (ASP-006): {v}"),
        );
    }
    let want = u.id.as_deref().unwrap_or_default();
    if !want.is_empty() && v["agent"]["id"] != want {
        return finding(
            Oracle::Handshake,
            format!(
                "agent.registered names {}, not the URL's agent_id {want:?} (ASP-008)",
                v["agent"]["id"]
            ),
        );
    }
    Ok(())
}

/// Judges an error for the drawn URL (its code and shape are the frame checks'):
/// UNAUTHORIZED for
/// a wrong or missing token (ASP-006); INVALID_REQUEST or UNAUTHORIZED without
/// agent_id (ASP-004); none for a connection that must work. RATE_LIMITED is always
/// allowed.
fn judge_url_error(v: &Value, u: &DrawnUrl) -> FuzzStep<()> {
    let code = v["code"].as_str().unwrap_or_default();
    if u.bad_token && code != "UNAUTHORIZED" && code != RATE_LIMITED {
        return finding(
            Oracle::Auth,
            format!("a wrong or missing token drew {code}, not UNAUTHORIZED (ASP-006)"),
        );
    }
    if u.id.is_none() && !["INVALID_REQUEST", "UNAUTHORIZED", RATE_LIMITED].contains(&code) {
        return finding(
            Oracle::Handshake,
            format!("a connection without agent_id drew {code} (ASP-004)"),
        );
    }
    if u.must_work() {
        return finding(
            Oracle::Handshake,
            format!("a connection as a plain agent id drew {v}"),
        );
    }
    Ok(())
}

/// Judges a connection that drew neither agent.registered nor an error: a close is
/// a finding only where the connection must work; silence where it must be refused
/// (ASP-004, ASP-006), or where a plain agent id with the profile's token was never
/// registered (ASP-007, ASP-011).
fn judge_url_silence(
    closed: bool,
    must_refuse: bool,
    wait: Duration,
    u: &DrawnUrl,
) -> FuzzStep<()> {
    if closed {
        if u.must_work() {
            return finding(
                Oracle::Handshake,
                "the target closed a connection as a plain agent id",
            );
        }
        return Ok(());
    }
    if must_refuse {
        return finding(
            if u.bad_token { Oracle::Auth } else { Oracle::Handshake },
            format!("a connection that must not be registered drew neither an error nor a close within {} ms (ASP-004, ASP-006)", wait.as_millis()),
        );
    }
    if u.plain && u.profile_token == u.token {
        return finding(Oracle::Handshake, "no agent.registered, neither after connecting nor in answer to agent.register (ASP-007, ASP-011)");
    }
    Ok(())
}
