#!/usr/bin/env python3
"""Generate the chorus golden vectors of agentconform.

Run from anywhere:  python3 vectors/chorus/generate.py
Needs:              the Python standard library only

Writes:
  reputation/<name>.json  one reputation sequence each (chorus.md §4)
  messages/<name>.json    one message and its schema verdict each (chorus.md §3)

The script is deterministic: fixed UUIDs, fixed timestamps, fixed hirer scores.
Re-running it rewrites byte-identical files and deletes stale *.json files in the
two folders. Edit this script, not the generated files.

After writing, it re-reads every file and runs a self-check (self_check below):
the reputation expectations are recomputed from the file contents, compared bit
for bit, and checked against hand-computed anchor values and the clamp bounds;
the message files are checked for format. It exits non-zero on any disagreement.
The schema verdicts of messages/ are checked by check.py (needs jsonschema).
"""

import json
import math
import pathlib
import re
import sys

HERE = pathlib.Path(__file__).resolve().parent
REQ_ID = re.compile(r"^CHO-(0[0-3][0-9]|04[0-6]|A([1-9]|1[0-9]|2[01]))$")  # CHO-001..046, CHO-A1..A21
KINDS = (
    "register-request",
    "register-response",
    "discover-response",
    "job-request",
    "job-result",
    "transfer-request",
)

# ---------------------------------------------------------------------------
# Reputation (chorus.md §4)
# ---------------------------------------------------------------------------

WEIGHT = 2.0  # base reward
PENALTY = 3.0  # base penalty
FAILURE_FACTOR = 1.5


def apply(old, outcome, hirer=None):
    """One outcome, in the exact IEEE double order the vectors fix."""
    if outcome == "SUCCESS":
        new = old + ((WEIGHT * hirer) / 100.0)
    elif outcome == "FAILURE":
        new = old - (PENALTY * FAILURE_FACTOR)
    else:
        raise ValueError(outcome)
    return min(100.0, max(0.0, new))


def S(hirer):
    return ("SUCCESS", float(hirer))


F = ("FAILURE", None)


def sequence(description, requirements, initial, outcomes):
    steps = []
    score = float(initial)
    for outcome, hirer in outcomes:
        score = apply(score, outcome, hirer)
        step = {"outcome": outcome}
        if outcome == "SUCCESS":
            step["hirer_reputation"] = hirer
        step["expected"] = score
        steps.append(step)
    doc = {"description": description}
    doc["requirements"] = requirements
    doc["initial"] = float(initial)
    doc["steps"] = steps
    return doc


LONG_CYCLE = [37.5, 50.0, 62.5, 75.0, 87.5, 100.0, 92.3, 66.6]


def reputation_vectors():
    v = {}
    v["success-hirer-50"] = sequence(
        "A new agent at 50.0 gets one SUCCESS from a hirer at 50: it gains 1.0.",
        ["CHO-014", "CHO-042", "CHO-043"],
        50.0,
        [S(50)],
    )
    v["success-hirer-100"] = sequence(
        "A new agent at 50.0 gets one SUCCESS from a hirer at 100: it gains 2.0, twice the gain from a hirer at 50.",
        ["CHO-042", "CHO-043"],
        50.0,
        [S(100)],
    )
    v["failure-single"] = sequence(
        "A new agent at 50.0 gets one FAILURE: it drops by 3.0 x 1.5 = 4.5.",
        ["CHO-014", "CHO-044", "CHO-A8"],
        50.0,
        [F],
    )
    v["success-hirer-92-3"] = sequence(
        "A new agent at 50.0 gets one SUCCESS from a hirer at 92.3, the reputation of the discovery example. "
        "(2.0 * 92.3) / 100.0 is 1.8459999999999999 in double arithmetic, and 50.0 plus it rounds to "
        "51.846 (the double nearest 51.846). Other orders give another double: 50.0 + (2.0 / 100.0) * 92.3 "
        "and 50.0 + 0.02 * 92.3 are both 51.846000000000004. No rounding to 2 decimals is applied; the "
        "live test compares with a tolerance of 0.005 (ambiguity CHO-A10).",
        ["CHO-042", "CHO-043", "CHO-A10"],
        50.0,
        [S(92.3)],
    )
    v["alternating"] = sequence(
        "Ten outcomes alternating SUCCESS and FAILURE from 50.0, with hirers at varying reputations "
        "(some not exact in binary), so that rounding errors accumulate.",
        ["CHO-042", "CHO-043", "CHO-044", "CHO-A8"],
        50.0,
        [S(50), F, S(92.3), F, S(33.3), F, S(87.5), F, S(10.1), F],
    )
    v["clamp-upper"] = sequence(
        "An agent at 99.5 gets a SUCCESS from a hirer at 100: 101.5 is clamped to 100.0. A further SUCCESS "
        "keeps it at 100.0, and a FAILURE then takes 4.5 from 100.0, not from 101.5 or 103.5.",
        ["CHO-042", "CHO-044", "CHO-045"],
        99.5,
        [S(100), S(100), F],
    )
    v["climb-to-upper-clamp"] = sequence(
        "An agent climbs from 96.0 to the upper clamp through SUCCESSes from hirers at 100, 87.5 and 100: "
        "98.0, 99.75, then 101.75 clamped to 100.0.",
        ["CHO-042", "CHO-045"],
        96.0,
        [S(100), S(87.5), S(100)],
    )
    v["clamp-lower"] = sequence(
        "An agent at 2.0 gets a FAILURE: -2.5 is clamped to 0.0. A SUCCESS from a hirer at 50 then gives 1.0 "
        "(counted from 0.0, not from -2.5), and another FAILURE clamps to 0.0 again.",
        ["CHO-042", "CHO-044", "CHO-045"],
        2.0,
        [F, S(50), F],
    )
    v["failures-to-zero"] = sequence(
        "Twelve FAILUREs from 50.0: the score falls by 4.5 each time to 0.5, and the twelfth is clamped to 0.0.",
        ["CHO-014", "CHO-044", "CHO-045"],
        50.0,
        [F] * 12,
    )
    v["long-success-run"] = sequence(
        "Thirty SUCCESSes from 70.0, with hirers cycling through "
        + ", ".join(repr(h) for h in LONG_CYCLE)
        + ": the score reaches the upper clamp and stays at 100.0.",
        ["CHO-042", "CHO-043", "CHO-045"],
        70.0,
        [S(LONG_CYCLE[i % len(LONG_CYCLE)]) for i in range(30)],
    )
    v["hirer-reputation-zero"] = sequence(
        "SUCCESSes from a hirer at reputation 0 give no gain; a FAILURE still costs 4.5, and a further "
        "SUCCESS from the same hirer does not recover it.",
        ["CHO-042", "CHO-043", "CHO-044"],
        50.0,
        [S(0), S(0), F, S(0)],
    )
    return v


# ---------------------------------------------------------------------------
# Messages (chorus.md §3)
# ---------------------------------------------------------------------------

AGENT_ID = "a3b8d1b6-0b3b-4b1a-9c1a-1a2b3c4d5e6f"  # chorus.md §2 example (v4)
JOB_ID = "f81d4fae-7dec-11d0-a765-00a0c91e6bf6"  # chorus.md §2 example (v1, CHO-A7)
ORCHESTRATOR_ID = "6f1c2d3e-4a5b-4c6d-8e7f-901a2b3c4d5e"
OTHER_AGENT_ID = "0e9d8c7b-6a59-4483-b726-15f4e3d2c1b0"
JOB_ID_V4 = "3c4d5e6f-7a8b-4c9d-a0e1-f2a3b4c5d6e7"
TRANSFER_ID = "9b2e7c41-5d3a-4f68-b1c9-2e8d7a6f5b34"
TS = "2026-02-11T14:15:09Z"  # chorus.md examples


def register_example():
    return {
        "agent_id": AGENT_ID,
        "agent_name": "Human-readable name",
        "owner_id": "Owner identifier",
        "api_endpoint": "https://agent-host:port/jobs",
        "skills": [
            {
                "skill_name": "analyze_text",
                "description": "Extracts structured data from unstructured text",
                "cost_per_call": 0.10,
                "input_schema": {"text": "string"},
                "output_schema": {"entities": "list"},
            }
        ],
        "version": "0.1",
        "timestamp_utc": TS,
    }


def register_response_example():
    return {"status": "registered", "agent_id": AGENT_ID, "reputation_score": 50.0}


def discover_example():
    return {
        "agents": [
            {
                "agent_id": AGENT_ID,
                "agent_name": "Text-Analyst-3000",
                "api_endpoint": "https://...",
                "skill": {"skill_name": "analyze_text", "cost_per_call": 0.10},
                "reputation_score": 92.3,
                "status": "online",
            }
        ]
    }


def job_request_example():
    return {
        "job_id": JOB_ID,
        "orchestrator_id": ORCHESTRATOR_ID,
        "skill_name": "analyze_text",
        "input_data": {"text": "Revenue for Q3 was $42,000..."},
        "budget": 0.15,
        "currency": "chorus_credits_v1",
        "callback_url": "https://orchestrator/results",
        "timestamp_utc": TS,
    }


def job_result_example():
    return {
        "job_id": JOB_ID,
        "agent_id": AGENT_ID,
        "status": "SUCCESS",
        "output_data": {"entities": [{"type": "revenue", "value": 42000, "period": "Q3"}]},
        "execution_cost": 0.10,
        "execution_time_ms": 1250,
        "error_message": None,
        "timestamp_utc": TS,
    }


def job_result_failure():
    r = job_result_example()
    r["job_id"] = JOB_ID_V4
    r["status"] = "FAILURE"
    r["output_data"] = None
    r["execution_cost"] = 0.0
    r["execution_time_ms"] = 12
    r["error_message"] = "input_data has no member text"
    return r


def transfer_example():
    return {
        "transfer_id": TRANSFER_ID,
        "from_owner": "orchestrator_owner_id",
        "to_owner": "agent_owner_id",
        "amount": 0.10,
        "job_id": JOB_ID,
        "timestamp_utc": TS,
    }


def msg(kind, description, requirements, value, verdict, reason):
    return {
        "description": description,
        "requirements": requirements,
        "kind": kind,
        "input": value,
        "expect": {"verdict": verdict, "reason": reason},
    }


def without(d, key):
    d = dict(d)
    del d[key]
    return d


def with_(d, **kw):
    d = dict(d)
    d.update(kw)
    return d


def message_vectors():
    v = {}
    RQ, RS, DS, JQ, JR, TR = KINDS

    # --- register-request (chorus.md §3.1)
    reg = register_example()
    skill = reg["skills"][0]
    v["register-spec-example"] = msg(
        RQ,
        "The registration example of chorus.md §3.1, with the placeholder \"uuid\" replaced by the agent_id example of §2.",
        ["CHO-002", "CHO-004", "CHO-008", "CHO-009", "CHO-010", "CHO-011"],
        reg, "valid", "CHO-009: complete registration body",
    )
    v["register-minimal"] = msg(
        RQ,
        "A registration with only the members the project treats as essential: agent_id, api_endpoint, and skills whose one skill has skill_name and cost_per_call.",
        ["CHO-009", "CHO-010", "CHO-A11"],
        {"agent_id": AGENT_ID, "api_endpoint": "http://127.0.0.1:9001/jobs",
         "skills": [{"skill_name": "echo_text", "cost_per_call": 0.10}]},
        "valid", "CHO-A11: other members are optional",
    )
    v["register-agent-id-not-uuid"] = msg(
        RQ, "agent_id is \"not-a-uuid\".", ["CHO-002", "CHO-A7"],
        with_(reg, agent_id="not-a-uuid"), "invalid", "CHO-002: agent_id is not a UUID",
    )
    v["register-missing-agent-id"] = msg(
        RQ, "The registration has no agent_id.", ["CHO-009", "CHO-A11"],
        without(reg, "agent_id"), "invalid", "CHO-009: agent_id missing",
    )
    v["register-missing-api-endpoint"] = msg(
        RQ, "The registration has no api_endpoint.", ["CHO-009", "CHO-A11"],
        without(reg, "api_endpoint"), "invalid", "CHO-009: api_endpoint missing",
    )
    v["register-missing-skills"] = msg(
        RQ, "The registration has no skills.", ["CHO-009", "CHO-A11"],
        without(reg, "skills"), "invalid", "CHO-009: skills missing",
    )
    v["register-skill-cost-string"] = msg(
        RQ, "The skill's cost_per_call is the string \"cheap\".", ["CHO-005", "CHO-010"],
        with_(reg, skills=[with_(skill, cost_per_call="cheap")]), "invalid",
        "CHO-010: cost_per_call is not a number",
    )
    v["register-skill-missing-name"] = msg(
        RQ, "The skill has no skill_name.", ["CHO-010", "CHO-A11"],
        with_(reg, skills=[without(skill, "skill_name")]), "invalid", "CHO-010: skill_name missing",
    )
    v["register-timestamp-yesterday"] = msg(
        RQ, "timestamp_utc is \"yesterday\".", ["CHO-004", "CHO-A16"],
        with_(reg, timestamp_utc="yesterday"), "invalid", "CHO-004: timestamp_utc is not ISO 8601 UTC",
    )
    v["register-timestamp-fraction"] = msg(
        RQ, "timestamp_utc has a fraction of a second: 2026-02-11T14:15:09.123Z.", ["CHO-004", "CHO-A16"],
        with_(reg, timestamp_utc="2026-02-11T14:15:09.123Z"), "valid",
        "CHO-004: ISO 8601 UTC with a fraction and Z",
    )

    # --- register-response (chorus.md §3.1 Response)
    rr = register_response_example()
    v["register-response-spec-example"] = msg(
        RS, "The registration response example of chorus.md §3.1 (reputation_score 50.0), with a real agent_id.",
        ["CHO-007", "CHO-013", "CHO-014"], rr, "valid", "CHO-013: status registered, agent_id, reputation_score",
    )
    v["register-response-reputation-101"] = msg(
        RS, "reputation_score is 101, above the range.", ["CHO-007"],
        with_(rr, reputation_score=101), "invalid", "CHO-007: reputation above 100",
    )
    v["register-response-status-ok"] = msg(
        RS, "status is \"ok\" instead of \"registered\".", ["CHO-013", "CHO-A6"],
        with_(rr, status="ok"), "invalid", "CHO-013: status is not \"registered\"",
    )

    # --- discover-response (chorus.md §3.2)
    ds = discover_example()
    entry = ds["agents"][0]
    v["discover-spec-example"] = msg(
        DS, "The discovery response example of chorus.md §3.2, with a real agent_id.",
        ["CHO-007", "CHO-016", "CHO-017", "CHO-022"], ds, "valid", "CHO-017: well-formed discovery body",
    )
    v["discover-empty"] = msg(
        DS, "No agent matches: agents is an empty array, the reply the project prefers to a 404.",
        ["CHO-016", "CHO-A12"], {"agents": []}, "valid", "CHO-A12: 200 with agents []",
    )
    v["discover-status-offline"] = msg(
        DS, "An entry whose status is \"offline\": discovery status is a free string.",
        ["CHO-022", "CHO-A6", "CHO-A13"], {"agents": [with_(entry, status="offline")]}, "valid",
        "CHO-A6: the SUCCESS/FAILURE/PENDING enum applies to job results only",
    )
    v["discover-reputation-negative"] = msg(
        DS, "An entry has reputation_score -1.", ["CHO-007", "CHO-017"],
        {"agents": [with_(entry, reputation_score=-1)]}, "invalid", "CHO-007: reputation below 0",
    )
    v["discover-skill-missing-cost"] = msg(
        DS, "An entry's skill has no cost_per_call.", ["CHO-017"],
        {"agents": [with_(entry, skill={"skill_name": "analyze_text"})]}, "invalid",
        "CHO-017: skill.cost_per_call missing",
    )

    # --- job-request (chorus.md §3.3)
    jq = job_request_example()
    v["job-request-spec-example"] = msg(
        JQ,
        "The job request example of chorus.md §3.3, with the job_id example of §2 (a version-1 UUID, "
        "valid by syntax) and a real orchestrator_id.",
        ["CHO-003", "CHO-023", "CHO-024", "CHO-025", "CHO-A7"], jq, "valid",
        "CHO-024: complete job request; CHO-A7: any UUID version matches",
    )
    v["job-request-job-id-123"] = msg(
        JQ, "job_id is \"123\".", ["CHO-003"], with_(jq, job_id="123"), "invalid", "CHO-003: job_id is not a UUID",
    )
    v["job-request-missing-input-data"] = msg(
        JQ, "The job request has no input_data.", ["CHO-024"], without(jq, "input_data"), "invalid",
        "CHO-024: input_data missing",
    )
    v["job-request-input-data-string"] = msg(
        JQ, "input_data is a string, not an object.", ["CHO-024"],
        with_(jq, input_data="Revenue for Q3 was $42,000..."), "invalid", "CHO-024: input_data is not an object",
    )
    v["job-request-missing-skill-name"] = msg(
        JQ, "The job request has no skill_name.", ["CHO-024"], without(jq, "skill_name"), "invalid",
        "CHO-024: skill_name missing",
    )

    # --- job-result (chorus.md §3.4)
    jr = job_result_example()
    fr = job_result_failure()
    v["job-result-spec-example"] = msg(
        JR, "The SUCCESS job result example of chorus.md §3.4, with real job_id and agent_id.",
        ["CHO-006", "CHO-029", "CHO-031", "CHO-033", "CHO-034"], jr, "valid", "CHO-031: SUCCESS with output_data and null error_message",
    )
    v["job-result-failure-with-message"] = msg(
        JR, "A FAILURE result with output_data null and an error_message naming the problem.",
        ["CHO-006", "CHO-029", "CHO-032"], fr, "valid", "CHO-032: FAILURE explained in error_message",
    )
    v["job-result-failure-null-message"] = msg(
        JR, "A FAILURE result whose error_message is null.", ["CHO-032"],
        with_(fr, error_message=None), "invalid", "CHO-032: FAILURE without an error_message",
    )
    v["job-result-failure-empty-message"] = msg(
        JR, "A FAILURE result whose error_message is the empty string.", ["CHO-032"],
        with_(fr, error_message=""), "invalid", "CHO-032: FAILURE with an empty error_message",
    )
    v["job-result-success-with-error-message"] = msg(
        JR, "A SUCCESS result that also carries an error_message string.", ["CHO-031"],
        with_(jr, error_message="partial output"), "invalid", "CHO-031: SUCCESS needs error_message null",
    )
    v["job-result-success-null-output"] = msg(
        JR, "A SUCCESS result whose output_data is null.", ["CHO-031"],
        with_(jr, output_data=None), "invalid", "CHO-031: SUCCESS needs an output_data object",
    )
    v["job-result-status-lowercase"] = msg(
        JR, "status is \"success\" in lower case.", ["CHO-006", "CHO-A6"],
        with_(jr, status="success"), "invalid", "CHO-006: status must be upper case",
    )
    v["job-result-time-fraction"] = msg(
        JR, "execution_time_ms is 1.5, not an integer.", ["CHO-034"],
        with_(jr, execution_time_ms=1.5), "invalid", "CHO-034: execution_time_ms is not an integer",
    )
    v["job-result-timestamp-zero-offset"] = msg(
        JR, "timestamp_utc is written with the offset +00:00: UTC, as chorus.md asks.", ["CHO-004", "CHO-A16"],
        with_(jr, timestamp_utc="2026-02-11T14:15:09+00:00"), "valid", "CHO-004: an offset of zero is UTC",
    )
    v["job-result-timestamp-other-offset"] = msg(
        JR, "timestamp_utc has the offset +02:00: not UTC.", ["CHO-004", "CHO-A16"],
        with_(jr, timestamp_utc="2026-02-11T16:15:09+02:00"), "invalid", "CHO-004: timestamp_utc is not UTC",
    )
    v["job-result-missing-error-message"] = msg(
        JR, "A SUCCESS result without the error_message member (it must be present, as null).", ["CHO-029"],
        without(jr, "error_message"), "invalid", "CHO-029: every member is present",
    )
    v["job-result-pending"] = msg(
        JR, "A PENDING result: output_data and error_message null, nothing charged yet.",
        ["CHO-006", "CHO-035", "CHO-A17"],
        with_(jr, job_id=JOB_ID_V4, agent_id=OTHER_AGENT_ID, status="PENDING", output_data=None,
              execution_cost=0.0, execution_time_ms=0),
        "valid", "CHO-035: PENDING is a valid status",
    )

    # --- transfer-request (chorus.md §3.5)
    tr = transfer_example()
    v["transfer-spec-example"] = msg(
        TR, "The transfer example of chorus.md §3.5, with a real transfer_id and job_id.",
        ["CHO-038", "CHO-039"], tr, "valid", "CHO-039: complete transfer body",
    )
    v["transfer-missing-amount"] = msg(
        TR, "The transfer has no amount.", ["CHO-039", "CHO-A11"], without(tr, "amount"), "invalid",
        "CHO-039: amount missing",
    )
    v["transfer-missing-to-owner"] = msg(
        TR, "The transfer has no to_owner.", ["CHO-039"], without(tr, "to_owner"), "invalid",
        "CHO-039: to_owner missing",
    )
    v["transfer-amount-zero"] = msg(
        TR, "amount is 0.", ["CHO-039"], with_(tr, amount=0), "invalid", "CHO-039: amount must be above 0",
    )
    v["transfer-amount-negative"] = msg(
        TR, "amount is -1.", ["CHO-039"], with_(tr, amount=-1), "invalid", "CHO-039: amount must be above 0",
    )
    return v


# ---------------------------------------------------------------------------
# Writing and self-check
# ---------------------------------------------------------------------------


def dump(doc):
    return json.dumps(doc, indent=2, ensure_ascii=False, allow_nan=False) + "\n"


def write_folder(name, vectors):
    folder = HERE / name
    folder.mkdir(exist_ok=True)
    for stale in folder.glob("*.json"):
        if stale.stem not in vectors:
            stale.unlink()
    for stem, doc in sorted(vectors.items()):
        (folder / (stem + ".json")).write_text(dump(doc), encoding="utf-8")


failures = []


def fail(msg):
    failures.append(msg)
    print("FAIL", msg)


# Anchors computed by hand (decimal arithmetic, then the nearest double).
ANCHORS = {
    "success-hirer-50": [51.0],
    "success-hirer-100": [52.0],
    "failure-single": [45.5],
    "success-hirer-92-3": [51.846],
    "clamp-upper": [100.0, 100.0, 95.5],
    "climb-to-upper-clamp": [98.0, 99.75, 100.0],
    "clamp-lower": [0.0, 1.0, 0.0],
    "failures-to-zero": [45.5, 41.0, 36.5, 32.0, 27.5, 23.0, 18.5, 14.0, 9.5, 5.0, 0.5, 0.0],
    "hirer-reputation-zero": [50.0, 50.0, 45.5, 45.5],
}


def same_double(a, b):
    return isinstance(a, float) and isinstance(b, float) and a.hex() == b.hex()


def self_check(rep, msgs):
    for stem, doc in rep.items():
        path = HERE / "reputation" / (stem + ".json")
        text = path.read_text(encoding="utf-8")
        if text != dump(doc):
            fail(f"reputation/{stem}: file differs from the generated text")
        back = json.loads(text)
        if set(back) - {"description", "requirements", "initial", "steps"}:
            fail(f"reputation/{stem}: unexpected members")
        for r in back["requirements"]:
            if not REQ_ID.match(r):
                fail(f"reputation/{stem}: bad requirement id {r}")
        # Recompute from the file alone, written out without the helper above.
        score = back["initial"]
        if not isinstance(score, float) or not 0.0 <= score <= 100.0:
            fail(f"reputation/{stem}: initial {score!r} is not a float in [0, 100]")
        for i, step in enumerate(back["steps"]):
            if step["outcome"] == "SUCCESS":
                h = step["hirer_reputation"]
                if not isinstance(h, float) or not 0.0 <= h <= 100.0:
                    fail(f"reputation/{stem} step {i}: hirer_reputation {h!r}")
                raw = score + ((2.0 * h) / 100.0)
            else:
                if step["outcome"] != "FAILURE" or "hirer_reputation" in step:
                    fail(f"reputation/{stem} step {i}: bad step {step}")
                raw = score - (3.0 * 1.5)
            score = 100.0 if raw > 100.0 else 0.0 if raw < 0.0 else raw
            if not same_double(step["expected"], score):
                fail(f"reputation/{stem} step {i}: expected {step['expected']!r}, recomputed {score!r}")
            if not math.isfinite(score) or not 0.0 <= score <= 100.0:
                fail(f"reputation/{stem} step {i}: {score!r} outside [0, 100]")
        if stem in ANCHORS:
            got = [s["expected"] for s in back["steps"]]
            if len(got) != len(ANCHORS[stem]) or not all(same_double(a, b) for a, b in zip(got, ANCHORS[stem])):
                fail(f"reputation/{stem}: {got} differs from the hand-computed {ANCHORS[stem]}")
    # Properties the descriptions claim.
    alt = [s["outcome"] for s in rep["alternating"]["steps"]]
    if len(alt) != 10 or alt != ["SUCCESS", "FAILURE"] * 5:
        fail("alternating: not 10 alternating outcomes")
    long = rep["long-success-run"]["steps"]
    exp = [s["expected"] for s in long]
    if len(long) != 30 or any(s["outcome"] != "SUCCESS" for s in long):
        fail("long-success-run: not 30 successes")
    if exp[-1] != 100.0 or exp.index(100.0) > 25 or any(b < a for a, b in zip(exp, exp[1:])):
        fail("long-success-run: does not climb to the clamp and stay there")
    if rep["success-hirer-92-3"]["steps"][0]["expected"] != 51.846:
        fail("success-hirer-92-3: not 51.846")

    for stem, doc in msgs.items():
        path = HERE / "messages" / (stem + ".json")
        text = path.read_text(encoding="utf-8")
        if text != dump(doc):
            fail(f"messages/{stem}: file differs from the generated text")
        back = json.loads(text)
        if set(back) != {"description", "requirements", "kind", "input", "expect"}:
            fail(f"messages/{stem}: wrong members {sorted(back)}")
        if back["kind"] not in KINDS:
            fail(f"messages/{stem}: unknown kind {back['kind']}")
        if back["expect"].get("verdict") not in ("valid", "invalid") or not back["expect"].get("reason"):
            fail(f"messages/{stem}: bad expect {back['expect']}")
        for r in back["requirements"]:
            if not REQ_ID.match(r):
                fail(f"messages/{stem}: bad requirement id {r}")
        if "\"uuid\"" in text:
            fail(f"messages/{stem}: still holds the placeholder \"uuid\"")


def main():
    rep = reputation_vectors()
    msgs = message_vectors()
    write_folder("reputation", rep)
    write_folder("messages", msgs)
    self_check(rep, msgs)
    print(f"{len(rep)} reputation sequences, {len(msgs)} message vectors written to {HERE}")
    if failures:
        print(f"{len(failures)} failure(s)")
        sys.exit(1)
    print("self-check passed")


if __name__ == "__main__":
    main()
