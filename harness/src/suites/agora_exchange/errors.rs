//! Error handling (agora-exchange.txt §10): what a case expects of a reply (success, a
//! rejection, a row of a table), malformed JSON and unknown endpoints, and the fuzzer's
//! crash and malformed-input judgements.

use super::replies::{Reply, REPLY_ERROR_CONTENT_TYPE};
use super::wire::{post, post_unreadable, request_routes};
use crate::case::{fail, Bindings, Case, Step};
use crate::drive::Transport;
use crate::finding::{Finding, Verdict};
use crate::fuzzing::spec::FuzzCtx;
use crate::fuzzing::verdict::{self, finding, FuzzStep, Oracle};
use crate::rules::{rules, Rule};
use crate::script::Ctx;
use serde_json::{json, Value};

rules! {
    // missing or non-string error; the union here.
    // members of the response schema the explicit checks above do not judge.
    // `crate::rules::refusal`), its ids AEX-013 and AEX-015.
    MALFORMED_JSON_2XX {
        key: "agora-exchange/malformed-json:2xx",
        requirements: &["AEX-048", "AEX-049"],
        level: None,
        owner: "agora-exchange/malformed-json",
        summary: "a request the server cannot read (malformed JSON, a JSON array) is not answered with a 2xx",
        fails: "malformed JSON or a JSON array drew an HTTP 2xx, whatever its body says (one finding for both)",
        passes: "an HTTP 4xx for each, 400 for malformed JSON",
    }
    MALFORMED_JSON_NOT_OBJECT {
        key: "agora-exchange/malformed-json:not-object",
        requirements: &["AEX-048"],
        level: None,
        owner: "agora-exchange/malformed-json",
        summary: "a JSON request that is not an object draws an HTTP 4xx",
        fails: "a JSON array as the request drew a 5xx or another status that is neither a 4xx nor a 2xx (a 2xx is malformed-json:2xx)",
        passes: "any HTTP 4xx",
    }
    MALFORMED_JSON_STATUS {
        key: "agora-exchange/malformed-json:status",
        requirements: &["AEX-048", "AEX-049"],
        level: None,
        owner: "agora-exchange/malformed-json",
        summary: "malformed JSON draws HTTP 400 Bad Request (agora-exchange.txt section 10.1)",
        fails: "a request body that is not JSON drew another status than 400 that is no 2xx (a 2xx is malformed-json:2xx)",
        passes: "HTTP 400",
    }
}

/// Records a deviation of the case's own subject and notes it (the case goes on).
pub fn own(ctx: &mut Ctx, f: Finding) {
    ctx.note(format!("{}: {}", f.key, f.summary));
    ctx.deviation(f);
}

/// Takes the findings of `rules` the case met as its own subject, and notes what
/// they say (failing ones last, so that the case's message names one).
pub fn claim(ctx: &mut Ctx, rules: &[&Rule]) {
    let mut mine: Vec<Finding> = ctx
        .findings()
        .iter()
        .filter(|m| rules.iter().any(|r| r.key == m.finding.key))
        .map(|m| m.finding.clone())
        .collect();
    mine.sort_by_key(|f| f.outcome == Verdict::Fail);
    for f in mine {
        own(ctx, f);
    }
}

/// HTTP 200 with status success.
pub fn expect_success(r: &Reply, what: &str) -> Step<()> {
    if r.is_success() {
        Ok(())
    } else {
        fail(format!(
            "{what}: expected HTTP 200 with status success, got {}",
            r.describe()
        ))
    }
}

/// A rejection: any HTTP 4xx (the spec names no code for most invalid requests;
/// AEX-A1, A3, A14) or HTTP 200 with status failure. A success or a 5xx fails.
pub fn expect_rejected(ctx: &mut Ctx, r: &Reply, what: &str) -> Step<()> {
    match rejected_row(ctx, r, what)? {
        None => Ok(()),
        Some(_) => fail(format!(
            "{what}: expected an HTTP 4xx or HTTP 200 with status failure, got {}",
            r.describe()
        )),
    }
}

/// Judges one row of a table of bad requests: `None` when the target refused it
/// (a refusal counts only beside an accepted control), else the row as a wrong one
/// names it, with what the target answered.
pub fn rejected_row(ctx: &mut Ctx, r: &Reply, what: &str) -> Step<Option<String>> {
    if r.is_client_error() || r.is_agora_failure() {
        ctx.checked(format!("{what}: rejected ({})", r.describe()));
        ctx.refusal_counts(what)?;
        Ok(None)
    } else {
        Ok(Some(format!("{what}: {}", r.describe())))
    }
}

/// The cases of this area, in the order they run.
pub const CASES: &[Case] = &[
    case!(
        "malformed-json",
        "malformed JSON draws HTTP 400; a JSON request that is not an object draws an HTTP 4xx",
        ["AEX-048", "AEX-049"],
        Must,
        false,
        |ctx| {
            // Every route that takes a request is held to the same (§10.1): one
            // finding per thing the target did, its rows naming the route. Both
            // answered with a 2xx is one deviation (a request it cannot read taken
            // as read), not two.
            let (mut in_2xx, mut not_object, mut status) = (Vec::new(), Vec::new(), Vec::new());
            for (route, path) in request_routes(ctx).await? {
                let array = post_unreadable(ctx, &path, b"[]".to_vec()).await?;
                let syntax = post_unreadable(ctx, &path, b"{not json".to_vec()).await?;
                let is_2xx = |r: &Reply| (200..300).contains(&r.http);
                if !array.is_client_error() && is_2xx(&array) {
                    in_2xx.push(format!(
                        "{route}: a JSON array as the request drew {}",
                        array.describe()
                    ));
                }
                if syntax.http != 400 && is_2xx(&syntax) {
                    in_2xx.push(format!(
                        "{route}: malformed JSON drew {}",
                        syntax.describe()
                    ));
                }
                if !array.is_client_error() && !is_2xx(&array) {
                    not_object.push(format!(
                        "{route}: a JSON array as the request drew {}",
                        array.describe()
                    ));
                } else if array.is_client_error() && array.http != 400 {
                    ctx.note(format!("{route}: a JSON array as the request drew HTTP {} (any 4xx is accepted: the spec names no code for it)", array.http));
                }
                if syntax.http != 400 && !is_2xx(&syntax) {
                    status.push(format!(
                        "{route}: malformed JSON drew {}",
                        syntax.describe()
                    ));
                }
            }
            if !in_2xx.is_empty() {
                own(ctx, MALFORMED_JSON_2XX.found(format!("{}: a request the server cannot read was answered with a 2xx, not an HTTP 4xx (400 for malformed JSON, agora-exchange.txt §10.1)", in_2xx.join("; "))));
            }
            if !not_object.is_empty() {
                own(
                    ctx,
                    MALFORMED_JSON_NOT_OBJECT
                        .found(format!("{}, not an HTTP 4xx", not_object.join("; "))),
                );
            }
            if !status.is_empty() {
                own(
                    ctx,
                    MALFORMED_JSON_STATUS.found(format!(
                        "{}; agora-exchange.txt §10.1 names 400 Bad Request for it",
                        status.join("; ")
                    )),
                );
            }
            claim(ctx, &[&REPLY_ERROR_CONTENT_TYPE]);
            Ok(())
        }
    ),
    case!(
        "unknown-endpoint",
        "a POST to an unknown endpoint draws HTTP 404",
        ["AEX-050"],
        Fact,
        false,
        |ctx| {
            let r = post(
                ctx,
                "h-no-such-endpoint",
                &json!({"protocolHash": null, "body": "ping"}),
            )
            .await?;
            if r.http != 404 {
                return fail(format!("an unknown endpoint drew {}", r.describe()));
            }
            Ok(())
        }
    ),
];

// ---------------------------------------------------------------------------
// Fuzzing

/// Never a 5xx.
pub(super) fn no_server_error(r: &Reply) -> FuzzStep<()> {
    if r.http >= 500 {
        return finding(
            Oracle::ServerError,
            format!("the target answered {}", r.describe()),
        );
    }
    Ok(())
}

/// POSTs bytes the target cannot read as a request (no JSON, or JSON that is not an
/// object) as `run`'s malformed-json case does (`post_unreadable`: the reply
/// judged by its status alone) and judges it as that case does ([`malformed_json`]).
pub(super) async fn post_unreadable_judged(
    f: &mut FuzzCtx,
    path: &str,
    bytes: Vec<u8>,
    (what, status_too): (&str, bool),
) -> FuzzStep<()> {
    let from = f.ctx.findings().len();
    let syntax = serde_json::from_slice::<Value>(&bytes).is_err();
    let r = post_unreadable(&mut f.ctx, path, bytes).await?;
    malformed_json(&r, what, (syntax, status_too))?;
    verdict::rules_since(&f.ctx, from)
}

/// The reply to `what`, a request the target cannot read: never a 2xx (AEX-048,
/// the rule `malformed-json:2xx`); malformed JSON (`syntax`) draws HTTP 400
/// (§10.1, AEX-049; judged where `status_too`, and a 5xx always:
/// `malformed-json:status`); JSON that is not an object draws a 4xx
/// (`malformed-json:not-object`).
fn malformed_json(r: &Reply, what: &str, (syntax, status_too): (bool, bool)) -> FuzzStep<()> {
    if !syntax {
        if (200..300).contains(&r.http) || r.is_client_error() {
            return malformed_2xx(r, what);
        }
        let found = finding(
            Oracle::Verdict,
            format!("{what} drew {}, not an HTTP 4xx", r.describe()),
        );
        return verdict::under(Some(MALFORMED_JSON_NOT_OBJECT.key), found);
    }
    if (200..300).contains(&r.http) {
        return malformed_2xx(r, what);
    }
    let found = if r.http >= 500 || (status_too && r.is_client_error() && r.http != 400) {
        finding(
            Oracle::Verdict,
            format!("{what} drew {}, not HTTP 400 (AEX-049)", r.describe()),
        )
    } else {
        Ok(())
    };
    verdict::under(Some(MALFORMED_JSON_STATUS.key), found)
}

/// A request the target cannot read, answered with a 2xx (`malformed-json:2xx`);
/// a 4xx passes.
fn malformed_2xx(r: &Reply, what: &str) -> FuzzStep<()> {
    if !(200..300).contains(&r.http) {
        return Ok(());
    }
    let found = finding(
        Oracle::Verdict,
        format!(
            "{what} was answered with a 2xx, not an HTTP 4xx (AEX-048): {}",
            r.describe()
        ),
    );
    verdict::under(Some(MALFORMED_JSON_2XX.key), found)
}
