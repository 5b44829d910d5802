//! The HTTP driver against targets that misbehave in scripted ways (wiremock on
//! loopback): a reply larger than the cap, a body that never comes, a redirect, a
//! success with the wrong content type, a kept-alive connection closed before the
//! reply (raw TCP on loopback). Every wait ends by its deadline and every read
//! by its cap; nothing is followed or believed that the target did not say.

use agentconform::drive::http::{client, request};
use agentconform::drive::{DriveError, Limits};
use agentconform::schemas::Schemas;
use agentconform::suites::agora_exchange::replies::judge;
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

/// Reads one request (head and `content-length` body) from `s`; false at end of stream.
async fn read_request(s: &mut tokio::net::TcpStream) -> bool {
    use tokio::io::AsyncReadExt;
    let mut buf = Vec::new();
    let mut byte = [0u8; 1];
    while !buf.ends_with(b"\r\n\r\n") {
        match s.read(&mut byte).await {
            Ok(1) => buf.push(byte[0]),
            _ => return false,
        }
    }
    let head = String::from_utf8_lossy(&buf).to_ascii_lowercase();
    let len = head
        .lines()
        .find_map(|l| l.strip_prefix("content-length:"))
        .and_then(|v| v.trim().parse::<usize>().ok())
        .unwrap_or(0);
    let mut body = vec![0u8; len];
    s.read_exact(&mut body).await.is_ok()
}

const OK: &[u8] =
    b"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: 2\r\n\r\n{}";

/// A raw TCP listener on loopback and its URL.
async fn raw_target() -> (tokio::net::TcpListener, String) {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind");
    let url = format!("http://{}/", listener.local_addr().expect("addr"));
    (listener, url)
}

/// POSTs `{}` to `url` with `http` (10 s deadline, 4 KiB cap).
async fn post_empty(
    http: &reqwest::Client,
    url: &str,
) -> Result<agentconform::drive::http::HttpReply, DriveError> {
    let limits = Limits {
        timeout: Duration::from_secs(10),
        max_bytes: 4096,
    };
    request(
        http,
        reqwest::Method::POST,
        url,
        &[],
        Some(b"{}".to_vec()),
        limits,
    )
    .await
}

/// A kept-alive connection that the target closes as the next request goes out on
/// it (here: it reads that request and closes without a word) is not the case's
/// failure: the request goes out once more, on another connection, and the reply
/// says so.
#[tokio::test]
async fn a_kept_alive_connection_closed_before_the_reply_is_retried_once() {
    use tokio::io::AsyncWriteExt;
    let (listener, url) = raw_target().await;
    let target = tokio::spawn(async move {
        // First connection: answers one request, then reads the next and closes.
        let (mut s, _) = listener.accept().await.expect("accept");
        assert!(read_request(&mut s).await);
        s.write_all(OK).await.expect("write");
        assert!(read_request(&mut s).await);
        drop(s);
        // Second connection: answers.
        let (mut s, _) = listener.accept().await.expect("accept");
        assert!(read_request(&mut s).await);
        s.write_all(OK).await.expect("write");
        s.flush().await.expect("flush");
        // Hold the connection until the client is done with it.
        let _ = read_request(&mut s).await;
    });
    let http = client().expect("client");
    let first = post_empty(&http, &url).await.expect("first request");
    assert_eq!((first.status, first.retried.as_deref()), (200, None));
    let second = post_empty(&http, &url)
        .await
        .expect("second request, sent again");
    assert_eq!(second.status, 200);
    let why = second.retried.expect("the reply says it was sent again");
    assert!(
        why.contains("connection closed before message completed"),
        "{why}"
    );
    drop(http);
    target.await.expect("target");
}

/// A target that closes every connection without a reply is reported, once sent
/// again, with both attempts' errors: the retry hides nothing.
#[tokio::test]
async fn a_target_that_never_replies_is_reported_after_one_retry() {
    let (listener, url) = raw_target().await;
    let target = tokio::spawn(async move {
        let mut accepted = 0;
        // Two attempts, each on its own connection; each is read and dropped.
        while accepted < 2 {
            let (mut s, _) = listener.accept().await.expect("accept");
            accepted += 1;
            let _ = read_request(&mut s).await;
        }
        accepted
    });
    let http = client().expect("client");
    let r = post_empty(&http, &url).await;
    match r {
        Err(DriveError::Io(m)) => {
            assert!(m.contains("sent again, on another connection"), "{m}");
            assert_eq!(
                m.matches("connection closed before message completed")
                    .count(),
                2,
                "{m}"
            );
        }
        other => panic!("expected a transport failure, got {other:?}"),
    }
    assert_eq!(target.await.expect("target"), 2);
}
