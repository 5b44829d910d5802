//! The catalogue of named deviations the reference agents can switch on, so that
//! the harness can be shown to catch each one (`agentconform serve --fault NAME`).

use std::collections::BTreeSet;

/// One named deviation.
#[derive(Debug, Clone, Copy)]
pub struct Fault {
    pub name: &'static str,
    /// The rule family it breaks (freshness, signature checking, …).
    pub family: &'static str,
    pub description: &'static str,
    /// The case ids that must fail when the fault is on.
    pub caught_by: &'static [&'static str],
    /// For a fault modelled on one deviation of a real implementation: the key of the
    /// one finding it must produce, and nothing else may fail. Empty for the older
    /// faults, which are judged by `caught_by` alone.
    pub findings: &'static [&'static str],
    /// What a server's fault asks of a client that receives its replies: the client
    /// role's side of the same catalogue. Every server fault states it; a client
    /// fault has none to state.
    pub duty: Duty,
}

/// The duty a server fault puts on the client that talks to such a server.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Duty {
    /// A client fault, or a server fault whose catalogue entry states no duty (a
    /// test keeps the server catalogues free of it).
    NotStated,
    /// Nothing a client receives in its scenarios changes: the server takes what it
    /// should refuse, or deviates where no client scenario goes.
    None,
    /// A client may take the reply: a reading the spec does not forbid a client to
    /// be lenient about.
    MayTake,
    /// The client must refuse the reply (never act on it, never report it as a
    /// success). The client cases that serve it, each of which fails a client that
    /// takes it.
    Refuse(&'static [&'static str]),
    /// The client must report the exchange as an error. The client cases that serve
    /// it.
    ReportError(&'static [&'static str]),
}

impl Duty {
    /// The client cases that serve the fault's reply to a client.
    pub fn cases(&self) -> &'static [&'static str] {
        match self {
            Duty::Refuse(c) | Duty::ReportError(c) => c,
            Duty::NotStated | Duty::None | Duty::MayTake => &[],
        }
    }

    /// In words, for listings.
    pub fn describe(&self) -> &'static str {
        match self {
            Duty::NotStated => "not stated",
            Duty::None => "none",
            Duty::MayTake => "the client may take the reply",
            Duty::Refuse(_) => "the client must refuse the reply",
            Duty::ReportError(_) => "the client must report an error",
        }
    }
}

/// One catalogue entry: `fault!(name, family, description, [cases])`, then
/// optionally `finding = [keys]` for a fault that must be exactly those findings,
/// and for a server fault `duty = none | may_take | refuse[cases] |
/// report_error[cases]` (see [`Duty`]).
#[macro_export]
macro_rules! fault {
    (@duty) => { $crate::faults::Duty::NotStated };
    (@duty none) => { $crate::faults::Duty::None };
    (@duty may_take) => { $crate::faults::Duty::MayTake };
    (@duty refuse [$($c:literal),+ $(,)?]) => { $crate::faults::Duty::Refuse(&[$($c),+]) };
    (@duty report_error [$($c:literal),+ $(,)?]) => { $crate::faults::Duty::ReportError(&[$($c),+]) };
    ($name:literal, $family:literal, $desc:literal, [$($case:literal),+ $(,)?]
        $(, finding = [$($key:literal),+ $(,)?])?
        $(, duty = $duty:ident $([$($dcase:literal),+ $(,)?])?)? $(,)?) => {
        $crate::faults::Fault {
            name: $name,
            family: $family,
            description: $desc,
            caught_by: &[$($case),+],
            findings: &[$($($key),+)?],
            duty: $crate::fault!(@duty $($duty $([$($dcase),+])?)?),
        }
    };
}

/// The faults switched on in one agent.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct FaultSet(BTreeSet<&'static str>);

impl FaultSet {
    pub fn none() -> FaultSet {
        FaultSet::default()
    }

    /// Builds a set from names, checking each against `catalogue`.
    pub fn from_names<S: AsRef<str>>(catalogue: &[Fault], names: &[S]) -> Result<FaultSet, String> {
        let mut set = BTreeSet::new();
        for n in names {
            let n = n.as_ref();
            match catalogue.iter().find(|f| f.name == n) {
                Some(f) => {
                    set.insert(f.name);
                }
                None => {
                    let known: Vec<&str> = catalogue.iter().map(|f| f.name).collect();
                    return Err(format!(
                        "unknown fault {n:?}; known faults: {}",
                        known.join(", ")
                    ));
                }
            }
        }
        Ok(FaultSet(set))
    }

    pub fn has(&self, name: &str) -> bool {
        self.0.contains(name)
    }

    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    pub fn names(&self) -> impl Iterator<Item = &&'static str> {
        self.0.iter()
    }
}
