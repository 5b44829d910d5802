//! The client role: the checks of the frames an agent under test sends, its cases, and
//! its fuzzer (the hub's frames edited).

use super::counterpart::{
    hub, hub_edited, streamed_text, HubPlan, HubRefusal, HEARTBEATS_WANTED, REFUSAL_GRACE,
    WHOLE_TEXT,
};
use super::wire::agent_id;
use crate::case::{fail, fail_rows, Bindings, Case, Level, Step, Stop};
use crate::drive::Transport;
use crate::finding::{quote, Finding};
use crate::fuzzing::spec::{FuzzCtx, Spec};
use crate::fuzzing::verdict::{finding, FuzzFuture, FuzzStep, Oracle};
use crate::rules::rules;
use crate::script::Ctx;
use arbitrary::Arbitrary;
use serde_json::{json, Value};
use std::time::Duration;

rules! {
    CLIENT_NOT_EVENT {
        key: "agora-spaces/client:not-event",
        requirements: &["ASP-001", "ASP-018"],
        level: None,
        owner: "",
        summary: "every frame a client sends is a JSON event object with a string type",
        fails: "a client frame that is not JSON, not an object, or has no string type (seen by the proxy; a client case fails on it)",
        passes: "JSON objects with a string type",
    }
    CLIENT_TIMESTAMP {
        key: "agora-spaces/client:timestamp",
        requirements: &["ASP-020", "ASP-A6"],
        level: None,
        owner: "",
        summary: "a client event's timestamp is a number",
        fails: "a client event whose timestamp is not a number (a string, an object)",
        passes: "numeric timestamps, or none (its own rule)",
    }
    CLIENT_NO_TIMESTAMP {
        key: "agora-spaces/client:no-timestamp",
        requirements: &["ASP-020", "ASP-A6"],
        level: Some(Level::Should),
        owner: "",
        summary: "a client's events carry a timestamp",
        fails: "client events without a timestamp member; one warning names the first type without it",
        passes: "every client event with a timestamp",
    }
    // the JSON pointer, array indices as `*`; the same ids for every schema.
    CLIENT_SCHEMA {
        key: "agora-spaces/client:schema:*",
        requirements: &["ASP-018"],
        level: None,
        owner: "",
        summary: "a client's event matches the suite's schema for its type (schemas/agora-spaces/)",
        fails: "a member missing, of another type or outside its pattern in a client event (the timestamp judged apart)",
        passes: "client events the schemas validate",
    }
    CLIENT_SILENT_HUB {
        key: "agora-spaces/client:silent-hub",
        requirements: &["ASP-015", "ASP-A5"],
        level: Some(Level::Should),
        owner: "",
        summary: "a client gives up on a hub silent for the heartbeat timeout soon after it",
        fails: "the client ends with an error long after heartbeat_timeout_ms (over three timeouts and a second), or still waits at the deadline",
        passes: "the client closes and reports an error soon after the timeout",
    }
}

/// The input of a client scenario: the agent, the space, the text to publish, and
/// short heartbeat timings (the scaled 30 s and 60 s).
pub fn client_input(tag: &str) -> Value {
    json!({
        "agent_id": agent_id(tag),
        "space": "general",
        "text": format!("published by the client · {tag}"),
        "heartbeat_interval_ms": 150,
        "heartbeat_timeout_ms": 1000,
    })
}

/// The schema of a frame a client sends, by its type.
fn client_schema_for(ty: &str) -> Option<&'static str> {
    Some(match ty {
        "agent.register" => "agent-register",
        "agent.heartbeat" => "agent-heartbeat",
        "space.join" => "space-join",
        "space.leave" => "space-leave",
        "space.publish" => "space-publish",
        "space.event.cancel" => "space-event-cancel",
        "space.list" => "space-list-request",
        _ => return None,
    })
}

/// Reads every frame the client sent: a JSON object with a string type (ASP-001,
/// ASP-018), a numeric timestamp (ASP-020, a warning when missing), and the schema
/// of its type. Returns the frames that could be read, in order.
pub fn client_frames(ctx: &mut Ctx, run: &crate::counterparty::DriverRun) -> Step<Vec<Value>> {
    let mut out = Vec::new();
    let mut untimed = None;
    for (_, text) in run.client_frames() {
        match client_frame(ctx, text)? {
            Ok((v, timed)) => {
                if !timed {
                    untimed.get_or_insert(v["type"].as_str().unwrap_or_default().to_string());
                }
                out.push(v);
            }
            Err(why) => return fail(why),
        }
    }
    if let Some(ty) = untimed {
        ctx.finding(no_timestamp(&ty));
    }
    Ok(out)
}

pub(super) fn no_timestamp(ty: &str) -> Finding {
    CLIENT_NO_TIMESTAMP.found(format!("the client's events carry no timestamp, e.g. {ty}"))
}

/// One client frame: the event and whether it carries a timestamp, or why it is
/// not an event object; the timestamp's type and the schema of its type judged as
/// findings.
pub(super) fn client_frame(ctx: &mut Ctx, text: &str) -> Step<Result<(Value, bool), String>> {
    let v: Value = match serde_json::from_str(text) {
        Ok(v @ Value::Object(_)) if v["type"].is_string() => v,
        _ => {
            return Ok(Err(format!(
                "the client sent a frame that is not a JSON event object with a string type (ASP-001, ASP-018): {}",
                quote(text)
            )))
        }
    };
    let ty = v["type"].as_str().unwrap_or_default().to_string();
    let timed = match v.get("timestamp") {
        None => false,
        Some(t) if t.is_number() => true,
        Some(t) => {
            ctx.finding(CLIENT_TIMESTAMP.found(format!(
                "the client's {ty} carries the timestamp {t}, not a number"
            )));
            true
        }
    };
    if let Some(schema) = client_schema_for(&ty) {
        let list = ctx
            .shared
            .schemas
            .violations(&format!("agora-spaces/{schema}"), &v)
            .map_err(|e| Stop::Skip(format!("the harness has no schema for {ty}: {e}")))?;
        for viol in list.into_iter().filter(|x| x.shape() != "/timestamp") {
            ctx.finding(CLIENT_SCHEMA.found_as(
                format!("{schema}:{}", viol.shape()),
                format!("the client's {ty} at {}: {}", viol.pointer, viol.message),
            ));
        }
    }
    Ok(Ok((v, timed)))
}

/// The texts of the complete events the driver printed (`{"result": {"text"}}`).
pub fn printed_texts(run: &crate::counterparty::DriverRun) -> Vec<String> {
    run.results()
        .iter()
        .map(|r| {
            r["text"]
                .as_str()
                .map_or_else(|| r.to_string(), String::from)
        })
        .collect()
}

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
                ctx.deviation(CLIENT_SILENT_HUB.found(format!(
                        "the client waited {} ms on a silent hub, with heartbeat_timeout_ms {timeout}, and ended only then ({}; ASP-015)",
                        waited.as_millis(), run.ended()
                    )));
                Ok(())
            }
            crate::counterparty::Exit::Deadline => {
                ctx.deviation(CLIENT_SILENT_HUB.found(format!(
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

// ---------------------------------------------------------------------------
// Fuzzing

// ---------------------------------------------------------------------------
// Client fuzzing (`fuzz --role client`): the harness is the hub and edits one of
// the frames it sends the client under test.

/// Fuzzing a client: each case runs the client driver once (scenario `listen`)
/// against the scripted hub of `counterpart::hub`, which sends a whole event
/// and a delta stream, or a cancelled stream and a whole event, one frame edited.
/// Oracles: every client frame is a JSON event with a string type; the partial text
/// of a cancelled stream is never presented; when every frame keeps its value the
/// events printed are exactly those sent, the stream rebuilt; no crash, no hang.
pub static CLIENT_SPEC: Spec = crate::fuzzing::client::spec(
    &[Transport::Ws],
    client_case_fn,
    client_probe_fn,
    &[
        ("never-heartbeats", "a fuzz case ends as soon as its events are sent, before a heartbeat is due; client-heartbeat judges heartbeats"),
        ("ignores-silence", "a silent hub makes a case wait the whole heartbeat timeout; client-silent-hub judges it"),
        ("no-timestamp", "a missing timestamp is a SHOULD (ASP-A6), not a finding; client-join-publish warns of it"),
        ("ignores-join-error", "the fuzzer edits the hub's frames after a successful join and never refuses one; client-join-refused serves the refusals"),
        ("ignores-publish-error", "the fuzzer's scenario is listen, which publishes nothing; client-publish-refused serves the refusal"),
    ],
);

fn client_case_fn(f: &mut FuzzCtx) -> FuzzFuture<'_> {
    Box::pin(client_case(f))
}

fn client_probe_fn(f: &mut FuzzCtx) -> FuzzFuture<'_> {
    Box::pin(async move {
        let input = client_input("probe");
        let hub = hub(HubPlan::Deltas, &input);
        let run = crate::counterparty::drive_hub(&mut f.ctx, "listen", &input, hub).await?;
        crate::fuzzing::client::completed(&run, "a plain listen")
    })
}

/// One client fuzz case.
#[derive(Debug, Clone, Default, Arbitrary)]
struct ClientCase {
    /// A cancelled stream then a whole event (else a whole event then a stream).
    cancel: bool,
    /// Which frame after the join is edited.
    frame: u8,
    edit: crate::fuzzing::client::Edit,
}

async fn client_case(f: &mut FuzzCtx) -> FuzzStep<()> {
    use crate::fuzzing::client::ended_well;
    use {streamed_text, WHOLE_TEXT};
    let c: ClientCase = f.draw();
    let (plan, frames, tag) = if c.cancel {
        (HubPlan::Cancel, 4, "cancelled")
    } else {
        (HubPlan::Deltas, 6, "streamed")
    };
    let target = usize::from(c.frame) % frames;
    let kept = std::sync::Arc::new(std::sync::Mutex::new(true));
    let edit = c.edit.clone();
    let kept_in = kept.clone();
    let frame_edit = Box::new(move |i: usize, text: String| {
        if i != target {
            return text;
        }
        let e = edit.apply(text.into_bytes());
        *kept_in.lock().unwrap_or_else(|p| p.into_inner()) = e.same_value;
        String::from_utf8_lossy(&e.bytes).into_owned()
    });
    let input = client_input("fuzz");
    let hub = hub_edited(plan, &input, frame_edit);
    let run = crate::counterparty::drive_hub(&mut f.ctx, "listen", &input, hub).await?;
    ended_well(&run)?;
    let kept = *kept.lock().unwrap_or_else(|p| p.into_inner());
    for (_, t) in run.client_frames() {
        f.fuzzed(t.as_bytes());
        let ok = serde_json::from_str::<Value>(t).is_ok_and(|v| v["type"].is_string());
        if !ok {
            return finding(
                Oracle::ReplyCheck,
                format!("the client sent a frame that is not a JSON event with a string type (ASP-001, ASP-018): {t}"),
            );
        }
    }
    let got = printed_texts(&run);
    let (streamed, chunks) = streamed_text(tag);
    // The cancel frame is the third of a cancelled plan: with it edited away the
    // stream simply never ends, and is still never complete.
    let first = chunks.first().cloned().unwrap_or_default();
    if c.cancel {
        if let Some(partial) = got.iter().find(|t| t.starts_with(&first)) {
            return finding(
                Oracle::Cancel,
                format!("the client presented the partial text of a cancelled stream: {partial:?} (ASP-037; {} of frame {target})", c.edit),
            );
        }
    }
    if kept {
        let want: Vec<String> = if c.cancel {
            vec![WHOLE_TEXT.to_string()]
        } else {
            vec![WHOLE_TEXT.to_string(), streamed]
        };
        if got != want {
            let oracle = if c.cancel {
                Oracle::Cancel
            } else {
                Oracle::Delta
            };
            return finding(
                oracle,
                format!(
                    "the client printed {} for the events {} ({} of frame {target}; ASP-033, ASP-034)",
                    crate::finding::clipped(&format!("{got:?}"), 300),
                    crate::finding::clipped(&format!("{want:?}"), 300),
                    c.edit
                ),
            );
        }
    }
    Ok(())
}
