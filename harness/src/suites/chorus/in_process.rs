//! The in-process fuzz target of chorus (`Suite::in_process`): the reference answers any request without a 5xx, with replies their schemas pass. The
//! targets under fuzz/ call this function, and `cargo test` replays every saved input under
//! fuzz/regressions/<target>/ through the same function.

use crate::fuzzing::checks::{check_schema, Check};
use std::sync::OnceLock;

/// The target, by the name cargo-fuzz knows it under.
pub const TARGETS: &[(&str, Check)] = &[("chorus_server", chorus_server)];

fn chorus() -> &'static reference_impl::chorus::server::Chorus {
    static C: OnceLock<reference_impl::chorus::server::Chorus> = OnceLock::new();
    C.get_or_init(|| {
        let c = reference_impl::chorus::server::Chorus::with_config(Default::default());
        c.register_fixture("http://127.0.0.1:9");
        c
    })
}

/// The chorus reference answers any registration, transfer, job or discovery query
/// without a 5xx; errors pass the error schema, and successes their own.
pub fn chorus_server(data: &[u8]) -> Result<(), String> {
    let Some((sel, body)) = data.split_first() else {
        return Ok(());
    };
    let c = chorus();
    let (r, ok_schema) = match sel % 4 {
        0 => (c.register(body), Some("chorus/register-response")),
        1 => (c.transfer(body), None),
        2 => (c.job(body).0, None),
        _ => {
            let q: std::collections::HashMap<String, String> = String::from_utf8_lossy(body)
                .split('&')
                .filter_map(|kv| kv.split_once('='))
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect();
            (c.discover(&q), Some("chorus/discover-response"))
        }
    };
    if r.status >= 500 {
        return Err(format!(
            "HTTP {} for {}",
            r.status,
            String::from_utf8_lossy(body)
        ));
    }
    if r.status >= 400 {
        return check_schema("chorus/error", &r.body, "the error reply");
    }
    match ok_schema {
        Some(s) => check_schema(s, &r.body, "the reply"),
        None => Ok(()),
    }
}
