//! The in-process fuzz target of agora-exchange (`Suite::in_process`): the reference server answers any request with a reply its schema passes. The
//! targets under fuzz/ call this function, and `cargo test` replays every saved input under
//! fuzz/regressions/<target>/ through the same function.

use crate::fuzzing::checks::{check_schema, Check};
use std::sync::OnceLock;

/// The target, by the name cargo-fuzz knows it under.
pub const TARGETS: &[(&str, Check)] = &[("agora_exchange_server", agora_exchange_server)];

fn exchange() -> &'static reference_impl::agora_exchange::server::Exchange {
    static E: OnceLock<reference_impl::agora_exchange::server::Exchange> = OnceLock::new();
    E.get_or_init(|| {
        reference_impl::agora_exchange::server::Exchange::with_config(Default::default())
    })
}

/// The agora-exchange reference server answers any request, on the base URL or on a
/// conversation, with HTTP 200, 400 or 404 and a body that passes the response
/// schema. The first byte picks the endpoint.
pub fn agora_exchange_server(data: &[u8]) -> Result<(), String> {
    let Some((sel, body)) = data.split_first() else {
        return Ok(());
    };
    let ex = exchange();
    let conversation = match sel % 3 {
        0 => None,
        1 => Some("0123456789abcdef0123456789abcdef".to_string()),
        _ => ex
            .handle(None, br#"{"body":"open","multiround":true}"#)
            .body["conversationId"]
            .as_str()
            .map(String::from),
    };
    let r = ex.handle(conversation.as_deref(), body);
    if ![200, 400, 404].contains(&r.status) {
        return Err(format!(
            "HTTP {} for {}",
            r.status,
            String::from_utf8_lossy(body)
        ));
    }
    check_schema("agora-exchange/response", &r.body, "the reply")
}
