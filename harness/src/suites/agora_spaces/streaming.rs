//! Publishing and streaming (agora-spaces.zh.md, space.publish, space.event,
//! space.event.delta, space.event.done, space.event.cancel): their cases, and the
//! fuzzer's publish-and-receive flows, delta streams and cancels.

use super::connection::{connect, connect_taking, Peer};
use super::errors::{barrier, check_error, invalid, only, open, Shows, St, Want};
use super::spaces::{
    connect_two, join_pool_or_public, join_setup, joined_update, leave_update, list_step,
    nothing_after_leave, Flow, FromKind,
};
use super::wire::{
    agent_id, clip, fresh_agent, now_s, rid_of, sized, text_of, user_space, RATE_LIMITED, SHORT,
};
use crate::case::{fail, skip, Bindings, Case, Step};
use crate::drive::Transport;
use crate::finding::Finding;
use crate::fuzzing::spec::FuzzCtx;
use crate::fuzzing::verdict::{
    finding, skip as fuzz_skip, under, Codes, Expected, FuzzStep, Oracle,
};
use crate::script::Ctx;
use arbitrary::Arbitrary;
use serde_json::{json, Value};
use std::time::{Duration, Instant};

crate::rules::rules! {
    PUBLISH_TIMESTAMP_INTEGER {
        key: "agora-spaces/publish-fanout:timestamp-integer",
        requirements: &["ASP-029"],
        level: None,
        owner: "agora-spaces/publish-fanout",
        summary: "a space.event's data.timestamp is an integer, as the publisher's was (the spec's timestamps are Unix seconds, written as integers)",
        fails: "a publisher's integer data.timestamp relayed as a float (1234567890 reaching the others as 1234567890.0), which a strictly typed client cannot read as an integer",
        passes: "an integer data.timestamp",
    }
}

/// The judge of a delta stream (vectors/agora-spaces/README.md): one event_id and one
/// space; string texts; the first delta carries data.from; exactly one done, last;
/// the concatenation equals the published text.
pub fn judge_stream(frames: &[Value], published: &str) -> Result<String, String> {
    let Some(first) = frames.first() else {
        return Err("no frames".into());
    };
    let (event_id, space) = (&first["event_id"], &first["space"]);
    let mut text = String::new();
    let mut done = 0;
    for (i, f) in frames.iter().enumerate() {
        if f["event_id"] != *event_id || f["space"] != *space {
            return Err(format!("frame {i} changes event_id or space"));
        }
        match f["type"].as_str() {
            Some("space.event.delta") => {
                if done > 0 {
                    return Err(format!("frame {i}: a delta after done (ASP-034)"));
                }
                let Some(t) = f["data"]["text"].as_str() else {
                    return Err(format!("frame {i}: data.text is not a string (ASP-032)"));
                };
                if i == 0 && !f["data"]["from"].is_string() {
                    return Err("the first delta carries no data.from (ASP-032)".into());
                }
                text.push_str(t);
            }
            Some("space.event.done") => done += 1,
            other => return Err(format!("frame {i} has type {other:?}")),
        }
    }
    if done != 1
        || frames
            .last()
            .is_some_and(|f| f["type"] != "space.event.done")
    {
        return Err(format!(
            "{done} done frames; exactly one, last, is expected (ASP-034)"
        ));
    }
    if text != published {
        return Err(format!(
            "the reassembled text ({} bytes) differs from the published text ({} bytes) (ASP-033)",
            text.len(),
            published.len()
        ));
    }
    Ok(text)
}

/// The cases of this area, in the order they run.
pub const CASES: &[Case] = &[
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
            } else if let Some(f) = timestamp_not_integer(&ev) {
                ctx.deviation(f);
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
    case!("order-stream-then-small", "two streamed messages and a small one, published one after another, complete in that order (derived from ASP-030)", ["ASP-030", "ASP-032"], Fact, false, None, |ctx| {
        let mut space = user_space();
        // Long enough to be paced out over many deltas, so that a later message has
        // time to overtake it.
        let n = ctx.profile().agora_spaces.delta_threshold_bytes * 32 + 77;
        let ida = agent_id("sa");
        let (mut a, _, _) = Peer::join_as(ctx, &ida).await?;
        let (mut b, _, _) = Peer::join_as_taking(ctx, &agent_id("sb"), 4 * n + (64 << 10)).await?;
        a.join_own(ctx, &mut space).await?;
        b.join(ctx, &space).await?;
        // The second stream is shorter: sent beside the first, it would end first.
        let short = ctx.profile().agora_spaces.delta_threshold_bytes * 9 + 5;
        let texts = [text_of(n), text_of(short), format!("after the streams {ida}")];
        for t in &texts {
            a.publish(ctx, &space, t).await?;
        }
        // The order in which B has each message whole: at its space.event, or at the
        // done of its stream (streams named in the order their first delta came).
        let (mut streams, mut whole): (Vec<Value>, Vec<usize>) = (Vec::new(), Vec::new());
        while whole.len() < texts.len() {
            let (from, known, sp) = (ida.clone(), streams.clone(), space.clone());
            let v = b.expect(ctx, "A's three messages", move |v| v["space"] == sp.as_str() && (((v["type"] == "space.event" || v["type"] == "space.event.delta") && v["data"]["from"] == from.as_str()) || known.contains(&v["event_id"]))).await?;
            let text = v["data"]["text"].as_str().unwrap_or_default();
            match v["type"].as_str() {
                Some("space.event") => whole.extend(texts.iter().position(|t| t == text)),
                Some("space.event.delta") if !streams.contains(&v["event_id"]) => streams.push(v["event_id"].clone()),
                Some("space.event.done") => whole.extend(streams.iter().position(|e| *e == v["event_id"])),
                _ => {}
            }
        }
        if whole != [0, 1, 2] {
            let names = ["the first streamed message", "the second streamed message", "the small one"];
            let got: Vec<&str> = whole.iter().map(|i| names[*i]).collect();
            return fail(format!("A published two streamed messages, then a small one; B had them whole in the order {}: a publisher's later message overtook an earlier one", got.join(", ")));
        }
        ctx.checked("the three messages completed in the order A published them");
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
        let stop = Stopping { tags: ("xa", "xb"), sends: "space.event.cancel", done_too: false, what: "a delta after cancelling its event (ASP-036)" };
        let mut b = stop_stream(ctx, stop).await?;
        b.expect_none(ctx, Duration::ZERO, "an error for the cancel", |v| v["type"] == "error").await?;
        Ok(())
    }),
    case!("leave-stops-stream", "a member that leaves a space while an event streams to it gets no more of its deltas, nor its done (derived from ASP-025)", ["ASP-025", "ASP-032"], Fact, false, None, |ctx| {
        let stop = Stopping { tags: ("la", "lb"), sends: "space.leave", done_too: true, what: "a delta or the done of an event of a space it left (ASP-025)" };
        stop_stream(ctx, stop).await.map(|_| ())
    }),
];

// ---------------------------------------------------------------------------
// Fuzzing

#[derive(Debug, Clone, Default, Arbitrary)]
pub(super) enum TextKind {
    #[default]
    Plain,
    Drawn(String),
    Empty,
    Fancy(u8),
    AtThreshold,
    JustAbove,
    Long(u8),
}

#[derive(Debug, Clone, Default, Arbitrary)]
pub(super) struct FlowSpec {
    pub(super) text: TextKind,
    from: FromKind,
    leave: bool,
    /// A space.list at the end when below 64.
    list: u8,
}

pub(super) fn want_publish(msg: &serde_json::Map<String, Value>, st: &St) -> Want {
    let Some(space) = msg.get("space").and_then(Value::as_str) else {
        return Expected::Reject(only(&["INVALID_REQUEST", "SPACE_NOT_FOUND"]));
    };
    let member = st.joined.iter().any(|j| j == space);
    let text_ok = msg
        .get("data")
        .and_then(Value::as_object)
        .is_some_and(|d| d.get("text").is_some_and(Value::is_string));
    if !text_ok {
        return Expected::Reject(if member { invalid() } else { Codes::Any });
    }
    if !member {
        return open("publishing outside one's spaces (ambiguity ASP-A15)");
    }
    let data = msg.get("data").and_then(Value::as_object);
    let from_ok = data
        .and_then(|d| d.get("from"))
        .is_none_or(|f| f.as_str() == Some(st.me.as_str()));
    let ts_ok = data
        .and_then(|d| d.get("timestamp"))
        .is_none_or(Value::is_number);
    if from_ok && ts_ok {
        Expected::Accept(Shows::Quiet, Codes::none())
    } else {
        open("another data.from may be rewritten, relayed or refused (ambiguity ASP-A11)")
    }
}

/// Texts for single-message publishes: kept small.
pub(super) fn short_text(k: &TextKind) -> String {
    match k {
        TextKind::Drawn(s) => clip(s, 64),
        TextKind::Empty => String::new(),
        TextKind::Fancy(n) => sized(usize::from(*n), true),
        _ => "hello everyone".into(),
    }
}

fn text_for(k: &TextKind, threshold: usize) -> String {
    match k {
        TextKind::Plain => "Hello everyone".into(),
        TextKind::Drawn(s) => clip(s, 200),
        TextKind::Empty => String::new(),
        TextKind::Fancy(n) => sized(usize::from(*n) * 4, true),
        TextKind::AtThreshold => sized(threshold, true),
        TextKind::JustAbove => sized(threshold + 1, true),
        TextKind::Long(n) => sized(
            threshold * (2 + usize::from(*n % 6)) + usize::from(*n),
            true,
        ),
    }
}

/// Two agents in one space: member updates, a publish and its fan-out, a leave and
/// a list.
pub(super) async fn flow(f: &mut FuzzCtx, pool: &str, spec: FlowSpec) -> FuzzStep<()> {
    let (ida, idb) = (fresh_agent("fa"), fresh_agent("fb"));
    let threshold = f.ctx.profile().agora_spaces.delta_threshold_bytes;
    let ctx = &mut f.ctx;
    let (mut a, mut b) = connect_two(ctx, &ida, &idb).await?;
    let space = join_pool_or_public(ctx, &mut a, pool).await?;
    if join_setup(ctx, &mut b, &space).await?.is_none() {
        return finding(
            Oracle::Verdict,
            format!("{space}, which A just joined, drew SPACE_NOT_FOUND for B"),
        );
    }
    // A learns that B joined (ASP-026).
    joined_update(ctx, &mut a, &space, &idb).await?;

    // A publishes; B receives it once.
    let text = text_for(&spec.text, threshold);
    let pid = rid_of("pub");
    let spoof = fresh_agent("spoof");
    let fl = Flow {
        ida,
        idb,
        space,
        threshold,
        from: spec.from,
        spoof,
    };
    if !publish_step(f, &mut a, &fl, &text, &pid).await? {
        return Ok(());
    }
    let ctx = &mut f.ctx;
    receive_step(ctx, &mut b, &fl, &text).await?;
    received_once(ctx, &mut b, &fl.space).await?;

    let mut members: u64 = 2;
    if spec.leave {
        leave_update(ctx, &mut a, &mut b, &fl).await?;
        nothing_after_leave(ctx, &mut a, &mut b, &fl.space).await?;
        members = 1;
    }
    if spec.list < 64 && !list_step(ctx, &mut a, &fl.space, members).await? {
        return Ok(());
    }
    a.close().await;
    b.close().await;
    Ok(())
}

/// A publishes `text` with id `pid`, data.from as drawn, and judges what reaches A
/// before its barrier's answer: a member's publish draws no error (ASP-028).
/// `Ok(false)`: the publish was refused as the spec allows (RATE_LIMITED, or a
/// spoofed data.from refused, ambiguity ASP-A11), and the case ends there.
async fn publish_step(
    f: &mut FuzzCtx,
    a: &mut Peer,
    fl: &Flow,
    text: &str,
    pid: &str,
) -> FuzzStep<bool> {
    let mut data = json!({"text": text, "timestamp": now_s()});
    match fl.from {
        FromKind::Own => data["from"] = json!(fl.ida),
        FromKind::Omit => {}
        FromKind::Spoof => data["from"] = json!(fl.spoof),
    }
    let publish = json!({"type": "space.publish", "id": pid, "space": fl.space, "data": data, "timestamp": now_s()});
    let bytes = publish.to_string();
    f.fuzzed(bytes.as_bytes());
    let ctx = &mut f.ctx;
    a.send_text(ctx, bytes).await?;
    let (frames, _) = barrier(ctx, a, true).await?;
    if let Some(e) = frames.iter().find(|v| v["type"] == "error") {
        check_error(ctx, e, Some(pid))?;
        let refused = ["INVALID_REQUEST", "UNAUTHORIZED", RATE_LIMITED];
        if matches!(fl.from, FromKind::Spoof)
            && refused.contains(&e["code"].as_str().unwrap_or_default())
        {
            // Refusing another agent's data.from is allowed (ambiguity ASP-A11).
            return Ok(false);
        }
        if e["code"] == RATE_LIMITED {
            return Ok(false);
        }
        return finding(
            Oracle::Verdict,
            format!("a member's publish drew an error (ASP-028): {e}"),
        );
    }
    Ok(true)
}

/// B receives the published event: whole (judged by [`judge_whole`]) or as a delta
/// stream (judged by [`judge_delta_stream`]).
async fn receive_step(ctx: &mut Ctx, b: &mut Peer, fl: &Flow, text: &str) -> FuzzStep<()> {
    let in_space = fl.space.clone();
    let first = b
        .expect(ctx, "the published event", move |v| {
            (v["type"] == "space.event" || v["type"] == "space.event.delta")
                && v["space"] == in_space.as_str()
        })
        .await?;
    if first["type"] == "space.event" {
        return judge_whole(&first, fl, text);
    }
    judge_delta_stream(ctx, b, first, fl, text).await
}

/// How a receiver stops a stream under way to it, and what may not come after.
struct Stopping {
    /// The tags of the publisher's and the receiver's agent ids.
    tags: (&'static str, &'static str),
    /// The event the receiver sends: space.event.cancel (naming the event) or
    /// space.leave.
    sends: &'static str,
    /// Whether the stream's done is barred too, not only its deltas.
    done_too: bool,
    /// What arriving after the grace fails the case with.
    what: &'static str,
}

/// A publishes 1 MiB in a fresh user space; once the first delta reaches B, B sends
/// `stop.sends`; past the frames under way (300 ms) and the profile's cancel grace,
/// nothing of the event that `stop` bars may reach B. B, for the case to judge on;
/// the case is skipped when the text came whole or the stream ended before the stop
/// arrived.
async fn stop_stream(ctx: &mut Ctx, stop: Stopping) -> Step<Peer> {
    let space = user_space();
    let text = text_of(1024 * 1024);
    let (mut a, _, _) = Peer::join_as(ctx, &agent_id(stop.tags.0)).await?;
    // A hub that does not stream sends the text as one event: b takes it whole.
    let (mut b, _, _) =
        Peer::join_as_taking(ctx, &agent_id(stop.tags.1), 2 * text.len() + (64 << 10)).await?;
    a.join(ctx, &space).await?;
    b.join(ctx, &space).await?;
    a.publish(ctx, &space, &text).await?;
    let first = b
        .expect(ctx, "the large event", |v| {
            v["type"] == "space.event.delta" || v["type"] == "space.event"
        })
        .await?;
    if first["type"] == "space.event" {
        return skip(format!(
            "the target delivered 1 MiB as one space.event; there is no stream to stop with {}",
            stop.sends
        ));
    }
    let ev = first["event_id"].clone();
    let mut msg = json!({"type": stop.sends, "space": space});
    if stop.sends == "space.event.cancel" {
        msg["event_id"] = ev.clone();
    }
    b.send(ctx, &msg).await?;
    // Frames already under way may still arrive: a grace, then silence.
    let under_way = b.drain(ctx, Duration::from_millis(300)).await?;
    if under_way
        .iter()
        .any(|v| v["type"] == "space.event.done" && v["event_id"] == ev)
    {
        return skip(format!(
            "the stream ended before {} arrived; nothing left to stop",
            stop.sends
        ));
    }
    let grace = ctx.profile().agora_spaces.cancel_grace();
    let done_too = stop.done_too;
    b.expect_none(ctx, grace, stop.what, move |v| {
        (v["type"] == "space.event.delta" || (done_too && v["type"] == "space.event.done"))
            && v["event_id"] == ev
    })
    .await?;
    if b.closed {
        // Nothing more because no connection: not a stop honoured.
        return Err(ctx.block(crate::rules::TRANSPORT.found_in(
            "agora-spaces",
            "connection-closed",
            format!(
                "[{}] the target closed the connection after {}",
                b.agent_id, stop.sends
            ),
        )));
    }
    a.close().await;
    Ok(b)
}

/// A relayed space.event whose numeric data.timestamp is no integer, where every
/// publish of the harness sends an integer one (the publish-fanout case's rule).
pub fn timestamp_not_integer(ev: &Value) -> Option<Finding> {
    let ts = &ev["data"]["timestamp"];
    (ts.is_number() && !(ts.is_i64() || ts.is_u64())).then(|| {
        PUBLISH_TIMESTAMP_INTEGER.found(format!(
            "the publisher's integer data.timestamp reached another member as {ts}: an integer relayed as a float (ASP-029)"
        ))
    })
}

/// Judges a published event that arrived whole: only a text within the delta
/// threshold may (ASP-032); it carries the published text and a data.from that fits
/// the publish (ASP-029).
fn judge_whole(first: &Value, fl: &Flow, text: &str) -> FuzzStep<()> {
    let threshold = fl.threshold;
    if text.len() > threshold {
        return not_streamed(text.len(), threshold);
    }
    if first["data"]["text"] != text {
        return finding(
            Oracle::Fanout,
            format!(
                "space.event carries another text than the published one (ASP-029): {}",
                clip(&first.to_string(), 300)
            ),
        );
    }
    if !fl.fits_from(&first["data"]["from"]) {
        return finding(
            Oracle::Fanout,
            format!(
                "space.event data.from is {}, the publisher is {} (ASP-029)",
                first["data"]["from"], fl.ida
            ),
        );
    }
    match timestamp_not_integer(first) {
        Some(f) => crate::fuzzing::verdict::under(
            Some(PUBLISH_TIMESTAMP_INTEGER.key),
            finding(Oracle::Fanout, f.summary),
        ),
        None => Ok(()),
    }
}

/// Judges a published event that arrives as deltas, `first` the first of them: its
/// data.from fits the publish (ASP-032), and the stream read up to its done
/// reassembles the text (ASP-032 to ASP-034, `judge_stream`).
async fn judge_delta_stream(
    ctx: &mut Ctx,
    b: &mut Peer,
    first: Value,
    fl: &Flow,
    text: &str,
) -> FuzzStep<()> {
    let ev = first["event_id"].clone();
    if !fl.fits_from(&first["data"]["from"]) {
        return finding(
            Oracle::Delta,
            format!(
                "the first delta names data.from {}, the publisher is {} (ASP-032)",
                first["data"]["from"], fl.ida
            ),
        );
    }
    let mut stream = vec![first];
    loop {
        let want = ev.clone();
        let next = b
            .expect(ctx, "the rest of the delta stream", move |v| {
                v["event_id"] == want
            })
            .await?;
        let done = next["type"] == "space.event.done";
        stream.push(next);
        if done {
            break;
        }
    }
    if let Err(e) = judge_stream(&stream, text) {
        return finding(
            Oracle::Delta,
            format!("the delta stream of event {ev}: {e}"),
        );
    }
    Ok(())
}

/// Exactly once: nothing more of the space before B's barrier (ASP-030, ASP-034),
/// and no error B never asked for.
async fn received_once(ctx: &mut Ctx, b: &mut Peer, space: &str) -> FuzzStep<()> {
    let (frames, _) = barrier(ctx, b, true).await?;
    if let Some(v) = frames.iter().find(|v| {
        v["space"] == space
            && matches!(
                v["type"].as_str(),
                Some("space.event" | "space.event.delta" | "space.event.done")
            )
    }) {
        return finding(
            Oracle::Fanout,
            format!(
                "B received more of the space after the published event (ASP-030, ASP-034): {}",
                clip(&v.to_string(), 300)
            ),
        );
    }
    if let Some(e) = frames.iter().find(|v| v["type"] == "error") {
        return finding(
            Oracle::Verdict,
            format!("B drew an error it never asked for: {e}"),
        );
    }
    Ok(())
}

/// A long stream cancelled by its receiver: no delta more than a second after the
/// server has seen the cancel (ASP-036, ambiguity ASP-A13). With `leave`, the
/// receiver leaves the space instead: nothing more of the event reaches it (the
/// leave-stops-stream case's rule).
pub(super) async fn cancel(f: &mut FuzzCtx, pool: &str, leave: bool) -> FuzzStep<()> {
    let (ida, idb) = (fresh_agent("ca"), fresh_agent("cb"));
    let grace = f.ctx.profile().agora_spaces.cancel_grace();
    let threshold = f.ctx.profile().agora_spaces.delta_threshold_bytes;
    let ctx = &mut f.ctx;
    let (mut a, _) = connect(ctx, &ida).await?;
    // A hub that does not stream sends the text as one event: B takes it whole, as
    // `run`'s delta-cancel case does, so that its size is no crash of the harness's.
    let (mut b, _) = connect_taking(ctx, &idb, 2 * stream_len(grace) + (64 << 10)).await?;
    let space = join_pool_or_public(ctx, &mut a, pool).await?;
    join_setup(ctx, &mut b, &space).await?;
    let then = if leave {
        "space.leave"
    } else {
        "space.event.cancel"
    };
    let ev = start_stream(f, (&mut a, &mut b), &space, (grace, threshold), then).await?;
    let ctx = &mut f.ctx;
    if leave {
        leave_mid_stream(ctx, &mut b, &space, &ev, grace).await?;
        a.close().await;
        b.close().await;
        return Ok(());
    }
    if !send_cancel(ctx, &mut b, &space, &ev).await? {
        return Ok(()); // the stream ended before the cancel arrived
    }
    wait_out_grace(ctx, &mut b, &ev, grace).await?;
    a.close().await;
    b.close().await;
    Ok(())
}

/// A text above the delta threshold that arrived as one space.event: `run`'s
/// delta-stream case fails on it, whichever case of the fuzzer saw it.
fn not_streamed<T>(len: usize, threshold: usize) -> FuzzStep<T> {
    under(
        Some("agora-spaces/delta-stream"),
        finding(
            Oracle::Delta,
            format!("a {len}-byte text above the profile's {threshold}-byte delta threshold arrived as one space.event (ASP-032)"),
        ),
    )
}

/// The length of the text a cancel case streams: long enough to outlast the grace
/// at the reference's pace (4 KiB deltas, the first 32 KiB at once and the rest 2 ms
/// apart): 3.5 MB for the default second, under the reference's 4 MiB frame limit;
/// in proportion for a shorter grace.
fn stream_len(grace: Duration) -> usize {
    (grace.as_millis() as usize)
        .saturating_mul(3500)
        .clamp(64 * 1024, 3_500_000)
}

/// A publishes a text long enough to stream for longer than the grace, and B
/// receives its first part: a delta, whose event id is returned. The text arriving
/// whole is a finding above the delta threshold (ASP-032), else the case is
/// skipped.
async fn start_stream(
    f: &mut FuzzCtx,
    (a, b): (&mut Peer, &mut Peer),
    space: &str,
    (grace, threshold): (Duration, usize),
    then: &str,
) -> FuzzStep<Value> {
    let len = stream_len(grace);
    let text = sized(len, false);
    f.fuzzed(format!("space.publish of {len} bytes, then {then}").as_bytes());
    let ctx = &mut f.ctx;
    a.publish(ctx, space, &text).await?;
    let in_space = space.to_string();
    let first = b
        .expect(ctx, "the large event", move |v| {
            (v["type"] == "space.event.delta" || v["type"] == "space.event")
                && v["space"] == in_space.as_str()
        })
        .await?;
    if first["type"] == "space.event" {
        return if text.len() > threshold {
            not_streamed(text.len(), threshold)
        } else {
            fuzz_skip("the text arrived whole; there is no stream to cancel")
        };
    }
    Ok(first["event_id"].clone())
}

/// B cancels the stream of event `ev`; the cancel of a stream under way draws no
/// error before B's barrier's answer (ASP-036). `Ok(false)`: the stream's done
/// arrived before that answer, so there is nothing to wait out.
async fn send_cancel(ctx: &mut Ctx, b: &mut Peer, space: &str, ev: &Value) -> FuzzStep<bool> {
    b.send(
        ctx,
        &json!({"type": "space.event.cancel", "space": space, "event_id": ev}),
    )
    .await?;
    // The barrier's answer is queued after the server has handled the cancel; the
    // grace counts from its arrival.
    let (frames, _) = barrier(ctx, b, true).await?;
    if let Some(e) = frames.iter().find(|v| v["type"] == "error") {
        return finding(
            Oracle::Verdict,
            format!("cancelling a stream under way drew an error (ASP-036): {e}"),
        );
    }
    Ok(!frames
        .iter()
        .any(|v| v["type"] == "space.event.done" && v["event_id"] == *ev))
}

/// B leaves the space while event `ev` streams to it: once the server has seen the
/// leave (B's barrier answered), no delta and no done of it may arrive past the
/// grace (ASP-025, the leave-stops-stream case's rule).
async fn leave_mid_stream(
    ctx: &mut Ctx,
    b: &mut Peer,
    space: &str,
    ev: &Value,
    grace: Duration,
) -> FuzzStep<()> {
    b.send(ctx, &json!({"type": "space.leave", "space": space}))
        .await?;
    let (frames, _) = barrier(ctx, b, true).await?;
    if frames
        .iter()
        .any(|v| v["type"] == "space.event.done" && v["event_id"] == *ev)
    {
        return Ok(()); // the stream ended before the leave arrived
    }
    let seen = Instant::now();
    let end = seen + grace + grace / 5;
    loop {
        let left = end.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return Ok(());
        }
        let want = ev.clone();
        match b
            .wait_for(ctx, left, move |v| v["event_id"] == want)
            .await?
        {
            None => return Ok(()),
            Some(v) if seen.elapsed() > grace => {
                let found = finding(
                    Oracle::Cancel,
                    format!("a {} of event {ev} reached B {} ms after the server answered the request that followed B's space.leave (ASP-025)", v["type"], seen.elapsed().as_millis()),
                );
                return under(Some("agora-spaces/leave-stops-stream"), found);
            }
            Some(_) => {}
        }
    }
}

/// Reads what B gets of event `ev` for the grace and a fifth more after the server
/// has seen the cancel: a delta later than the grace is a finding (ASP-036,
/// ambiguity ASP-A13); the stream's done or silence ends the wait.
async fn wait_out_grace(ctx: &mut Ctx, b: &mut Peer, ev: &Value, grace: Duration) -> FuzzStep<()> {
    let seen = Instant::now();
    let end = seen + grace + grace / 5;
    loop {
        let left = end.saturating_duration_since(Instant::now());
        if left.is_zero() {
            break;
        }
        let want = ev.clone();
        match b
            .wait_for(ctx, left, move |v| v["event_id"] == want)
            .await?
        {
            None => break,
            Some(v) if v["type"] == "space.event.done" => break,
            Some(v) if v["type"] == "space.event.delta" && seen.elapsed() > grace => {
                return finding(
                    Oracle::Cancel,
                    format!("a delta of cancelled event {ev} arrived {} ms after the server answered the next request (ASP-036, ASP-A13)", seen.elapsed().as_millis()),
                );
            }
            Some(_) => {}
        }
    }
    Ok(())
}
