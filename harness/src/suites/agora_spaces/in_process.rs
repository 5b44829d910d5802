//! The in-process fuzz target of agora-spaces (`Suite::in_process`): the reference hub answers any frames with server frames their schemas pass. The
//! targets under fuzz/ call this function, and `cargo test` replays every saved input under
//! fuzz/regressions/<target>/ through the same function.

use crate::fuzzing::checks::{check_schema, runtime, Check};
use std::sync::OnceLock;

/// The target, by the name cargo-fuzz knows it under.
pub const TARGETS: &[(&str, Check)] = &[("agora_spaces_server", agora_spaces_server)];

fn spaces() -> &'static std::sync::Arc<reference_impl::agora_spaces::server::Spaces> {
    static S: OnceLock<std::sync::Arc<reference_impl::agora_spaces::server::Spaces>> =
        OnceLock::new();
    S.get_or_init(|| reference_impl::agora_spaces::server::Spaces::new(Default::default()))
}

/// The agora-spaces reference answers any frames (split at newlines) on a connection
/// of its own with server frames that each pass their schema.
pub fn agora_spaces_server(data: &[u8]) -> Result<(), String> {
    let Ok(text) = std::str::from_utf8(data) else {
        return Ok(());
    };
    let frames: Vec<&str> = text.split('\n').take(8).collect();
    let _in_runtime = runtime().enter();
    let agent = format!("fz-{}", reference_impl::wire::new_id());
    for out in spaces().handle_detached(&agent, &frames) {
        let v: serde_json::Value = serde_json::from_str(&out)
            .map_err(|e| format!("a server frame is not JSON ({e}): {out}"))?;
        let Some(schema) = super::replies::schema_for(&v) else {
            return Err(format!("a server frame of no known type: {out}"));
        };
        check_schema(&format!("agora-spaces/{schema}"), &v, "a server frame")?;
    }
    Ok(())
}
