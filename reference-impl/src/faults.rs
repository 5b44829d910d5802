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
}

/// One catalogue entry: `fault!(name, family, description, [cases])`, or with
/// `finding = [keys]` after the cases for a fault that must be exactly those findings.
#[macro_export]
macro_rules! fault {
    ($name:literal, $family:literal, $desc:literal, [$($case:literal),+ $(,)?]) => {
        $crate::faults::Fault { name: $name, family: $family, description: $desc, caught_by: &[$($case),+], findings: &[] }
    };
    ($name:literal, $family:literal, $desc:literal, [$($case:literal),+ $(,)?], finding = [$($key:literal),+ $(,)?]) => {
        $crate::faults::Fault { name: $name, family: $family, description: $desc, caught_by: &[$($case),+], findings: &[$($key),+] }
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
