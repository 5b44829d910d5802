//! `load --suite agora-spaces`: members in one space, every published event
//! delivered exactly once to each other member (ASP-030).
//!
//! Every member connects with an agent id of its own (the profile's token in the
//! query), waits for agent.registered, and joins the profile's public space; once
//! every member has joined or failed, each joined member publishes `requests`
//! events whose text is a marker `<run>-<member>-<k>`. Each member then reads until
//! it holds every other member's events, or until nothing has arrived for the
//! deadline. Per member and publisher: no event is lost, none arrives twice; a
//! member's own event may come back (the flow diagram shows it, ASP-035), at most
//! once. agora-spaces.zh.md fixes no order between events, so events out of publish
//! order are counted as an observation, never an error.
//!
//! Bounded: members connect 64 at a time; the bookkeeping is one byte per
//! (member, event) and the latencies are sampled to at most [`MAX_SAMPLES`].
//! Membership frames (space.members lists every member, so that filling a space of
//! n members sends about n³ / 3 names) are read and dropped without being parsed.

use crate::load::{kind_of, Load, LoadFuture, Tally};
use futures_util::{SinkExt, StreamExt};
use reference_impl::agora_spaces::client::{self, Socket};
use serde_json::{json, Value};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use tokio::sync::{watch, Semaphore};
use tokio_tungstenite::tungstenite::{Message, Utf8Bytes};

/// Latencies kept, at most (sampled evenly over the deliveries).
pub const MAX_SAMPLES: usize = 200_000;
/// Members connecting at once.
const CONNECTING: usize = 64;

/// What every member shares.
struct Shared {
    load: Arc<Load>,
    run_tag: String,
    /// `"<run>-`: how a frame carrying one of this run's markers shows, unparsed.
    quoted_tag: String,
    started: Instant,
    /// When each event (member × requests + k) was published, in µs since
    /// `started` plus one (0: not published).
    published: Vec<AtomicU64>,
    /// Members done with joining (joined or not), stalled ones among them.
    ready: watch::Sender<usize>,
    /// Reading members done.
    readers_done: watch::Sender<usize>,
    /// When the readers were first told each stalled member left, in µs since
    /// `started` plus one (0: not yet).
    stalled_left: Vec<AtomicU64>,
    /// When the first event was published, in µs since `started` plus one.
    first_publish: AtomicU64,
    joined: Vec<AtomicBool>,
    connecting: Semaphore,
    tally: Arc<Mutex<Tally>>,
    /// Keep one latency in this many deliveries.
    stride: u64,
}

impl Shared {
    fn error(&self, kind: &str, n: u64) {
        let mut t = self.tally.lock().unwrap_or_else(|p| p.into_inner());
        *t.errors.entry(kind.to_string()).or_default() += n;
    }

    fn agent_id(&self, member: usize) -> String {
        format!("{}-m{member}", self.run_tag)
    }

    fn stalled_id(&self, i: usize) -> String {
        format!("{}-s{i}", self.run_tag)
    }

    fn now_us(&self) -> u64 {
        self.started.elapsed().as_micros() as u64 + 1
    }

    /// A membership frame: notes when a stalled member is first told to have left.
    fn membership(&self, text: &str) {
        let needle = format!("\"left\":\"{}-s", self.run_tag);
        let Some(at) = text.find(&needle) else {
            return;
        };
        let digits: String = text[at + needle.len()..]
            .chars()
            .take_while(char::is_ascii_digit)
            .collect();
        if let Some(slot) = digits
            .parse::<usize>()
            .ok()
            .and_then(|i| self.stalled_left.get(i))
        {
            let _ = slot.compare_exchange(0, self.now_us(), Ordering::Relaxed, Ordering::Relaxed);
        }
    }

    /// The text of event `k` of member `m`: its marker, then padding to the load's
    /// text size.
    fn text(&self, m: usize, k: usize) -> String {
        let marker = format!("{}-{m}-{k}", self.run_tag);
        let pad = self.load.text_bytes.saturating_sub(marker.len() + 1);
        if pad == 0 {
            marker
        } else {
            format!("{marker} {}", "x".repeat(pad))
        }
    }
}

/// The load of agora-spaces: members in one space (`Suite::load`).
pub const PLAN: crate::load::Plan = crate::load::Plan::Members { run: members, fits };

fn members(l: Arc<Load>, run_tag: String, tally: Arc<Mutex<Tally>>) -> LoadFuture<'static, ()> {
    Box::pin(run(l, run_tag, tally))
}

/// Each member keeps a byte per (member, event): at least 2 members, and members² ×
/// events of at most 20,000,000.
fn fits(clients: usize, requests: usize) -> Result<(), String> {
    if clients < 2 || (clients as u64).pow(2) * requests as u64 > 20_000_000 {
        return Err("agora-spaces load needs --clients of at least 2, and --clients² × --requests of at most 20,000,000 (1,000 members publish up to 20 events each)".into());
    }
    Ok(())
}

/// Runs the load into `tally` (`sent` counts the deliveries expected).
pub async fn run(l: Arc<Load>, run_tag: String, tally: Arc<Mutex<Tally>>) {
    let n = l.clients;
    let per = l.requests;
    let deliveries = crate::load::deliveries(&l);
    let stalled = l.stalled;
    let shared = Arc::new(Shared {
        published: (0..n * per).map(|_| AtomicU64::new(0)).collect(),
        joined: (0..n).map(|_| AtomicBool::new(false)).collect(),
        ready: watch::channel(0).0,
        readers_done: watch::channel(0).0,
        stalled_left: (0..stalled).map(|_| AtomicU64::new(0)).collect(),
        first_publish: AtomicU64::new(0),
        connecting: Semaphore::new(CONNECTING),
        stride: deliveries.div_ceil(MAX_SAMPLES as u64).max(1),
        started: Instant::now(),
        load: l,
        quoted_tag: format!("\"{run_tag}-"),
        run_tag,
        tally,
    });
    let mut tasks = tokio::task::JoinSet::new();
    for m in 0..n {
        let shared = shared.clone();
        tasks.spawn(async move {
            member(&shared, m).await;
            shared.readers_done.send_modify(|d| *d += 1);
        });
    }
    let codes = Arc::new(Mutex::new(Vec::new()));
    for i in 0..stalled {
        let (shared, codes) = (shared.clone(), codes.clone());
        tasks.spawn(async move {
            let code = stalled_member(&shared, i).await;
            codes.lock().unwrap_or_else(|p| p.into_inner()).push(code);
        });
    }
    while tasks.join_next().await.is_some() {}
    if stalled > 0 {
        let first = shared.first_publish.load(Ordering::Relaxed);
        let mut st = crate::load::Stalled {
            members: stalled as u64,
            ..crate::load::Stalled::default()
        };
        for code in codes.lock().unwrap_or_else(|p| p.into_inner()).iter() {
            match code {
                Some(Closed::ByHub(c)) => {
                    st.cut_off += 1;
                    if let Some(c) = c {
                        *st.codes.entry(*c).or_default() += 1;
                    }
                }
                Some(Closed::Open) | None => {}
            }
        }
        st.announced_after = shared
            .stalled_left
            .iter()
            .map(|a| a.load(Ordering::Relaxed))
            .filter(|a| *a > 0)
            .max()
            .map(|last| Duration::from_micros(last.saturating_sub(first)));
        let mut t = shared.tally.lock().unwrap_or_else(|p| p.into_inner());
        t.stalled = Some(st);
    }
}

/// How a stalled member's connection ended once it read again.
enum Closed {
    /// The hub had closed it (with this close code, when a Close came).
    ByHub(Option<u16>),
    /// Still open: the hub never cut it off.
    Open,
}

/// A member that joins and never reads while the others publish and read; once
/// every reader is done it reads what the hub left it, to its end. `None` when it
/// never joined.
async fn stalled_member(s: &Shared, i: usize) -> Option<Closed> {
    let ws = join(s, &s.stalled_id(i)).await;
    s.ready.send_modify(|done| *done += 1);
    let mut ws = ws?;
    let mut done = s.readers_done.subscribe();
    let _ = done.wait_for(|d| *d >= s.load.clients).await;
    // What the socket holds comes at once; a second without a frame means the hub
    // left the connection open.
    let idle = s.load.timeout.min(Duration::from_secs(1));
    loop {
        match tokio::time::timeout(idle, ws.next()).await {
            Err(_) => return Some(Closed::Open),
            Ok(Some(Ok(Message::Close(c)))) => {
                return Some(Closed::ByHub(c.map(|c| u16::from(c.code))))
            }
            Ok(None) | Ok(Some(Err(_))) => return Some(Closed::ByHub(None)),
            Ok(Some(Ok(_))) => {}
        }
    }
}

/// What a member reads: a frame's text, or why there is none.
enum Read {
    /// The frame's text as received (membership lists run to kilobytes each, so
    /// they are not copied).
    Text(Utf8Bytes),
    Idle,
    Closed(String),
}

async fn read<S>(ws: &mut S, within: Duration) -> Read
where
    S: futures_util::Stream<Item = Result<Message, tokio_tungstenite::tungstenite::Error>> + Unpin,
{
    let closed = || Read::Closed("the hub closed the connection".into());
    loop {
        match tokio::time::timeout(within, ws.next()).await {
            Err(_) => return Read::Idle,
            Ok(None) | Ok(Some(Ok(Message::Close(_)))) => return closed(),
            Ok(Some(Err(e))) => return Read::Closed(format!("WebSocket: {e}")),
            Ok(Some(Ok(Message::Text(t)))) => return Read::Text(t),
            Ok(Some(Ok(Message::Binary(b)))) => {
                return Read::Text(String::from_utf8_lossy(&b).into_owned().into())
            }
            Ok(Some(Ok(_))) => {}
        }
    }
}

/// An error frame's code, when `v` is one.
fn error_code(v: &Value) -> Option<String> {
    (v["type"] == "error").then(|| {
        v["code"]
            .as_str()
            .or(v["error"]["code"].as_str())
            .unwrap_or("an error without a code")
            .to_string()
    })
}

/// Connects and joins as `agent_id`: the socket once joined, else `None` (the
/// error counted).
async fn join(s: &Shared, agent_id: &str) -> Option<Socket> {
    let l = &s.load;
    let fail = |kind: String| {
        s.error(&kind, 1);
        None
    };
    let permit = s.connecting.acquire().await.ok()?;
    let token = l.profile.target.token.as_deref();
    let base = super::wire::url_for(&l.url, None, token);
    let connect = client::connect(&base, agent_id);
    let mut ws = match tokio::time::timeout(l.timeout, connect).await {
        Err(_) => return fail("connect: no connection within the deadline".into()),
        Ok(Err(e)) => return fail(format!("connect: {}", kind_of(&e.to_string()))),
        Ok(Ok(ws)) => ws,
    };
    drop(permit);
    let space = &l.profile.agora_spaces.public_space;
    let join = json!({"type": "space.join", "id": "load-join", "space": space,
                      "timestamp": crate::load::now_s()});
    let mut asked = false;
    let deadline = Instant::now() + l.timeout;
    loop {
        let left = deadline.saturating_duration_since(Instant::now());
        let text = match read(&mut ws, left).await {
            Read::Idle if asked => {
                return fail("join: space.join drew no space.joined within the deadline".into())
            }
            Read::Idle => return fail("join: no agent.registered within the deadline".into()),
            Read::Closed(why) => return fail(format!("join: {why}")),
            Read::Text(t) => t,
        };
        // Membership updates of earlier joiners: not this member's answer.
        if text.contains("\"space.members\"") {
            continue;
        }
        let Ok(v) = serde_json::from_str::<Value>(&text) else {
            continue;
        };
        if let Some(code) = error_code(&v) {
            return fail(format!("join refused: {code}"));
        }
        if !asked && v["type"] == "agent.registered" {
            if ws
                .send(Message::Text(join.to_string().into()))
                .await
                .is_err()
            {
                return fail("join: the connection closed before space.join".into());
            }
            asked = true;
        } else if asked && v["type"] == "space.joined" {
            return Some(ws);
        }
    }
}

/// What one member has taken of the events.
struct Taken {
    /// One byte per (publisher, k): 0, 1, or 2 for twice or more.
    seen: Vec<u8>,
    /// Distinct events of other members taken.
    got: usize,
    /// The last k taken from each publisher, plus one (0: none yet); kept only
    /// when members publish more than one event each.
    last_k: Vec<u32>,
    reordered: u64,
    own: u64,
    latencies: Vec<u64>,
    /// Delta streams under way: event id → (publisher, k), from the first delta
    /// (which starts with the marker), counted at the stream's done.
    streams: std::collections::HashMap<String, (usize, usize)>,
}

impl Taken {
    fn new(n: usize, per: usize) -> Taken {
        Taken {
            seen: vec![0u8; n * per],
            got: 0,
            last_k: if per > 1 { vec![0; n] } else { Vec::new() },
            reordered: 0,
            own: 0,
            latencies: Vec::new(),
            streams: std::collections::HashMap::new(),
        }
    }

    /// Takes one frame of member `m`: an event of this run is counted, an error
    /// counted as a refusal, anything else (membership updates above all) dropped
    /// unparsed.
    fn take(&mut self, s: &Shared, m: usize, text: &str) {
        let (n, per) = (s.load.clients, s.load.requests);
        if text.contains("\"space.members\"") {
            if !s.stalled_left.is_empty() {
                s.membership(text);
            }
            return;
        }
        let ends_stream =
            text.contains("\"space.event.done\"") || text.contains("\"space.event.cancel\"");
        if !text.contains(&s.quoted_tag) && !text.contains("\"error\"") && !ends_stream {
            return;
        }
        let Ok(v) = serde_json::from_str::<Value>(text) else {
            return;
        };
        if let Some(code) = error_code(&v) {
            s.error(&format!("refused: {code}"), 1);
            return;
        }
        let marker_of = |v: &Value| {
            v["data"]["text"]
                .as_str()
                .and_then(|t| t.split(' ').next())
                .and_then(|t| parse_marker(t, &s.run_tag, n, per))
        };
        let event_id = v["event_id"].as_str().unwrap_or_default();
        let (p, k) = match v["type"].as_str() {
            Some("space.event") => match marker_of(&v) {
                Some(pk) => pk,
                None => return,
            },
            Some("space.event.delta") => {
                if let Some(pk) = marker_of(&v) {
                    self.streams.insert(event_id.to_string(), pk);
                }
                return;
            }
            Some("space.event.done") => match self.streams.remove(event_id) {
                Some(pk) => pk,
                None => return,
            },
            Some("space.event.cancel") => {
                self.streams.remove(event_id);
                return;
            }
            _ => return,
        };
        if p == m {
            self.own += 1;
            if self.own > per as u64 {
                s.error("duplicated: a member's own event came back twice", 1);
            }
            return;
        }
        let slot = &mut self.seen[p * per + k];
        *slot = slot.saturating_add(1).min(2);
        if *slot == 1 {
            self.got += 1;
            let at = s.published[p * per + k].load(Ordering::Relaxed);
            let index = (m * n * per + p * per + k) as u64;
            if at > 0 && index.is_multiple_of(s.stride) {
                let now = s.started.elapsed().as_micros() as u64 + 1;
                self.latencies.push(now.saturating_sub(at));
            }
        }
        if let Some(last) = self.last_k.get_mut(p) {
            let k1 = u32::try_from(k + 1).unwrap_or(u32::MAX);
            if k1 < *last {
                self.reordered += 1;
            }
            *last = k1;
        }
    }
}

/// One member: join, wait for the others, publish, take the others' events.
async fn member(s: &Shared, m: usize) {
    let l = s.load.clone();
    let (n, per) = (l.clients, l.requests);
    let ws = join(s, &s.agent_id(m)).await;
    s.joined[m].store(ws.is_some(), Ordering::Relaxed);
    s.ready.send_modify(|done| *done += 1);
    let Some(mut ws) = ws else { return };
    let mut taken = Taken::new(n, per);
    if !wait_for_all(s, m, &mut ws, &mut taken).await {
        return;
    }
    let publishers = l.publishers();
    let others: Vec<usize> = (0..publishers)
        .filter(|o| *o != m && s.joined[*o].load(Ordering::Relaxed))
        .collect();
    let space = &l.profile.agora_spaces.public_space;
    let mine = if m < publishers { per } else { 0 };
    // A member publishes and reads at once: one that published everything before
    // reading would be a reader that does not read while it publishes.
    let (mut sink, mut stream) = ws.split();
    let publishing = async {
        for k in 0..mine {
            let frame = json!({"type": "space.publish", "space": space, "timestamp": crate::load::now_s(),
                               "data": {"from": s.agent_id(m), "text": s.text(m, k),
                                        "timestamp": crate::load::now_s()}});
            let at = s.now_us();
            let _ = s
                .first_publish
                .compare_exchange(0, at, Ordering::Relaxed, Ordering::Relaxed);
            s.published[m * per + k].store(at, Ordering::Relaxed);
            if sink
                .send(Message::Text(frame.to_string().into()))
                .await
                .is_err()
            {
                break;
            }
        }
    };
    let want = others.len() * per;
    let reading = async {
        let mut ended = None;
        while taken.got < want {
            match read(&mut stream, l.timeout).await {
                Read::Text(t) => taken.take(s, m, &t),
                Read::Idle => break,
                Read::Closed(why) => {
                    ended = Some(why);
                    break;
                }
            }
        }
        ended
    };
    let ((), ended) = tokio::join!(publishing, reading);
    if let Ok(mut ws) = sink.reunite(stream) {
        let _ = ws.close(None).await;
    }
    count(s, &taken, &others, (want, per), ended);
}

/// Reads until every member is done joining (others may publish before this member
/// sees that), a heartbeat keeping the connection alive meanwhile; `false` when the
/// member should stop (dropped, or the run ended).
async fn wait_for_all(s: &Shared, m: usize, ws: &mut Socket, taken: &mut Taken) -> bool {
    let l = s.load.clone();
    let n = l.clients;
    let mut ready = s.ready.subscribe();
    let beat_every = Duration::from_secs(l.profile.timing.heartbeat_timeout_s.clamp(3, 60) / 3);
    let mut beat = tokio::time::interval_at(tokio::time::Instant::now() + beat_every, beat_every);
    loop {
        tokio::select! {
            all = async { ready.wait_for(|done| *done >= n + l.stalled).await.is_ok() } => {
                return all;
            }
            r = read(ws, l.timeout * 4) => match r {
                Read::Text(t) => taken.take(s, m, &t),
                Read::Idle => {}
                Read::Closed(why) => {
                    s.error(&format!("dropped while the others joined: {why}"), 1);
                    return false;
                }
            },
            _ = beat.tick() => {
                let hb = json!({"type": "agent.heartbeat", "timestamp": crate::load::now_s()});
                let _ = ws.send(Message::Text(hb.to_string().into())).await;
            }
        }
    }
}

/// Counts what one member took of the `want` events of `others` (`per` each): once
/// is a delivery, twice a duplicate, missing a loss (with why the reading ended).
fn count(
    s: &Shared,
    taken: &Taken,
    others: &[usize],
    (want, per): (usize, usize),
    ended: Option<String>,
) {
    let (mut once, mut twice) = (0u64, 0u64);
    for &p in others {
        for k in 0..per {
            match taken.seen[p * per + k] {
                1 => once += 1,
                2 => twice += 1,
                _ => {}
            }
        }
    }
    let lost = (want as u64).saturating_sub(once + twice);
    let mut t = s.tally.lock().unwrap_or_else(|p| p.into_inner());
    t.sent += want as u64;
    t.ok += once;
    t.latencies.extend(taken.latencies.iter().copied());
    let mut add = |kind: String, k: u64| {
        if k > 0 {
            *t.errors.entry(kind).or_default() += k;
        }
    };
    add(
        "duplicated: an event delivered twice to one member".into(),
        twice,
    );
    add(
        match &ended {
            Some(why) => format!("lost: not delivered ({why})"),
            None => "lost: not delivered within the deadline".into(),
        },
        lost,
    );
    if taken.reordered > 0 {
        *t.observed
            .entry("out of publish order (agora-spaces.zh.md fixes no order)".into())
            .or_default() += taken.reordered;
    }
}

/// `<run>-<member>-<k>` as (member, k), when it is one of this run's.
fn parse_marker(text: &str, run: &str, n: usize, per: usize) -> Option<(usize, usize)> {
    let rest = text.strip_prefix(run)?.strip_prefix('-')?;
    let (p, k) = rest.split_once('-')?;
    let (p, k) = (p.parse::<usize>().ok()?, k.parse::<usize>().ok()?);
    (p < n && k < per).then_some((p, k))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn markers_parse_within_bounds() {
        assert_eq!(parse_marker("ldx-3-1", "ldx", 4, 2), Some((3, 1)));
        assert_eq!(parse_marker("ldx-4-1", "ldx", 4, 2), None);
        assert_eq!(parse_marker("ldy-3-1", "ldx", 4, 2), None);
        assert_eq!(parse_marker("ldx-3", "ldx", 4, 2), None);
    }

    #[test]
    fn error_codes_are_read_both_ways() {
        let code = |v: Value| error_code(&v);
        assert_eq!(
            code(json!({"type": "error", "code": "SPACE_FULL"})).as_deref(),
            Some("SPACE_FULL")
        );
        assert_eq!(
            code(json!({"type": "error", "error": {"code": "X"}})).as_deref(),
            Some("X")
        );
        assert_eq!(code(json!({"type": "space.event"})), None);
    }
}
