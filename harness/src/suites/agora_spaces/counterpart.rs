//! The scripted counterpart of the client role: the hub the harness plays for an agent
//! under test (`hub`, `ScriptedHub`), the plan it answers by (`HubPlan`), and the edits
//! the client fuzzer makes to its frames.

use super::wire::now_s;
use reference_impl::wire::new_id;
use serde_json::{json, Value};
use std::time::Duration;

/// What the harness's hub does in one client case (`run --role client`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum HubPlan {
    /// Registers, answers the join, and closes after the client's publish.
    Plain,
    /// After the join: one whole event, then one event as a delta stream, then close.
    Deltas,
    /// After the join: a delta stream that the hub cancels, then one whole event,
    /// then close.
    Cancel,
    /// After the join: the hub heartbeats, and closes once the client has sent
    /// [`HEARTBEATS_WANTED`] heartbeats (or after four times as many intervals).
    Heartbeats,
    /// After the join: nothing at all, no heartbeats.
    Silent,
    /// The join is answered with this error event instead of space.joined.
    JoinRefused(HubRefusal),
    /// The join succeeds, the publish is answered with this error event.
    PublishRefused(HubRefusal),
    /// The connection is answered with this error event instead of
    /// agent.registered, and closed (as a hub does for AGENT_EXISTS).
    RegisterRefused(HubRefusal),
}

/// An error event the hub answers with, in the shapes hubs send (the client side
/// of `error-without-request-id` and `error-message-only`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct HubRefusal {
    /// The error code, or none (`{type: "error", message}` only).
    pub code: Option<&'static str>,
    /// Whether the error names the request it answers (`request_id`).
    pub request_id: bool,
}

/// How long the hub waits, heartbeating, after a refusal before it closes the
/// connection itself: a client must have ended by then.
pub const REFUSAL_GRACE: Duration = Duration::from_millis(1500);

/// The hub's tick while it waits after a refusal.
const REFUSAL_TICK: Duration = Duration::from_millis(100);

/// The error event of `r` answering `request` (its `id`).
fn refusal_event(r: HubRefusal, request: &Value, message: &str) -> Value {
    let mut e = json!({"type": "error", "message": message, "timestamp": now_s()});
    if let Some(code) = r.code {
        e["code"] = json!(code);
    }
    if r.request_id && request["id"].is_string() {
        e["request_id"] = request["id"].clone();
    }
    e
}

/// The other member whose events the hub delivers.
pub const CLIENT_PEER: &str = "h-peer";

/// A whole event's text.
pub const WHOLE_TEXT: &str = "a whole event · 完整的事件";

/// The heartbeats a client must send in the heartbeat case.
pub const HEARTBEATS_WANTED: usize = 3;

/// The text the hub streams as deltas, and its chunks (split between characters,
/// some of them multi-byte).
pub fn streamed_text(tag: &str) -> (String, Vec<String>) {
    let unit = format!("{tag} · 流式 · 🙂 · ");
    let text = unit.repeat(6);
    let chars: Vec<char> = text.chars().collect();
    let size = chars.len().div_ceil(4).max(1);
    let chunks = chars.chunks(size).map(|c| c.iter().collect()).collect();
    (text, chunks)
}

/// The harness's hub for a client case.
pub fn hub(plan: HubPlan, input: &Value) -> crate::counterparty::Hub {
    hub_edited(plan, input, Box::new(|_, frame| frame))
}

/// A frame edit: the index of the frame among those sent after the join, and its
/// text, to the text sent.
pub type FrameEdit = Box<dyn FnMut(usize, String) -> String + Send>;

/// [`hub`], every frame sent after the join passed through `edit` (the client
/// fuzzer's edits).
pub fn hub_edited(plan: HubPlan, input: &Value, edit: FrameEdit) -> crate::counterparty::Hub {
    use crate::counterparty::HubEvent;
    let interval = Duration::from_millis(input["heartbeat_interval_ms"].as_u64().unwrap_or(150));
    let mut hub = ScriptedHub {
        plan,
        agent: input["agent_id"].as_str().unwrap_or_default().to_string(),
        edit,
        heartbeats: 0,
        ticks: 0,
        since_refusal: None,
        grace_ticks: (REFUSAL_GRACE.as_millis() / REFUSAL_TICK.as_millis()) as usize,
    };
    let script = move |event: HubEvent<'_>| match event {
        HubEvent::Open { .. } => hub.open(),
        HubEvent::Tick => hub.tick(),
        HubEvent::Text(t) => serde_json::from_str::<Value>(t)
            .map(|v| hub.text(&v))
            .unwrap_or_default(),
    };
    let tick = if plan.refuses() {
        Some(REFUSAL_TICK)
    } else {
        (plan == HubPlan::Heartbeats).then_some(interval)
    };
    crate::counterparty::Hub {
        tick,
        script: Box::new(script),
    }
}

/// The scripted hub's state over one connection.
struct ScriptedHub {
    plan: HubPlan,
    agent: String,
    edit: FrameEdit,
    heartbeats: usize,
    ticks: usize,
    /// Ticks since the hub refused a request (refusal plans).
    since_refusal: Option<usize>,
    grace_ticks: usize,
}

fn send(v: Value) -> crate::counterparty::HubAct {
    crate::counterparty::HubAct::Send(v.to_string())
}

fn heartbeat() -> crate::counterparty::HubAct {
    send(json!({"type": "agent.heartbeat", "timestamp": now_s()}))
}

impl ScriptedHub {
    /// agent.registered, or AGENT_EXISTS and the close for a refused registration.
    fn open(&self) -> Vec<crate::counterparty::HubAct> {
        if let HubPlan::RegisterRefused(r) = self.plan {
            let why = format!("agent {:?} is already connected (on purpose)", self.agent);
            let e = refusal_event(r, &Value::Null, &why);
            return vec![send(e), crate::counterparty::HubAct::Close];
        }
        vec![send(json!({
            "type": "agent.registered",
            "agent": {"id": self.agent, "connection_id": new_id()},
            "timestamp": now_s(),
        }))]
    }

    /// A heartbeat, until the plan has seen enough (or the grace after a refusal
    /// has passed): then the close.
    fn tick(&mut self) -> Vec<crate::counterparty::HubAct> {
        let done = if self.plan.refuses() {
            self.since_refusal.as_mut().is_some_and(|n| {
                *n += 1;
                *n >= self.grace_ticks
            })
        } else {
            self.ticks += 1;
            self.ticks >= 4 * HEARTBEATS_WANTED
        };
        if done {
            vec![crate::counterparty::HubAct::Close]
        } else {
            vec![heartbeat()]
        }
    }

    /// The answer to one of the client's frames.
    fn text(&mut self, v: &Value) -> Vec<crate::counterparty::HubAct> {
        use crate::counterparty::HubAct;
        let first = self.since_refusal.is_none();
        match (v["type"].as_str().unwrap_or_default(), self.plan) {
            ("space.join", HubPlan::JoinRefused(r)) if first => {
                self.since_refusal = Some(0);
                let code = r.code.unwrap_or("SPACE_NOT_FOUND");
                let message = if code == "SPACE_FULL" {
                    format!("Space {} is full (on purpose)", v["space"])
                } else {
                    format!("Space {} does not exist (on purpose)", v["space"])
                };
                vec![send(refusal_event(r, v, &message))]
            }
            ("space.publish", HubPlan::PublishRefused(r)) if first => {
                self.since_refusal = Some(0);
                let why = "this agent may not publish here (on purpose)";
                vec![send(refusal_event(r, v, why))]
            }
            ("space.join", _) => self.joined(v),
            ("space.publish", HubPlan::Plain) => vec![HubAct::Close],
            ("agent.heartbeat", HubPlan::Heartbeats) => {
                self.heartbeats += 1;
                if self.heartbeats >= HEARTBEATS_WANTED {
                    vec![HubAct::Close]
                } else {
                    Vec::new()
                }
            }
            _ => Vec::new(),
        }
    }

    /// space.joined, then what the plan sends after a join (each frame through the
    /// edit), and the close for the streaming plans.
    fn joined(&mut self, v: &Value) -> Vec<crate::counterparty::HubAct> {
        let space = v["space"].clone();
        let mut out = vec![send(json!({
            "type": "space.joined", "id": v["id"], "space": space,
            "members": [self.agent, CLIENT_PEER], "timestamp": now_s(),
        }))];
        let edit = &mut self.edit;
        out.extend(
            after_join(self.plan, &space)
                .into_iter()
                .enumerate()
                .map(|(i, v)| crate::counterparty::HubAct::Send(edit(i, v.to_string()))),
        );
        if matches!(self.plan, HubPlan::Deltas | HubPlan::Cancel) {
            out.push(crate::counterparty::HubAct::Close);
        }
        out
    }
}

impl HubPlan {
    /// Whether the hub refuses one of the client's requests with an error event.
    pub fn refuses(self) -> bool {
        matches!(
            self,
            HubPlan::JoinRefused(_) | HubPlan::PublishRefused(_) | HubPlan::RegisterRefused(_)
        )
    }
}

/// The events the hub sends right after a join.
fn after_join(plan: HubPlan, space: &Value) -> Vec<Value> {
    let whole = |text: &str| {
        json!({"type": "space.event", "space": space,
               "data": {"from": CLIENT_PEER, "text": text, "timestamp": now_s()}, "timestamp": now_s()})
    };
    let stream = |tag: &str| -> (String, Vec<Value>) {
        let id = format!("ev-{tag}-{}", &new_id()[..8]);
        let (_, chunks) = streamed_text(tag);
        let frames = chunks
            .iter()
            .enumerate()
            .map(|(i, c)| {
                let data = if i == 0 {
                    json!({"from": CLIENT_PEER, "text": c})
                } else {
                    json!({"text": c})
                };
                json!({"type": "space.event.delta", "space": space, "event_id": id, "data": data, "timestamp": now_s()})
            })
            .collect();
        (id, frames)
    };
    match plan {
        HubPlan::Deltas => {
            let (id, mut frames) = stream("streamed");
            frames.insert(0, whole(WHOLE_TEXT));
            frames.push(json!({"type": "space.event.done", "space": space, "event_id": id, "timestamp": now_s()}));
            frames
        }
        HubPlan::Cancel => {
            let (id, mut frames) = stream("cancelled");
            frames.truncate(2);
            frames.push(json!({"type": "space.event.cancel", "space": space, "event_id": id, "timestamp": now_s()}));
            frames.push(whole(WHOLE_TEXT));
            frames
        }
        HubPlan::Plain
        | HubPlan::Heartbeats
        | HubPlan::Silent
        | HubPlan::JoinRefused(_)
        | HubPlan::PublishRefused(_)
        | HubPlan::RegisterRefused(_) => Vec::new(),
    }
}
