//! The HTTP driver against targets that misbehave in scripted ways (wiremock on
//! loopback): a reply larger than the cap, a body that never comes, a redirect, a
//! success with the wrong content type. Every wait ends by its deadline and every read
//! by its cap; nothing is followed or believed that the target did not say.

use agentconform::drive::http::{client, request};
use agentconform::drive::{DriveError, Limits};
use agentconform::expect::agora_exchange::judge;
use agentconform::schemas::Schemas;
use std::time::{Duration, Instant};
use wiremock::matchers::{method, path};
use wiremock::{Mock, MockServer, ResponseTemplate};

/// POSTs `body` to the mock server's root under a deadline and a cap.
async fn post(
    server: &MockServer,
    body: &[u8],
    timeout_ms: u64,
    max_bytes: usize,
) -> Result<agentconform::drive::http::HttpReply, DriveError> {
    let http = client().expect("client");
    let limits = Limits {
        timeout: Duration::from_millis(timeout_ms),
        max_bytes,
    };
    request(
        &http,
        reqwest::Method::POST,
        &server.uri(),
        &[],
        Some(body.to_vec()),
        limits,
    )
    .await
}

#[tokio::test]
async fn a_reply_over_the_cap_is_refused() {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .respond_with(ResponseTemplate::new(200).set_body_string("x".repeat(200_000)))
        .mount(&server)
        .await;
    let r = post(&server, b"{}", 5000, 4096).await;
    assert!(matches!(r, Err(DriveError::TooLarge(4096))), "{r:?}");
}

#[tokio::test]
async fn a_slow_body_ends_at_the_deadline() {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .respond_with(ResponseTemplate::new(200).set_delay(Duration::from_secs(5)))
        .mount(&server)
        .await;
    let started = Instant::now();
    let r = post(&server, b"{}", 200, 1 << 20).await;
    assert!(matches!(r, Err(DriveError::Timeout(200))), "{r:?}");
    assert!(
        started.elapsed() < Duration::from_secs(4),
        "waited {:?}",
        started.elapsed()
    );
}

#[tokio::test]
async fn a_redirect_is_reported_not_followed() {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .and(path("/"))
        .respond_with(ResponseTemplate::new(307).insert_header("location", "/elsewhere"))
        .mount(&server)
        .await;
    Mock::given(path("/elsewhere"))
        .respond_with(
            ResponseTemplate::new(200).set_body_string("{\"status\":\"success\",\"body\":1}"),
        )
        .expect(0)
        .mount(&server)
        .await;
    let r = post(&server, b"{}", 5000, 1 << 20).await.expect("a reply");
    assert_eq!(r.status, 307);
    server.verify().await;
}

#[tokio::test]
async fn a_success_with_the_wrong_content_type_is_judged_so() {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .respond_with(
            ResponseTemplate::new(200)
                .set_body_raw("{\"status\":\"success\",\"body\":\"pong\"}", "text/plain"),
        )
        .mount(&server)
        .await;
    let r = post(&server, b"{\"body\":\"ping\"}", 5000, 1 << 20)
        .await
        .expect("a reply");
    assert_eq!(r.content_type.as_deref(), Some("text/plain"));
    let schemas = Schemas::load().expect("schemas");
    let verdict = judge(&schemas, &r);
    let err = verdict.expect_err("HTTP 200 without application/json fails (AEX-004)");
    assert!(
        err.contains("content-type") || err.contains("Content-Type"),
        "{err}"
    );
}
