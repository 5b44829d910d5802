//! What the client fuzzers of every suite share (`fuzz --role client`): the edits
//! of one reply or hub frame the harness serves, the wrapping of a scripted
//! counterparty so that exactly one of its answers is edited, and the oracles on
//! how the client driver ended, and the client spec's shape (`spec`). Each suite's
//! requester (or orchestrator) holds its client spec: the scenario, the
//! counterparty, and what the client must or must not do after the edit.

use super::mutate::{edit_bytes, respell, ByteEdit, Val, WireForm};
use super::spec::{FuzzFn, Spec};
use super::verdict::{finding, FuzzStep, Oracle};
use crate::counterparty::{Answer, DriverRun, Exit};
use crate::drive::Transport;
use arbitrary::Arbitrary;
use serde_json::Value;

/// An edit of one JSON reply (or hub frame).
#[derive(Debug, Clone, Default, Arbitrary)]
pub enum Edit {
    #[default]
    None,
    /// The same value in another spelling.
    Respell(WireForm),
    /// Raw byte edits.
    Bytes(Vec<ByteEdit>),
    /// A member set to a drawn value: the i-th top-level member, or when `deep` the
    /// i-th member of the first object-valued member (a payload, a data).
    Member(u8, bool, Val),
    /// A member removed (chosen as for `Member`).
    Drop(u8, bool),
    /// Whitespace after the value, this many KiB of it (the same value).
    Padded(u8),
    /// The reply cut short, keeping at most this many bytes.
    Truncated(u16),
}

/// An edit as a finding's detail says it (never a debug form).
impl std::fmt::Display for Edit {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let place = |i: &u8, deep: &bool| {
            if *deep {
                format!("member {i} of the first object member")
            } else {
                format!("top-level member {i}")
            }
        };
        match self {
            Edit::None => f.write_str("the reply as planned"),
            Edit::Respell(w) => write!(f, "the reply respelled with {w}"),
            Edit::Bytes(b) => write!(f, "{} raw byte edits of the reply", b.len()),
            Edit::Member(i, deep, v) => write!(f, "{} set to {}", place(i, deep), v.json()),
            Edit::Drop(i, deep) => write!(f, "{} removed", place(i, deep)),
            Edit::Padded(k) => write!(f, "{k} KiB of whitespace after the reply"),
            Edit::Truncated(n) => write!(f, "the reply cut after {n} bytes"),
        }
    }
}

/// What an edit did to a reply.
#[derive(Debug, Clone)]
pub struct Edited {
    pub bytes: Vec<u8>,
    /// The reply still reads as the same JSON value (a client must take it as
    /// it would the original).
    pub same_value: bool,
}

impl Edit {
    /// Applies the edit to `out` (a JSON text; anything else is only byte-edited).
    pub fn apply(&self, out: Vec<u8>) -> Edited {
        let parsed = serde_json::from_slice::<Value>(&out).ok();
        let bytes = match (self, &parsed) {
            (Edit::None, _) => out.clone(),
            (Edit::Respell(w), Some(v)) => respell(v, *w),
            (Edit::Bytes(edits), _) => edit_bytes(out.clone(), edits),
            (Edit::Member(i, deep, val), Some(v)) => {
                let mut v = v.clone();
                if let Some(slot) = member(&mut v, *i, *deep) {
                    *slot = val.json();
                }
                v.to_string().into_bytes()
            }
            (Edit::Drop(i, deep), Some(v)) => {
                let mut v = v.clone();
                drop_member(&mut v, *i, *deep);
                v.to_string().into_bytes()
            }
            (Edit::Padded(kib), _) => {
                let mut b = out.clone();
                b.extend(std::iter::repeat_n(b' ', usize::from(*kib) * 1024));
                b
            }
            (Edit::Truncated(keep), _) => {
                let keep = usize::from(*keep) % out.len().max(1);
                out[..keep].to_vec()
            }
            (Edit::Respell(_) | Edit::Member(..) | Edit::Drop(..), None) => out.clone(),
        };
        let same_value = match &parsed {
            Some(v) => serde_json::from_slice::<Value>(&bytes).is_ok_and(|w| w == *v),
            None => bytes == out,
        };
        Edited { bytes, same_value }
    }
}

/// The object an edit reaches: the value itself, or its first object-valued
/// member when `deep`.
fn reached(v: &mut Value, deep: bool) -> Option<&mut serde_json::Map<String, Value>> {
    let top = v.as_object_mut()?;
    if !deep {
        return Some(top);
    }
    top.values_mut().find_map(Value::as_object_mut)
}

fn member(v: &mut Value, i: u8, deep: bool) -> Option<&mut Value> {
    let m = reached(v, deep)?;
    let n = m.len();
    if n == 0 {
        return None;
    }
    m.values_mut().nth(usize::from(i) % n)
}

fn drop_member(v: &mut Value, i: u8, deep: bool) {
    if let Some(m) = reached(v, deep) {
        let n = m.len();
        if n > 0 {
            if let Some(k) = m.keys().nth(usize::from(i) % n).cloned() {
                m.remove(&k);
            }
        }
    }
}

/// What the edited answer served: whether the edit was applied (the client sent
/// that many requests) and whether it kept the reply's value.
#[derive(Debug, Clone, Default)]
pub struct Served {
    pub applied: bool,
    pub same_value: bool,
}

/// `inner`, with `edit` applied to the first answer to a request whose path
/// `which` picks; `served` tells what happened.
pub fn edit_answer(
    mut inner: Answer,
    mut which: impl FnMut(&str) -> bool + Send + 'static,
    edit: Edit,
    served: std::sync::Arc<std::sync::Mutex<Served>>,
) -> Answer {
    let mut done = false;
    Box::new(move |path: &str, bytes: &[u8]| {
        let (status, out) = inner(path, bytes);
        if done || !which(path) {
            return (status, out);
        }
        done = true;
        let e = edit.apply(out);
        *served.lock().unwrap_or_else(|p| p.into_inner()) = Served {
            applied: true,
            same_value: e.same_value,
        };
        (status, e.bytes)
    })
}

/// The live fuzzer of a suite's client role: each case runs the client driver once
/// against the harness playing the other side over `binding`, one of its replies
/// edited (`case`); `probe` runs one plain scenario, which must complete
/// ([`completed`]); the client faults no case reaches, with why, in `unreachable`.
pub const fn spec(
    binding: &'static [Transport],
    case: FuzzFn,
    probe: FuzzFn,
    unreachable: &'static [(&'static str, &'static str)],
) -> Spec {
    Spec {
        transports: binding,
        case,
        probe,
        resend: None,
        kinds: &[],
        unreachable,
        connection_per_worker: false,
        workers: crate::fuzzing::spec::WORKERS,
    }
}

/// The client's plain run (the liveness probe): it ended as a client should and
/// completed `what`.
pub fn completed(run: &DriverRun, what: &str) -> FuzzStep<()> {
    ended_well(run)?;
    must_complete(run, false, what)
}

/// The driver ended as a client should: exit 0 or 1, in time.
pub fn ended_well(run: &DriverRun) -> FuzzStep<()> {
    match &run.exit {
        Exit::Code(0 | 1) => Ok(()),
        Exit::Deadline => finding(Oracle::Hang, run.ended()),
        _ => finding(
            Oracle::Crash,
            format!(
                "{}; stderr: {}",
                run.ended(),
                crate::finding::clipped(run.stderr.trim(), 300)
            ),
        ),
    }
}

/// Whether the driver reported success with at least one result.
pub fn took(run: &DriverRun) -> bool {
    !run.failed() && !run.results().is_empty()
}

/// A client that must complete the scenario (the replies kept their value) did
/// not: a respelled reply (`respelled`) is a wire-form finding, else a valid
/// exchange rejected.
pub fn must_complete(run: &DriverRun, respelled: bool, what: &str) -> FuzzStep<()> {
    if took(run) {
        return Ok(());
    }
    let oracle = if respelled {
        Oracle::WireForm
    } else {
        Oracle::ValidRejected
    };
    finding(
        oracle,
        format!(
            "the client did not complete {what}: {}; stdout: {}",
            run.ended(),
            crate::finding::clipped(run.stdout.trim(), 300)
        ),
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn edits_say_whether_the_value_is_kept() {
        let out = json!({"a": 1, "p": {"x": "y"}}).to_string().into_bytes();
        assert!(Edit::None.apply(out.clone()).same_value);
        assert!(
            Edit::Respell(WireForm::Spaces)
                .apply(out.clone())
                .same_value
        );
        assert!(Edit::Padded(1).apply(out.clone()).same_value);
        let e = Edit::Member(1, true, Val::Int(7)).apply(out.clone());
        assert!(!e.same_value);
        assert_eq!(
            serde_json::from_slice::<Value>(&e.bytes).expect("json"),
            json!({"a": 1, "p": {"x": 7}})
        );
        let e = Edit::Drop(0, false).apply(out.clone());
        assert_eq!(
            serde_json::from_slice::<Value>(&e.bytes).expect("json"),
            json!({"p": {"x": "y"}})
        );
        assert!(!Edit::Truncated(3).apply(out).same_value);
    }
}
