//! The reports a person or a CI reads, judged by the tools that read them: junit.xml
//! against the Jenkins xUnit schema with xmllint, report.html in headless Chromium
//! (through chromedriver: a filter is clicked and the counts are read from the page),
//! and summary.md. Needs Debian's libxml2-utils, chromium and chromium-driver, which
//! .ci/run installs; without them these tests fail and say what to install.

mod common;

use agentconform::report::Report;
use agentconform::runner::Selection;
use agentconform::suites;
use common::*;
use libtest_mimic::{Arguments, Failed, Trial};
use serde_json::{json, Value};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// A report with deviations, failing, blocked and passing cases: agora-v1 against a
/// reference agent whose replies carry the wrong protocol tag and are unsigned.
fn sample_report(name: &str) -> Result<(PathBuf, Report), Failed> {
    let out = rt().block_on(run_against(
        &suites::agora_v1::SUITE,
        &["wrong-protocol-tag", "reuse-request-id"],
        &Selection {
            exclude: vec!["agora-v1/rate-limit-burst".into()],
            ..Selection::default()
        },
    ));
    let mut report = Report::new(
        "http://127.0.0.1:1/ <b>&amp;</b>",
        vec!["agora-v1".into()],
        "2026-01-01T00:00:00Z".into(),
        out,
    );
    report.set_reproducers(&["--target".into(), "http://127.0.0.1:1/".into()]);
    let dir = std::env::temp_dir().join(format!(
        "agentconform-reports-{name}-{}",
        std::process::id()
    ));
    let _ = std::fs::remove_dir_all(&dir);
    report.write(&dir)?;
    Ok((dir, report))
}

fn junit_validates() -> Result<(), Failed> {
    let (dir, report) = sample_report("junit")?;
    let xsd = Path::new(env!("CARGO_MANIFEST_DIR")).join("../vectors/junit/junit-10.xsd");
    if !xsd.exists() {
        return Err(format!("{} is missing", xsd.display()).into());
    }
    let out = Command::new("xmllint")
        .args(["--noout", "--schema"])
        .arg(&xsd)
        .arg(dir.join("junit.xml"))
        .output()
        .map_err(|e| format!("cannot run xmllint ({e}): install Debian's libxml2-utils"))?;
    if !out.status.success() {
        return Err(format!(
            "junit.xml does not validate:\n{}",
            String::from_utf8_lossy(&out.stderr)
        )
        .into());
    }
    let xml = std::fs::read_to_string(dir.join("junit.xml")).map_err(|e| e.to_string())?;
    // One test case per case and binding; failures carry the deviation.
    if xml.matches("<testcase ").count() != report.cases.len() {
        return Err("junit.xml has not one test case per case".into());
    }
    let failing = report
        .findings
        .iter()
        .find(|f| f.finding.outcome == agentconform::finding::Verdict::Fail)
        .ok_or("the sample has no failing finding")?;
    if !xml.contains(failing.finding.key.as_str()) {
        return Err(format!("no failure names {}", failing.finding.key).into());
    }
    let _ = std::fs::remove_dir_all(&dir);
    Ok(())
}

fn summary_is_capped_and_has_reproducers() -> Result<(), Failed> {
    let (dir, report) = sample_report("summary")?;
    let md = std::fs::read_to_string(dir.join("summary.md")).map_err(|e| e.to_string())?;
    for f in &report.findings {
        if !md.contains(f.finding.key.as_str()) {
            return Err(format!("summary.md lacks {}", f.finding.key).into());
        }
    }
    if !md.contains("rerun: `agentconform run --suite agora-v1 --target") {
        return Err(format!("summary.md has no reproducer:\n{md}").into());
    }
    if md.lines().count() > 200 {
        return Err("summary.md is longer than 200 lines".into());
    }
    let _ = std::fs::remove_dir_all(&dir);
    Ok(())
}

/// chromedriver on a free loopback port; killed when dropped.
struct Driver {
    child: Child,
    base: String,
}

impl Drop for Driver {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn free_port() -> Result<u16, Failed> {
    let l = std::net::TcpListener::bind("127.0.0.1:0").map_err(|e| e.to_string())?;
    Ok(l.local_addr().map_err(|e| e.to_string())?.port())
}

async fn wd(
    http: &reqwest::Client,
    method: reqwest::Method,
    url: &str,
    body: Value,
) -> Result<Value, Failed> {
    let mut req = http.request(method, url).timeout(Duration::from_secs(30));
    if !body.is_null() {
        req = req
            .header("content-type", "application/json")
            .body(body.to_string());
    }
    let r = req.send().await.map_err(|e| format!("{url}: {e}"))?;
    let bytes = r.bytes().await.map_err(|e| format!("{url}: {e}"))?;
    let v: Value = serde_json::from_slice(&bytes).map_err(|e| format!("{url}: {e}"))?;
    if v["value"]["error"].is_string() {
        return Err(format!("{url}: {}", v["value"]).into());
    }
    Ok(v["value"].clone())
}

/// The WebDriver handle of the element with id `id`.
async fn element(http: &reqwest::Client, session: &str, id: &str) -> Result<String, Failed> {
    let el = wd(
        http,
        reqwest::Method::POST,
        &format!("{session}/element"),
        json!({"using": "css selector", "value": format!("#{id}")}),
    )
    .await?;
    Ok(el
        .as_object()
        .and_then(|o| o.values().next())
        .and_then(Value::as_str)
        .ok_or("no element handle")?
        .to_string())
}

async fn text_of(http: &reqwest::Client, session: &str, id: &str) -> Result<String, Failed> {
    let handle = element(http, session, id).await?;
    let t = wd(
        http,
        reqwest::Method::GET,
        &format!("{session}/element/{handle}/text"),
        Value::Null,
    )
    .await?;
    Ok(t.as_str().unwrap_or_default().to_string())
}

async fn click(http: &reqwest::Client, session: &str, id: &str) -> Result<(), Failed> {
    let handle = element(http, session, id).await?;
    wd(
        http,
        reqwest::Method::POST,
        &format!("{session}/element/{handle}/click"),
        json!({}),
    )
    .await?;
    Ok(())
}

fn html_filters_in_chromium() -> Result<(), Failed> {
    let (dir, report) = sample_report("html")?;
    let html = std::fs::read_to_string(dir.join("report.html")).map_err(|e| e.to_string())?;
    if html.contains("<script src") || html.contains("<link ") || html.contains("@import") {
        return Err("report.html loads something from outside".into());
    }
    let port = free_port()?;
    let child = Command::new("chromedriver")
        .arg(format!("--port={port}"))
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .map_err(|e| {
            format!(
                "cannot start chromedriver ({e}): install Debian's chromium and chromium-driver"
            )
        })?;
    let driver = Driver {
        child,
        base: format!("http://127.0.0.1:{port}"),
    };
    let passed = report.summary.passed;
    let total = report.cases.len();
    let page = format!("file://{}", dir.join("report.html").display());
    let shot = Path::new(env!("CARGO_TARGET_TMPDIR")).join("report-html.png");
    let result: Result<(), Failed> = rt().block_on(async {
        let http = reference_impl::wire::http::builder()
            .no_proxy()
            .build()
            .map_err(|e| e.to_string())?;
        let deadline = Instant::now() + Duration::from_secs(20);
        loop {
            let up = http
                .get(format!("{}/status", driver.base))
                .send()
                .await
                .is_ok();
            if up {
                break;
            }
            if Instant::now() > deadline {
                return Err("chromedriver did not start within 20 s".into());
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        let caps = json!({"capabilities": {"alwaysMatch": {"goog:chromeOptions": {
            "args": ["--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--window-size=1400,1000"]}}}});
        let s = wd(&http, reqwest::Method::POST, &format!("{}/session", driver.base), caps).await?;
        let id = s["sessionId"].as_str().ok_or("no session id")?.to_string();
        let session = format!("{}/session/{id}", driver.base);
        wd(&http, reqwest::Method::POST, &format!("{session}/url"), json!({"url": page})).await?;
        let all = text_of(&http, &session, "shown-cases").await?;
        if all != total.to_string() {
            return Err(format!("the page shows {all} cases, the report has {total}").into());
        }
        let deviations = text_of(&http, &session, "total-findings").await?;
        if deviations != report.findings.len().to_string() {
            return Err(format!("the page shows {deviations} deviations, the report has {}", report.findings.len()).into());
        }
        click(&http, &session, "filter-pass").await?;
        let shown = text_of(&http, &session, "shown-cases").await?;
        if shown != (total - passed).to_string() {
            return Err(format!("after hiding passes the page shows {shown} cases, want {}", total - passed).into());
        }
        if let Ok(png) = wd(&http, reqwest::Method::GET, &format!("{session}/screenshot"), Value::Null).await {
            if let Some(b64) = png.as_str() {
                use base64::Engine;
                if let Ok(bytes) = base64::engine::general_purpose::STANDARD.decode(b64) {
                    let _ = std::fs::write(&shot, bytes);
                }
            }
        }
        let _ = http.delete(&session).send().await;
        Ok(())
    });
    drop(driver);
    let _ = std::fs::remove_dir_all(&dir);
    result
}

/// report.html read without its script: every case is a row, every deviation is
/// there, the totals are written, and the target's text is escaped.
fn html_rows_without_scripts() -> Result<(), Failed> {
    let (dir, report) = sample_report("html-plain")?;
    let html = std::fs::read_to_string(dir.join("report.html")).map_err(|e| e.to_string())?;
    let _ = std::fs::remove_dir_all(&dir);
    // The page with its one script cut out, as a reader without JavaScript sees it.
    let plain = match (html.find("<script>"), html.find("</script>")) {
        (Some(a), Some(b)) if a < b => format!("{}{}", &html[..a], &html[b + "</script>".len()..]),
        _ => return Err("report.html has no script to cut out".into()),
    };
    let rows = plain.matches("<tr class=\"case-row\"").count();
    if rows != report.cases.len() || report.cases.is_empty() {
        return Err(format!("{rows} case rows for {} cases", report.cases.len()).into());
    }
    for c in &report.cases {
        if !plain.contains(&format!("<summary>{} [", c.id)) {
            return Err(format!("no row for {}", c.id).into());
        }
    }
    for f in &report.findings {
        if !plain.contains(&format!("<code>{}</code>", f.finding.key)) {
            return Err(format!("no deviation {}", f.finding.key).into());
        }
    }
    let total = format!("<span id=\"total-cases\">{}</span>", report.cases.len());
    if !plain.contains(&total)
        || !plain.contains("target http://127.0.0.1:1/ &lt;b&gt;&amp;amp;&lt;/b&gt;")
    {
        return Err("the totals or the escaped target are not written".into());
    }
    Ok(())
}

fn main() {
    let args = Arguments::from_args();
    let no_xmllint = common::skip_without(
        "junit_validates_against_the_jenkins_schema",
        "xmllint",
        common::runs("xmllint"),
        "Debian: apt-get install libxml2-utils",
    );
    let no_chrome = common::skip_without(
        "html_filters_in_chromium",
        "chromedriver and chromium",
        common::runs("chromedriver"),
        "Debian: apt-get install chromium chromium-driver",
    );
    let trials = vec![
        Trial::test(
            "junit_validates_against_the_jenkins_schema",
            junit_validates,
        )
        .with_ignored_flag(no_xmllint),
        Trial::test(
            "summary_is_capped_and_has_reproducers",
            summary_is_capped_and_has_reproducers,
        ),
        Trial::test("html_rows_without_scripts", html_rows_without_scripts),
        Trial::test("html_filters_in_chromium", html_filters_in_chromium)
            .with_ignored_flag(no_chrome),
    ];
    libtest_mimic::run(&args, trials).exit();
}
