//! Credit transfers (chorus.md §3.5): the transfer a case sends, the reply checks, the
//! cases, and the fuzzer's transfer sequences over a ledger model of two fresh owners.

use super::errors::{
    coded_case, expect_code, extras, is_rejection, judge, rejected_row, Model, Subject,
};
use super::wire::{
    credits_of, credits_value, encode, floor_cents, id_class, id_value, now_utc, numeric_string,
    oracle_for, post, post_bytes, remove, same_id, set, setup, timestamp_class, timestamp_value,
    two_decimals, unreadable_bodies, Base, Class, Credits, IdForm, Parsed, Resp, TsForm, Wire,
};
use crate::case::{fail, skip, Bindings, Case, Level, Step, Stop};
use crate::drive::Transport;
use crate::finding::Finding;
use crate::fuzzing::mutate::{respell, Val, WireForm};
use crate::fuzzing::spec::FuzzCtx;
use crate::fuzzing::verdict::{self, Expected, FuzzStep, Oracle};
use crate::profile::SetupEvent;
use crate::rules::rules;
use crate::script::Ctx;
use arbitrary::Arbitrary;
use reference_impl::wire::{is_uuid, new_id};
use serde_json::{json, Value};
use std::collections::HashMap;

rules! {
    TRANSFER_AMOUNT_POSITIVE_TAKEN {
        key: "chorus/transfer-amount-positive:taken",
        requirements: &["CHO-047"],
        level: None,
        owner: "chorus/transfer-amount-positive",
        summary: "a transfer of 0 or of a negative amount is refused (derived: a transfer moves credits from from_owner to to_owner)",
        fails: "a transfer of 0 or -10 credits taken; one finding for both",
        passes: "each refused, with a 4xx or TRANSFER_FAILED",
    }
    TRANSFER_REFUSED {
        key: "chorus/transfer:refused",
        requirements: &["CHO-038", "CHO-039"],
        level: None,
        owner: "chorus/transfer",
        summary: "a complete transfer within a fresh owner's credits is taken",
        fails: "POST /transfer with a complete transfer is refused otherwise than with TRANSFER_FAILED; the case is blocked",
        passes: "a 2xx that does not refuse it",
    }
    PROFILE_LEDGER_URL {
        key: "chorus/profile:ledger_url",
        requirements: &[],
        level: Some(Level::Profile),
        owner: "chorus/transfer",
        summary: "transfers go to the ledger's base URL ([target] ledger_url, else the target's)",
        fails: "never fails: POST /transfer answered HTTP 404 or 405 there, so no ledger is at that URL; the transfer cases are blocked until [target] ledger_url is set",
        passes: "the transfer taken",
        setting: Some("[target] ledger_url"),
    }
    PROFILE_INITIAL_CREDITS {
        key: "chorus/profile:initial_credits",
        requirements: &[],
        level: Some(Level::Profile),
        owner: "chorus/transfer",
        summary: "fresh owners hold the profile's [chorus] initial_credits",
        fails: "a transfer within initial_credits from a fresh owner is refused with TRANSFER_FAILED: add owner setup requests that fund accounts, or set initial_credits",
        passes: "the transfer taken",
        setting: Some("[chorus] initial_credits"),
    }
    TRANSFER_IDEMPOTENT {
        key: "chorus/transfer-idempotent",
        requirements: &[],
        level: Some(Level::Profile),
        owner: "chorus/transfer-idempotent",
        summary: "a repeated transfer_id moves credits once, where the profile declares idempotent transfers ([chorus] idempotent_transfers, CHO-A14)",
        fails: "a transfer repeated with its transfer_id applied twice while the profile says the ledger is idempotent: set idempotent_transfers = false if it does not promise it",
        passes: "the repeat moves nothing",
    }
    TRANSFER_IDEMPOTENT_RECORDED {
        key: "chorus/transfer-idempotent:recorded",
        requirements: &["CHO-A14"],
        level: Some(Level::Info),
        owner: "chorus/transfer-idempotent",
        summary: "what a ledger the profile does not call idempotent does with a repeated transfer_id, recorded",
        fails: "never fails: a repeated transfer_id applied twice, recorded ([chorus] idempotent_transfers = false)",
        passes: "the repeat moves nothing",
    }
    TRANSFER_ID_NOT_KEPT {
        key: "chorus/transfer:id-not-kept",
        requirements: &["CHO-039"],
        level: None,
        owner: "chorus/transfer",
        summary: "a transfer reply that names a transfer_id names the one the client sent (the client supplies it, chorus.md section 3.5)",
        fails: "a reply to a taken transfer whose transfer_id is another than the one sent",
        passes: "the sent transfer_id, or none in the reply",
    }
    CREDITS_DECIMALS {
        key: "chorus/credits:decimals",
        requirements: &["CHO-005"],
        level: None,
        owner: "",
        summary: "every credit amount and balance a reply carries has at most two decimals, however many transfers came before (credits are floats with two decimals, chorus.md section 2)",
        fails: "a transfer reply whose amount or balance, as written, has more than two decimals (99.80000000000001: float arithmetic's drift)",
        passes: "two decimals at most, as written",
    }
    TRANSFER_INCOMPLETE_TAKEN {
        key: "chorus/transfer:incomplete-taken",
        requirements: &["CHO-001", "CHO-039"],
        level: None,
        owner: "chorus/transfer",
        summary: "a transfer without amount or to_owner, with an amount that is no number, or with a body that is no JSON object draws a 4xx",
        fails: "the ledger took, or failed with a 5xx on, one or more incomplete transfers (each named: no amount, no to_owner, amount \"ten\", no body, a non-JSON body, a JSON array)",
        passes: "a 4xx for each",
    }
}

// ---------------------------------------------------------------------------
// Ledger

/// A transfer body.
pub fn transfer(from: &str, to: &str, amount: f64) -> Value {
    json!({"transfer_id": new_id(), "from_owner": from, "to_owner": to, "amount": amount,
           "job_id": new_id(), "timestamp_utc": now_utc()})
}

/// A fresh owner name (no setup requests sent).
pub fn fresh_owner() -> String {
    format!("h-owner-{}", new_id())
}

/// A fresh owner, set up by the profile's `owner` requests to hold
/// `initial_credits`.
pub async fn funded_owner(ctx: &mut Ctx) -> Step<String> {
    let owner = fresh_owner();
    let amount = ctx.profile().chorus.initial_credits;
    setup(
        ctx,
        SetupEvent::Owner,
        &[("owner_id", json!(owner)), ("amount", json!(amount))],
    )
    .await?;
    Ok(owner)
}

/// `POST /transfer` on the ledger, after the profile's `transfer` requests.
pub async fn send_transfer(ctx: &mut Ctx, body: &Value) -> Step<Resp> {
    let pick = |k: &str| body.get(k).cloned().unwrap_or(Value::Null);
    let vars = [
        ("transfer_id", pick("transfer_id")),
        ("from_owner", pick("from_owner")),
        ("to_owner", pick("to_owner")),
        ("amount", pick("amount")),
        ("job_id", pick("job_id")),
    ];
    setup(ctx, SetupEvent::Transfer, &vars).await?;
    let r = post(ctx, Base::Ledger, "transfer", body).await?;
    if matches!(r.http, 404 | 405) {
        // No ledger route where the run sends transfers: a setting the run lacks,
        // not a deviation, whatever transfer the case sent.
        return Err(ctx.block(no_ledger_here(ctx, &r)));
    }
    if taken(&r) {
        for f in transfer_reply_findings(body, &r) {
            ctx.finding(f);
        }
    }
    Ok(r)
}

/// What the reply to the taken transfer `sent` breaks, of what a ledger's reply may
/// say (chorus.md defines no body, CHO-A14): a transfer_id other than the one sent
/// (CHO-039), a credit amount or balance written with more than two decimals
/// (CHO-005).
pub fn transfer_reply_findings(sent: &Value, r: &Resp) -> Vec<Finding> {
    let mut found = Vec::new();
    let Some(reply) = r.json.as_ref().and_then(Value::as_object) else {
        return found;
    };
    if let (Some(got), Some(want)) = (
        reply.get("transfer_id").and_then(Value::as_str),
        sent["transfer_id"].as_str(),
    ) {
        if !same_id(got, want) {
            found.push(TRANSFER_ID_NOT_KEPT.found(format!("a transfer sent with transfer_id {want} was answered with transfer_id {got}: the client supplies it (CHO-039); {}", r.describe())));
        }
    }
    // A member that echoes what the harness sent (an amount of three decimals the
    // fuzzer drew, CHO-A10) is the harness's, not the ledger's.
    let drifted: Vec<String> = reply
        .iter()
        .filter(|(k, _)| k.as_str() == "amount" || k.contains("balance"))
        .filter(|(k, v)| sent.get(k.as_str()) != Some(*v))
        .filter_map(|(k, v)| Some((k, v.as_f64()?)))
        .filter(|(_, x)| !written_with_two_decimals(*x))
        .map(|(k, x)| format!("{k} {x}"))
        .collect();
    if !drifted.is_empty() {
        found.push(CREDITS_DECIMALS.found(format!(
            "a transfer reply carries {}: credits have two decimals (CHO-005); {}",
            drifted.join(" and "),
            r.describe()
        )));
    }
    found
}

/// Whether `x`, as the shortest decimal that reads back as it, has at most two
/// decimals: 99.8 does, 99.80000000000001 (float drift) does not.
pub fn written_with_two_decimals(x: f64) -> bool {
    let text = x.to_string();
    text.split_once('.').is_none_or(|(_, d)| d.len() <= 2)
}

/// The setting finding of a transfer answered HTTP 404 or 405: no ledger at the
/// URL the run sends transfers to.
fn no_ledger_here(ctx: &Ctx, r: &Resp) -> Finding {
    let at = ctx.profile().target.ledger_url.clone().unwrap_or_else(|| {
        format!(
            "{} (the target's URL: [target] ledger_url is not set)",
            ctx.url
        )
    });
    PROFILE_LEDGER_URL.found(format!(
            "POST /transfer at {at} answered {}: no ledger takes transfers there. Set [target] ledger_url to the ledger's base URL",
            r.describe()
        ))
}

/// The transfer was taken: a 2xx that does not say no. The body is the ledger's
/// own (chorus.md defines none, CHO-A14).
pub fn taken(r: &Resp) -> bool {
    r.ok() && !r.refusal_in_2xx()
}

/// A transfer within a fresh owner's credits must be taken. When it is not, the
/// case cannot go on: refused for want of credits, the owners were not funded as
/// the profile says (PROFILE); refused otherwise, the ledger does not take valid
/// transfers (CHO-038). Both owned by the transfer case.
pub fn expect_taken(ctx: &mut Ctx, r: &Resp, amount: f64, what: &str) -> Step<()> {
    if taken(r) {
        ctx.checked(format!("{what}: taken ({})", r.http));
        return Ok(());
    }
    let initial = ctx.profile().chorus.initial_credits;
    let f = if r.codes().iter().any(|c| c == "TRANSFER_FAILED") {
        PROFILE_INITIAL_CREDITS.found(format!(
                "{what}: a transfer of {amount} from a fresh owner was refused with {}: fresh owners do not hold the {initial} credits of [chorus] initial_credits here. Add [[chorus.setup_requests]] with on = \"owner\" that open and fund each owner's account ({{owner_id}}, {{amount}}), or set initial_credits to what a fresh owner holds",
                r.describe()
            ))
    } else {
        TRANSFER_REFUSED.found(format!(
            "{what}: a complete transfer of {amount} was refused: {}",
            r.describe()
        ))
    };
    Err(ctx.block(f))
}

/// The cases of this area, in the order they run.
pub const CASES: &[Case] = &[
    case!("transfer", "a complete transfer is accepted; one without amount or to_owner draws a 4xx", ["CHO-038", "CHO-039", "CHO-041"], Fact, |ctx| {
        let initial = ctx.profile().chorus.initial_credits;
        if initial < 0.10 {
            return skip(format!("fresh owners hold {initial} credits ([chorus] initial_credits): add [[chorus.setup_requests]] with on = \"owner\" that fund them, and set initial_credits"));
        }
        let from = funded_owner(ctx).await?;
        let to = funded_owner(ctx).await?;
        let r = send_transfer(ctx, &transfer(&from, &to, 0.10)).await?;
        expect_taken(ctx, &r, 0.10, "a valid transfer")?;
        // A series from the same owner: the amounts and balances its replies
        // carry keep two decimals however many came before (CHO-005, send_transfer).
        if initial >= 0.50 {
            for n in 2..=4 {
                let r = send_transfer(ctx, &transfer(&from, &to, 0.10)).await?;
                expect_taken(ctx, &r, 0.10, &format!("valid transfer {n} of a series from one owner"))?;
            }
        }
        let mut taken = Vec::new();
        for key in ["amount", "to_owner"] {
            let mut body = transfer(&from, &to, 0.10);
            body.as_object_mut().map(|o| o.remove(key));
            let r = send_transfer(ctx, &body).await?;
            taken.extend(rejected_row(ctx, &r, &format!("a transfer without {key}")));
        }
        let mut body = transfer(&from, &to, 0.10);
        body["amount"] = json!("ten");
        let r = send_transfer(ctx, &body).await?;
        taken.extend(rejected_row(ctx, &r, "a transfer with amount \"ten\""));
        // The same bodies every POST route refuses (CHO-001), sent as they are.
        for (what, r) in unreadable_bodies(ctx, Base::Ledger, "transfer").await? {
            taken.extend(rejected_row(ctx, &r, &format!("a transfer with {what}")));
        }
        ctx.rows_wrong(&TRANSFER_INCOMPLETE_TAKEN, "the ledger took incomplete transfers", &taken);
        ctx.note("a transfer for a job the ledger never saw was accepted or refused: informational (CHO-041)");
        Ok(())
    }),
    case!("transfer-insufficient", "a transfer above the balance draws TRANSFER_FAILED and moves nothing", ["CHO-040"], Profile, |ctx| {
        let initial = ctx.profile().chorus.initial_credits;
        let from = funded_owner(ctx).await?;
        let to = funded_owner(ctx).await?;
        let r = send_transfer(ctx, &transfer(&from, &to, initial + 1.0)).await?;
        expect_code(ctx, &r, "TRANSFER_FAILED", "transfer above the balance")?;
        if initial >= 0.01 {
            let r = send_transfer(ctx, &transfer(&from, &to, initial)).await?;
            if !taken(&r) {
                // Did the refused transfer move credits, or do owners not hold them?
                let other = funded_owner(ctx).await?;
                let r2 = send_transfer(ctx, &transfer(&other, &to, initial)).await?;
                expect_taken(ctx, &r2, initial, "the whole balance of a fresh owner")?;
                return fail(format!(
                    "after a refused transfer, {from} could not move its {initial} credits ({}), though a fresh owner could: the refused transfer moved credits (CHO-040)",
                    r.describe()
                ));
            }
        }
        let r = send_transfer(ctx, &transfer(&from, &to, 0.01)).await?;
        expect_code(ctx, &r, "TRANSFER_FAILED", "transfer from an empty balance")
    }),
    case!("transfer-credits-recipient", "credits sent to an owner are its to spend: it moves its own and what it got, and not a cent more", ["CHO-038", "CHO-040"], Profile, |ctx| {
        let initial = ctx.profile().chorus.initial_credits;
        let part = floor_cents(initial * 0.4);
        if part < 0.01 {
            return skip(format!("fresh owners hold {initial} credits ([chorus] initial_credits): too few to send part of them on"));
        }
        let (a, b, c) = (funded_owner(ctx).await?, funded_owner(ctx).await?, funded_owner(ctx).await?);
        let r = send_transfer(ctx, &transfer(&a, &b, part)).await?;
        expect_taken(ctx, &r, part, "A's transfer to B")?;
        ctx.control(format!("a transfer of {part} from A to B"));
        let holds = ((initial + part) * 100.0).round() / 100.0;
        let r = send_transfer(ctx, &transfer(&b, &c, holds)).await?;
        if r.codes().iter().any(|c| c == "TRANSFER_FAILED") {
            return fail(format!("B, funded with {initial} and sent {part} by A, could not move the {holds} it holds: {} (the recipient of a transfer was not credited, CHO-038)", r.describe()));
        }
        expect_taken(ctx, &r, holds, "B's transfer of all it holds")?;
        let r = send_transfer(ctx, &transfer(&b, &c, 0.01)).await?;
        if taken(&r) {
            // Overdraft, which transfer-insufficient judges, or more credit than sent?
            let d = funded_owner(ctx).await?;
            let over = ((initial + 0.01) * 100.0).round() / 100.0;
            let r2 = send_transfer(ctx, &transfer(&d, &c, over)).await?;
            if taken(&r2) {
                ctx.note(format!("B could move 0.01 past all it held, and a fresh owner {over}, past its {initial}: the ledger allows overdraft (the transfer-insufficient case judges that), so what B was credited is not judged"));
                return Ok(());
            }
            return fail(format!("after moving all the {holds} it held, B could still move 0.01 ({}), though a fresh owner cannot overdraw: B was credited more than the {part} sent (CHO-038, CHO-040)", r.describe()));
        }
        expect_code(ctx, &r, "TRANSFER_FAILED", "B's transfer beyond what it holds")
    }),
    case!("transfer-amount-positive", "a transfer of 0 or of a negative amount is refused (derived); three decimals are informational", ["CHO-047"], Fact, |ctx| {
        let from = funded_owner(ctx).await?;
        let to = funded_owner(ctx).await?;
        let r = send_transfer(ctx, &transfer(&from, &to, 0.10)).await?;
        expect_taken(ctx, &r, 0.10, "a valid transfer")?;
        ctx.control("a transfer of 0.10 between the same owners");
        let mut taken_rows = Vec::new();
        for amount in [0.0, -10.0] {
            let r = send_transfer(ctx, &transfer(&from, &to, amount)).await?;
            if taken(&r) {
                taken_rows.push(format!("{amount} credits: {}", r.describe()));
            } else {
                ctx.checked(format!("a transfer of {amount}: refused ({})", r.http));
            }
        }
        ctx.rows_wrong(&TRANSFER_AMOUNT_POSITIVE_TAKEN, "transfers of no or negative credits were taken", &taken_rows);
        let r = send_transfer(ctx, &transfer(&from, &to, 0.001)).await?;
        ctx.note(format!("a transfer of 0.001 (three decimals) drew {}: informational (CHO-A10)", r.describe()));
        Ok(())
    }),
    case!("transfer-idempotent", "a repeated transfer_id is applied once", ["CHO-039"], Profile, |ctx| {
        let initial = ctx.profile().chorus.initial_credits;
        let part = floor_cents(initial * 0.3);
        let rest = ((initial - part) * 100.0).round() / 100.0;
        if part < 0.01 || rest < 0.01 {
            return skip(format!("fresh owners hold {initial} credits ([chorus] initial_credits): too few to repeat a transfer and move the rest"));
        }
        let from = funded_owner(ctx).await?;
        let to = funded_owner(ctx).await?;
        let first = transfer(&from, &to, part);
        let r = send_transfer(ctx, &first).await?;
        expect_taken(ctx, &r, part, "the first transfer")?;
        let again = send_transfer(ctx, &first).await?;
        ctx.note(format!("the repeat was answered {}", again.describe()));
        let r = send_transfer(ctx, &transfer(&from, &to, rest)).await?;
        if taken(&r) {
            ctx.checked(format!("the remaining {rest} moved: the repeat was applied once"));
            return Ok(());
        }
        // Without a repeat, can a fresh owner move the same two amounts? If not, the
        // owners do not hold `initial_credits`, whatever the repeat did.
        let other = funded_owner(ctx).await?;
        let r1 = send_transfer(ctx, &transfer(&other, &to, part)).await?;
        expect_taken(ctx, &r1, part, "a fresh owner's first transfer")?;
        let r2 = send_transfer(ctx, &transfer(&other, &to, rest)).await?;
        expect_taken(ctx, &r2, rest, "the rest of a fresh owner's credits, without a repeat")?;
        let said = format!(
            "after a transfer of {part} and its repeat (answered {}), moving the remaining {rest} of {initial} was refused with {}: the repeated transfer_id was applied twice",
            again.describe(), r.describe()
        );
        let f = if ctx.profile().chorus.idempotent_transfers {
            TRANSFER_IDEMPOTENT.found(format!(
                "{said}. chorus.md leaves idempotency open (CHO-A14); the profile declares it ([chorus] idempotent_transfers = true, the default): set it to false if the ledger does not promise it"
            ))
        } else {
            TRANSFER_IDEMPOTENT_RECORDED.found(format!("{said} (informational: [chorus] idempotent_transfers = false)"))
        };
        Err(Stop::Finding(f))
    }),
];

// ---------------------------------------------------------------------------
// Fuzzing

/// A transfer amount, relative to the sender's balance where it says so.
#[derive(Debug, Clone, Copy, Default, Arbitrary)]
enum Amount {
    Part(u8),
    #[default]
    Exact,
    Over(u8),
    Credits(Credits),
}

#[derive(Debug, Clone, Copy, Default, Arbitrary)]
enum TransferField {
    #[default]
    TransferId,
    From,
    To,
    Amount,
    JobId,
    Timestamp,
}

#[derive(Debug, Clone, Default, Arbitrary)]
enum TransferMut {
    #[default]
    Keep,
    TransferId(IdForm),
    JobId(IdForm),
    Timestamp(TsForm),
    Remove(TransferField),
    Set(TransferField, Val),
    Extra(u8, Val),
    NotAnObject(Val),
}

#[derive(Debug, Clone, Default, Arbitrary)]
enum TransferStep {
    #[default]
    Plain,
    Send {
        amount: Amount,
        /// From the second owner to the first.
        reverse: bool,
        muts: Vec<TransferMut>,
        wire: Wire,
    },
    Repeat(Option<WireForm>),
}

#[derive(Debug, Clone, Default, Arbitrary)]
pub(super) struct Ledger {
    steps: Vec<TransferStep>,
    /// Whose balance the closing check drains: the second owner's, else the first's.
    check_second: bool,
}

/// How a transfer's amount reads.
#[derive(Debug, Clone, Copy, PartialEq)]
enum AmountRead {
    Cents(i64),
    /// A number the spec does not settle (more decimals, a numeric string).
    Ambiguous,
    /// Far above any balance.
    Huge,
    /// Zero or below (CHO-047).
    NotPositive,
    Invalid,
}

fn amount_read(v: Option<&Value>) -> AmountRead {
    match v {
        Some(Value::Number(n)) => match n.as_f64() {
            Some(x) if x <= 0.0 => AmountRead::NotPositive,
            Some(x) if x > 1e9 => AmountRead::Huge,
            Some(x) if two_decimals(x) => AmountRead::Cents((x * 100.0).round() as i64),
            Some(_) => AmountRead::Ambiguous,
            None => AmountRead::Invalid,
        },
        Some(s @ Value::String(_)) if numeric_string(s).is_some() => AmountRead::Ambiguous,
        _ => AmountRead::Invalid,
    }
}

/// What an accepted transfer does to the model.
#[derive(Debug, Clone)]
enum Effect {
    Move {
        from: String,
        to: String,
        cents: i64,
    },
    /// These owners' balances are no longer known.
    Unknown(Vec<String>),
}

/// Balances of the case's owners, in cents; `None`: no longer known.
struct Books {
    balance: HashMap<String, Option<i64>>,
}

impl Books {
    /// Only the case's own fresh owners have a known balance; any other owner (a
    /// mutated name) may be shared with other cases.
    fn get(&self, owner: &str) -> Option<i64> {
        self.balance.get(owner).copied().flatten()
    }

    fn apply(&mut self, e: &Effect) {
        match e {
            Effect::Move { from, to, cents } => {
                let (a, b) = (self.get(from), self.get(to));
                self.balance.insert(from.clone(), a.map(|x| x - cents));
                self.balance.insert(to.clone(), b.map(|x| x + cents));
            }
            Effect::Unknown(owners) => {
                for o in owners {
                    self.balance.insert(o.clone(), None);
                }
            }
        }
    }
}

fn transfer_model(v: &Value, books: &Books) -> (Model, Effect) {
    let Some(o) = v.as_object() else {
        return (
            Model::rejecting(TRANSFER_SUBJECT),
            Effect::Unknown(Vec::new()),
        );
    };
    let mut m = Model::of(TRANSFER_SUBJECT);
    let owners = note_transfer_members(&mut m, o);
    let from = o
        .get("from_owner")
        .and_then(Value::as_str)
        .unwrap_or_default();
    let to = o
        .get("to_owner")
        .and_then(Value::as_str)
        .unwrap_or_default();
    if !from.is_empty() && from == to {
        m.note(Class::Open, "a transfer to oneself");
    }
    let balance = books.get(from);
    let read = amount_read(o.get("amount"));
    note_amount(&mut m, read, balance);
    let effect = match read {
        AmountRead::Cents(cents) if owners.len() == 2 && from != to => Effect::Move {
            from: from.to_string(),
            to: to.to_string(),
            cents,
        },
        _ => Effect::Unknown(owners),
    };
    (m, effect)
}

/// Notes a transfer's members other than its amount: members beyond the spec's
/// (CHO-A11), transfer_id and the two owners (CHO-039), timestamp_utc (CHO-004) and
/// job_id (CHO-A11, CHO-041); returns the owners named by non-empty strings.
fn note_transfer_members(m: &mut Model, o: &serde_json::Map<String, Value>) -> Vec<String> {
    extras(
        m,
        o,
        &[
            "transfer_id",
            "from_owner",
            "to_owner",
            "amount",
            "job_id",
            "timestamp_utc",
        ],
    );
    m.note(id_class(o.get("transfer_id")), "transfer_id (CHO-039)");
    let mut owners = Vec::new();
    for k in ["from_owner", "to_owner"] {
        match o.get(k) {
            Some(Value::String(s)) if !s.is_empty() => owners.push(s.clone()),
            Some(Value::String(_)) => m.note(Class::Open, format!("an empty {k}")),
            _ => m.note(
                Class::Reject,
                format!("{k} missing or not a string (CHO-039)"),
            ),
        }
    }
    m.note(
        timestamp_class(o.get("timestamp_utc")),
        "timestamp_utc (CHO-004)",
    );
    match o.get("job_id") {
        Some(Value::String(s)) if is_uuid(s) => {}
        _ => m.note(Class::Open, "job_id missing or no UUID (CHO-A11, CHO-041)"),
    }
    owners
}

/// Notes a transfer's amount against the sender's balance (`None`: unknown): not a
/// positive number (CHO-005, CHO-039), more than two decimals or a string (CHO-A10),
/// above any balance, or above the known balance, which names TRANSFER_FAILED
/// (CHO-040).
fn note_amount(m: &mut Model, read: AmountRead, balance: Option<i64>) {
    match read {
        AmountRead::NotPositive => m.note_as(
            Class::Reject,
            TRANSFER_AMOUNT_POSITIVE_TAKEN.key,
            "an amount of zero or below (CHO-005, CHO-047)",
        ),
        AmountRead::Invalid => m.note(
            Class::Reject,
            "amount missing or not a number (CHO-005, CHO-039)",
        ),
        AmountRead::Ambiguous => {
            m.note(
                Class::Open,
                "amount with more than two decimals or as a string (CHO-A10)",
            );
        }
        AmountRead::Huge => m.note_as(
            Class::Reject,
            coded_case("TRANSFER_FAILED"),
            "an amount above any balance (CHO-040)",
        ),
        AmountRead::Cents(c) => match balance {
            Some(b) if c > b => m.code(
                "TRANSFER_FAILED",
                format!("{c} cents above the balance of {b} (CHO-040)"),
            ),
            Some(_) => {}
            None => {
                m.note(Class::Open, "the sender's balance is unknown");
            }
        },
    }
}

fn transfer_key(field: TransferField) -> &'static str {
    match field {
        TransferField::TransferId => "transfer_id",
        TransferField::From => "from_owner",
        TransferField::To => "to_owner",
        TransferField::Amount => "amount",
        TransferField::JobId => "job_id",
        TransferField::Timestamp => "timestamp_utc",
    }
}

fn transfer_mutate(v: &mut Value, m: &TransferMut) {
    match m {
        TransferMut::Keep => {}
        TransferMut::TransferId(form) => set(v, "transfer_id", id_value(*form)),
        TransferMut::JobId(form) => set(v, "job_id", id_value(*form)),
        TransferMut::Timestamp(form) => set(v, "timestamp_utc", timestamp_value(*form)),
        TransferMut::Remove(field) => remove(v, transfer_key(*field)),
        TransferMut::Set(field, x) => set(v, transfer_key(*field), x.json()),
        TransferMut::Extra(i, x) => set(v, &format!("x_fuzz_{}", i % 4), x.json()),
        TransferMut::NotAnObject(x) => *v = x.json(),
    }
}

// ---------------------------------------------------------------------------
// Ledger

struct Sent {
    value: Value,
    bytes: Vec<u8>,
    accepted: bool,
}

/// A ledger case's state: its two fresh owners, the credits each starts with, whether
/// the profile declares transfers idempotent, the model's balances and the transfers
/// sent so far.
struct LedgerState {
    a: String,
    b: String,
    initial: i64,
    idempotent: bool,
    books: Books,
    history: Vec<Sent>,
    /// Owners an accepted transfer of this case credited: a shortfall of theirs
    /// may be a credit never made (the rule of transfer-credits-recipient).
    received: std::collections::HashSet<String>,
}

impl LedgerState {
    /// Applies an accepted transfer's effect to the model.
    fn apply(&mut self, e: &Effect) {
        if let Effect::Move { to, .. } = e {
            self.received.insert(to.clone());
        }
        self.books.apply(e);
    }

    /// Files a refusal for want of funds of `owner`, whose balance the model knows,
    /// under transfer-credits-recipient when a transfer of this case credited it.
    fn short(&self, owner: &str, r: &Resp, judged: FuzzStep<()>) -> FuzzStep<()> {
        let funds = r.codes().iter().any(|c| c == "TRANSFER_FAILED");
        if funds && self.received.contains(owner) {
            verdict::refile(CREDITS_RECIPIENT, judged)
        } else {
            judged
        }
    }
}

/// The case of `run` that judges that a transfer credits its recipient (CHO-038).
const CREDITS_RECIPIENT: &str = "chorus/transfer-credits-recipient";

pub(super) async fn ledger_case(f: &mut FuzzCtx, c: Ledger) -> FuzzStep<()> {
    let mut st = ledger_setup(f).await?;
    let steps: Vec<TransferStep> = if c.steps.is_empty() {
        vec![TransferStep::Plain]
    } else {
        c.steps.iter().take(4).cloned().collect()
    };
    for (i, step) in steps.into_iter().enumerate() {
        let what = format!("transfer {}", i + 1);
        match step {
            TransferStep::Repeat(form) => {
                if let Some(sender) = repeat_transfer(f, &mut st, form, &what).await? {
                    // A balance other than the model's is the repeat applied again
                    // (CHO-039, as the transfer-idempotent case reads it).
                    let idempotent = Some(TRANSFER_IDEMPOTENT.key);
                    return drain_and_overdraw(f, &st, sender == st.b, idempotent).await;
                }
            }
            TransferStep::Plain | TransferStep::Send { .. } => {
                let (amount, reverse, muts, wire) = match step {
                    TransferStep::Send {
                        amount,
                        reverse,
                        muts,
                        wire,
                    } => (amount, reverse, muts, wire),
                    _ => (Amount::Part(1), false, Vec::new(), Wire::Canonical),
                };
                fuzz_transfer(f, &mut st, amount, reverse, &muts, &wire, &what).await?;
            }
        }
    }
    drain_and_overdraw(f, &st, c.check_second, None).await
}

/// Sets up two fresh owners through the profile's `owner` setup requests, each at
/// the profile's initial credits.
async fn ledger_setup(f: &mut FuzzCtx) -> FuzzStep<LedgerState> {
    let initial = (f.ctx.profile().chorus.initial_credits * 100.0).round() as i64;
    let idempotent = f.ctx.profile().chorus.idempotent_transfers;
    // Two fresh owners, whose accounts the ledger may keep.
    f.create("ledger accounts")?;
    f.create("ledger accounts")?;
    let a = funded_owner(&mut f.ctx).await?;
    let b = funded_owner(&mut f.ctx).await?;
    let books = Books {
        balance: HashMap::from([(a.clone(), Some(initial)), (b.clone(), Some(initial))]),
    };
    Ok(LedgerState {
        a,
        b,
        initial,
        idempotent,
        books,
        history: Vec::new(),
        received: Default::default(),
    })
}

/// Sends again the last accepted transfer (else the last one sent), as sent or
/// respelled, and judges the reply: applied once where the profile declares
/// idempotency (CHO-039), else open (CHO-A14).
async fn repeat_transfer(
    f: &mut FuzzCtx,
    st: &mut LedgerState,
    form: Option<WireForm>,
    what: &str,
) -> FuzzStep<Option<String>> {
    let Some(prev) = st
        .history
        .iter()
        .rev()
        .find(|s| s.accepted)
        .or(st.history.last())
    else {
        return Ok(None);
    };
    let (value, was_accepted) = (prev.value.clone(), prev.accepted);
    let bytes = match form {
        Some(w) => respell(&value, w),
        None => prev.bytes.clone(),
    };
    let (m, effect) = repeat_model(st, &value, was_accepted);
    let r = post_bytes(f, Base::Ledger, "transfer", bytes.clone()).await?;
    let judged = judge(
        f,
        &r,
        &m,
        &format!("{what}, a repeat of an earlier transfer_id"),
        Oracle::Ledger,
    );
    if was_accepted && st.idempotent {
        // A repeat of an applied transfer that is not taken as applied once is the
        // rule transfer-idempotent's (CHO-039), whatever the reply.
        verdict::refile(TRANSFER_IDEMPOTENT.key, judged)?;
    } else {
        judged?;
    }
    taken_reply(f, &value, &r)?;
    let ok = r.ok() && !is_rejection(&r);
    if ok && (!was_accepted || !st.idempotent) {
        st.apply(&effect);
    }
    let owner = |k: &str| value[k].as_str().unwrap_or_default().to_string();
    let (sender, recipient) = (owner("from_owner"), owner("to_owner"));
    st.history.push(Sent {
        value,
        bytes,
        accepted: ok || was_accepted,
    });
    // A repeat the ledger took of a transfer it applied: whether it was applied
    // once is the sender's balance, checked now, where nothing else of the case
    // could have made it wrong (no credit to it); else its balance is no longer
    // known.
    if !(ok && was_accepted && st.idempotent) {
        return Ok(None);
    }
    let ours = sender == st.a || sender == st.b;
    if ours && !st.received.contains(&sender) {
        return Ok(Some(sender));
    }
    st.books.apply(&Effect::Unknown(vec![sender, recipient]));
    Ok(None)
}

/// The reply to a transfer the ledger took, held to what `run` holds every such
/// reply to ([`transfer_reply_findings`]), under the same keys.
fn taken_reply(f: &mut FuzzCtx, sent: &Value, r: &Resp) -> FuzzStep<()> {
    if !r.ok() || is_rejection(r) {
        return Ok(());
    }
    let from = f.ctx.findings().len();
    for x in transfer_reply_findings(sent, r) {
        f.ctx.finding(x);
    }
    verdict::rules_since(&f.ctx, from)
}

/// The model of a repeated transfer and what it does: nothing moves for a repeat of
/// an accepted transfer where the profile declares idempotency (CHO-039); without it
/// the balances are no longer known (CHO-A14); a retry of a refused transfer is
/// judged afresh, an acceptance left open.
fn repeat_model(st: &LedgerState, value: &Value, was_accepted: bool) -> (Model, Effect) {
    let (mut m, mut effect) = transfer_model(value, &st.books);
    if was_accepted && !st.idempotent {
        // The profile does not declare idempotency (CHO-A14): whatever
        // the repeat does, the balances are no longer known.
        m.note(
            Class::Open,
            "a repeated transfer_id ([chorus] idempotent_transfers = false)",
        );
        effect = Effect::Unknown(vec![st.a.clone(), st.b.clone()]);
    } else if was_accepted {
        // Applied once: accepted again, nothing moves (CHO-039).
        m = Model::of(TRANSFER_SUBJECT);
    } else if matches!(m.verdict(), Expected::Accept(..)) {
        m.note(Class::Open, "a retry of a transfer that was refused before");
    }
    (m, effect)
}

/// Sends a drawn transfer between the two owners and judges the reply against the
/// model: within the balance it is accepted (CHO-038), above it TRANSFER_FAILED
/// (CHO-040); an accepted transfer moves the model's balances.
async fn fuzz_transfer(
    f: &mut FuzzCtx,
    st: &mut LedgerState,
    amount: Amount,
    reverse: bool,
    muts: &[TransferMut],
    wire: &Wire,
    what: &str,
) -> FuzzStep<()> {
    let body = transfer_body(st, amount, reverse, muts);
    let (bytes, parsed) = encode(&body, wire);
    let (m, effect, value) = match parsed {
        Parsed::Json(v) => {
            let (m, e) = transfer_model(&v, &st.books);
            (m, e, v)
        }
        Parsed::NotJson => (
            Model::rejecting(TRANSFER_SUBJECT),
            Effect::Unknown(vec![st.a.clone(), st.b.clone()]),
            Value::Null,
        ),
        Parsed::Unsure => (
            Model::unsure(TRANSFER_SUBJECT),
            Effect::Unknown(vec![st.a.clone(), st.b.clone()]),
            Value::Null,
        ),
    };
    let r = post_bytes(f, Base::Ledger, "transfer", bytes.clone()).await?;
    let judged = judge(f, &r, &m, what, oracle_for(wire));
    let sender = value["from_owner"].as_str().unwrap_or_default();
    st.short(sender, &r, judged)?;
    taken_reply(f, &value, &r)?;
    let ok = r.ok() && !is_rejection(&r);
    if ok {
        st.apply(&effect);
    }
    if value.is_object() {
        st.history.push(Sent {
            value,
            bytes,
            accepted: ok,
        });
    }
    Ok(())
}

/// The body of a drawn transfer: from the first owner to the second (or back when
/// `reverse`), the amount relative to the sender's balance as the model knows it,
/// then up to three mutations.
fn transfer_body(st: &LedgerState, amount: Amount, reverse: bool, muts: &[TransferMut]) -> Value {
    let (from, to) = if reverse {
        (&st.b, &st.a)
    } else {
        (&st.a, &st.b)
    };
    let bal = st.books.get(from).unwrap_or(st.initial).max(0);
    let amount = match amount {
        // A quarter to the whole, less up to 7 cents: amounts a float ledger
        // cannot hold exactly (CHO-005).
        Amount::Part(p) => {
            credits_of((bal * i64::from(p % 4 + 1) / 4 - i64::from(p / 4 % 8)).max(1))
        }
        Amount::Exact => credits_of(bal.max(1)),
        Amount::Over(n) => credits_of(bal + 1 + i64::from(n % 50)),
        Amount::Credits(c) => credits_value(c),
    };
    let mut body = transfer(from, to, 0.0);
    set(&mut body, "amount", amount);
    for m in muts.iter().take(3) {
        transfer_mutate(&mut body, m);
    }
    body
}

/// The closing check of a ledger case on the first owner, or the second where
/// `check_second` (CHO-039, CHO-040).
/// `drained_as`: the rule a failed drain is filed under, where a step before it
/// (a repeat) is what made the model's balance wrong.
async fn drain_and_overdraw(
    f: &mut FuzzCtx,
    st: &LedgerState,
    check_second: bool,
    drained_as: Option<&'static str>,
) -> FuzzStep<()> {
    // The balance is where the model says: drained exactly, then one cent more fails.
    let (owner, other) = if check_second {
        (&st.b, &st.a)
    } else {
        (&st.a, &st.b)
    };
    let Some(bal) = st.books.get(owner) else {
        return Ok(());
    };
    if bal > 0 {
        let body = transfer(owner, other, bal as f64 / 100.0);
        let r = post_bytes(
            f,
            Base::Ledger,
            "transfer",
            serde_json::to_vec(&body).unwrap_or_default(),
        )
        .await?;
        let drained = judge(
            f,
            &r,
            &Model::of(TRANSFER_SUBJECT),
            &format!(
                "draining the {} credits the model says {owner} holds (CHO-039, CHO-040)",
                bal as f64 / 100.0
            ),
            Oracle::Ledger,
        );
        match drained_as {
            Some(key) => verdict::refile(key, drained)?,
            None => st.short(owner, &r, drained)?,
        }
    }
    let body = transfer(owner, other, 0.01);
    let r = post_bytes(
        f,
        Base::Ledger,
        "transfer",
        serde_json::to_vec(&body).unwrap_or_default(),
    )
    .await?;
    let mut m = Model::of(TRANSFER_SUBJECT);
    m.code(
        "TRANSFER_FAILED",
        "one cent from an empty balance (CHO-040)",
    );
    judge(
        f,
        &r,
        &m,
        &format!("one cent from {owner}, whose balance the model says is 0"),
        Oracle::Ledger,
    )
}

/// What a transfer gets wrong is filed under the transfer rules.
pub(super) const TRANSFER_SUBJECT: Subject = Subject {
    taken: &TRANSFER_INCOMPLETE_TAKEN,
    refused: &TRANSFER_REFUSED,
    odd: &TRANSFER_REFUSED,
};
