//! A suite's live fuzzer ([`Spec`]) and how one fuzz case runs: its context
//! ([`FuzzCtx`], the case context plus the seeded draws), the target it runs
//! against and what it did ([`CaseRun`]). The run loop (`super::engine`), the
//! corpus and the shrinker build on it.

use super::verdict::{classify, FuzzFinding, FuzzFuture, Oracle, Outcome};
use crate::drive::{Driver, Transport};
use crate::script::{Ctx, RunShared};
use crate::verdict::Entry;
use arbitrary::{Arbitrary, Unstructured};
use rand::{Rng, RngExt, SeedableRng};
use std::sync::{Arc, Mutex};

/// One fuzz case in progress: the case context plus the seeded draws.
pub struct FuzzCtx {
    pub ctx: Ctx,
    rng: rand::rngs::StdRng,
    /// What was drawn, for the crash file and the replay line; written out only
    /// when a case needs it ([`FuzzCtx::label`]), not on every case.
    drawn: Vec<Box<dyn std::fmt::Debug + Send>>,
    /// The fuzzed message: the exact bytes the case sent last as its input.
    pub sent: Vec<u8>,
    /// Sending an input alone over HTTP ([`Spec::resend`]): the URL it goes to, the
    /// request that carried it in its case.
    pub resend_to: Option<String>,
    /// What the cases of one run learn once about the target (a fixture, a
    /// registered helper) and share.
    pub memo: Memo,
    /// What the run has made on the target that stays there, and its cap.
    pub created: Arc<Created>,
}

/// State the cases of one run share.
pub type Memo = Arc<Mutex<Option<serde_json::Value>>>;

/// What a campaign makes on the target that stays there (registrations, ledger
/// accounts, conversations until they expire), counted by kind, with a cap per kind
/// on what is held at once (`fuzz --max-created`), so that a campaign's footprint on
/// a shared server stays bounded and is said.
#[derive(Debug)]
pub struct Created {
    cap: u64,
    counts: Mutex<Counts>,
}

#[derive(Debug, Default)]
struct Counts {
    /// What is on the target now, by kind.
    held: std::collections::BTreeMap<&'static str, u64>,
    /// What was made in all, by kind.
    made: std::collections::BTreeMap<&'static str, u64>,
    /// When things that expire by themselves go (Unix seconds), by kind: at most
    /// the cap of each, as each is one held.
    expiring: std::collections::BTreeMap<
        &'static str,
        std::collections::BinaryHeap<std::cmp::Reverse<u64>>,
    >,
}

impl Counts {
    /// Lets go of what of `kind` has expired by `now` (Unix seconds).
    fn prune(&mut self, kind: &'static str, now: u64) {
        let Some(heap) = self.expiring.get_mut(kind) else {
            return;
        };
        while heap.peek().is_some_and(|std::cmp::Reverse(at)| *at <= now) {
            heap.pop();
            if let Some(n) = self.held.get_mut(kind) {
                *n = n.saturating_sub(1);
            }
        }
    }
}

fn unix_now() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}

impl Default for Created {
    fn default() -> Self {
        Created::with_cap(u64::MAX)
    }
}

impl Created {
    pub fn with_cap(cap: u64) -> Created {
        Created {
            cap,
            counts: Mutex::default(),
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Counts> {
        self.counts.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Counts one thing of `kind`; false, counting nothing, while the cap of them
    /// is held.
    pub fn take(&self, kind: &'static str) -> bool {
        self.take_at(kind, unix_now())
    }

    fn take_at(&self, kind: &'static str, now: u64) -> bool {
        let mut c = self.lock();
        c.prune(kind, now);
        let n = c.held.entry(kind).or_default();
        if *n >= self.cap {
            return false;
        }
        *n += 1;
        *c.made.entry(kind).or_default() += 1;
        true
    }

    /// Gives back one thing of `kind` taken for a request that made nothing.
    pub fn give_back(&self, kind: &'static str) {
        let mut guard = self.lock();
        let c = &mut *guard;
        for map in [&mut c.held, &mut c.made] {
            if let Some(n) = map.get_mut(kind) {
                *n = n.saturating_sub(1);
            }
        }
    }

    /// One thing of `kind` taken goes from the target by itself at `at` (Unix
    /// seconds): from then on it no longer counts against the cap, nor as left.
    pub fn expires(&self, kind: &'static str, at: u64) {
        self.lock()
            .expiring
            .entry(kind)
            .or_default()
            .push(std::cmp::Reverse(at));
    }

    /// What is on the target now, by kind.
    pub fn counts(&self) -> std::collections::BTreeMap<&'static str, u64> {
        self.counts_at(unix_now())
    }

    fn counts_at(&self, now: u64) -> std::collections::BTreeMap<&'static str, u64> {
        let mut c = self.lock();
        let kinds: Vec<&'static str> = c.held.keys().copied().collect();
        for k in kinds {
            c.prune(k, now);
        }
        c.held.clone()
    }

    /// What was made in all, by kind (more than [`Created::counts`] where some
    /// expired).
    pub fn made(&self) -> std::collections::BTreeMap<&'static str, u64> {
        self.lock().made.clone()
    }

    /// The cap per kind, when there is one.
    pub fn cap(&self) -> Option<u64> {
        (self.cap != u64::MAX).then_some(self.cap)
    }
}

#[cfg(test)]
mod created_tests {
    use super::Created;

    #[test]
    fn what_expires_leaves_room_and_is_not_left() {
        let c = Created::with_cap(2);
        assert!(c.take_at("conversations", 100));
        c.expires("conversations", 105);
        assert!(c.take_at("conversations", 101));
        assert!(!c.take_at("conversations", 104), "the cap is held");
        assert!(c.take_at("conversations", 105), "one expired");
        c.give_back("conversations");
        assert_eq!(c.counts_at(105).get("conversations"), Some(&1));
        assert_eq!(c.made().get("conversations"), Some(&2));
        assert!(c.take_at("registrations", 0) && c.take_at("registrations", 0));
        assert!(
            !c.take_at("registrations", u64::MAX),
            "no expiry: held for good"
        );
    }
}

impl FuzzCtx {
    pub fn new(ctx: Ctx, seed: u64, index: u64, (memo, created): (Memo, Arc<Created>)) -> FuzzCtx {
        FuzzCtx {
            ctx,
            rng: rand::rngs::StdRng::seed_from_u64(
                seed ^ index.wrapping_mul(0x9E37_79B9_7F4A_7C15) ^ 0x5C21_7ED0,
            ),
            drawn: Vec::new(),
            sent: Vec::new(),
            resend_to: None,
            memo,
            created,
        }
    }

    /// A structured value drawn from the seed; it is added to the label.
    pub fn draw<T>(&mut self) -> T
    where
        T: for<'a> Arbitrary<'a> + Default + std::fmt::Debug + Clone + Send + 'static,
    {
        let mut raw = [0u8; 512];
        self.rng.fill_bytes(&mut raw);
        let v = T::arbitrary(&mut Unstructured::new(&raw)).unwrap_or_default();
        self.drawn.push(Box::new(v.clone()));
        v
    }

    /// What the case drew, in words.
    pub fn label(&self) -> String {
        let parts: Vec<String> = self.drawn.iter().map(|d| format!("{d:?}")).collect();
        parts.join(" ")
    }

    /// A number in `0..n` drawn from the seed (not added to the label).
    pub fn below(&mut self, n: usize) -> usize {
        if n == 0 {
            0
        } else {
            self.rng.random_range(0..n)
        }
    }

    /// Counts one thing of `kind` the case is about to make on the target that
    /// stays there; past the campaign's cap the case is skipped instead, saying so.
    pub fn create(&self, kind: &'static str) -> super::verdict::FuzzStep<()> {
        if self.created.take(kind) {
            return Ok(());
        }
        let cap = self.created.cap().unwrap_or(u64::MAX);
        super::verdict::skip(format!(
            "the campaign's cap of {cap} {kind} on the target is reached (fuzz --max-created)"
        ))
    }

    /// What the run has learnt so far (see [`Memo`]).
    pub fn recall(&self) -> Option<serde_json::Value> {
        self.memo.lock().unwrap_or_else(|p| p.into_inner()).clone()
    }

    pub fn remember(&self, v: serde_json::Value) {
        *self.memo.lock().unwrap_or_else(|p| p.into_inner()) = Some(v);
    }

    /// Records `bytes` as the fuzzed message of this case.
    pub fn fuzzed(&mut self, bytes: &[u8]) {
        self.sent = bytes.to_vec();
    }
}

pub type FuzzFn = for<'a> fn(&'a mut FuzzCtx) -> FuzzFuture<'a>;

/// A suite's live fuzzer.
pub struct Spec {
    /// Bindings its cases speak (the first is used for the embedded agent).
    pub transports: &'static [Transport],
    /// One fuzz case.
    pub case: FuzzFn,
    /// The liveness probe: a plain exchange the target must answer.
    pub probe: FuzzFn,
    /// Sends [`FuzzCtx::sent`] again alone and judges it as its case would: over
    /// WebSocket as the fuzzed frame of a fresh connection, in the state its cases
    /// set up first (a frame needs its connection's); over HTTP to
    /// [`FuzzCtx::resend_to`], judged by the suite's model of the request (so that a
    /// finding the model keys, not only a reply check's, shrinks). How an input is
    /// sent alone to shrink it. `None`: frames are not shrunk, and an HTTP input is
    /// judged by the reply checks alone.
    pub resend: Option<FuzzFn>,
    /// The message types a WebSocket frame's endpoint may name (`WS <type>`): a
    /// frame of any other type is `WS frame (unknown type)`, so that a type the
    /// fuzzer garbled is no endpoint of its own. Empty: every type is named.
    pub kinds: &'static [&'static str],
    /// Reference faults no fuzz case can reach, and why.
    pub unreachable: &'static [(&'static str, &'static str)],
    /// Whether each worker keeps one connection for all its cases (fast, for
    /// suites whose cases are single exchanges) rather than one per case.
    pub connection_per_worker: bool,
    /// Cases in flight at once when the run does not say ([`WORKERS`] unless the
    /// suite's cases wait on the target more than they compute).
    pub workers: u64,
}

/// Cases in flight at once, for a suite whose cases keep the CPU busy.
pub const WORKERS: u64 = 8;

/// What one case did.
pub struct CaseRun {
    /// What the case drew, in words (written out for a finding or a replay only).
    pub label: String,
    pub sent: Vec<u8>,
    pub transcript: Vec<Entry>,
    pub outcome: Outcome,
}

/// The target of a run and what its cases share.
#[derive(Clone)]
pub struct Target {
    /// The suite fuzzed: its id, its rules and its reply checks.
    pub suite: &'static crate::case::Suite,
    pub shared: Arc<RunShared>,
    pub transport: Transport,
    pub url: String,
    pub memo: Memo,
    /// What the run makes on the target that stays there ([`Created`]).
    pub created: Arc<Created>,
}

impl Target {
    /// A new connection to the target.
    pub fn driver(&self) -> Driver {
        crate::script::new_driver(&self.shared, self.transport, &self.url)
    }

    pub fn new(
        suite: &'static crate::case::Suite,
        shared: Arc<RunShared>,
        transport: Transport,
        url: &str,
    ) -> Target {
        Target {
            suite,
            shared,
            transport,
            url: url.to_string(),
            memo: Memo::default(),
            created: Arc::default(),
        }
    }
}

/// Runs case `index` of `seed` against the target, on a connection of its own.
pub async fn run_case(spec: &Spec, target: &Target, seed: u64, index: u64) -> CaseRun {
    run_fn(spec.case, target, seed, index, None, true, None)
        .await
        .0
}

/// Sends `bytes` alone as a fuzzed frame with the suite's `resend`; `None` when the
/// suite has none.
pub async fn resend_frame(spec: &Spec, target: &Target, bytes: &[u8]) -> Option<CaseRun> {
    let f = spec.resend?;
    Some(
        run_fn(f, target, 0, 0, None, false, Some((bytes, None)))
            .await
            .0,
    )
}

/// Sends `bytes` alone to `url` through the suite's [`Spec::resend`], when it has
/// one for HTTP.
pub async fn resend_request(
    spec: &Spec,
    target: &Target,
    url: &str,
    bytes: &[u8],
) -> Option<CaseRun> {
    let f = spec.resend?;
    let input = Some((bytes, Some(url)));
    Some(run_fn(f, target, 0, 0, None, false, input).await.0)
}

/// Runs the liveness probe once; `Err` holds the transport failure when the target
/// did not answer (a reply of any kind is `Ok`).
pub async fn probe(spec: &Spec, target: &Target) -> Result<(), String> {
    probe_on(spec, target, None).await.0
}

pub(super) async fn probe_on(
    spec: &Spec,
    target: &Target,
    conn: Option<Driver>,
) -> (Result<(), String>, Option<Driver>) {
    let (run, conn) = run_fn(spec.probe, target, 0, 0, conn, false, None).await;
    // Alive means answering: any reply, conforming or not, is a live one.
    let alive = match run.outcome {
        Outcome::Finding(f) if unanswered(&f) => Err(f.detail),
        _ => Ok(()),
    };
    (alive, conn)
}

/// Runs `f` on `conn` when given (and hands it back), else on a new connection
/// that is closed afterwards; `input` presets [`FuzzCtx::sent`] (for `resend`).
pub(super) async fn run_fn(
    f: FuzzFn,
    target: &Target,
    seed: u64,
    index: u64,
    conn: Option<Driver>,
    keep_label: bool,
    input: Option<(&[u8], Option<&str>)>,
) -> (CaseRun, Option<Driver>) {
    let keep = conn.is_some();
    let mut ctx = match conn {
        Some(d) => Ctx::with_driver(target.shared.clone(), target.transport, &target.url, d),
        None => Ctx::new(target.shared.clone(), target.transport, &target.url),
    };
    ctx.fuzzing = true;
    ctx.suite_id = Some(target.suite.id);
    let shared = (target.memo.clone(), target.created.clone());
    let mut fc = FuzzCtx::new(ctx, seed, index, shared);
    if let Some((bytes, to)) = input {
        fc.sent = bytes.to_vec();
        fc.resend_to = to.map(String::from);
    }
    let result = f(&mut fc).await;
    let outcome = classify(result, fc.ctx.findings());
    let transcript = fc.ctx.take_transcript();
    let label = match outcome {
        Outcome::Pass | Outcome::Skip(_) if !keep_label => String::new(),
        _ => fc.label(),
    };

    let conn = if keep {
        Some(fc.ctx.into_driver())
    } else {
        fc.ctx.close().await;
        None
    };
    let run = CaseRun {
        label,
        sent: fc.sent,
        transcript,
        outcome,
    };
    (run, conn)
}

/// Whether a finding is a failure at the transport level (the target did not
/// answer), after which the engine checks that it is still alive.
pub(super) fn unanswered(f: &FuzzFinding) -> bool {
    matches!(f.oracle, Oracle::Timeout | Oracle::Transport)
}
