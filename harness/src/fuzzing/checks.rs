//! The properties the in-process fuzz targets check. The targets under fuzz/ call
//! these functions, and `cargo test` replays every saved input under
//! fuzz/regressions/<target>/ through the same function, so a fixed crash stays fixed.
//! Each returns `Err` with a description when the property does not hold; none may
//! panic on any input.

use crate::profile::Profile;
use crate::schemas::Schemas;
use reference_impl::wire::jcs;
use std::sync::OnceLock;

/// A target's name and its property.
pub type Check = fn(&[u8]) -> Result<(), String>;

/// The targets every suite shares, by the name cargo-fuzz knows them under
/// (`crate::suites::fuzz_targets` adds each suite's).
pub const SHARED: &[(&str, Check)] = &[
    ("canonicalize", canonicalize),
    ("differential", differential),
    ("decoders", decoders),
    ("profile", profile),
];

/// The canonical form is stable and reads back as JSON.
pub fn canonicalize(data: &[u8]) -> Result<(), String> {
    let Ok(out) = jcs::canonicalize(data) else {
        return Ok(());
    };
    let again = jcs::canonicalize(&out)
        .map_err(|e| format!("canonical output does not canonicalize: {e}"))?;
    if again != out {
        return Err(format!(
            "not stable:\n first {}\nsecond {}",
            String::from_utf8_lossy(&out),
            String::from_utf8_lossy(&again)
        ));
    }
    serde_json::from_slice::<serde_json::Value>(&out)
        .map_err(|e| format!("canonical output is not JSON: {e}"))?;
    Ok(())
}

/// Where both the project's canonicalizer and serde_jcs accept a text, they agree.
/// (They part on purpose elsewhere: the project rejects duplicate names, lone
/// surrogates and inexact integers; serde_json reads those.)
pub fn differential(data: &[u8]) -> Result<(), String> {
    let Ok(ours) = jcs::canonicalize(data) else {
        return Ok(());
    };
    let Ok(value) = serde_json::from_slice::<serde_json::Value>(data) else {
        return Err(format!(
            "the project canonicalizes text serde_json rejects: {}",
            String::from_utf8_lossy(data)
        ));
    };
    let Ok(theirs) = serde_jcs::to_vec(&value) else {
        return Ok(());
    };
    if ours != theirs {
        return Err(format!(
            "canonical forms differ:\n ours {}\n serde_jcs {}",
            String::from_utf8_lossy(&ours),
            String::from_utf8_lossy(&theirs)
        ));
    }
    Ok(())
}

/// The built-in schemas, compiled once.
pub fn schemas() -> &'static Schemas {
    static S: OnceLock<Schemas> = OnceLock::new();
    // The schemas are built into the binary and compile (a test says so); a failure
    // here is a build defect, and the fuzz run should stop loudly.
    S.get_or_init(|| Schemas::load().expect("built-in schemas compile"))
}

/// Every suite's message decoder: the strict reader, then every schema of every
/// suite, on any input.
pub fn decoders(data: &[u8]) -> Result<(), String> {
    let Ok(tree) = reference_impl::wire::json::parse(data) else {
        return Ok(());
    };
    let v = tree.to_serde();
    for key in schemas().keys() {
        let _ = schemas().check(key, &v);
    }
    Ok(())
}

/// `v` against schema `name`, the error saying `what` it was.
pub fn check_schema(name: &str, v: &serde_json::Value, what: &str) -> Result<(), String> {
    schemas()
        .check(name, v)
        .map_err(|e| format!("{what}: {e}: {v}"))
}

/// One current-thread runtime for the targets that need one.
pub fn runtime() -> &'static tokio::runtime::Runtime {
    static R: OnceLock<tokio::runtime::Runtime> = OnceLock::new();
    // Building a current-thread runtime only fails when the OS refuses a timer or
    // an I/O driver; the fuzz run cannot go on without one.
    R.get_or_init(|| {
        tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .expect("a runtime")
    })
}

/// The profile reader never panics.
pub fn profile(data: &[u8]) -> Result<(), String> {
    if let Ok(text) = std::str::from_utf8(data) {
        let _ = Profile::from_toml(text, "fuzz.toml");
    }
    Ok(())
}
