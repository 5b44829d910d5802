//! Tamper mode's verdict: did the other side notice the change? A request change
//! judges the server (each changed request refused, beside the untouched one
//! taken); a reply change judges the client by its outcome, which only `interop`
//! sees (the client driver's exit and lines), by the duty the fault puts on it.

use super::{Changed, Passed, Seen};
use crate::case::{CaseResult, Entry, Level, Met, Outcome, Suite};
use crate::counterparty::DriverRun;
use crate::drive::Transport;
use crate::finding::{clipped, quote, Finding};
use crate::tamper::{Changes, Tamper};

/// What the verdict can see of the client.
pub enum Observed<'a> {
    /// Only the proxy's traffic (`agentconform proxy`).
    Proxy,
    /// The client's plays (`agentconform interop`): whether every untouched play
    /// completed, and each tampered play's run with whether a change reached it.
    Plays {
        control_ok: bool,
        tampered: &'a [(String, DriverRun, bool)],
    },
}

/// The tamper's case: `<suite>/proxy:<side>:tamper:<fault>`, the side being the one
/// judged; a deviation is the finding `<suite>/tamper:<fault>`.
pub fn verdict(suite: &'static Suite, t: &Tamper, passed: &[Passed], seen: Observed) -> CaseResult {
    let (requirements, level) = judged_as(suite, t);
    let ids: Vec<&str> = requirements.iter().map(String::as_str).collect();
    let finding = |summary: String| {
        crate::rules::TAMPER
            .found_in(suite.id, t.fault, summary)
            .judged_as(&ids, level)
    };
    let (outcome, message, met) = match t.changes {
        Changes::Request => server_verdict(t, passed, finding),
        Changes::Reply => client_verdict(t, passed, seen, finding),
    };
    let side = match t.changes {
        Changes::Request => "server",
        Changes::Reply => "client",
    };
    let met: Vec<Met> = met
        .into_iter()
        .map(|finding| Met { finding, own: true })
        .collect();
    CaseResult {
        id: format!("{}/proxy:{side}:tamper:{}", suite.id, t.fault),
        suite: suite.id.to_string(),
        title: format!("the {side} notices {} ({} in flight)", t.what, t.fault),
        requirements: requirements.clone(),
        level,
        transport: Transport::Http,
        outcome: crate::runner::own_outcome(outcome, &met),
        message,
        findings: met.iter().map(|m| m.finding.key.to_string()).collect(),
        reproduce: None,
        duration_ms: 0,
        transcript: transcript(passed),
        met,
        control_case: None,
        claims: Vec::new(),
    }
}

/// Adds the tamper's case to a judgement, its findings merged as a run merges them.
pub fn add(out: &mut crate::runner::RunOutput, case: CaseResult) {
    let mut case = [case];
    out.findings
        .extend(crate::runner::merge_findings(&mut case));
    out.results.extend(case);
}

/// The suite's tamper for `name`, or a usage error listing those it has.
pub fn find(suite: &Suite, name: &str) -> Result<&'static Tamper, String> {
    suite
        .tampers
        .iter()
        .find(|t| t.fault == name)
        .ok_or_else(|| {
            let known: Vec<&str> = suite.tampers.iter().map(|t| t.fault).collect();
            if known.is_empty() {
                format!(
                    "no reference fault of {} can be applied in flight",
                    suite.id
                )
            } else {
                format!(
                    "{name:?} is not a fault the proxy applies to {} in flight; it applies: {}",
                    suite.id,
                    known.join(", ")
                )
            }
        })
}

/// `--fault list`: each tamper, whose messages it changes, and what it is judged as.
pub fn list(suite: &Suite, out: &mut impl std::io::Write) -> std::io::Result<()> {
    if suite.tampers.is_empty() {
        return writeln!(
            out,
            "no reference fault of {} can be applied in flight",
            suite.id
        );
    }
    for t in suite.tampers {
        let (whose, judged) = match t.changes {
            Changes::Reply => ("the server's replies", "the client"),
            Changes::Request => ("the client's requests", "the server"),
        };
        writeln!(out, "{:<28} changes {whose}: {}", t.fault, t.what)?;
        writeln!(out, "{:<28} judges {judged} as {}", "", t.judged_as)?;
    }
    Ok(())
}

/// The requirements and level of the case the tamper is judged as.
fn judged_as(suite: &Suite, t: &Tamper) -> (Vec<String>, Level) {
    suite
        .cases
        .iter()
        .chain(suite.client_cases)
        .find(|c| c.id == t.judged_as)
        .map_or((Vec::new(), Level::Must), |c| {
            (
                c.requirements.iter().map(|r| r.to_string()).collect(),
                c.level,
            )
        })
}

type Verdict = (Outcome, String, Vec<Finding>);

/// Each changed request refused, and an untouched one taken as the control.
fn server_verdict(t: &Tamper, passed: &[Passed], finding: impl Fn(String) -> Finding) -> Verdict {
    let http: Vec<(&Seen, &Changed)> = passed
        .iter()
        .filter_map(|p| match p {
            Passed::Http(s) => s.changed.as_ref().map(|c| (s.as_ref(), c)),
            Passed::Frame(_) => None,
        })
        .filter(|(s, _)| s.failed.is_none())
        .collect();
    let refused = |s: &Seen| (t.refused)(s.exchange.status, &s.exchange.answered);
    let said = |s: &Seen| {
        format!(
            "HTTP {} {}",
            s.exchange.status,
            quote(&String::from_utf8_lossy(&s.exchange.answered))
        )
    };
    let controls: Vec<&Seen> = http
        .iter()
        .filter(|(_, c)| c.control)
        .map(|(s, _)| *s)
        .collect();
    let changed: Vec<(&Seen, &Changed)> =
        http.iter().filter(|(_, c)| !c.control).copied().collect();
    if controls.is_empty() && changed.is_empty() {
        return (
            Outcome::Skip,
            format!(
                "no request the change applies to ({}) went through the proxy",
                t.what
            ),
            Vec::new(),
        );
    }
    let Some(control) = controls.iter().find(|s| !refused(s)) else {
        let s = controls
            .first()
            .map_or(String::new(), |s| format!(": {}", said(s)));
        return (Outcome::Skip, format!("the server refused the untouched request too{s}, so a refusal of the changed one would prove nothing"), Vec::new());
    };
    if changed.is_empty() {
        return (Outcome::Skip, format!("{} request(s) the change applies to passed untouched as the control; none was changed", controls.len()), Vec::new());
    }
    let taken: Vec<String> = changed
        .iter()
        .filter(|(s, _)| !refused(s))
        .map(|(s, c)| format!("{} {} drew {}", s.exchange.method, c.path, said(s)))
        .collect();
    if let Some(first) = taken.first() {
        let f = finding(format!(
            "the server took {} of {} requests changed in flight ({}): {first}",
            taken.len(),
            changed.len(),
            t.what
        ));
        return (Outcome::Pass, String::new(), vec![f]);
    }
    let message = format!(
        "the server refused all {} changed requests (first: {}) and took the untouched one ({})",
        changed.len(),
        said(changed[0].0),
        said(control)
    );
    (Outcome::Pass, message, Vec::new())
}

/// The client refused each changed reply: its tampered plays took nothing.
fn client_verdict(
    t: &Tamper,
    passed: &[Passed],
    seen: Observed,
    finding: impl Fn(String) -> Finding,
) -> Verdict {
    let changed = passed
        .iter()
        .filter(|p| match p {
            Passed::Http(s) => s.changed.as_ref().is_some_and(|c| !c.control),
            Passed::Frame(f) => f.changed.as_ref().is_some_and(|c| !c.control),
        })
        .count();
    if changed == 0 {
        return (
            Outcome::Skip,
            format!(
                "no reply the change applies to ({}) went through the proxy changed",
                t.what
            ),
            Vec::new(),
        );
    }
    let tampered = match seen {
        Observed::Proxy => {
            let why = format!("the proxy changed {changed} replies ({}) but cannot see what the client made of them: `agentconform interop --fault {}` judges a client by its outcome", t.what, t.fault);
            return (Outcome::Skip, why, Vec::new());
        }
        Observed::Plays {
            control_ok: false, ..
        } => {
            return (Outcome::Skip, "the client did not complete the untouched plays, so what it does with a changed reply proves nothing".into(), Vec::new());
        }
        Observed::Plays { tampered, .. } => tampered,
    };
    let mut met = Vec::new();
    let mut judged = 0;
    for (scenario, run, _) in tampered.iter().filter(|(_, _, reached)| *reached) {
        judged += 1;
        if let Err(stop) = run.took_nothing("the client", "took", t.what) {
            let said = match stop {
                crate::case::Stop::Fail(m) | crate::case::Stop::Skip(m) => m,
                crate::case::Stop::Finding(f) => f.summary,
                crate::case::Stop::Blocked(k) => k.to_string(),
            };
            met.push(finding(format!("{scenario}: {}", clipped(&said, 600))));
        }
    }
    if judged == 0 {
        return (
            Outcome::Skip,
            "no tampered play got a changed reply".into(),
            Vec::new(),
        );
    }
    let message = if met.is_empty() {
        format!(
            "the client refused {} in each of {judged} plays and reported its task as failed",
            t.what
        )
    } else {
        String::new()
    };
    (Outcome::Pass, message, met)
}

/// The messages the tamper applied to: what the other side got, control or changed.
fn transcript(passed: &[Passed]) -> Vec<Entry> {
    passed
        .iter()
        .filter_map(|p| {
            let (c, at_ms, method) = match p {
                Passed::Http(s) => (s.changed.as_ref()?, s.at_ms, s.exchange.method.as_str()),
                Passed::Frame(f) => (f.changed.as_ref()?, f.at_ms, "WS"),
            };
            let kind = if c.control {
                "untouched (the control)"
            } else {
                "changed"
            };
            let body = String::from_utf8_lossy(&c.body[..c.body.len().min(8192)]).into_owned();
            Some(Entry {
                at_ms,
                kind: "note",
                text: format!("{kind}: {method} {}\n{body}", c.path),
                http_status: None,
            })
        })
        .take(400)
        .collect()
}

#[cfg(test)]
mod tests {
    use crate::tamper::Changes;

    /// Each tamper names a fault of its catalogue (the server's for a reply change,
    /// the client's for a request change) and a case of its suite to be judged as;
    /// a reply change's case serves the fault's duty.
    #[test]
    fn tampers_name_their_fault_and_case() {
        for suite in crate::suites::all() {
            for t in suite.tampers {
                let catalogue = match t.changes {
                    Changes::Reply => suite.faults,
                    Changes::Request => suite.client_faults,
                };
                let fault = catalogue
                    .iter()
                    .find(|f| f.name == t.fault)
                    .unwrap_or_else(|| {
                        panic!("{}: {} is no fault of its catalogue", suite.id, t.fault)
                    });
                let cases = match t.changes {
                    Changes::Reply => suite.client_cases,
                    Changes::Request => suite.cases,
                };
                assert!(
                    cases.iter().any(|c| c.id == t.judged_as),
                    "{}: {} is judged as {}, no case of the side it judges",
                    suite.id,
                    t.fault,
                    t.judged_as
                );
                if t.changes == Changes::Reply {
                    assert!(
                        fault.duty.cases().contains(&t.judged_as),
                        "{}: {}'s duty is not served by {}",
                        suite.id,
                        t.fault,
                        t.judged_as
                    );
                }
            }
        }
    }
}
