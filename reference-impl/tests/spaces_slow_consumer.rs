//! A member of the reference agora-spaces hub that stops reading is cut off once its
//! unsent bytes pass the bound: closed with the documented code and reason, its
//! membership ended like any disconnect (the others are told it left), while a member
//! that reads goes on receiving.

use futures_util::{SinkExt, StreamExt};
use reference_impl::agora_spaces::server::{
    router, slow_close_reason, Spaces, SpacesConfig, SLOW_CLOSE_CODE,
};
use reference_impl::serve::spawn;
use serde_json::{json, Value};
use std::time::Duration;
use tokio_tungstenite::tungstenite::protocol::frame::coding::CloseCode;
use tokio_tungstenite::tungstenite::Message;

type Ws =
    tokio_tungstenite::WebSocketStream<tokio_tungstenite::MaybeTlsStream<tokio::net::TcpStream>>;

/// Every wait of the test ends by this.
const DEADLINE: Duration = Duration::from_secs(20);
/// The bound of the test's hub.
const LIMIT: usize = 64 * 1024;
/// At most this many events are published (each 8 kB, 32 MB in all, well past what
/// loopback socket buffers hold).
const MAX_EVENTS: usize = 4000;
/// How many events the publisher may be ahead of the reader (2 × 8 kB, far below
/// the bound).
const WINDOW: usize = 2;

async fn connect(base: &str, agent: &str) -> Ws {
    let (ws, _) = tokio_tungstenite::connect_async(format!("{base}?agent_id={agent}"))
        .await
        .expect("connect");
    ws
}

/// The next text frame as JSON, within the deadline.
async fn next_json<S>(ws: &mut S) -> Value
where
    S: futures_util::Stream<Item = Result<Message, tokio_tungstenite::tungstenite::Error>> + Unpin,
{
    loop {
        let m = tokio::time::timeout(DEADLINE, ws.next())
            .await
            .expect("a frame within the deadline")
            .expect("the connection is open")
            .expect("a frame");
        if let Message::Text(t) = m {
            return serde_json::from_str(t.as_str()).expect("JSON");
        }
    }
}

/// Registers (already done by connecting) and joins `general`.
async fn join(ws: &mut Ws) {
    assert_eq!(next_json(ws).await["type"], "agent.registered");
    let join = json!({"type": "space.join", "id": "j1", "space": "general", "timestamp": 1});
    ws.send(Message::Text(join.to_string().into()))
        .await
        .expect("send");
    loop {
        if next_json(ws).await["type"] == "space.joined" {
            return;
        }
    }
}

#[tokio::test]
async fn a_stalled_member_is_cut_off_with_the_documented_close() {
    let cfg = SpacesConfig {
        max_pending_bytes: LIMIT,
        // Whole events, no delta streams: one frame per event.
        delta_threshold: 1 << 20,
        ..SpacesConfig::default()
    };
    let server = spawn("127.0.0.1:0", router(Spaces::new(cfg)))
        .await
        .expect("serve");
    let base = format!("ws://{}/ws", server.addr);
    let mut stalled = connect(&base, "stalled").await;
    join(&mut stalled).await;
    let mut reader = connect(&base, "reader").await;
    join(&mut reader).await;
    let publisher = connect(&base, "publisher").await;
    let (mut pub_tx, mut pub_rx) = publisher.split();
    assert_eq!(next_json(&mut pub_rx).await["type"], "agent.registered");
    let join = json!({"type": "space.join", "id": "j1", "space": "general", "timestamp": 1});
    pub_tx
        .send(Message::Text(join.to_string().into()))
        .await
        .expect("send");

    // The reader reads everything, counting events, until it is told the stalled
    // member left; the publisher keeps at most WINDOW events ahead of it, so that
    // the reader's own queue stays far below the bound whatever the scheduling.
    let (count_tx, mut count_rx) = tokio::sync::watch::channel(0usize);
    let reading = tokio::spawn(async move {
        let mut events = 0usize;
        loop {
            let v = next_json(&mut reader).await;
            match v["type"].as_str() {
                Some("space.event") => {
                    events += 1;
                    count_tx.send_replace(events);
                }
                Some("space.members") if v["left"] == "stalled" => return (events, reader),
                _ => {}
            }
        }
    });
    let text = "x".repeat(8 * 1024);
    let mut published = 0;
    while published < MAX_EVENTS && !reading.is_finished() {
        let behind = published.saturating_sub(WINDOW);
        let caught_up = tokio::time::timeout(DEADLINE, count_rx.wait_for(|n| *n >= behind)).await;
        if !matches!(caught_up, Ok(Ok(_))) {
            break; // the reader is done (it saw the stalled member leave) or stuck
        }
        let p = json!({"type": "space.publish", "id": format!("p{published}"), "space": "general",
                       "data": {"from": "publisher", "text": text, "timestamp": 1}, "timestamp": 1});
        pub_tx
            .send(Message::Text(p.to_string().into()))
            .await
            .expect("publish");
        published += 1;
    }
    let (mut events, mut reader) = tokio::time::timeout(DEADLINE, reading)
        .await
        .expect("the stalled member is announced as gone within the deadline")
        .expect("the reader ran");
    // The reader, which kept reading, loses nothing: every event published reaches it.
    while events < published {
        if next_json(&mut reader).await["type"] == "space.event" {
            events += 1;
        }
    }
    assert!(
        published < MAX_EVENTS,
        "the stalled member was never cut off"
    );

    // The stalled member now reads: what the socket held, then the Close.
    let close = tokio::time::timeout(DEADLINE, async {
        while let Some(m) = stalled.next().await {
            match m {
                Ok(Message::Close(c)) => return c,
                Ok(_) => {}
                Err(e) => panic!("the connection broke without a Close: {e}"),
            }
        }
        None
    })
    .await
    .expect("the Close within the deadline")
    .expect("a close frame with a code");
    assert_eq!(close.code, CloseCode::from(SLOW_CLOSE_CODE));
    assert_eq!(close.reason.as_str(), slow_close_reason(LIMIT));
}
