//! A misbehaving loopback target, for measuring the harness by hand:
//!   cargo run -p agentconform --example hostile -- KIND
//! prints its URL and serves until killed (KIND: hang, garbage, deep, endless,
//! ws-silent, ws-flood, ws-tiny, ws-deep; see tests/common).

#[path = "../tests/common/mod.rs"]
mod common;

fn main() {
    let kind: &'static str = match std::env::args().nth(1).as_deref() {
        Some("hang") => "hang",
        Some("garbage") => "garbage",
        Some("deep") => "deep",
        Some("endless") => "endless",
        Some("ws-silent") => "ws-silent",
        Some("ws-flood") => "ws-flood",
        Some("ws-tiny") => "ws-tiny",
        Some("ws-deep") => "ws-deep",
        other => {
            eprintln!("unknown kind {other:?}");
            std::process::exit(2);
        }
    };
    let rt = tokio::runtime::Runtime::new().expect("runtime");
    rt.block_on(async {
        let url = common::hostile(kind).await;
        println!("{url}");
        tokio::time::sleep(std::time::Duration::from_secs(600)).await;
    });
}
