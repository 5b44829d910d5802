//! The canonicalizer on arbitrary bytes: never panics; its output is stable
//! (canonicalizing it again gives the same bytes) and is JSON that serde_json reads.
#![no_main]

use libfuzzer_sys::fuzz_target;
use reference_impl::wire::jcs;

fuzz_target!(|data: &[u8]| {
    if let Ok(out) = jcs::canonicalize(data) {
        let again = jcs::canonicalize(&out).expect("canonical output must canonicalize");
        assert_eq!(again, out, "canonical form is not stable");
        serde_json::from_slice::<serde_json::Value>(&out).expect("canonical output must be JSON");
    }
});
