//! The envelope (agora-v1.md §1): ids, timestamps and the replay window, the protocol,
//! type and payload members; their cases, and the fuzzer's stale messages.

use super::errors::{
    expect_baseline, expect_processed, expect_rejection, expect_reply, CodeRule, ANY_CODE,
};
use super::lifecycle::complete_request;
use super::messages::{signed_at, Template, ToSend};
use super::wire::{
    is_uuid_v4, message, message_at, now, request_payload, request_with, send, send_as_is,
    sign_with, wire, ANY,
};
use crate::case::{fail, Case};
use crate::fuzzing::spec::FuzzCtx;
use crate::fuzzing::verdict::{Expected, FuzzStep, Oracle};
use crate::rules::rules;
use crate::script::Ctx;
use reference_impl::agora_v1::envelope::SigVariant;
use serde_json::{json, Value};

rules! {
    REJECT_UNKNOWN_TYPE {
        key: "agora-v1/reject-unknown-type",
        requirements: &["AV1-009"],
        level: None,
        owner: "agora-v1/reject-unknown-type",
        summary: "types PING and request (lower case) are not processed",
        fails: "one or both were processed (each named, with the answer)",
        passes: "an ERROR, a refusing status or silence from a live target for each",
    }
}

/// A REQUEST for the profile's direct resource stamped `secs` seconds ago.
fn direct_request_aged(ctx: &Ctx, secs: i64) -> Value {
    let resource = &ctx.profile().agora_v1.direct_resource;
    let at = now() - time::Duration::seconds(secs);
    message_at(ctx, "REQUEST", request_payload(resource, json!({})), at)
}

/// The cases of this area, in the order they run.
pub const CASES: &[Case] = &[
    case!(
        "ids-uuid-v4",
        "reply ids are UUID v4",
        ["AV1-005"],
        Should,
        ANY,
        false,
        |ctx| {
            let (_, result) = complete_request(ctx, json!({})).await?;
            if !is_uuid_v4(&result.id) {
                return fail(format!("reply id {:?} is not a UUID v4", result.id));
            }
            Ok(())
        }
    ),
    case!(
        "ids-unique",
        "ids of 20 target messages are distinct and never reuse the harness's",
        ["AV1-004"],
        Fact,
        ANY,
        false,
        |ctx| {
            // check_reply rejects any reuse within the case; 20 messages over several tasks.
            for i in 0..10 {
                complete_request(ctx, json!({"i": i})).await?;
                let hello = message(ctx, "HELLO", json!({}));
                let r = send(ctx, hello).await?;
                expect_reply(ctx, &r)?;
            }
            ctx.checked(format!("{} distinct reply ids", ctx.reply_ids.len()));
            Ok(())
        }
    ),
    case!(
        "reply-timestamp-fresh",
        "reply timestamps are RFC 3339 UTC within the replay window of the harness clock",
        ["AV1-006"],
        Fact,
        ANY,
        false,
        |ctx| {
            let (_, result) = complete_request(ctx, json!({})).await?;
            ctx.checked(format!("timestamp {}", result.whole["timestamp"]));
            Ok(())
        }
    ),
    case!(
        "reject-missing-payload",
        "a REQUEST without payload is not processed",
        ["AV1-002"],
        Fact,
        ANY,
        false,
        |ctx| {
            let mut req = request_with(ctx, |_| {});
            if let Some(o) = req.as_object_mut() {
                o.remove("payload");
            }
            let r = send(ctx, req).await?;
            expect_rejection(
                ctx,
                &r,
                &[400],
                CodeRule::Lenient,
                "REQUEST without payload",
            )
            .await
        }
    ),
    case!(
        "reject-wrong-protocol",
        "a REQUEST with protocol agora/2.0 is not processed",
        ["AV1-003"],
        Fact,
        ANY,
        false,
        |ctx| {
            let mut req = request_with(ctx, |_| {});
            req["protocol"] = json!("agora/2.0");
            let r = send(ctx, req).await?;
            expect_rejection(ctx, &r, &[400], CodeRule::Lenient, "protocol \"agora/2.0\"").await
        }
    ),
    case!(
        "reject-unknown-type",
        "types PING and request (lower case) are not processed",
        ["AV1-009"],
        Fact,
        ANY,
        false,
        |ctx| {
            let mut wrong = Vec::new();
            for ty in ["PING", "request"] {
                let mut req = request_with(ctx, |_| {});
                req["type"] = json!(ty);
                let r = send(ctx, req).await?;
                let judged =
                    expect_rejection(ctx, &r, &[400], CodeRule::Lenient, &format!("type {ty:?}"))
                        .await;
                wrong.extend(ctx.row(judged)?);
            }
            ctx.rows_wrong(
                &REJECT_UNKNOWN_TYPE,
                "unknown types were not refused",
                &wrong,
            );
            Ok(())
        }
    ),
    case!(
        "reject-payload-array",
        "a REQUEST whose payload is an array draws ERROR 400",
        ["AV1-015"],
        Fact,
        ANY,
        false,
        |ctx| {
            let mut req = request_with(ctx, |_| {});
            req["payload"] = json!(["agora:echo:v1"]);
            let r = send(ctx, req).await?;
            expect_rejection(ctx, &r, &[400], CodeRule::Strict, "payload as an array").await
        }
    ),
    case!(
        "reject-stale-timestamp",
        "a correctly signed REQUEST stamped 120 s ago is not processed",
        ["AV1-007"],
        Must,
        ANY,
        false,
        |ctx| {
            let req = direct_request_aged(ctx, 120);
            let r = send(ctx, req).await?;
            expect_rejection(
                ctx,
                &r,
                &[401, 400],
                CodeRule::Lenient,
                "REQUEST stamped now−120 s",
            )
            .await
        }
    ),
    case!(
        "accept-recent-timestamp",
        "a REQUEST stamped 30 s ago is processed normally",
        ["AV1-008"],
        Fact,
        ANY,
        false,
        |ctx| {
            let req = direct_request_aged(ctx, 30);
            let r = send(ctx, req).await?;
            expect_processed(ctx, &r, &["RESULT", "OFFER"])
                .await
                .map(|_| ())
        }
    ),
    case!(
        "reject-replayed-id",
        "the same signed REQUEST sent twice inside the window is processed once",
        ["AV1-007"],
        Profile,
        ANY,
        false,
        |ctx| {
            let mut req = request_with(ctx, |_| {});
            sign_with(&mut req, &ctx.shared.key, SigVariant::Blank)?;
            let r = send_as_is(ctx, &req).await?;
            expect_baseline(
                ctx,
                &r,
                &["RESULT", "OFFER"],
                "a valid REQUEST for the direct resource",
            )?;
            let r = send_as_is(ctx, &req).await?;
            expect_rejection(
                ctx,
                &r,
                &[401, 400],
                CodeRule::Lenient,
                "replayed message id",
            )
            .await
        }
    ),
];

// ---------------------------------------------------------------------------
// Fuzzing

/// A message stamped outside the replay window: never processed (AV1-006).
pub(super) fn stale(f: &mut FuzzCtx, t: Template, extra: u16, future: bool) -> FuzzStep<ToSend> {
    let window = i64::try_from(f.ctx.profile().timing.replay_window_s).unwrap_or(60);
    let secs = window + 5 + i64::from(extra % 3600);
    let shift = time::Duration::seconds(if future { secs } else { -secs });
    let m = signed_at(f, t, now() + shift)?;
    Ok((
        wire(&m),
        Expected::Reject(ANY_CODE),
        (Oracle::Verdict, Oracle::Freshness),
    ))
}
