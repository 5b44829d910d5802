//! The well-known endpoint (agora-exchange.txt §9): the cases that check /wellknown
//! (read by `documents::wellknown`) and accept every protocol it lists, and the
//! fuzzer's read-back.

use super::documents::{
    check_profile_hash, document_findings, fixture, listed_unsupported, refuses_as_unsupported,
    wellknown, PROTOCOL_HASH_FORM, WELLKNOWN_SOURCES,
};
use super::errors::{claim, own};
use super::wire::post;
use crate::case::{skip, Bindings, Case};
use crate::drive::Transport;
use crate::fuzzing::spec::FuzzCtx;
use crate::fuzzing::verdict::{self, FuzzStep};
use serde_json::json;

/// The cases of this area, in the order they run.
pub const CASES: &[Case] = &[
    case!("wellknown", "/wellknown maps 40-hex SHA1 keys of whole documents to their sources, with well-formed metadata",
        ["AEX-036", "AEX-037", "AEX-038", "AEX-039", "AEX-043", "AEX-044", "AEX-045"], Must, false, |ctx| {
        check_profile_hash(ctx);
        let mine = [&PROTOCOL_HASH_FORM, &WELLKNOWN_SOURCES];
        let Some(map) = wellknown(ctx).await? else {
            claim(ctx, &mine);
            ctx.warn("no /wellknown endpoint (RECOMMENDED, AEX-044)");
            return Ok(());
        };
        for f in document_findings(ctx, &map) {
            own(ctx, f);
        }
        if map.is_empty() {
            ctx.note("/wellknown lists no protocol");
        }
        claim(ctx, &mine);
        Ok(())
    }),
    case!("wellknown-hashes-supported", "every protocol listed in /wellknown is accepted without protocolSources", ["AEX-016", "AEX-046"], Fact, false, |ctx| {
        let Some(map) = wellknown(ctx).await? else {
            return skip("the target has no /wellknown");
        };
        let fx = fixture(ctx).await?;
        for key in map.keys() {
            let body = if *key == fx.hash { fx.valid_body.clone() } else { json!("hello") };
            let r = post(ctx, "", &json!({"protocolHash": key, "body": body})).await?;
            if refuses_as_unsupported(&r) {
                own(ctx, listed_unsupported(key, &r));
            } else if r.http != 200 {
                // Not a refusal of the protocol: the body may break that protocol,
                // whose rules the harness does not know (AEX-A18).
                ctx.note(format!("{key} drew {}; not judged here", r.describe()));
            }
        }
        Ok(())
    }),
];

// ---------------------------------------------------------------------------
// Fuzzing

pub(super) async fn check_wellknown(f: &mut FuzzCtx) -> FuzzStep<()> {
    // A fixed request, not a fuzzed input: its deviation is filed against it.
    let Some(map) = wellknown(&mut f.ctx).await? else {
        return Ok(());
    };
    // Judged by the rules of the wellknown case (`document_findings`).
    let found = document_findings(&mut f.ctx, &map);
    verdict::first_failing(found)
}
