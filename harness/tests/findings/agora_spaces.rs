//! This suite's part of the verdict-model tests: faults switched on together, and
//! tests of its own.

use libtest_mimic::Trial;

/// Faults switched on together; each must still be reported.
pub const COMBINED: &[&[&str]] = &[];

pub fn trials() -> Vec<Trial> {
    Vec::new()
}
