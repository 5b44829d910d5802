//! Agent events (agora-spaces.zh.md, agent.register, agent.registered,
//! agent.heartbeat): the registration cases, and the fuzzer's registrations, duplicates
//! and capacity.

use super::connection::{connect, Peer, Refusal};
use super::errors::{
    answers, barrier, check_error, check_request_id, code_of, expected_event, invalid, is_answer,
    only, open, Shows, St, Want,
};
use super::replies::registered_finding;
use super::wire::{agent_id, fresh_agent, now_s, rid_of, said_error, timeout, RATE_LIMITED};
use crate::case::{fail, fail_rows, Bindings, Case, Step};
use crate::drive::Transport;
use crate::fuzzing::spec::FuzzCtx;
use crate::fuzzing::verdict::{
    finding, first_failing, skip as fuzz_skip, Codes, Expected, FuzzStep, Oracle,
};
use crate::script::Ctx;
use arbitrary::Arbitrary;
use serde_json::{json, Value};

/// The cases of this area, in the order they run.
pub const CASES: &[Case] = &[
    case!(
        "register-explicit",
        "agent.register is answered by agent.registered with the same id",
        ["ASP-010", "ASP-011", "ASP-021"],
        Fact,
        false,
        None,
        |ctx| {
            let me = agent_id("reg");
            let (mut p, _, _) = Peer::join_as(ctx, &me).await?;
            let reg = json!({"type": "agent.register", "id": "h-1", "timestamp": now_s(),
                         "agent": {"id": me, "type": "process", "capabilities": ["text", "code_execution"], "metadata": {"version": "1.0.0"}}});
            p.send(ctx, &reg).await?;
            let v = p
                .expect(ctx, "an answer to agent.register", |v| answers(v, "h-1"))
                .await?;
            if v["type"] == "error" {
                if code_of(ctx, &v)? == "AGENT_EXISTS" {
                    ctx.note(
                        "an already registered connection answered AGENT_EXISTS (allowed, ASP-010)",
                    );
                    return Ok(());
                }
                return fail(format!(
                    "agent.register drew {}; only AGENT_EXISTS may refuse it (ASP-010)",
                    said_error(&v)
                ));
            }
            if v["type"] != "agent.registered" {
                return fail(format!("agent.register drew {v} (ASP-010)"));
            }
            Ok(())
        }
    ),
    case!(
        "register-invalid",
        "agent.register with capabilities \"text\" draws INVALID_REQUEST with its id",
        ["ASP-012", "ASP-041"],
        Fact,
        false,
        None,
        |ctx| {
            let me = agent_id("inv");
            let (mut p, _, _) = Peer::join_as(ctx, &me).await?;
            let reg = json!({"type": "agent.register", "id": "h-bad-reg", "agent": {"id": me, "capabilities": "text"}});
            p.send(ctx, &reg).await?;
            let v = p
                .expect(ctx, "an answer to the malformed agent.register", |v| {
                    v["type"] == "error"
                        || (v["type"] == "agent.registered" && v["id"] == "h-bad-reg")
                })
                .await?;
            if v["type"] == "agent.registered" {
                return fail(format!("an agent.register whose capabilities is a string was registered (ASP-012): {v}"));
            }
            check_request_id(ctx, &v, "h-bad-reg");
            let code = code_of(ctx, &v)?;
            if code != "INVALID_REQUEST" {
                return fail(format!(
                    "the malformed agent.register drew {}, not INVALID_REQUEST (ASP-012)",
                    said_error(&v)
                ));
            }
            Ok(())
        }
    ),
    case!(
        "duplicate-agent",
        "a second connection with a live agent_id draws AGENT_EXISTS",
        ["ASP-013"],
        Fact,
        false,
        None,
        |ctx| {
            let me = agent_id("dup");
            let (mut a, _, unsolicited) = Peer::join_as(ctx, &me).await?;
            let token = ctx.profile().target.token.clone();
            let attempt = Peer::attempt(ctx, Some(&me), token.as_deref()).await?;
            let what = format!("a second connection as the live agent {me}");
            let register = (!unsolicited).then_some(me.as_str());
            // Both ways of claiming a live id are judged (ASP-013), each a row.
            let mut wrong = Vec::new();
            match Peer::expect_refusal(ctx, attempt, &what, "ASP-013", register).await? {
                Refusal::Error(v) => {
                    let code = code_of(ctx, &v)?;
                    if code != "AGENT_EXISTS" {
                        wrong.push(format!("{what} drew {}", said_error(&v)));
                    }
                }
                Refusal::Http(s) => ctx.note(format!("{what} was refused with HTTP {s} (ASP-A21)")),
                Refusal::Closed => {}
            }
            // The same id claimed by agent.register from a connection of another agent.
            let (mut c, _, _) = Peer::join_as(ctx, &agent_id("dup-other")).await?;
            let v = register_on(
                ctx,
                &mut c,
                ("h-dup", &me),
                "an answer to agent.register for the live agent",
            )
            .await?;
            let drew = if v["type"] == "error" {
                let code = code_of(ctx, &v)?;
                (code != "AGENT_EXISTS").then(|| said_error(&v))
            } else {
                Some(v.to_string())
            };
            wrong.extend(drew.map(|d| {
                format!("agent.register for the live agent {me} from another connection drew {d}")
            }));
            wrong.extend(taken_by_register(ctx, token.as_deref(), register.is_some()).await?);
            a.close().await;
            c.close().await;
            fail_rows(
                "a live agent_id was claimed without AGENT_EXISTS (ASP-013)",
                &wrong,
            )
        }
    ),
];

/// agent.register for `id`, under request id `rid`, as the harness sends it.
pub(super) fn register_msg(rid: &str, id: &str) -> Value {
    json!({"type": "agent.register", "id": rid, "timestamp": now_s(),
           "agent": {"id": id, "type": "process", "capabilities": ["text"], "metadata": {}}})
}

/// Sends agent.register for `id` (request id `rid`) on `p`; the answer to it.
async fn register_on(
    ctx: &mut Ctx,
    p: &mut Peer,
    (rid, id): (&str, &str),
    what: &str,
) -> Step<Value> {
    p.send(ctx, &register_msg(rid, id)).await?;
    let rid = rid.to_string();
    p.expect(ctx, what, move |v| answers(v, &rid)).await
}

/// An id a connection took by agent.register, answered agent.registered for it, is
/// held from then on: a new connection as that id is refused as any live id is
/// (ASP-013). Whether agent.register may name another id than the connection's is
/// the target's choice (ambiguity ASP-A3): refused, nothing more is judged. The
/// wrong row, if any.
async fn taken_by_register(
    ctx: &mut Ctx,
    token: Option<&str>,
    register: bool,
) -> Step<Option<String>> {
    let (mut d, _, _) = Peer::join_as(ctx, &agent_id("dup-from")).await?;
    let taken = agent_id("dup-taken");
    let v = register_on(
        ctx,
        &mut d,
        ("h-dup-take", &taken),
        "an answer to agent.register for another id",
    )
    .await?;
    if !(v["type"] == "agent.registered" && v["agent"]["id"] == taken.as_str()) {
        ctx.note(format!(
            "agent.register for another id than the connection's drew {} (informational, ASP-A3)",
            crate::finding::quote(&v.to_string())
        ));
        d.close().await;
        return Ok(None);
    }
    let attempt = Peer::attempt(ctx, Some(&taken), token).await?;
    let what = format!("a new connection as {taken}, which another connection took by agent.register and was answered agent.registered for");
    let judged = Peer::expect_refusal(
        ctx,
        attempt,
        &what,
        "ASP-013",
        register.then_some(taken.as_str()),
    )
    .await;
    let row = match judged {
        Ok(Refusal::Error(e)) => {
            let code = code_of(ctx, &e)?;
            (code != "AGENT_EXISTS").then(|| format!("{what} drew {}", said_error(&e)))
        }
        Ok(_) => None,
        Err(stop) => ctx.row(Err(stop))?,
    };
    d.close().await;
    Ok(row)
}

// ---------------------------------------------------------------------------
// Fuzzing

#[derive(Debug, Clone, Copy, Default, Arbitrary)]
pub(super) enum AgentField {
    #[default]
    Id,
    Type,
    Capabilities,
    Metadata,
}

impl AgentField {
    pub(super) fn key(self) -> &'static str {
        match self {
            AgentField::Id => "id",
            AgentField::Type => "type",
            AgentField::Capabilities => "capabilities",
            AgentField::Metadata => "metadata",
        }
    }
}

#[derive(Debug, Clone, Copy, Default, Arbitrary)]
pub(super) enum DupKind {
    #[default]
    Reconnect,
    RegisterOther,
    TakenByRegister,
}

pub(super) fn want_register(msg: &serde_json::Map<String, Value>, st: &St) -> Want {
    let Some(agent) = msg.get("agent").and_then(Value::as_object) else {
        return Expected::Reject(invalid());
    };
    let mut unsure = false;
    let mut bad = false;
    match agent.get("id") {
        None | Some(Value::Null) => unsure = true,
        Some(Value::String(s)) if !s.is_empty() => {}
        Some(_) => bad = true,
    }
    match agent.get("capabilities") {
        None => {}
        Some(Value::Null) => unsure = true,
        Some(Value::Array(a)) if a.iter().all(Value::is_string) => {}
        Some(_) => bad = true,
    }
    match agent.get("metadata") {
        None | Some(Value::Object(_)) => {}
        Some(Value::Null) => unsure = true,
        Some(_) => bad = true,
    }
    if !agent.get("type").is_none_or(Value::is_string) {
        unsure = true;
    }
    if bad {
        return Expected::Reject(invalid());
    }
    if unsure {
        return open("a null or non-string member the spec does not judge");
    }
    if agent.get("id").and_then(Value::as_str) == Some(st.me.as_str()) {
        Expected::Accept(Shows::Registered, only(&["AGENT_EXISTS"]))
    } else {
        open("another id than the URL's is informational (ambiguity ASP-A3)")
    }
}

/// Judges an answer due to be agent.registered: an error `codes` allow, or
/// agent.registered echoing the id (ASP-010, ASP-011) that [`registered_finding`]
/// passes (ASP-008).
pub(super) fn judge_registered(
    answer: &Value,
    codes: &Codes<&'static str>,
    rid: Option<&str>,
    what: &str,
    me: &str,
) -> FuzzStep<()> {
    let reqs = "ASP-010, ASP-011";
    if !expected_event(answer, codes, what, "agent.registered", reqs, rid)? {
        return Ok(());
    }
    first_failing(registered_finding(answer, me).into_iter().collect())
}

/// A second connection as the live agent `me`, which must be refused (ASP-013);
/// `unsolicited`: the target sends agent.registered without being asked.
async fn reconnect_as(f: &mut FuzzCtx, me: &str, unsolicited: bool) -> FuzzStep<()> {
    f.fuzzed(format!("a second connection as {me}").as_bytes());
    let ctx = &mut f.ctx;
    let token = ctx.profile().target.token.clone();
    let mut b = match Peer::connect_raw(ctx, Some(me), token.as_deref()).await? {
        // A refusal of the upgrade (ambiguity ASP-A21).
        Err(_) => return Ok(()),
        Ok(b) => b,
    };
    let rid = rid_of("reg");
    if !unsolicited {
        let reg = register_msg(&rid, me);
        b.send(ctx, &reg).await?;
    }
    let wait = timeout(ctx);
    let got = b
        .wait_for(ctx, wait, |v| {
            v["type"] == "agent.registered" || v["type"] == "error"
        })
        .await?;
    match got {
        Some(v) if v["type"] == "agent.registered" && v["agent"]["id"] == me => {
            finding(Oracle::Duplicate, format!("a second connection as live agent {me} was registered (ASP-013): {v}"))
        }
        Some(v) if v["type"] == "error" && v["code"] != "AGENT_EXISTS" && v["code"] != RATE_LIMITED => {
            finding(Oracle::Duplicate, format!("a second connection as live agent {me} drew {v}, not AGENT_EXISTS (ASP-013)"))
        }
        Some(v) if v["type"] == "error" && !unsolicited => check_error(ctx, &v, Some(&rid)),
        Some(_) => Ok(()),
        None if b.closed => Ok(()),
        None => finding(
            Oracle::Duplicate,
            format!("a second connection as live agent {me} drew neither AGENT_EXISTS nor a close within {} ms (ASP-013)", wait.as_millis()),
        ),
    }?;
    b.close().await;
    Ok(())
}

/// A live agent id used a second time.
pub(super) async fn duplicate(f: &mut FuzzCtx, d: DupKind) -> FuzzStep<()> {
    let me = fresh_agent("dup");
    let ctx = &mut f.ctx;
    let (mut a, _, unsolicited) = Peer::join_as(ctx, &me).await?;
    match d {
        DupKind::Reconnect => reconnect_as(f, &me, unsolicited).await?,
        DupKind::TakenByRegister => {
            // An id taken by agent.register and answered agent.registered is held
            // as any live id is (the duplicate-agent case's row).
            let taken = fresh_agent("dup3");
            let rid = rid_of("reg");
            let reg = register_msg(&rid, &taken);
            a.send(&mut f.ctx, &reg).await?;
            let (frames, _) = barrier(&mut f.ctx, &mut a, true).await?;
            if frames
                .iter()
                .any(|v| v["type"] == "agent.registered" && v["agent"]["id"] == taken.as_str())
            {
                reconnect_as(f, &taken, unsolicited).await?;
            }
        }
        DupKind::RegisterOther => {
            let other = fresh_agent("dup2");
            let (mut b, _) = connect(ctx, &other).await?;
            let rid = rid_of("reg");
            let reg = register_msg(&rid, &me);
            let bytes = reg.to_string();
            f.fuzzed(bytes.as_bytes());
            let ctx = &mut f.ctx;
            b.send_text(ctx, bytes).await?;
            let (frames, _) = barrier(ctx, &mut b, true).await?;
            for v in &frames {
                if v["type"] == "error" {
                    check_error(ctx, v, Some(&rid))?;
                }
                if v["type"] == "agent.registered" && v["agent"]["id"] == me.as_str() {
                    return finding(Oracle::Duplicate, format!("agent.register of live agent {me} from another connection was registered (ASP-013): {v}"));
                }
            }
            b.close().await;
        }
    }
    a.close().await;
    Ok(())
}

/// While one agent holds the full space (capacity 1), another's join draws
/// SPACE_FULL (ASP-044).
pub(super) async fn capacity(f: &mut FuzzCtx) -> FuzzStep<()> {
    let Some(full) = f.ctx.profile().agora_spaces.full_space.clone() else {
        return fuzz_skip("the profile names no full_space (a space of capacity 1)");
    };
    let ctx = &mut f.ctx;
    let (mut a, _) = connect(ctx, &fresh_agent("cap")).await?;
    let (mut b, _) = connect(ctx, &fresh_agent("cap2")).await?;
    let jid = rid_of("join");
    a.send(
        ctx,
        &json!({"type": "space.join", "id": jid, "space": full, "timestamp": now_s()}),
    )
    .await?;
    let v = a
        .expect(ctx, &format!("an answer to joining {full}"), is_answer)
        .await?;
    if v["type"] == "error" {
        // Another case holds the space: SPACE_FULL is right, and nothing more to see.
        check_error(ctx, &v, Some(&jid))?;
        return if v["code"] == "SPACE_FULL" || v["code"] == RATE_LIMITED {
            Ok(())
        } else {
            finding(Oracle::Verdict, format!("joining {full} drew {v}"))
        };
    }
    let jid2 = rid_of("join");
    let msg = json!({"type": "space.join", "id": jid2, "space": full, "timestamp": now_s()});
    f.fuzzed(msg.to_string().as_bytes());
    let ctx = &mut f.ctx;
    b.send(ctx, &msg).await?;
    let v = b
        .expect(
            ctx,
            &format!("an answer to a second join of {full}"),
            is_answer,
        )
        .await?;
    if v["type"] != "error" {
        return finding(
            Oracle::Capacity,
            format!(
                "a second agent joined {full} (capacity 1) while the first holds it (ASP-044): {v}"
            ),
        );
    }
    check_error(ctx, &v, Some(&jid2))?;
    if v["code"] != "SPACE_FULL" && v["code"] != RATE_LIMITED {
        return finding(
            Oracle::Capacity,
            format!(
                "a second join of {full} (capacity 1) drew {}, not SPACE_FULL (ASP-044)",
                v["code"]
            ),
        );
    }
    a.close().await;
    b.close().await;
    Ok(())
}
