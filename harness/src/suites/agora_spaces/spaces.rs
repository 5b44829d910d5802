//! Space events and naming (agora-spaces.zh.md, space.join, space.joined, space.leave,
//! space.members, space.list, Space 命名约定): their cases, and the fuzzer's joins, leaves,
//! member updates and lists, with the names it draws.

use super::connection::{connect, distinct_connections, Attempt, Peer};
use super::errors::{
    answers, barrier, check_error, check_request_id, code_of, expected_event, only, open, Shows,
    St, Want,
};
use super::replies::{is_fresh, joined_findings, SCHEMA_SPACE_LIST_REPLY_SPACES};
use super::wire::{
    agent_id, clip, hex, now_s, rid_of, said_error, user_space, RATE_LIMITED, SHORT,
};
use crate::case::{fail, fail_rows, skip, Bindings, Case, Stop};
use crate::drive::Transport;
use crate::finding::Finding;
use crate::fuzzing::spec::FuzzCtx;
use crate::fuzzing::verdict::{
    finding, first_failing, skip as fuzz_skip, under, Codes, Expected, FuzzFuture, FuzzStep,
    FuzzStop, Oracle,
};
use crate::rules::rules;
use crate::script::{describe_drive_error, Ctx};
use arbitrary::Arbitrary;
use serde_json::{json, Value};
use std::time::Duration;

rules! {
    DISCONNECT_IS_DEPARTURE_UNANNOUNCED {
        key: "agora-spaces/disconnect-is-departure:unannounced",
        requirements: &["ASP-052", "ASP-027"],
        level: None,
        owner: "agora-spaces/disconnect-is-departure",
        summary: "a member that disconnects without space.leave is announced to the members that remain, as a departure",
        fails: "no space.members with left = the agent that disconnected reaches a remaining member within the case timeout (at most a quarter of the heartbeat timeout)",
        passes: "space.members with left = that agent",
    }
    DISCONNECT_IS_DEPARTURE_ID_STILL_TAKEN {
        key: "agora-spaces/disconnect-is-departure:id-still-taken",
        requirements: &["ASP-052", "ASP-013"],
        level: None,
        owner: "agora-spaces/disconnect-is-departure",
        summary: "the agent id of a connection that ended is free: a new connection with it is registered",
        fails: "a new connection with that id refused (an error such as AGENT_EXISTS, an HTTP refusal, or a close without agent.registered)",
        passes: "agent.registered for the new connection",
    }
    DISCONNECT_IS_DEPARTURE_GHOST {
        key: "agora-spaces/disconnect-is-departure:ghost",
        requirements: &["ASP-052", "ASP-040"],
        level: None,
        owner: "agora-spaces/disconnect-is-departure",
        summary: "a member alone in a space is gone from it once its connection ends, though nobody is left to be told",
        fails: "a later joiner's space.joined lists the agent whose connection ended, or space.list counts it (judged once the hub shows it handled the disconnect)",
        passes: "the later joiner is the space's only member",
    }
    SPACE_LIST {
        key: "agora-spaces/space-list",
        requirements: &["ASP-019", "ASP-038", "ASP-039", "ASP-040", "ASP-046", "ASP-047", "ASP-049", "ASP-050"],
        level: None,
        owner: "agora-spaces/space-list",
        summary: "space.list gives the system spaces the type system",
        fails: "a system space listed with another type",
        passes: "system spaces typed system",
    }
    MEMBER_UPDATES {
        key: "agora-spaces/member-updates",
        requirements: &["ASP-025", "ASP-026", "ASP-027"],
        level: None,
        owner: "agora-spaces/member-updates",
        summary: "space.members after a join or a leave names the space, lists the members and sets joined or left",
        fails: "an update naming another space, leaving out a member, listing the one who left, or with the other of joined and left set",
        passes: "the update as ASP-026 (join) and ASP-027 (leave) give it",
    }
    SPACE_NAMES_BAD_JOINED {
        key: "agora-spaces/space-names:bad-name-joined",
        requirements: &["ASP-046"],
        level: None,
        owner: "agora-spaces/space-names",
        summary: "a space name with upper case or a space is never joined",
        fails: "the hub joined \"Bad Name!\" or \"General\" (each named)",
        passes: "an error for each",
    }
}

/// Whether `s` names a system space (`agent.`, `file.`, `mcp.`; ASP-047).
pub fn is_system_name(s: &str) -> bool {
    ["agent.", "file.", "mcp."].iter().any(|p| s.starts_with(p))
}

/// What the entries of a space.list reply break: a system space is typed
/// `system` (the space-list case's rule, ASP-047, ASP-049, ASP-050).
pub fn list_finding(spaces: &[Value]) -> Option<Finding> {
    let wrong = spaces.iter().find(|s| {
        is_system_name(s["id"].as_str().unwrap_or_default())
            && !s["type"]
                .as_str()
                .is_some_and(|t| t.eq_ignore_ascii_case("system"))
    })?;
    Some(SPACE_LIST.found(format!(
        "{} is a system space but is listed as {} (ASP-047/049/050)",
        wrong["id"], wrong["type"]
    )))
}

/// What a space.members of `space` announcing that `who` joined (`joined`) or left
/// breaks: it names the space, the other of joined and left is null, and members
/// lists each of `listed` and, after a leave, not `who` (the member-updates case's
/// rule, ASP-026, ASP-027). A members list that cannot be read is `members:list`,
/// judged when the frame is read; `left` absent reads as null and `space` absent is
/// not judged (each the schema's finding).
pub fn update_finding(
    v: &Value,
    space: &str,
    who: &str,
    joined: bool,
    listed: &[&str],
) -> Option<Finding> {
    let (other, req, what) = match joined {
        true => ("left", "ASP-026", "join"),
        false => ("joined", "ASP-027", "leave"),
    };
    let members = v["members"].as_array();
    let lists = |id: &str| members.is_none_or(|m| m.iter().any(|x| x == id));
    let gone = joined || members.is_none_or(|m| !m.iter().any(|x| x == who));
    // Without `space` the schema's finding alone.
    let named = v.get("space").is_none_or(|s| s == space);
    let ok = named && v[other].is_null() && listed.iter().all(|id| lists(id)) && gone;
    let without = if joined {
        String::new()
    } else {
        format!(", not {who}")
    };
    (!ok).then(|| {
        MEMBER_UPDATES.found(format!("the {what} update should name {space}, list {listed:?}{without} and have {other} null ({req}): {v}"),
        )
    })
}

/// How many members space.list counts in `space`, asked by `p`: 0 when the list
/// leaves it out, `None` when the reply does not say (no list of spaces, or an
/// entry without member_count).
async fn member_count(ctx: &mut Ctx, p: &mut Peer, space: &str) -> crate::case::Step<Option<u64>> {
    p.send(ctx, &json!({"type": "space.list", "id": "h-count"}))
        .await?;
    let list = p
        .expect(ctx, "space.list with id h-count", |v| {
            v["type"] == "space.list" && v["id"] == "h-count"
        })
        .await?;
    let Some(spaces) = list["spaces"].as_array() else {
        return Ok(None);
    };
    // A space the list leaves out has nobody in it (a hub may free an empty one).
    Ok(match spaces.iter().find(|e| e["id"] == space) {
        Some(e) => e["member_count"].as_u64(),
        None => Some(0),
    })
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
        ctx.deviation(DISCONNECT_IS_DEPARTURE_GHOST.found(format!("C was alone in {space} when its connection ended; a later joiner finds it still there: {}", said.join("; "))));
    }
    Ok(())
}

/// The cases of this area, in the order they run.
pub const CASES: &[Case] = &[
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
                _ => ctx.deviation(DISCONNECT_IS_DEPARTURE_UNANNOUNCED.found(format!("C disconnected from {space} without space.leave, and A, still a member, heard no space.members with left {idc:?} within {} ms (the hub had announced C's arrival)", wait.as_millis()))),
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
                    Some(v) => ctx.deviation(DISCONNECT_IS_DEPARTURE_ID_STILL_TAKEN.found(format!("{what} drew {}: the id is still taken", said_error(&v)))),
                    None if closed => ctx.deviation(DISCONNECT_IS_DEPARTURE_ID_STILL_TAKEN.found(format!("{what} was closed without agent.registered"))),
                    None => return fail(format!("{what} drew neither agent.registered nor an error within {} ms of agent.register", ctx.profile().timing.case_timeout_ms)),
                }
            }
            Attempt::Refused(s) => ctx.deviation(DISCONNECT_IS_DEPARTURE_ID_STILL_TAKEN.found(format!("{what} was refused with HTTP {s}: the id is still taken"))),
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
            return Err(ctx.block(SCHEMA_SPACE_LIST_REPLY_SPACES.found(format!("the space.list reply carries no spaces array: {list}"))));
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
        ctx.rows_wrong(&SPACE_NAMES_BAD_JOINED, "space names outside the spec's form were joined", &joined);
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
    case!("space-churn", "fresh user spaces are still made after many came and went (derived from ASP-046)", ["ASP-046"], Fact, false, None, |ctx| {
        let (mut p, _, _) = Peer::join_as(ctx, &agent_id("churn")).await?;
        let tag = hex(6);
        let wait = Peer::case_wait(ctx);
        let mut taken = 0;
        for batch in 0..SPACE_CHURN.div_ceil(CHURN_BATCH) {
            let names: Vec<String> = (0..CHURN_BATCH)
                .map(|i| format!("h_churn_{tag}_{}", batch * CHURN_BATCH + i))
                .collect();
            let joins = names.iter().enumerate().map(|(i, n)| {
                reference_impl::wire::json_text(&json!({"type": "space.join", "id": format!("churn-{i}"), "space": n}))
            });
            let is_answer = |v: &Value| answers_churn(v);
            let answers = p.bulk(ctx, joins.collect(), (CHURN_BATCH, is_answer), wait).await?;
            // Answers come in the order of the joins.
            if let Some((i, refused)) = answers.iter().enumerate().find(|(_, v)| v["type"] != "space.joined") {
                ctx.log_frame("recv", &p.agent_id, &refused.to_string());
                if taken == 0 && i == 0 {
                    return skip(format!("the hub does not make a space on a join of a fresh name: {} (allowed, ASP-A8)", said_error(refused)));
                }
                return fail(format!(
                    "after {} fresh spaces were joined and left, each empty again, the join of the fresh name {} drew {}: spaces emptied are never freed, so the hub runs out of them",
                    taken + i, names[i.min(CHURN_BATCH - 1)], said_error(refused)
                ));
            }
            if answers.len() < CHURN_BATCH {
                let what = format!("answers to {} more joins of fresh names", CHURN_BATCH - answers.len());
                if let Some(stop) = p.not_ours(ctx, &what) {
                    return Err(stop);
                }
                return fail(format!("[{}] expected {what} within {} ms", p.agent_id, wait.as_millis()));
            }
            taken += CHURN_BATCH;
            let leaves = names.iter().map(|n| reference_impl::wire::json_text(&json!({"type": "space.leave", "space": n})));
            p.bulk(ctx, leaves.collect(), (0, |_: &Value| false), wait).await?;
        }
        ctx.checked(format!("{taken} fresh spaces joined and left, each made by its join"));
        p.close().await;
        Ok(())
    })
    .alone(),
];

/// How many fresh user spaces the space-churn case joins and leaves: more than a
/// hub that keeps every space a join made is likely to hold.
const SPACE_CHURN: usize = 10_100;

/// Whether a frame answers one of space-churn's joins: its `id`, or an error's
/// `request_id`, is `churn-{i}`, or it is an error that names no request.
fn answers_churn(v: &Value) -> bool {
    let id = v["id"].as_str().or_else(|| v["request_id"].as_str());
    match id {
        Some(id) => id.starts_with("churn-"),
        None => v["type"] == "error",
    }
}

/// How many joins space-churn sends before it reads their answers.
const CHURN_BATCH: usize = 100;

// ---------------------------------------------------------------------------
// Fuzzing

// ---------------------------------------------------------------------------
// Space pool: flows use a space of their own without creating one per case.

/// Takes a space name from the run's pool (or a new one); the pool lives in the
/// run's memo and is shared by the workers.
fn lease(f: &FuzzCtx) -> String {
    let mut g = f.memo.lock().unwrap_or_else(|p| p.into_inner());
    let m = g.get_or_insert_with(|| json!({"tag": hex(8), "free": [], "next": 0}));
    if let Some(Value::String(name)) = m["free"].as_array_mut().and_then(Vec::pop) {
        return name;
    }
    let n = m["next"].as_u64().unwrap_or(0);
    m["next"] = json!(n + 1);
    format!("fzpool-{}-{n}", m["tag"].as_str().unwrap_or("x"))
}

fn release(f: &FuzzCtx, name: String) {
    let mut g = f.memo.lock().unwrap_or_else(|p| p.into_inner());
    if let Some(a) = g.as_mut().and_then(|m| m["free"].as_array_mut()) {
        a.push(json!(name));
    }
}

// ---------------------------------------------------------------------------
// Draws.

#[derive(Debug, Clone, Copy, Default, Arbitrary)]
pub(super) enum SysPrefix {
    #[default]
    Agent,
    File,
    Mcp,
}

/// A space name: generated (fresh for the case) or drawn.
#[derive(Debug, Clone, Default, Arbitrary)]
pub(super) enum NameKind {
    #[default]
    User,
    UserMarks,
    Task,
    System(SysPrefix),
    Upper,
    Spaced,
    Dotted,
    Pool,
    Empty,
    Drawn(String),
}

fn plain_name(s: &str) -> bool {
    !s.is_empty()
        && s.len() <= 64
        && s.bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'_' || b == b'-')
}

/// A user space name of the naming table: `[a-z0-9_-]+` or `task.` plus one.
fn is_user_name(s: &str) -> bool {
    plain_name(s) || s.strip_prefix("task.").is_some_and(plain_name)
}

pub(super) fn name_for(k: &NameKind, st: &St) -> String {
    let t = &st.tok;
    match k {
        NameKind::User => format!("fz-{t}"),
        NameKind::UserMarks => format!("fz_{t}-x_1"),
        NameKind::Task => format!("task.fz-{t}"),
        NameKind::System(p) => {
            let p = match p {
                SysPrefix::Agent => "agent",
                SysPrefix::File => "file",
                SysPrefix::Mcp => "mcp",
            };
            format!("{p}.fz-{t}")
        }
        NameKind::Upper => format!("Fz-{t}"),
        NameKind::Spaced => format!("fz {t}"),
        NameKind::Dotted => format!("fz.{t}.x"),
        NameKind::Pool => st.pool.clone(),
        NameKind::Empty => String::new(),
        NameKind::Drawn(s) => clip(s, 64),
    }
}

/// The verdict for joining `s`.
pub(super) fn want_join(s: &str, st: &St) -> Want {
    if st.joined.iter().any(|j| j == s) {
        return open("a second join of a joined space is not fixed");
    }
    if s == st.public {
        return Expected::Accept(Shows::Joined(s.into()), Codes::none());
    }
    if st.full.as_deref() == Some(s) {
        return Expected::Accept(Shows::Joined(s.into()), only(&["SPACE_FULL"]));
    }
    if s == st.missing {
        return Expected::Reject(only(&["SPACE_NOT_FOUND"]));
    }
    if s.bytes().any(|b| b.is_ascii_uppercase() || b == b' ') {
        return Expected::Reject(Codes::Any);
    }
    if is_system_name(s) && s.contains(&st.tok) {
        return Expected::Reject(Codes::Any);
    }
    if is_user_name(s) {
        return Expected::Accept(Shows::Joined(s.into()), only(&["SPACE_NOT_FOUND"]));
    }
    open("a space name of no kind the spec names")
}

/// Checks a space.list reply: the echoed id (ASP-021, ASP-038) and the space-list
/// case's rule on its entries.
pub(super) fn check_list(v: &Value, rid: Option<&str>) -> FuzzStep<()> {
    if let Some(rid) = rid.filter(|r| v["id"] != *r) {
        let said = format!(
            "the space.list reply does not echo id {rid:?} (ASP-021, ASP-038): {}",
            v["id"]
        );
        return finding(Oracle::Verdict, said);
    }
    let spaces = v["spaces"].as_array().map_or(&[][..], Vec::as_slice);
    first_failing(list_finding(spaces).into_iter().collect())
}

/// Judges an answer due to be space.joined for `space`: an error `codes` allow, or
/// space.joined that [`joined_findings`] passes (ASP-021, ASP-022, ASP-023).
pub(super) fn judge_joined(
    answer: &Value,
    space: &str,
    codes: &Codes<&'static str>,
    rid: Option<&str>,
    what: &str,
    me: &str,
) -> FuzzStep<()> {
    if !expected_event(
        answer,
        codes,
        what,
        "space.joined",
        "ASP-022, ASP-023",
        None,
    )? {
        return Ok(());
    }
    first_failing(joined_findings(answer, rid, space, me))
}

/// Joins `space` as a setup step; `None` when the space does not exist (the target
/// creates no spaces on join, ambiguity ASP-A8).
pub(super) async fn join_setup(
    ctx: &mut Ctx,
    p: &mut Peer,
    space: &str,
) -> FuzzStep<Option<Value>> {
    let jid = rid_of("join");
    p.send(
        ctx,
        &json!({"type": "space.join", "id": jid, "space": space, "timestamp": now_s()}),
    )
    .await?;
    let v = p
        .expect(ctx, &format!("an answer to joining {space}"), |v| {
            v["type"] == "space.joined" || v["type"] == "error"
        })
        .await?;
    let what = format!("joining {space}");
    if v["type"] == "error" {
        check_error(ctx, &v, Some(&jid))?;
        return match v["code"].as_str() {
            Some("SPACE_NOT_FOUND") => Ok(None),
            Some(RATE_LIMITED) => fuzz_skip("the target rate-limits joins (RATE_LIMITED)"),
            _ => finding(Oracle::Verdict, format!("{what} drew {v}")),
        };
    }
    first_failing(joined_findings(&v, Some(&jid), space, &p.agent_id))?;
    Ok(Some(v))
}

/// Runs `body` with a space leased from the pool, and returns the space after.
pub(super) async fn with_pool<F>(f: &mut FuzzCtx, body: F) -> FuzzStep<()>
where
    F: for<'a> FnOnce(&'a mut FuzzCtx, &'a str) -> FuzzFuture<'a>,
{
    let pool = lease(f);
    let r = body(f, &pool).await;
    release(f, pool);
    r
}

/// Connects A as `ida` and B as `idb`, checking each handshake, and that the two
/// connections got different connection ids (ASP-009).
pub(super) async fn connect_two(ctx: &mut Ctx, ida: &str, idb: &str) -> FuzzStep<(Peer, Peer)> {
    let (a, ra) = connect(ctx, ida).await?;
    let (b, rb) = connect(ctx, idb).await?;
    first_failing(distinct_connections(ctx, &ra, &rb)?.into_iter().collect())?;
    Ok((a, b))
}

/// Joins `a` to the leased space `pool`, or to the profile's public space when the
/// target creates no spaces on join (ambiguity ASP-A8); returns the space used.
pub(super) async fn join_pool_or_public(
    ctx: &mut Ctx,
    a: &mut Peer,
    pool: &str,
) -> FuzzStep<String> {
    let mut space = pool.to_string();
    if join_setup(ctx, a, &space).await?.is_none() {
        space = ctx.profile().agora_spaces.public_space.clone();
        join_setup(ctx, a, &space).await?;
    }
    Ok(space)
}

/// A receives the space.members update for B's join: naming the space, with
/// joined set to B, left null and B among the members (ASP-026).
pub(super) async fn joined_update(
    ctx: &mut Ctx,
    a: &mut Peer,
    space: &str,
    idb: &str,
) -> FuzzStep<()> {
    let want = idb.to_string();
    let got = a
        .expect(
            ctx,
            &format!("space.members announcing that {idb} joined"),
            move |v| v["type"] == "space.members" && v["joined"] == want.as_str(),
        )
        .await
        .map_err(Into::into);
    let j = missed_under(&MEMBER_UPDATES, a.closed, got)?;
    first_failing(
        update_finding(&j, space, idb, true, &[idb])
            .into_iter()
            .collect(),
    )
}

/// A frame a reply check missed (it never came, or came wrong), filed under `rule`:
/// `run`'s case of that rule fails the same way. A connection the target closed
/// meanwhile (`closed`) is a crash of the transport, whatever it interrupted.
fn missed_under<T>(rule: &'static crate::rules::Rule, closed: bool, r: FuzzStep<T>) -> FuzzStep<T> {
    match r {
        Err(FuzzStop::Case(crate::case::Stop::Fail(m))) if closed => finding(Oracle::Transport, m),
        Err(FuzzStop::Case(crate::case::Stop::Fail(m))) => {
            under(Some(rule.key), finding(Oracle::Members, m))
        }
        other => other,
    }
}

/// B leaves the space: A receives the space.members update naming the space, with
/// left set to B, joined null and B gone from the members (ASP-027); B's leave
/// draws no error before its barrier's answer (ASP-025).
pub(super) async fn leave_update(
    ctx: &mut Ctx,
    a: &mut Peer,
    b: &mut Peer,
    fl: &Flow,
) -> FuzzStep<()> {
    let (space, idb) = (&fl.space, &fl.idb);
    let lid = rid_of("leave");
    b.send(
        ctx,
        &json!({"type": "space.leave", "id": lid, "space": space, "timestamp": now_s()}),
    )
    .await?;
    let want = idb.clone();
    let got = a
        .expect(
            ctx,
            &format!("space.members announcing that {idb} left"),
            move |v| v["type"] == "space.members" && v["left"] == want.as_str(),
        )
        .await
        .map_err(Into::into);
    let l = missed_under(&MEMBER_UPDATES, a.closed, got)?;
    first_failing(
        update_finding(&l, space, idb, false, &[])
            .into_iter()
            .collect(),
    )?;
    let (frames, _) = barrier(ctx, b, true).await?;
    if let Some(e) = frames.iter().find(|v| v["type"] == "error") {
        check_error(ctx, e, Some(&lid))?;
        if e["code"] != RATE_LIMITED {
            return finding(
                Oracle::Verdict,
                format!("leaving a joined space drew an error (ASP-025): {e}"),
            );
        }
    }
    Ok(())
}

/// After B's leave, no event of the space reaches B (ASP-025, ASP-031).
pub(super) async fn nothing_after_leave(
    ctx: &mut Ctx,
    a: &mut Peer,
    b: &mut Peer,
    space: &str,
) -> FuzzStep<()> {
    // A publishes again; B, gone, receives nothing of it (ASP-025, ASP-031).
    let after = format!("after-leave-{}", hex(8));
    a.publish(ctx, space, &after).await?;
    barrier(ctx, a, false).await?;
    let (frames, _) = barrier(ctx, b, true).await?;
    if let Some(v) = frames.iter().find(|v| {
        v["space"] == space
            && matches!(
                v["type"].as_str(),
                Some("space.event" | "space.event.delta")
            )
    }) {
        return finding(
            Oracle::Fanout,
            format!(
                "B received an event of a space it left (ASP-025, ASP-031): {}",
                clip(&v.to_string(), 300)
            ),
        );
    }
    Ok(())
}

/// A asks for the space list: the reply echoes the id and types system spaces
/// (`check_list`), lists the space (ASP-039, ambiguity ASP-A8) with a member_count
/// of at least the `members` of the case's agents in it (ASP-040). `Ok(false)`: the
/// list was refused with RATE_LIMITED, and the case ends there.
pub(super) async fn list_step(
    ctx: &mut Ctx,
    a: &mut Peer,
    space: &str,
    members: u64,
) -> FuzzStep<bool> {
    let lid = rid_of("list");
    a.send(ctx, &json!({"type": "space.list", "id": lid}))
        .await?;
    let list = a
        .expect(ctx, "the space list", |v| {
            (v["type"] == "space.list" && v.get("spaces").is_some()) || v["type"] == "error"
        })
        .await?;
    if list["type"] == "error" {
        check_error(ctx, &list, Some(&lid))?;
        if list["code"] == RATE_LIMITED {
            return Ok(false);
        }
        return finding(Oracle::Verdict, format!("space.list drew {list} (ASP-038)"));
    }
    check_list(&list, Some(&lid))?;
    let entry = list["spaces"]
        .as_array()
        .and_then(|s| s.iter().find(|e| e["id"] == space));
    let Some(entry) = entry else {
        return finding(
            Oracle::List,
            format!("the joined space {space} is not listed (ASP-039, ambiguity ASP-A8)"),
        );
    };
    if entry["member_count"].as_u64().is_none_or(|n| n < members) {
        return finding(
            Oracle::List,
            format!("{space} is listed with member_count {}, but {members} of the case's agents are in it (ASP-040)", entry["member_count"]),
        );
    }
    Ok(true)
}

#[derive(Debug, Clone, Copy, Default, Arbitrary)]
pub(super) enum FromKind {
    #[default]
    Own,
    Omit,
    Spoof,
}

/// What a flow knows once both agents are in its space.
pub(super) struct Flow {
    /// The publisher, A.
    pub(super) ida: String,
    /// The receiver, B.
    pub(super) idb: String,
    pub(super) space: String,
    /// The profile's delta threshold in bytes.
    pub(super) threshold: usize,
    /// How A's publish sets data.from.
    pub(super) from: FromKind,
    /// The other agent id a spoofing publish names as data.from.
    pub(super) spoof: String,
}

impl Flow {
    /// Whether `from`, the data.from B received, fits the publish A sent.
    pub(super) fn fits_from(&self, from: &Value) -> bool {
        match self.from {
            FromKind::Own => from == self.ida.as_str(),
            FromKind::Omit => from.is_null() || from == self.ida.as_str(),
            FromKind::Spoof => from == self.ida.as_str() || from == self.spoof.as_str(),
        }
    }
}
