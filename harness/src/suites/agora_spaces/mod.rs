//! The agora-spaces suite (agora-spaces.zh.md): the descriptor and the cases; its reply checks and counterparts are in `expect`, its fuzz specs in `fuzz`.

pub mod client;
pub mod expect;
pub mod fuzz;
pub mod in_process;
pub mod init;
pub mod load;
pub mod rules;
pub mod tamper;

use crate::case::{fail, fail_rows, skip, Bindings, Case, Stop, Suite, Untestable};
use crate::drive::Transport;
use crate::finding::quote;
use crate::profile::Profile;
use crate::script::{describe_drive_error, Ctx};
use crate::suites::agora_spaces::expect::*;
use serde_json::{json, Value};
use std::time::Duration;

macro_rules! case {
    ($id:literal, $title:literal, [$($req:literal),* $(,)?], $level:ident, $slow:expr, $fast_when:expr,
     |$ctx:ident| $body:block) => {
        crate::define_case!("agora-spaces", $id, $title, [$($req),*], $level, Bindings::Only(Transport::Ws), $slow, $fast_when, |$ctx| $body)
    };
}

pub static SUITE: Suite = Suite {
    id: "agora-spaces",
    prefix: "ASP",
    cases: CASES,
    untestable: UNTESTABLE,
    transports: &[Transport::Ws],
    endpoint_paths: &[],
    faults: reference_impl::agora_spaces::faults::FAULTS,
    start: crate::embedded::agora_spaces,
    signing: None,
    schemas: SCHEMAS,
    client_cases: CLIENT_CASES,
    client_faults: reference_impl::agora_spaces::client::CLIENT_FAULTS,
    reread: crate::suites::agora_spaces::expect::reread,
    rules: rules::RULES,
    reference_client: client::REFERENCE,
    tampers: crate::suites::agora_spaces::tamper::TAMPERS,
    // WebSocket only: every frame is judged.
    defined: None,
    reply_to: None,
    client_message: Some(expect::proxy_client),
};

/// What the engines above the case model take of the suite.
pub static PARTS: crate::suites::Parts = crate::suites::Parts {
    suite: &SUITE,
    fuzzer: &crate::suites::agora_spaces::fuzz::SPEC,
    client_fuzzer: Some(&crate::suites::agora_spaces::fuzz::CLIENT_SPEC),
    discover: Some(crate::suites::agora_spaces::init::discover),
    load: Some(load::PLAN),
    in_process: in_process::TARGETS,
};

/// Every requirement has a case: ASP-037 (a client discards a cancelled stream) is
/// judged in the client role.
pub const UNTESTABLE: &[Untestable] = &[];

/// The heartbeat timeout is short enough to test without --include-slow.
fn short_heartbeat(p: &Profile) -> bool {
    p.timing.heartbeat_timeout_s <= 10
}

const SHORT: Duration = Duration::from_millis(700);

fn text_of(len: usize) -> String {
    // Multi-byte characters, so that chunk boundaries are tested too.
    let unit = "chorus of agents · 日本語 · 🙂 · ";
    unit.repeat(len / unit.len() + 1)
        .chars()
        .take(len)
        .collect()
}

/// How many members space.list counts in `space`, asked by `p`: `None` when the
/// reply does not say (no such entry, or no member_count).
async fn member_count(ctx: &mut Ctx, p: &mut Peer, space: &str) -> crate::case::Step<Option<u64>> {
    p.send(ctx, &json!({"type": "space.list", "id": "h-count"}))
        .await?;
    let list = p
        .expect(ctx, "space.list with id h-count", |v| {
            v["type"] == "space.list" && v["id"] == "h-count"
        })
        .await?;
    let entry = list["spaces"]
        .as_array()
        .and_then(|a| a.iter().find(|e| e["id"] == space));
    Ok(entry.and_then(|e| e["member_count"].as_u64()))
}

/// Judges that `space`, where the agent `gone` was alone before its connection ended,
/// no longer has it as a member: `p` joins it, and neither its space.joined nor
/// space.list counts `gone` (ASP-052, ASP-040).
async fn judge_no_ghost(
    ctx: &mut Ctx,
    p: &mut Peer,
    space: &str,
    gone: &str,
) -> crate::case::Step<()> {
    let joined = p.join(ctx, space).await?;
    let listed = joined["members"]
        .as_array()
        .is_some_and(|m| m.iter().any(|x| x == gone));
    let count = member_count(ctx, p, space).await?;
    let mut said = Vec::new();
    if listed {
        said.push(format!(
            "space.joined lists {gone:?} among its members: {}",
            crate::finding::json(&joined["members"])
        ));
    }
    if let Some(n) = count.filter(|n| *n > 1) {
        said.push(format!("space.list counts {n} members"));
    }
    if said.is_empty() {
        ctx.checked(format!(
            "{space}, where C was alone, no longer has C as a member"
        ));
    } else {
        ctx.deviation(rules::DISCONNECT_IS_DEPARTURE_GHOST.found(format!("C was alone in {space} when its connection ended; a later joiner finds it still there: {}", said.join("; "))));
    }
    Ok(())
}

pub const CASES: &[Case] = &[
    case!("handshake", "after connecting, agent.registered names the agent and a connection id",
        ["ASP-001", "ASP-002", "ASP-003", "ASP-005", "ASP-007", "ASP-008", "ASP-020"], Fact, false, None, |ctx| {
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
    }),
    case!("register-explicit", "agent.register is answered by agent.registered with the same id", ["ASP-010", "ASP-011", "ASP-021"], Fact, false, None, |ctx| {
        let me = agent_id("reg");
        let (mut p, _, _) = Peer::join_as(ctx, &me).await?;
        let reg = json!({"type": "agent.register", "id": "h-1", "timestamp": now_s(),
                         "agent": {"id": me, "type": "process", "capabilities": ["text", "code_execution"], "metadata": {"version": "1.0.0"}}});
        p.send(ctx, &reg).await?;
        let v = p.expect(ctx, "an answer to agent.register", |v| answers(v, "h-1")).await?;
        if v["type"] == "error" {
            if code_of(ctx, &v)? == "AGENT_EXISTS" {
                ctx.note("an already registered connection answered AGENT_EXISTS (allowed, ASP-010)");
                return Ok(());
            }
            return fail(format!("agent.register drew {}; only AGENT_EXISTS may refuse it (ASP-010)", said_error(&v)));
        }
        if v["type"] != "agent.registered" {
            return fail(format!("agent.register drew {v} (ASP-010)"));
        }
        Ok(())
    }),
    case!("connection-ids-distinct", "two connections get different connection ids", ["ASP-009"], Fact, false, None, |ctx| {
        let (mut a, ra, _) = Peer::join_as(ctx, &agent_id("c1")).await?;
        let (mut b, rb, _) = Peer::join_as(ctx, &agent_id("c2")).await?;
        if let Some(f) = distinct_connections(ctx, &ra, &rb)? {
            return Err(Stop::Finding(f));
        }
        a.close().await;
        b.close().await;
        Ok(())
    }),
    case!("register-invalid", "agent.register with capabilities \"text\" draws INVALID_REQUEST with its id", ["ASP-012", "ASP-041"], Fact, false, None, |ctx| {
        let me = agent_id("inv");
        let (mut p, _, _) = Peer::join_as(ctx, &me).await?;
        let reg = json!({"type": "agent.register", "id": "h-bad-reg", "agent": {"id": me, "capabilities": "text"}});
        p.send(ctx, &reg).await?;
        let v = p.expect(ctx, "an answer to the malformed agent.register", |v| {
            v["type"] == "error" || (v["type"] == "agent.registered" && v["id"] == "h-bad-reg")
        }).await?;
        if v["type"] == "agent.registered" {
            return fail(format!("an agent.register whose capabilities is a string was registered (ASP-012): {v}"));
        }
        check_request_id(ctx, &v, "h-bad-reg");
        let code = code_of(ctx, &v)?;
        if code != "INVALID_REQUEST" {
            return fail(format!("the malformed agent.register drew {}, not INVALID_REQUEST (ASP-012)", said_error(&v)));
        }
        Ok(())
    }),
    case!("missing-agent-id", "a connection without agent_id is refused and never registered", ["ASP-004"], Must, false, None, |ctx| {
        let token = ctx.profile().target.token.clone();
        let attempt = Peer::attempt(ctx, None, token.as_deref()).await?;
        let what = "a connection without agent_id";
        if let Refusal::Error(v) = Peer::expect_refusal(ctx, attempt, what, "ASP-004", None).await? {
            // The refusal is the subject; its code is the error shape's (read leniently).
            if !(is_error(&v, "INVALID_REQUEST") || is_error(&v, "UNAUTHORIZED")) {
                ctx.note(format!("{what} was refused with {} (INVALID_REQUEST or UNAUTHORIZED expected, ASP-A21)", said_error(&v)));
            }
        }
        Ok(())
    }),
    case!("unauthorized", "a wrong token draws UNAUTHORIZED and no registration", ["ASP-006"], Profile, false, None, |ctx| {
        if ctx.profile().target.token.is_none() {
            return skip("the profile sets no token, so the target is taken not to require one ([target] token)");
        }
        let me = agent_id("auth");
        let attempt = Peer::attempt(ctx, Some(&me), Some("h-wrong-token")).await?;
        match Peer::expect_refusal(ctx, attempt, "a connection with a wrong token", "ASP-006", Some(&me)).await? {
            Refusal::Error(v) => {
                let code = code_of(ctx, &v)?;
                if code != "UNAUTHORIZED" {
                    return fail(format!("a wrong token drew {}, not UNAUTHORIZED (ASP-006)", said_error(&v)));
                }
            }
            Refusal::Http(s) if s != 401 && s != 403 => {
                ctx.note(format!("a wrong token was refused with HTTP {s} (401 or 403 would say UNAUTHORIZED)"));
            }
            Refusal::Http(_) | Refusal::Closed => {}
        }
        Ok(())
    }),
    case!("duplicate-agent", "a second connection with a live agent_id draws AGENT_EXISTS", ["ASP-013"], Fact, false, None, |ctx| {
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
        let reg = json!({"type": "agent.register", "id": "h-dup", "timestamp": now_s(),
                         "agent": {"id": me, "type": "process", "capabilities": ["text"], "metadata": {}}});
        c.send(ctx, &reg).await?;
        let v = c.expect(ctx, "an answer to agent.register for the live agent", |v| answers(v, "h-dup")).await?;
        let drew = if v["type"] == "error" {
            let code = code_of(ctx, &v)?;
            (code != "AGENT_EXISTS").then(|| said_error(&v))
        } else {
            Some(v.to_string())
        };
        wrong.extend(drew.map(|d| format!("agent.register for the live agent {me} from another connection drew {d}")));
        a.close().await;
        c.close().await;
        fail_rows("a live agent_id was claimed without AGENT_EXISTS (ASP-013)", &wrong)
    }),
    case!("join-general", "joining the public space echoes the id and lists the joiner", ["ASP-022", "ASP-023"], Fact, false, None, |ctx| {
        let me = agent_id("join");
        let (mut p, _, _) = Peer::join_as(ctx, &me).await?;
        let space = ctx.profile().agora_spaces.public_space.clone();
        // The join judges its answer (joined_findings): the id, the space, the joiner.
        p.join(ctx, &space).await?;
        p.close().await;
        Ok(())
    }),
    case!("join-missing", "joining a space that does not exist draws SPACE_NOT_FOUND with the join id", ["ASP-024", "ASP-041"], Fact, false, None, |ctx| {
        let (mut p, _, _) = Peer::join_as(ctx, &agent_id("miss")).await?;
        let missing = ctx.profile().agora_spaces.missing_space.clone();
        p.send(ctx, &json!({"type": "space.join", "id": "h-join-missing", "space": missing})).await?;
        let v = p.expect(ctx, "an answer to the join", |v| v["type"] == "error" || v["type"] == "space.joined").await?;
        if v["type"] == "space.joined" {
            return fail(format!("joining the missing space {missing} drew space.joined, not SPACE_NOT_FOUND (ASP-024): {v}"));
        }
        // The request id first: an unreadable code must not hide it.
        check_request_id(ctx, &v, "h-join-missing");
        let code = code_of(ctx, &v)?;
        if code != "SPACE_NOT_FOUND" {
            return fail(format!("joining the missing space {missing} drew {}, not SPACE_NOT_FOUND (ASP-024)", said_error(&v)));
        }
        Ok(())
    }),
    case!("member-updates", "join and leave reach the other members as space.members; a leaver gets no more events",
        ["ASP-025", "ASP-026", "ASP-027"], Fact, false, None, |ctx| {
        let mut space = user_space();
        let (ida, idb) = (agent_id("ma"), agent_id("mb"));
        let (mut a, _, _) = Peer::join_as(ctx, &ida).await?;
        let (mut b, _, _) = Peer::join_as(ctx, &idb).await?;
        a.join_own(ctx, &mut space).await?;
        b.join(ctx, &space).await?;
        let j = a.expect(ctx, "space.members announcing B", |v| v["type"] == "space.members" && v["joined"] == idb.as_str()).await?;
        if let Some(f) = update_finding(&j, &space, &idb, true, &[&ida, &idb]) {
            return Err(Stop::Finding(f));
        }
        b.send(ctx, &json!({"type": "space.leave", "id": "h-leave", "space": space})).await?;
        let l = a.expect(ctx, "space.members announcing that B left", |v| v["type"] == "space.members" && v["left"] == idb.as_str()).await?;
        if let Some(f) = update_finding(&l, &space, &idb, false, &[]) {
            return Err(Stop::Finding(f));
        }
        // A member that stays shows that publishes are delivered, so that B's silence
        // after leaving means something.
        let idc = agent_id("mc");
        let (mut c, _, _) = Peer::join_as(ctx, &idc).await?;
        c.join(ctx, &space).await?;
        // This case's own text: in a space shared with other cases (ASP-A8), their
        // events fanned out before B's leave was handled may still reach B.
        let after = format!("after B left {ida}");
        a.publish(ctx, &space, &after).await?;
        let want = after.clone();
        c.expect(ctx, "the event published after B left", move |v| v["type"] == "space.event" && v["data"]["text"] == want.as_str()).await?;
        b.expect_none(ctx, SHORT, "an event of a space it left (ASP-025)", move |v| v["type"] == "space.event" && v["data"]["text"] == after.as_str()).await?;
        a.close().await;
        b.close().await;
        c.close().await;
        Ok(())
    }),
    case!("disconnect-keeps-others", "when one of three members disconnects, the other two stay members and their events still reach each other",
        ["ASP-027", "ASP-030"], Fact, false, None, |ctx| {
        let mut space = user_space();
        let (ida, idb, idc) = (agent_id("da"), agent_id("db"), agent_id("dc"));
        let (mut a, _, _) = Peer::join_as(ctx, &ida).await?;
        let (mut b, _, _) = Peer::join_as(ctx, &idb).await?;
        let (mut c, _, _) = Peer::join_as(ctx, &idc).await?;
        a.join_own(ctx, &mut space).await?;
        b.join(ctx, &space).await?;
        c.join(ctx, &space).await?;
        c.close().await;
        ctx.note("C disconnected without space.leave");
        // The hub handles a disconnect on its own time: B publishes once A has heard
        // that C left (or the short wait has passed, for a hub that does not announce it),
        // so that the publish is judged after the departure, not before it.
        let left = idc.clone();
        // Within a quarter of the heartbeat timeout: A and B stay silent meanwhile.
        let heartbeat_ms = ctx.profile().timing.heartbeat_timeout_s * 1000;
        let wait = Duration::from_millis(ctx.profile().timing.case_timeout_ms.min(2000).min(heartbeat_ms / 4));
        if a.wait_for(ctx, wait, move |v| v["type"] == "space.members" && v["left"] == left.as_str()).await?.is_none() {
            ctx.note(format!("A heard no space.members announcing that C left within {} ms; B publishes now", wait.as_millis()));
        }
        let text = format!("after C left {ida}");
        b.publish(ctx, &space, &text).await?;
        let want = text.clone();
        let got = a.wait_for(ctx, Duration::from_millis(ctx.profile().timing.case_timeout_ms), move |v| v["type"] == "space.event" && v["data"]["text"] == want.as_str()).await?;
        if got.is_none() {
            return fail(format!("after C disconnected, B's event did not reach A within {} ms: the disconnect of one member ended the others' membership (ASP-030)", ctx.profile().timing.case_timeout_ms));
        }
        ctx.checked("after one member's disconnect, the other two still reach each other");
        a.close().await;
        b.close().await;
        Ok(())
    }),
    case!("disconnect-is-departure", "a member that disconnects is announced as gone, and its agent id is free again (derived)",
        ["ASP-052"], Fact, false, None, |ctx| {
        let mut space = user_space();
        let (ida, idc) = (agent_id("la"), agent_id("lc"));
        let (mut a, _, _) = Peer::join_as(ctx, &ida).await?;
        let (mut c, _, _) = Peer::join_as(ctx, &idc).await?;
        a.join_own(ctx, &mut space).await?;
        c.join(ctx, &space).await?;
        // A space C is alone in, which nobody is left to hear about: it must not keep C.
        // Only where the hub creates spaces on join (ASP-A8): else `space` is the shared one.
        let alone = if is_fresh(&space) {
            let s = user_space();
            c.join(ctx, &s).await?;
            Some(s)
        } else {
            ctx.note("the hub creates no space on join, so C has no space of its own: a lone member's departure is not judged");
            None
        };
        // A stays silent meanwhile: within a quarter of the heartbeat timeout.
        let heartbeat_ms = ctx.profile().timing.heartbeat_timeout_s * 1000;
        let wait = Duration::from_millis(ctx.profile().timing.case_timeout_ms.min(heartbeat_ms / 4));
        // The control: the hub announces C's arrival to A. Without it, a silent
        // departure is member-updates' finding, not a departure's.
        let came = idc.clone();
        let announces = a.wait_for(ctx, wait, move |v| v["type"] == "space.members" && v["joined"] == came.as_str()).await?.is_some();
        c.close().await;
        ctx.note("C disconnected without space.leave");
        let left = idc.clone();
        let heard = a.wait_for(ctx, wait, move |v| v["type"] == "space.members" && v["left"] == left.as_str()).await?;
        let mut handled = heard.is_some();
        match heard {
            Some(_) => ctx.checked(format!("A heard that C left {space}")),
            None if !announces => ctx.note("A heard no space.members when C joined either: the hub's announcements are member-updates' to judge, and C's departure is not judged here"),
            None => match member_count(ctx, &mut a, &space).await?.map(|n| n > 0) {
                Some(false) => ctx.note(format!("A heard no departure, and A itself is no longer a member of {space}: the disconnect ended the others' membership, which disconnect-keeps-others judges")),
                _ => ctx.deviation(rules::DISCONNECT_IS_DEPARTURE_UNANNOUNCED.found(format!("C disconnected from {space} without space.leave, and A, still a member, heard no space.members with left {idc:?} within {} ms (the hub had announced C's arrival)", wait.as_millis()))),
            },
        }
        // The id C had: a new connection with it is a new agent, not a duplicate.
        let token = ctx.profile().target.token.clone();
        let what = format!("a new connection as {idc} after its connection ended");
        match Peer::attempt(ctx, Some(&idc), token.as_deref()).await? {
            Attempt::Open(mut p) => {
                let got = p.registration(ctx, Some(&idc)).await?;
                let closed = p.closed;
                p.close().await;
                match got {
                    Some(v) if v["type"] == "agent.registered" => {
                        handled = true;
                        ctx.checked(format!("{what}: registered"));
                    }
                    Some(v) => ctx.deviation(rules::DISCONNECT_IS_DEPARTURE_ID_STILL_TAKEN.found(format!("{what} drew {}: the id is still taken", said_error(&v)))),
                    None if closed => ctx.deviation(rules::DISCONNECT_IS_DEPARTURE_ID_STILL_TAKEN.found(format!("{what} was closed without agent.registered"))),
                    None => return fail(format!("{what} drew neither agent.registered nor an error within {} ms of agent.register", ctx.profile().timing.case_timeout_ms)),
                }
            }
            Attempt::Refused(s) => ctx.deviation(rules::DISCONNECT_IS_DEPARTURE_ID_STILL_TAKEN.found(format!("{what} was refused with HTTP {s}: the id is still taken"))),
            Attempt::Failed(e) => return fail(format!("{what} failed: {}", describe_drive_error(&e))),
        }
        if let Some(alone) = alone {
            if handled {
                judge_no_ghost(ctx, &mut a, &alone, &idc).await?;
            } else {
                ctx.note(format!("the hub showed no sign of handling C's disconnect (no departure heard, the id not free again): whether {alone}, where C was alone, still lists C is not judged apart"));
            }
        }
        a.close().await;
        Ok(())
    }),
    case!("publish-fanout", "a publish reaches every other member once, and nobody outside", ["ASP-028", "ASP-029", "ASP-030", "ASP-031", "ASP-035"], Fact, false, None, |ctx| {
        let mut space = user_space();
        let ids: Vec<String> = ["fa", "fb", "fc", "fd"].iter().map(|t| agent_id(t)).collect();
        let mut peers = Vec::new();
        for id in &ids {
            peers.push(Peer::join_as(ctx, id).await?.0);
        }
        peers[0].join_own(ctx, &mut space).await?;
        for p in peers.iter_mut().skip(1).take(2) {
            p.join(ctx, &space).await?;
        }
        let text = format!("t1 {}", &ids[0]);
        peers[0].publish(ctx, &space, &text).await?;
        for p in peers.iter_mut().skip(1).take(2) {
            let want = text.clone();
            let ev = p.expect(ctx, "the published event", move |v| v["type"] == "space.event" && v["data"]["text"] == want.as_str()).await?;
            if ev["space"] != space.as_str() || ev["data"]["from"] != ids[0].as_str() {
                return fail(format!("space.event should name the space and data.from {} (ASP-029): {ev}", ids[0]));
            }
            if !ev["data"]["timestamp"].is_number() {
                ctx.warn("space.event carries no numeric data.timestamp (ASP-029)");
            }
            let again = text.clone();
            p.expect_none(ctx, SHORT, "the same event twice (ASP-030)", move |v| v["type"] == "space.event" && v["data"]["text"] == again.as_str()).await?;
        }
        peers[3].expect_none(ctx, Duration::from_millis(300), "an event of a space it never joined (ASP-031)", |v| {
            v["type"] == "space.event" || v["type"] == "space.event.delta"
        }).await?;
        let own = text.clone();
        if peers[0].wait_for(ctx, Duration::from_millis(200), move |v| v["type"] == "space.event" && v["data"]["text"] == own.as_str()).await?.is_some() {
            ctx.note("the publisher receives its own event (informational, ASP-035)");
        }
        for p in &mut peers {
            p.close().await;
        }
        Ok(())
    }),
    case!("order-per-publisher", "20 publishes from one agent arrive complete and in order", ["ASP-030"], Fact, false, None, |ctx| {
        let mut space = user_space();
        let ida = agent_id("oa");
        let (mut a, _, _) = Peer::join_as(ctx, &ida).await?;
        let (mut b, _, _) = Peer::join_as(ctx, &agent_id("ob")).await?;
        a.join_own(ctx, &mut space).await?;
        b.join(ctx, &space).await?;
        // Texts of this case's own, so that a shared space's other events pass by.
        let tag = format!(" {ida}");
        for i in 0..20 {
            a.publish(ctx, &space, &format!("m{i:02}{tag}")).await?;
        }
        let mut got = Vec::new();
        while got.len() < 20 {
            let mine = tag.clone();
            match b.wait_for(ctx, Duration::from_millis(ctx.profile().timing.case_timeout_ms), move |v| v["type"] == "space.event" && v["data"]["text"].as_str().is_some_and(|t| t.ends_with(mine.as_str()))).await? {
                Some(v) => got.push(v["data"]["text"].as_str().unwrap_or_default().to_string()),
                None => return fail(format!("only {} of 20 events arrived: {}", got.len(), crate::finding::json(&got))),
            }
        }
        let want: Vec<String> = (0..20).map(|i| format!("m{i:02}{tag}")).collect();
        if got != want {
            return fail(format!("events arrived out of order: {}", crate::finding::json(&got)));
        }
        Ok(())
    }),
    case!("delta-stream", "a text above the delta threshold arrives as deltas with one event_id and a done, reassembling exactly",
        ["ASP-032", "ASP-033", "ASP-034"], Profile, false, None, |ctx| {
        let space = user_space();
        let threshold = ctx.profile().agora_spaces.delta_threshold_bytes;
        let text = text_of(threshold * 8 + 123);
        let (mut a, _, _) = Peer::join_as(ctx, &agent_id("da")).await?;
        // A hub that does not stream sends the text as one event: b takes it whole.
        let (mut b, _, _) = Peer::join_as_taking(ctx, &agent_id("db"), 2 * text.len() + (64 << 10)).await?;
        a.join(ctx, &space).await?;
        b.join(ctx, &space).await?;
        a.publish(ctx, &space, &text).await?;
        let first = b.expect(ctx, "the large event", |v| v["type"] == "space.event.delta" || v["type"] == "space.event").await?;
        if first["type"] == "space.event" {
            return fail(format!("a {}-byte text above the {threshold}-byte threshold arrived as one space.event, not as deltas", text.len()));
        }
        let ev = first["event_id"].clone();
        let mut frames = vec![first];
        loop {
            let want = ev.clone();
            let next = b.expect(ctx, "the rest of the stream", move |v| v["event_id"] == want).await?;
            let done = next["type"] == "space.event.done";
            frames.push(next);
            if done {
                break;
            }
        }
        let want = ev.clone();
        b.expect_none(ctx, Duration::from_millis(300), "a frame of the stream after done (ASP-034)", move |v| v["event_id"] == want).await?;
        frames.extend(b.drain(ctx, Duration::ZERO).await?.into_iter().filter(|v| v["event_id"] == ev));
        judge_stream(&frames, &text).or_else(fail)?;
        ctx.checked(format!("{} deltas reassemble the {}-byte text", frames.len() - 1, text.len()));
        Ok(())
    }),
    case!("delta-cancel", "after space.event.cancel no further deltas of that event arrive", ["ASP-036"], Fact, false, None, |ctx| {
        let space = user_space();
        let text = text_of(1024 * 1024);
        let (mut a, _, _) = Peer::join_as(ctx, &agent_id("xa")).await?;
        // A hub that does not stream sends the text as one event: b takes it whole.
        let (mut b, _, _) = Peer::join_as_taking(ctx, &agent_id("xb"), 2 * text.len() + (64 << 10)).await?;
        a.join(ctx, &space).await?;
        b.join(ctx, &space).await?;
        a.publish(ctx, &space, &text).await?;
        let first = b.expect(ctx, "the large event", |v| v["type"] == "space.event.delta" || v["type"] == "space.event").await?;
        if first["type"] == "space.event" {
            return skip("the target delivered 1 MiB as one space.event; there is no stream to cancel");
        }
        let ev = first["event_id"].clone();
        b.send(ctx, &json!({"type": "space.event.cancel", "space": space, "event_id": ev})).await?;
        // Frames already under way may still arrive: a grace, then silence.
        let grace = b.drain(ctx, Duration::from_millis(300)).await?;
        if grace.iter().any(|v| v["type"] == "space.event.done" && v["event_id"] == ev) {
            return skip("the stream ended before the cancel arrived; nothing left to cancel");
        }
        let want = ev.clone();
        let grace = ctx.profile().agora_spaces.cancel_grace();
        b.expect_none(ctx, grace, "a delta after cancelling its event (ASP-036)", move |v| {
            v["type"] == "space.event.delta" && v["event_id"] == want
        }).await?;
        if b.closed {
            // No delta because no connection: not a cancel honoured.
            return Err(ctx.block(crate::rules::TRANSPORT.found_in("agora-spaces", "connection-closed", format!("[{}] the target closed the connection after space.event.cancel", b.agent_id))));
        }
        b.expect_none(ctx, Duration::ZERO, "an error for the cancel", |v| v["type"] == "error").await?;
        Ok(())
    }),
    case!("space-list", "space.list answers with the id, typed entries and member counts that match", ["ASP-019", "ASP-038", "ASP-039", "ASP-040", "ASP-046", "ASP-047", "ASP-049", "ASP-050"], Fact, false, None, |ctx| {
        let space = user_space();
        let (mut a, _, _) = Peer::join_as(ctx, &agent_id("la")).await?;
        let (mut b, _, _) = Peer::join_as(ctx, &agent_id("lb")).await?;
        a.join(ctx, &space).await?;
        let joined = b.join(ctx, &space).await?;
        a.send(ctx, &json!({"type": "space.list", "id": "h-5"})).await?;
        let list = a.expect(ctx, "space.list with id h-5", |v| v["type"] == "space.list" && v["id"] == "h-5").await?;
        let Some(spaces) = list["spaces"].as_array().cloned() else {
            // The schema finding for /spaces says it; nothing to judge the counts on.
            return Err(ctx.block(rules::SCHEMA_SPACE_LIST_REPLY_SPACES.found(format!("the space.list reply carries no spaces array: {list}"))));
        };
        let Some(mine) = spaces.iter().find(|s| s["id"] == space.as_str()) else {
            return fail(format!("the joined space {space} is not listed (ASP-A8)"));
        };
        let mut wrong = Vec::new();
        if mine["type"].as_str().is_some_and(|t| t.eq_ignore_ascii_case("system")) {
            wrong.push(format!("the user space {space} is listed as a system space: {mine} (ASP-046)"));
        }
        let count = joined["members"].as_array().map_or(0, Vec::len);
        if mine["member_count"].as_u64() != Some(count as u64) {
            wrong.push(format!("member_count {} for {space}, but space.joined listed {count} members (ASP-040)", mine["member_count"]));
        }
        if let Some(f) = list_finding(&spaces) {
            ctx.deviation(f);
        }
        a.send(ctx, &json!({"type": "space.list"})).await?;
        a.expect(ctx, "space.list without an id (ASP-019)", |v| v["type"] == "space.list" && v.get("spaces").is_some()).await?;
        fail_rows("the space.list entry of a joined space is wrong", &wrong)
    }),
    case!("invalid-requests", "non-JSON, unknown types, a join without space and a frame without type draw INVALID_REQUEST",
        ["ASP-018", "ASP-041", "ASP-042", "ASP-043"], Fact, false, None, |ctx| {
        let (mut p, _, _) = Peer::join_as(ctx, &agent_id("bad")).await?;
        p.send_text(ctx, "{not json".into()).await?;
        let v = p.expect(ctx, "INVALID_REQUEST for non-JSON", |v| v["type"] == "error").await?;
        let mut wrong = Vec::new();
        if code_of(ctx, &v)? != "INVALID_REQUEST" {
            wrong.push(format!("non-JSON drew {}", said_error(&v)));
        }
        for (id, msg) in [
            ("h-unknown", json!({"type": "foo.bar", "id": "h-unknown"})),
            ("h-nospace", json!({"type": "space.join", "id": "h-nospace"})),
            ("h-notype", json!({"id": "h-notype", "space": "general"})),
        ] {
            p.reopen_if_closed(ctx, "bad").await?;
            p.send(ctx, &msg).await?;
            let v = p.expect(ctx, &format!("INVALID_REQUEST for {id}"), |v| v["type"] == "error").await?;
            check_request_id(ctx, &v, id);
            if code_of(ctx, &v)? != "INVALID_REQUEST" {
                wrong.push(format!("{msg} drew {}", said_error(&v)));
            }
        }
        ctx.rows_wrong(&rules::INVALID_REQUESTS, "invalid requests drew another error than INVALID_REQUEST", &wrong);
        Ok(())
    }),
    case!("space-names", "user names work; upper case and spaces never join; task.* is a user space", ["ASP-046", "ASP-048", "ASP-051"], Fact, false, None, |ctx| {
        let (mut p, _, _) = Peer::join_as(ctx, &agent_id("names")).await?;
        p.join(ctx, &format!("{}_test-1", user_space())).await?;
        p.join(ctx, &format!("task.{}", user_space())).await?;
        let mut joined = Vec::new();
        for bad in ["Bad Name!", "General"] {
            p.reopen_if_closed(ctx, "names").await?;
            p.send(ctx, &json!({"type": "space.join", "id": "h-badname", "space": bad})).await?;
            let v = p.expect(ctx, &format!("an answer to joining {bad:?}"), |v| v["type"] == "error" || v["type"] == "space.joined").await?;
            if v["type"] == "space.joined" {
                joined.push(format!("{bad:?}"));
            }
        }
        ctx.rows_wrong(&rules::SPACE_NAMES_BAD_JOINED, "space names outside the spec's form were joined", &joined);
        p.reopen_if_closed(ctx, "names").await?;
        p.send(ctx, &json!({"type": "space.join", "id": "h-mcp", "space": "mcp.harness"})).await?;
        if let Some(v) = p.wait_for(ctx, Duration::from_secs(2), |v| answers(v, "h-mcp")).await? {
            ctx.note(format!("joining the unlisted system space mcp.harness: {} (informational, ASP-051)", v["type"]));
        }
        Ok(())
    }),
    case!("space-full", "joining a space at capacity draws SPACE_FULL", ["ASP-044"], Profile, false, None, |ctx| {
        let Some(full) = ctx.profile().agora_spaces.full_space.clone() else {
            return skip("the profile names no full_space (a space of capacity 1)");
        };
        let (mut a, _, _) = Peer::join_as(ctx, &agent_id("fa")).await?;
        let (mut b, _, _) = Peer::join_as(ctx, &agent_id("fb")).await?;
        a.join(ctx, &full).await?;
        b.send(ctx, &json!({"type": "space.join", "id": "h-full", "space": full})).await?;
        let v = b.expect(ctx, "an answer to the second join", |v| answers(v, "h-full")).await?;
        if v["type"] != "error" {
            return fail(format!("a second join of {full} (capacity 1) drew {v}, not SPACE_FULL (ASP-044)"));
        }
        check_request_id(ctx, &v, "h-full");
        let code = code_of(ctx, &v)?;
        if code != "SPACE_FULL" {
            return fail(format!("a second join of {full} (capacity 1) drew {}, not SPACE_FULL (ASP-044)", said_error(&v)));
        }
        Ok(())
    }),
    case!("heartbeat-keepalive", "client heartbeats draw no error, and server heartbeats are well formed", ["ASP-016", "ASP-017"], Fact, false, None, |ctx| {
        let (mut p, _, _) = Peer::join_as(ctx, &agent_id("hb")).await?;
        let t = ctx.profile().timing.heartbeat_timeout_s;
        // With a short timeout, stay connected for two timeouts by heartbeating.
        let rounds = if t <= 10 { (2 * t * 1000 / (t * 1000 / 3).max(1)).min(12) } else { 3 };
        let pause = if t <= 10 { Duration::from_millis(t * 1000 / 3) } else { Duration::from_millis(300) };
        for _ in 0..rounds {
            p.send(ctx, &json!({"type": "agent.heartbeat", "timestamp": now_s()})).await?;
            if let Some(e) = p.wait_for(ctx, pause, |v| v["type"] == "error").await? {
                return fail(format!("a heartbeat drew {} (ASP-017)", said_error(&e)));
            }
            if p.closed {
                return fail("the server closed a connection that heartbeats (ASP-016)");
            }
        }
        Ok(())
    }),
    case!("heartbeat-timeout", "a silent client is disconnected after the heartbeat timeout", ["ASP-014", "ASP-015"], Fact, true, Some(short_heartbeat), |ctx| {
        let (mut p, _, _) = Peer::join_as(ctx, &agent_id("silent")).await?;
        let t = ctx.profile().timing.heartbeat_timeout_s;
        let started = std::time::Instant::now();
        let limit = Duration::from_secs(t + t / 2 + 2);
        if !p.closed_within(ctx, limit).await? {
            return fail(format!("a client silent for {} s is still connected (timeout {t} s, ASP-015)", limit.as_secs()));
        }
        let after = started.elapsed();
        if after + Duration::from_millis(500) < Duration::from_secs(t) {
            return fail(format!("the server closed the connection after {} ms, before the {t} s timeout", after.as_millis()));
        }
        ctx.checked(format!("closed after {} ms of silence", after.as_millis()));
        Ok(())
    }),
    case!("rate-limit", "a burst of publishes: throttling, if any, uses RATE_LIMITED", ["ASP-045"], Fact, false, None, |ctx| {
        let space = user_space();
        let (mut a, _, _) = Peer::join_as(ctx, &agent_id("rl")).await?;
        a.join(ctx, &space).await?;
        for i in 0..500 {
            a.publish(ctx, &space, &format!("burst {i}")).await?;
        }
        let frames = a.drain(ctx, Duration::from_millis(500)).await?;
        let errors: Vec<&Value> = frames.iter().filter(|v| v["type"] == "error").collect();
        for e in &errors {
            if code_of(ctx, e)? != "RATE_LIMITED" {
                return fail(format!("the burst drew {}, not RATE_LIMITED (ASP-045)", said_error(e)));
            }
        }
        ctx.note(format!("500 publishes: {} RATE_LIMITED errors", errors.len()));
        if a.closed {
            ctx.warn("the server closed the connection during the burst without RATE_LIMITED (ASP-045)");
        }
        Ok(())
    }),
];

/// The suite's JSON Schemas (schemas/agora-spaces/), by name, built into the binary.
const SCHEMAS: &[(&str, &str)] = &[
    (
        "agent-register",
        include_str!("../../../../schemas/agora-spaces/agent-register.schema.json"),
    ),
    (
        "agent-registered",
        include_str!("../../../../schemas/agora-spaces/agent-registered.schema.json"),
    ),
    (
        "agent-heartbeat",
        include_str!("../../../../schemas/agora-spaces/agent-heartbeat.schema.json"),
    ),
    (
        "space-join",
        include_str!("../../../../schemas/agora-spaces/space-join.schema.json"),
    ),
    (
        "space-joined",
        include_str!("../../../../schemas/agora-spaces/space-joined.schema.json"),
    ),
    (
        "space-leave",
        include_str!("../../../../schemas/agora-spaces/space-leave.schema.json"),
    ),
    (
        "space-members",
        include_str!("../../../../schemas/agora-spaces/space-members.schema.json"),
    ),
    (
        "space-publish",
        include_str!("../../../../schemas/agora-spaces/space-publish.schema.json"),
    ),
    (
        "space-event",
        include_str!("../../../../schemas/agora-spaces/space-event.schema.json"),
    ),
    (
        "space-event-delta",
        include_str!("../../../../schemas/agora-spaces/space-event-delta.schema.json"),
    ),
    (
        "space-event-done",
        include_str!("../../../../schemas/agora-spaces/space-event-done.schema.json"),
    ),
    (
        "space-event-cancel",
        include_str!("../../../../schemas/agora-spaces/space-event-cancel.schema.json"),
    ),
    (
        "space-list-request",
        include_str!("../../../../schemas/agora-spaces/space-list-request.schema.json"),
    ),
    (
        "space-list-reply",
        include_str!("../../../../schemas/agora-spaces/space-list-reply.schema.json"),
    ),
    (
        "error",
        include_str!("../../../../schemas/agora-spaces/error.schema.json"),
    ),
];

/// The client's side (`run --role client`): the harness is the hub, the client
/// driver runs scenario `join-publish` or `listen` against it.
pub const CLIENT_CASES: &[Case] = &[
    case!("client-join-publish", "the client connects with its agent_id, joins the space given and publishes the text given, every event with a type and a timestamp",
        ["ASP-003", "ASP-004", "ASP-018", "ASP-020", "ASP-022", "ASP-028"], Must, false, None, |ctx| {
        let input = client_input("client");
        let run = crate::counterparty::drive_hub(ctx, "join-publish", &input, hub(HubPlan::Plain, &input)).await?;
        let agent = input["agent_id"].as_str().unwrap_or_default();
        client_connected_as(ctx, &run, agent)?;
        let frames = client_frames(ctx, &run)?;
        let Some(join) = frames.iter().position(|f| f["type"] == "space.join") else {
            return fail(format!("the client sent no space.join (ASP-022); it sent {}", types_of(&frames)));
        };
        if frames[join]["space"] != input["space"] {
            return fail(format!("the client joined {}, not the space given, {}", frames[join]["space"], input["space"]));
        }
        ctx.checked("the client joined the space given");
        let Some(publish) = frames.iter().position(|f| f["type"] == "space.publish") else {
            return fail(format!("the client published nothing (ASP-028); it sent {}", types_of(&frames)));
        };
        if publish < join {
            return fail("the client published before it joined the space (ASP-022, ASP-028)".to_string());
        }
        let p = &frames[publish];
        if p["space"] != input["space"] || p["data"]["text"] != input["text"] || p["data"]["from"] != input["agent_id"] {
            return fail(format!(
                "the client's space.publish carries space {}, data.text {} and data.from {}, not the scenario's {}, {} and {} (ASP-028)",
                p["space"], p["data"]["text"], p["data"]["from"], input["space"], input["text"], input["agent_id"]
            ));
        }
        ctx.checked("the client published the text given, from itself, to the space given");
        let ids: Vec<&Value> = frames.iter().filter_map(|f| f.get("id")).filter(|id| !id.is_null()).collect();
        if let Some(dup) = ids.iter().enumerate().find_map(|(i, id)| ids[..i].contains(id).then_some(id)) {
            return fail(format!("the client sent two requests under the id {dup}: a request id names one request (ASP-041's request_id could not tell them apart)"));
        }
        client_ended_well(&run)
    }),
    case!("client-deltas", "the client takes a whole event and rebuilds a streamed one from its deltas, in order, at done",
        ["ASP-029", "ASP-032", "ASP-033", "ASP-034"], Fact, false, None, |ctx| {
        let input = client_input("deltas");
        let run = crate::counterparty::drive_hub(ctx, "listen", &input, hub(HubPlan::Deltas, &input)).await?;
        client_frames(ctx, &run)?;
        client_ended_well(&run)?;
        let want = vec![WHOLE_TEXT.to_string(), streamed_text("streamed").0];
        let got = printed_texts(&run);
        if got != want {
            return fail(format!(
                "the driver printed the events {}, not the whole event and the streamed one rebuilt from its deltas: {} (ASP-033, ASP-034)",
                crate::finding::clipped(&format!("{got:?}"), 400), crate::finding::clipped(&format!("{want:?}"), 400)
            ));
        }
        ctx.checked("the client took both events, the streamed one rebuilt byte for byte");
        Ok(())
    }),
    case!("client-cancel", "a stream the hub cancels is discarded, never presented as a complete event; the next event is taken",
        ["ASP-036", "ASP-037"], Fact, false, None, |ctx| {
        // A client that drops every stream passes here only if it rebuilds one.
        ctx.controlled_by("agora-spaces/client-deltas");
        let input = client_input("cancel");
        let run = crate::counterparty::drive_hub(ctx, "listen", &input, hub(HubPlan::Cancel, &input)).await?;
        client_frames(ctx, &run)?;
        client_ended_well(&run)?;
        let got = printed_texts(&run);
        let (_, chunks) = streamed_text("cancelled");
        let first = chunks.first().cloned().unwrap_or_default();
        if let Some(partial) = got.iter().find(|t| t.starts_with(&first)) {
            return fail(format!(
                "the client presented the partial text of a cancelled stream as an event: {} (ASP-037)",
                quote(partial)
            ));
        }
        if got != [WHOLE_TEXT] {
            return fail(format!("the driver printed the events {got:?}, not the one event sent after the cancel, {WHOLE_TEXT:?}"));
        }
        ctx.checked("the cancelled stream was discarded and the next event taken");
        Ok(())
    }),
    case!("client-heartbeat", "the client sends agent.heartbeat {type, timestamp} at its interval and stays connected",
        ["ASP-014", "ASP-016", "ASP-017"], Fact, false, None, |ctx| {
        let input = client_input("heartbeat");
        let run = crate::counterparty::drive_hub(ctx, "listen", &input, hub(HubPlan::Heartbeats, &input)).await?;
        let frames = client_frames(ctx, &run)?;
        let beats: Vec<std::time::Duration> = run
            .client_frames()
            .filter(|(_, t)| t.contains("agent.heartbeat"))
            .map(|(at, _)| at)
            .collect();
        let well_formed = frames.iter().filter(|f| f["type"] == "agent.heartbeat" && f["timestamp"].is_number()).count();
        ctx.note(format!(
            "heartbeats at {:?} ms (interval {} ms)",
            beats.iter().map(|d| d.as_millis()).collect::<Vec<_>>(),
            input["heartbeat_interval_ms"]
        ));
        if well_formed < HEARTBEATS_WANTED {
            return fail(format!(
                "the client sent {well_formed} agent.heartbeat events with a numeric timestamp while the hub waited {} intervals of {} ms for {HEARTBEATS_WANTED} (ASP-014, ASP-017)",
                4 * HEARTBEATS_WANTED, input["heartbeat_interval_ms"]
            ));
        }
        // Heartbeats at the interval, not in a burst: the first and the last of them
        // at least half an interval apart per gap between them (one late heartbeat
        // arriving beside the next is scheduling, not a burst).
        let interval = input["heartbeat_interval_ms"].as_u64().unwrap_or(150);
        if let (Some(first), Some(last)) = (beats.first(), beats.last()) {
            let span = last.saturating_sub(*first);
            let want = Duration::from_millis(interval / 2 * (beats.len() as u64).saturating_sub(1));
            if span < want {
                return fail(format!(
                    "the client sent {} agent.heartbeat events within {} ms, with an interval of {interval} ms: heartbeats come at the interval, not in a burst (ASP-014)",
                    beats.len(),
                    span.as_millis()
                ));
            }
        }
        ctx.checked("the client heartbeats at its interval");
        client_ended_well(&run)
    }),
    case!("client-silent-hub", "the client gives up on a hub that sends nothing for the heartbeat timeout, and says so",
        ["ASP-015"], Fact, false, None, |ctx| {
        let input = client_input("silent");
        let run = crate::counterparty::drive_hub(ctx, "listen", &input, hub(HubPlan::Silent, &input)).await?;
        client_frames(ctx, &run)?;
        let closed = run.frames.iter().any(|f| f.what == crate::counterparty::Ws::ClientClosed);
        // How long the client went on after the hub's last frame: a client that
        // ends by a deadline of its own long after the heartbeat timeout did not
        // give up on the silence.
        let last_hub = run.frames.iter().filter(|f| matches!(f.what, crate::counterparty::Ws::Hub(_))).map(|f| f.at).max().unwrap_or_default();
        let gone = run.frames.iter().find(|f| f.what == crate::counterparty::Ws::ClientClosed).map_or(run.took, |f| f.at);
        let waited = gone.saturating_sub(last_hub);
        let timeout = input["heartbeat_timeout_ms"].as_u64().unwrap_or(1000);
        let late = waited > std::time::Duration::from_millis(timeout * 3 + 1000);
        match &run.exit {
            crate::counterparty::Exit::Code(c) if *c != 0 && late => {
                ctx.deviation(rules::CLIENT_SILENT_HUB.found(format!(
                        "the client waited {} ms on a silent hub, with heartbeat_timeout_ms {timeout}, and ended only then ({}; ASP-015)",
                        waited.as_millis(), run.ended()
                    )));
                Ok(())
            }
            crate::counterparty::Exit::Deadline => {
                ctx.deviation(rules::CLIENT_SILENT_HUB.found(format!(
                        "the client still waited on a hub silent for {} ms, with heartbeat_timeout_ms {} (ASP-015)",
                        run.took.as_millis(), input["heartbeat_timeout_ms"]
                    )));
                Ok(())
            }
            crate::counterparty::Exit::Code(0) => fail(format!(
                "the client ended with success on a silent hub; it should report the lost hub as an error{}",
                if closed { "" } else { " (and it did not close the connection)" }
            )),
            _ => {
                ctx.checked(format!("the client gave up {} ms after the hub's last frame and reported an error", waited.as_millis()));
                Ok(())
            }
        }
    }),
    case!("client-join-refused", "an error event answering the client's space.join (SPACE_NOT_FOUND, SPACE_FULL without request_id, or an error with a message only) is reported, and the client goes no further",
        ["ASP-022", "ASP-024", "ASP-041", "ASP-042"], Fact, false, None, |ctx| {
        ctx.controlled_by("agora-spaces/client-join-publish");
        let mut wrong = Vec::new();
        for (refusal, what) in [
            (HubRefusal { code: Some("SPACE_NOT_FOUND"), request_id: true }, "a SPACE_NOT_FOUND error answering its space.join"),
            (HubRefusal { code: Some("SPACE_FULL"), request_id: false }, "a SPACE_FULL error without request_id, right after its space.join"),
            (HubRefusal { code: None, request_id: true }, "an error event with a message and no code answering its space.join"),
        ] {
            let input = client_input("refused");
            let run = crate::counterparty::drive_hub(ctx, "join-publish", &input, hub(HubPlan::JoinRefused(refusal), &input)).await?;
            let judged = refused_by_hub(ctx, &run, what, refusal.request_id);
            wrong.extend(ctx.row(judged)?);
        }
        fail_rows("refusals the client did not report", &wrong)
    }),
    case!("client-publish-refused", "an error event answering the client's space.publish (UNAUTHORIZED) is reported, and the client goes no further",
        ["ASP-006", "ASP-028", "ASP-041", "ASP-042"], Fact, false, None, |ctx| {
        ctx.controlled_by("agora-spaces/client-join-publish");
        let input = client_input("unauthorized");
        let refusal = HubRefusal { code: Some("UNAUTHORIZED"), request_id: true };
        let run = crate::counterparty::drive_hub(ctx, "join-publish", &input, hub(HubPlan::PublishRefused(refusal), &input)).await?;
        refused_by_hub(ctx, &run, "an UNAUTHORIZED error answering its space.publish", true)
    }),
    case!("client-register-refused", "an AGENT_EXISTS error in place of agent.registered, and the hub's close, are reported as an error",
        ["ASP-041", "ASP-042"], Fact, false, None, |ctx| {
        ctx.controlled_by("agora-spaces/client-join-publish");
        let input = client_input("exists");
        let refusal = HubRefusal { code: Some("AGENT_EXISTS"), request_id: false };
        let run = crate::counterparty::drive_hub(ctx, "join-publish", &input, hub(HubPlan::RegisterRefused(refusal), &input)).await?;
        refused_by_hub(ctx, &run, "an AGENT_EXISTS error in place of agent.registered", false)
    }),
];

/// The client was refused by the hub's error event: it reported an error (a
/// non-zero exit) and sent no space.publish after a refused join; and when the
/// error names the request it answers (`named`), the client ended by itself before
/// the hub closed the connection [`REFUSAL_GRACE`] later. An error without
/// request_id may be waited out: nothing ties it to the client's request.
fn refused_by_hub(
    ctx: &mut Ctx,
    run: &crate::counterparty::DriverRun,
    what: &str,
    named: bool,
) -> crate::case::Step<()> {
    use crate::counterparty::Ws;
    client_frames(ctx, run)?;
    let error_at = run.frames.iter().find_map(|f| match &f.what {
        Ws::Hub(t) if t.contains("\"type\":\"error\"") => Some(f.at),
        _ => None,
    });
    let Some(error_at) = error_at else {
        return fail(format!(
            "the client never reached the request the hub refuses; {}",
            run.ended()
        ));
    };
    let refused_join = what.contains("space.join");
    // A publish sent before the error arrived is no going on; one sent well after is.
    let late = std::time::Duration::from_millis(100);
    if refused_join {
        if let Some((at, _)) = run
            .client_frames()
            .find(|(at, t)| t.contains("space.publish") && *at > error_at + late)
        {
            return fail(format!(
                "the client published {} ms after {what}: it went on as if it had joined",
                (at - error_at).as_millis()
            ));
        }
    }
    let waited = run
        .frames
        .iter()
        .find(|f| matches!(f.what, Ws::HubClosed | Ws::ClientClosed))
        .is_some_and(|f| f.what == Ws::HubClosed)
        && named;
    if waited {
        return fail(format!(
            "the client went on after {what}: still connected {} ms later, when the hub closed the connection ({})",
            REFUSAL_GRACE.as_millis(),
            run.ended()
        ));
    }
    run.took_nothing("the client", "reported success after", what)?;
    ctx.checked(format!("the client ended at {what} and reported an error"));
    Ok(())
}

/// The connection's query names the scenario's agent (ASP-003, ASP-004).
fn client_connected_as(
    ctx: &mut Ctx,
    run: &crate::counterparty::DriverRun,
    agent: &str,
) -> crate::case::Step<()> {
    let Some(query) = run.frames.iter().find_map(|f| match &f.what {
        crate::counterparty::Ws::Open(q) => Some(q.clone()),
        _ => None,
    }) else {
        return fail(format!(
            "the client never connected to the hub; {}; stderr: {}",
            run.ended(),
            crate::finding::clipped(run.stderr.trim(), 300)
        ));
    };
    let want = format!(
        "agent_id={}",
        reference_impl::agora_exchange::client::percent_encode(agent)
    );
    if !query.split('&').any(|p| p == want) {
        return fail(format!(
            "the client connected with the query {}, not with {want} (ASP-004)",
            quote(&query)
        ));
    }
    ctx.checked("the client connected with its agent_id in the query");
    Ok(())
}

/// The types of frames, for messages.
fn types_of(frames: &[Value]) -> String {
    let list: Vec<&str> = frames.iter().filter_map(|f| f["type"].as_str()).collect();
    format!("{list:?}")
}

/// The driver ended by itself with success when the hub closed.
fn client_ended_well(run: &crate::counterparty::DriverRun) -> crate::case::Step<()> {
    if run.failed() {
        return fail(format!(
            "the client did not complete the scenario: {}; stdout: {}; stderr: {}",
            run.ended(),
            crate::finding::clipped(run.stdout.trim(), 300),
            crate::finding::clipped(run.stderr.trim(), 300)
        ));
    }
    Ok(())
}
