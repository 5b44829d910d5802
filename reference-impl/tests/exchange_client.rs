//! The reference client drives the reference server through a multi-round
//! conversation over loopback HTTP.

use reference_impl::agora_exchange::client::{Client, ClientError};
use reference_impl::agora_exchange::document::{ProtocolDocument, ECHO_DOCUMENT};
use reference_impl::agora_exchange::server::{router, Exchange, ExchangeConfig};
use reference_impl::serve::spawn;
use serde_json::json;
use std::sync::Arc;

#[tokio::test]
async fn client_drives_a_multi_round_conversation() {
    let ex = Arc::new(Exchange::with_config(ExchangeConfig {
        conversation_ttl_s: 60,
        ..ExchangeConfig::default()
    }));
    let server = spawn("127.0.0.1:0", router(ex)).await.unwrap();
    let client = Client::new(&format!("http://{}/", server.addr)).unwrap();
    let hash = ProtocolDocument::new(ECHO_DOCUMENT).hash;

    let single = client
        .ask(json!({"text": "one"}), Some(&hash))
        .await
        .unwrap();
    assert_eq!(single, json!({"text": "one"}));

    let (mut conv, first) = client
        .start(json!({"text": "round 1"}), Some(&hash))
        .await
        .unwrap();
    assert_eq!(first, json!({"text": "round 1"}));
    assert!(conv.expires.is_some());
    for round in 2..=4 {
        let answer = conv
            .send(json!({"text": format!("round {round}")}))
            .await
            .unwrap();
        assert_eq!(answer["text"], format!("round {round}"));
    }
    // A protocol-level error is a success whose body carries the error.
    let err = conv.send(json!({"txt": 1})).await.unwrap();
    assert!(err["error"].is_string());

    let unsupported = client.ask(json!("x"), Some(&"0".repeat(40))).await;
    assert!(matches!(unsupported, Err(ClientError::Failure(e)) if e == "Unsupported protocol"));
    server.stop().await;
}
