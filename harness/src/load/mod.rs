//! `agentconform load`: many concurrent agents against one target. Each agent is
//! the suite's reference client (reference-impl), so every exchange it makes is a
//! valid one it checks as it does in `run --role client`; each request carries a
//! marker of its own, and the reply must carry that marker back: a reply that
//! never comes is lost, one that carries another request's marker is misrouted.
//! Latency is measured per request (p50, p99, max), errors are counted by kind,
//! and a progress line goes to standard error.
//!
//! A suite says how it is loaded in its descriptor (`Suite::load`, a [`Plan`]): agents
//! that each make one request after another over HTTP (`Plan::Requests`, the suite's
//! `load.rs` making one request), or members of one space over WebSocket, every
//! published event delivered exactly once to each other member (`Plan::Members`).
//! Each reference client takes its HTTP client from `reference_impl::wire::http`, so
//! the agents share one connection pool and one TLS configuration.

use crate::profile::Profile;
use serde_json::Value;
use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// What one load run asks.
#[derive(Debug, Clone)]
pub struct Load {
    pub suite: String,
    /// How the suite is loaded (its descriptor's `load`).
    pub plan: Plan,
    pub url: String,
    /// Agents at once.
    pub clients: usize,
    /// Requests each agent makes, one after another.
    pub requests: usize,
    /// Deadline of each request.
    pub timeout: Duration,
    pub profile: Profile,
    /// agora-spaces: members that join and never read (`--stalled`).
    pub stalled: usize,
    /// agora-spaces: how many of the members publish (`--publishers`; none: all).
    pub publishers: Option<usize>,
    /// agora-spaces: the bytes of each event's text (`--text-bytes`; 0: the marker
    /// alone).
    pub text_bytes: usize,
}

impl Load {
    /// agora-spaces: the members that publish (the first ones), all by default.
    pub fn publishers(&self) -> usize {
        self.publishers
            .map_or(self.clients, |p| p.min(self.clients))
    }
}

/// A members' load: the deliveries it expects, each publisher's events to every
/// other member.
pub fn deliveries(l: &Load) -> u64 {
    l.publishers() as u64 * l.clients.saturating_sub(1) as u64 * l.requests as u64
}

/// agora-spaces with stalled members: what the hub did with them.
#[derive(Debug, Clone, Default)]
pub struct Stalled {
    /// Members that joined and never read.
    pub members: u64,
    /// Those the hub closed (with the close code it gave, when one came).
    pub cut_off: u64,
    /// The close codes the hub gave them, by code.
    pub codes: BTreeMap<u16, u64>,
    /// How long after the first publish the readers were told the last cut-off
    /// member had left.
    pub announced_after: Option<Duration>,
}

/// What it found.
#[derive(Debug, Clone, Default)]
pub struct Tally {
    pub sent: u64,
    pub ok: u64,
    /// Errors by kind (the client's words up to the first colon).
    pub errors: BTreeMap<String, u64>,
    /// The first error of each kind in full (clipped), so that a failure says why.
    pub examples: BTreeMap<String, String>,
    /// What was seen that the spec allows, by kind (never a failure).
    pub observed: BTreeMap<String, u64>,
    /// Latencies of the completed requests, in microseconds (agora-spaces: of a
    /// sample of the deliveries).
    pub latencies: Vec<u64>,
    pub elapsed: Duration,
    /// agora-spaces with `--stalled`: what the hub did with the stalled members.
    pub stalled: Option<Stalled>,
}

impl Tally {
    pub fn failed(&self) -> u64 {
        self.errors.values().sum()
    }

    /// The latency at quantile `q` (0..=1) of the completed requests.
    pub fn quantile(&self, q: f64) -> Option<Duration> {
        let mut l = self.latencies.clone();
        if l.is_empty() {
            return None;
        }
        l.sort_unstable();
        let i = ((l.len() - 1) as f64 * q).round() as usize;
        Some(Duration::from_micros(l[i.min(l.len() - 1)]))
    }

    fn error(&mut self, kind: &str) {
        *self.errors.entry(kind.to_string()).or_default() += 1;
    }

    /// An error, counted by its kind ([`kind_of`]), its first words kept in full.
    fn error_text(&mut self, e: &str) {
        let kind = kind_of(e);
        if e.trim() != kind {
            self.examples
                .entry(kind.clone())
                .or_insert_with(|| crate::script::clip_entry(e));
        }
        self.error(&kind);
    }
}

/// The kind of an error: its text up to the first colon, at most 60 characters.
pub fn kind_of(e: &str) -> String {
    let head = e.split(':').next().unwrap_or(e).trim();
    head.chars().take(60).collect()
}

/// The peak resident memory of this process (Linux `VmHWM`), in KiB.
pub fn peak_rss_kib() -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
}

/// A boxed future, as a suite's load functions give it.
pub type LoadFuture<'a, T> = std::pin::Pin<Box<dyn std::future::Future<Output = T> + Send + 'a>>;

/// One request of one agent (its index), carrying the marker: the reply, or the
/// error, as the marker's check sees it.
pub type OneFn = for<'a> fn(&'a Load, &'a str, usize) -> LoadFuture<'a, Result<Value, String>>;

/// A members' load: runs it into the tally (`sent` counts the deliveries expected).
pub type MembersFn = fn(Arc<Load>, String, Arc<Mutex<Tally>>) -> LoadFuture<'static, ()>;

/// How `load` drives a suite.
#[derive(Clone, Copy)]
pub enum Plan {
    /// Agents over HTTP, each making its requests one after another.
    Requests(OneFn),
    /// Members of one space over WebSocket, each published event one delivery to
    /// every other member; `fits` bounds `--clients` and `--requests`.
    Members {
        run: MembersFn,
        fits: fn(usize, usize) -> Result<(), String>,
    },
}

impl std::fmt::Debug for Plan {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Plan::Requests(_) => "Plan::Requests",
            Plan::Members { .. } => "Plan::Members",
        })
    }
}

/// The binding a load speaks.
pub fn transport(plan: Plan) -> crate::drive::Transport {
    match plan {
        Plan::Members { .. } => crate::drive::Transport::Ws,
        Plan::Requests(_) => crate::drive::Transport::Http,
    }
}

/// Whether a load of `clients` × `requests` fits the plan's bounds.
pub fn fits(plan: Plan, clients: usize, requests: usize) -> Result<(), String> {
    match plan {
        Plan::Members { fits, .. } => fits(clients, requests),
        Plan::Requests(_) => Ok(()),
    }
}

/// What one unit of a load is called: a request, or for members an event delivered
/// to one member.
pub fn unit(plan: Plan) -> &'static str {
    match plan {
        Plan::Members { .. } => "deliveries",
        Plan::Requests(_) => "requests",
    }
}

pub fn now_s() -> i64 {
    time::OffsetDateTime::now_utc().unix_timestamp()
}

/// Whether a reply carries `marker`, and no other load marker.
fn carries(reply: &Value, marker: &str, run: &str) -> Result<(), String> {
    let text = reply.to_string();
    let own = format!("\"{marker}\"");
    let markers = text.matches(&format!("{run}-")).count();
    if !text.contains(&own) {
        return Err(if markers > 0 {
            "misrouted: the reply carries another request's marker".into()
        } else {
            "lost: the reply does not carry the request's marker".into()
        });
    }
    if markers > 1 {
        return Err("duplicated: the reply carries more than one marker".into());
    }
    Ok(())
}

/// Runs the load; `progress` is called about once a second with the tally so far.
pub async fn run(l: Load, progress: impl Fn(&Tally, u64) + Send + Sync + 'static) -> Tally {
    let started = Instant::now();
    let tally = Arc::new(Mutex::new(Tally::default()));
    let run_tag = format!("ld{}", &reference_impl::wire::new_id()[..8]);
    let total = match l.plan {
        Plan::Members { .. } => deliveries(&l),
        Plan::Requests(_) => (l.clients * l.requests) as u64,
    };
    let l = Arc::new(l);
    let ticker = {
        let tally = tally.clone();
        tokio::spawn(async move {
            loop {
                tokio::time::sleep(Duration::from_secs(1)).await;
                let t = tally.lock().unwrap_or_else(|p| p.into_inner()).clone();
                progress(&t, total);
            }
        })
    };
    match l.plan {
        Plan::Members { run, .. } => run(l, run_tag, tally.clone()).await,
        Plan::Requests(one) => requests(l, run_tag, tally.clone(), one).await,
    }
    ticker.abort();
    let mut t = tally.lock().unwrap_or_else(|p| p.into_inner()).clone();
    t.elapsed = started.elapsed();
    t
}

/// Agents over HTTP: each makes its requests (`one`) one after another.
async fn requests(l: Arc<Load>, run_tag: String, tally: Arc<Mutex<Tally>>, one: OneFn) {
    let mut tasks = tokio::task::JoinSet::new();
    for c in 0..l.clients {
        let (l, tally, run_tag) = (l.clone(), tally.clone(), run_tag.clone());
        tasks.spawn(async move {
            for i in 0..l.requests {
                let marker = format!("{run_tag}-{c}-{i}");
                let t0 = Instant::now();
                let r = tokio::time::timeout(l.timeout * 2, one(&l, &marker, c)).await;
                let took = t0.elapsed();
                let mut t = tally.lock().unwrap_or_else(|p| p.into_inner());
                t.sent += 1;
                match r {
                    Err(_) => t.error("no reply within the deadline"),
                    Ok(Err(e)) => t.error_text(&e),
                    Ok(Ok(reply)) => match carries(&reply, &marker, &run_tag) {
                        Ok(()) => {
                            t.ok += 1;
                            t.latencies.push(took.as_micros() as u64);
                        }
                        Err(e) => t.error_text(&e),
                    },
                }
            }
        });
    }
    while tasks.join_next().await.is_some() {}
}

/// The tally in words, for the terminal.
pub fn describe(suite: &str, plan: Plan, target: &str, clients: usize, t: &Tally) -> String {
    let ms = |d: Option<Duration>| {
        d.map_or("-".to_string(), |d| {
            format!("{:.1} ms", d.as_secs_f64() * 1000.0)
        })
    };
    let mut s = format!(
        "load {suite} at {target}: {clients} agents, {} {} in {:.1} s ({:.0}/s): {} ok, {} failed; latency p50 {}, p99 {}, max {}",
        t.sent,
        unit(plan),
        t.elapsed.as_secs_f64(),
        t.sent as f64 / t.elapsed.as_secs_f64().max(1e-9),
        t.ok,
        t.failed(),
        ms(t.quantile(0.5)),
        ms(t.quantile(0.99)),
        ms(t.quantile(1.0)),
    );
    for (kind, n) in &t.errors {
        s.push_str(&format!("\n  {n} × {kind}"));
        if let Some(e) = t.examples.get(kind) {
            s.push_str(&format!(" (the first: {e})"));
        }
    }
    for (kind, n) in &t.observed {
        s.push_str(&format!("\n  {n} × {kind} (allowed)"));
    }
    if let Some(st) = &t.stalled {
        let codes: Vec<String> = st
            .codes
            .iter()
            .map(|(c, n)| format!("{n} with close code {c}"))
            .collect();
        s.push_str(&format!(
            "\n  stalled members: {}, cut off by the hub: {}{}{}",
            st.members,
            st.cut_off,
            if codes.is_empty() {
                String::new()
            } else {
                format!(" ({})", codes.join(", "))
            },
            st.announced_after.map_or(String::new(), |d| format!(
                "; the readers were told the last one left {:.1} s after the first publish",
                d.as_secs_f64()
            ))
        ));
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn markers_are_told_apart() {
        let run = "ldabc";
        assert!(carries(&json!({"data": {"marker": "ldabc-1-2"}}), "ldabc-1-2", run).is_ok());
        let e = carries(&json!({"data": {"marker": "ldabc-1-3"}}), "ldabc-1-2", run);
        assert!(e.is_err_and(|e| e.starts_with("misrouted")));
        let e = carries(&json!({"data": {}}), "ldabc-1-2", run);
        assert!(e.is_err_and(|e| e.starts_with("lost")));
        let both = json!(["ldabc-1-2", "ldabc-4-4"]);
        assert!(carries(&both, "ldabc-1-2", run).is_err_and(|e| e.starts_with("duplicated")));
    }

    #[test]
    fn quantiles_of_the_completed() {
        let mut t = Tally::default();
        assert_eq!(t.quantile(0.5), None);
        t.latencies = vec![3000, 1000, 2000];
        assert_eq!(t.quantile(0.5), Some(Duration::from_millis(2)));
        assert_eq!(t.quantile(1.0), Some(Duration::from_millis(3)));
        assert_eq!(kind_of("HTTP: connection refused"), "HTTP");
    }
}
