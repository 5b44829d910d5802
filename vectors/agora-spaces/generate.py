#!/usr/bin/env python3
"""Generate the agora-spaces golden vectors of agentconform.

Run from anywhere:  python3 vectors/agora-spaces/generate.py
Needs:              the Python standard library only

Writes:
  events/<name>.json   one event and its schema verdict each (agora-spaces.zh.md, 事件类型)
  streams/<name>.json  one space.event.delta stream and its judge verdict each
                       (agora-spaces.zh.md, Space 事件 › space.event.delta, space.event.done,
                       流式传输完整流程)

The script is deterministic: the spec's examples as printed, fixed ids and timestamps,
and a 10 KiB text built from a fixed word list by a fixed linear congruential generator.
Re-running it rewrites byte-identical files and deletes stale *.json files in the two
folders. Edit this script, not the generated files.

After writing, it re-reads every file and runs a self-check (self_check below): file
format, requirement ids, no string ending in a line feed, the stated sizes of the
streams, and each stream's verdict recomputed with the judge rules of README.md.
The schema verdicts of events/ are checked by check.py (needs jsonschema).
"""

import copy
import json
import pathlib
import re
import sys

HERE = pathlib.Path(__file__).resolve().parent
REQ_ID = re.compile(r"^ASP-(00[1-9]|0[1-4][0-9]|05[01]|A([1-9]|1[0-9]|2[0-2]))$")  # ASP-001..051, ASP-A1..A22
SCHEMAS = (
    "agent-register",
    "agent-registered",
    "agent-heartbeat",
    "space-join",
    "space-joined",
    "space-leave",
    "space-members",
    "space-publish",
    "space-event",
    "space-event-delta",
    "space-event-done",
    "space-event-cancel",
    "space-list-request",
    "space-list-reply",
    "error",
)
STREAM_REQS = ["ASP-032", "ASP-033", "ASP-034"]

# ---------------------------------------------------------------------------
# The spec's examples, as printed in agora-spaces.zh.md
# ---------------------------------------------------------------------------


def spec_examples():
    """schema name -> list of (vector stem, example), in the order of the spec."""
    return {
        "agent-register": [("agent-register-spec-example", {
            "type": "agent.register",
            "id": "msg_001",
            "agent": {
                "id": "agent-001",
                "type": "process",
                "capabilities": ["text", "code_execution"],
                "metadata": {"version": "1.0.0", "os": "linux"},
            },
        })],
        "agent-registered": [("agent-registered-spec-example", {
            "type": "agent.registered",
            "id": "msg_001",
            "agent": {"id": "agent-001", "connection_id": "ws-1234567890"},
        })],
        "agent-heartbeat": [("agent-heartbeat-spec-example", {
            "type": "agent.heartbeat",
            "timestamp": 1234567890,
        })],
        "space-join": [("space-join-spec-example", {
            "type": "space.join",
            "id": "msg_002",
            "space": "general",
        })],
        "space-joined": [("space-joined-spec-example", {
            "type": "space.joined",
            "id": "msg_002",
            "space": "general",
            "members": ["agent-001", "agent-002"],
        })],
        "space-leave": [("space-leave-spec-example", {
            "type": "space.leave",
            "id": "msg_003",
            "space": "general",
        })],
        "space-members": [("space-members-spec-example", {
            "type": "space.members",
            "space": "general",
            "members": ["agent-001", "agent-002", "agent-003"],
            "joined": "agent-003",
            "left": None,
        })],
        "space-publish": [("space-publish-spec-example", {
            "type": "space.publish",
            "id": "msg_004",
            "space": "general",
            "data": {"from": "agent-001", "text": "Hello everyone", "timestamp": 1234567890},
        })],
        "space-event": [("space-event-spec-example", {
            "type": "space.event",
            "space": "general",
            "data": {"from": "agent-002", "text": "Hi there!", "timestamp": 1234567891},
        })],
        "space-event-delta": [
            ("space-event-delta-spec-example-first", {
                "type": "space.event.delta",
                "space": "general",
                "event_id": "evt_001",
                "data": {"from": "agent-002", "text": "Hello "},
            }),
            ("space-event-delta-spec-example-second", {
                "type": "space.event.delta",
                "space": "general",
                "event_id": "evt_001",
                "data": {"text": "world!"},
            }),
        ],
        "space-event-done": [("space-event-done-spec-example", {
            "type": "space.event.done",
            "space": "general",
            "event_id": "evt_001",
        })],
        "space-event-cancel": [("space-event-cancel-spec-example", {
            "type": "space.event.cancel",
            "space": "general",
            "event_id": "evt_001",
        })],
        "space-list-request": [("space-list-request-spec-example", {
            "type": "space.list",
            "id": "msg_005",
        })],
        "space-list-reply": [("space-list-reply-spec-example", {
            "type": "space.list",
            "id": "msg_005",
            "spaces": [
                {"id": "general", "type": "public", "member_count": 3},
                {"id": "agent.status", "type": "system", "member_count": 10},
            ],
        })],
        "error": [("error-spec-example", {
            "type": "error",
            "code": "SPACE_NOT_FOUND",
            "message": "Space 'unknown' does not exist",
            "request_id": "msg_002",
        })],
    }


# Requirements each spec example illustrates.
SPEC_REQS = {
    "agent-register": ["ASP-010", "ASP-A20"],
    "agent-registered": ["ASP-007", "ASP-008", "ASP-011"],
    "agent-heartbeat": ["ASP-017", "ASP-020"],
    "space-join": ["ASP-022"],
    "space-joined": ["ASP-021", "ASP-023"],
    "space-leave": ["ASP-025"],
    "space-members": ["ASP-026"],
    "space-publish": ["ASP-028"],
    "space-event": ["ASP-029"],
    "space-event-delta": ["ASP-032"],
    "space-event-done": ["ASP-034"],
    "space-event-cancel": ["ASP-036"],
    "space-list-request": ["ASP-038", "ASP-A2"],
    "space-list-reply": ["ASP-021", "ASP-039", "ASP-A2"],
    "error": ["ASP-024", "ASP-041", "ASP-042"],
}

# Where each example is printed, for the descriptions.
SPEC_WHERE = {
    "agent-register": "Agent 事件 › agent.register",
    "agent-registered": "Agent 事件 › agent.registered",
    "agent-heartbeat": "Agent 事件 › agent.heartbeat",
    "space-join": "Space 事件 › space.join",
    "space-joined": "Space 事件 › space.joined",
    "space-leave": "Space 事件 › space.leave",
    "space-members": "Space 事件 › space.members",
    "space-publish": "Space 事件 › space.publish",
    "space-event": "Space 事件 › space.event",
    "space-event-delta": "Space 事件 › space.event.delta",
    "space-event-done": "Space 事件 › space.event.done",
    "space-event-cancel": "Space 事件 › space.event.cancel",
    "space-list-request": "Space 事件 › space.list (client → server)",
    "space-list-reply": "Space 事件 › space.list (server → client)",
    "error": "错误处理 › 错误格式",
}

# ---------------------------------------------------------------------------
# events/
# ---------------------------------------------------------------------------


def ev(schema, description, requirements, value, verdict, reason):
    assert schema in SCHEMAS, schema
    return {
        "description": description,
        "requirements": requirements,
        "schema": schema,
        "input": value,
        "expect": {"verdict": verdict, "reason": reason},
    }


def without(d, *path):
    """A deep copy of d with the member at path removed."""
    d = copy.deepcopy(d)
    node = d
    for key in path[:-1]:
        node = node[key]
    del node[path[-1]]
    return d


def with_(d, path, value):
    """A deep copy of d with the member (or array element) at path set to value."""
    d = copy.deepcopy(d)
    node = d
    for key in path[:-1]:
        node = node[key]
    node[path[-1]] = value
    return d


def event_vectors():
    v = {}
    ex = spec_examples()
    for schema, items in ex.items():
        for stem, value in items:
            which = ""
            if stem.endswith("-first"):
                which = " (the first of the two deltas)"
            elif stem.endswith("-second"):
                which = " (the second of the two deltas)"
            v[stem] = ev(
                schema,
                f"The example of agora-spaces.zh.md, {SPEC_WHERE[schema]}{which}, as printed.",
                SPEC_REQS[schema], value, "valid", "the spec's own example",
            )
    E = {schema: items[0][1] for schema, items in ex.items()}
    delta2 = ex["space-event-delta"][1][1]

    # --- agent.register / agent.registered / agent.heartbeat
    v["agent-register-minimal"] = ev(
        "agent-register", "agent.register whose agent carries only an id.", ["ASP-010", "ASP-A20"],
        {"type": "agent.register", "id": "h-1", "agent": {"id": "agent-001"}}, "valid",
        "ASP-010: type, capabilities and metadata are optional",
    )
    v["agent-register-capabilities-string"] = ev(
        "agent-register", "agent.register whose capabilities is the string \"text\", not an array.", ["ASP-010", "ASP-012"],
        with_(E["agent-register"], ("agent", "capabilities"), "text"), "invalid",
        "ASP-012: capabilities is not an array",
    )
    v["agent-registered-missing-connection-id"] = ev(
        "agent-registered", "agent.registered whose agent has no connection_id.", ["ASP-008"],
        without(E["agent-registered"], "agent", "connection_id"), "invalid",
        "ASP-008: agent.connection_id missing",
    )
    v["agent-registered-empty-connection-id"] = ev(
        "agent-registered", "agent.registered whose agent.connection_id is the empty string.", ["ASP-008", "ASP-009"],
        with_(E["agent-registered"], ("agent", "connection_id"), ""), "invalid",
        "ASP-008: agent.connection_id is empty",
    )
    v["agent-heartbeat-without-timestamp"] = ev(
        "agent-heartbeat", "agent.heartbeat without timestamp: valid, the harness reports a warning.",
        ["ASP-017", "ASP-020", "ASP-A6"], without(E["agent-heartbeat"], "timestamp"), "valid",
        "ASP-A6: a missing timestamp is only a warning",
    )
    v["agent-heartbeat-milliseconds"] = ev(
        "agent-heartbeat", "agent.heartbeat whose timestamp is in Unix milliseconds.", ["ASP-020", "ASP-A6"],
        with_(E["agent-heartbeat"], ("timestamp",), 1234567890123), "valid",
        "ASP-A6: seconds or milliseconds are both accepted",
    )
    v["agent-heartbeat-timestamp-string"] = ev(
        "agent-heartbeat", "agent.heartbeat whose timestamp is the string \"1234567890\".", ["ASP-017", "ASP-020", "ASP-A6"],
        with_(E["agent-heartbeat"], ("timestamp",), "1234567890"), "invalid",
        "ASP-A6: a timestamp, when present, is a number",
    )

    # --- space.join / space.joined / space.leave / space.members
    v["space-join-missing-space"] = ev(
        "space-join", "space.join without space.", ["ASP-022", "ASP-043"],
        without(E["space-join"], "space"), "invalid", "ASP-043: space.join with no space is malformed",
    )
    v["space-joined-members-not-array"] = ev(
        "space-joined", "space.joined whose members is a string, not an array.", ["ASP-023"],
        with_(E["space-joined"], ("members",), "agent-001"), "invalid", "ASP-023: members is not an array",
    )
    v["space-members-left"] = ev(
        "space-members", "space.members announcing a departure: left names the agent, joined is null.",
        ["ASP-026", "ASP-027"],
        {"type": "space.members", "space": "general", "members": ["agent-001", "agent-002"],
         "joined": None, "left": "agent-003"},
        "valid", "ASP-027: left set, joined null",
    )
    v["space-members-missing-left"] = ev(
        "space-members", "space.members without the left member.", ["ASP-026"],
        without(E["space-members"], "left"), "invalid", "ASP-026: left missing (it must be present, possibly null)",
    )
    v["space-members-members-not-array"] = ev(
        "space-members", "space.members whose members is a string, not an array.", ["ASP-026"],
        with_(E["space-members"], ("members",), "agent-001,agent-002,agent-003"), "invalid",
        "ASP-026: members is not an array",
    )
    v["space-members-given-space-joined"] = ev(
        "space-members", "The space.joined example validated against the space.members schema.", ["ASP-018", "ASP-026"],
        copy.deepcopy(E["space-joined"]), "invalid",
        "ASP-018: type is space.joined, not space.members (and joined, left are missing)",
    )

    # --- space.publish / space.event
    v["space-publish-missing-text"] = ev(
        "space-publish", "space.publish whose data has no text.", ["ASP-028"],
        without(E["space-publish"], "data", "text"), "invalid", "ASP-028: data.text missing",
    )
    v["space-event-minimal"] = ev(
        "space-event", "space.event whose data carries only text: valid, the harness warns about from and timestamp.",
        ["ASP-029", "ASP-A6"],
        {"type": "space.event", "space": "general", "data": {"text": "Hi there!"}}, "valid",
        "ASP-029: data.from and data.timestamp are recommended, not required",
    )
    v["space-event-jsonrpc-member"] = ev(
        "space-event", "space.event that also carries \"jsonrpc\": \"2.0\".", ["ASP-002", "ASP-A1"],
        with_(E["space-event"], ("jsonrpc",), "2.0"), "valid",
        "ASP-A1: a jsonrpc member is neither required nor rejected",
    )
    v["space-event-missing-text"] = ev(
        "space-event", "space.event whose data has no text.", ["ASP-029"],
        without(E["space-event"], "data", "text"), "invalid", "ASP-029: data.text missing",
    )
    v["space-event-missing-type"] = ev(
        "space-event", "The space.event example without its type member.", ["ASP-018"],
        without(E["space-event"], "type"), "invalid", "ASP-018: every event carries type",
    )
    v["space-publish-given-space-event"] = ev(
        "space-publish", "The space.event example validated against the space.publish schema (same shape, other type).",
        ["ASP-018", "ASP-028"], copy.deepcopy(E["space-event"]), "invalid",
        "ASP-018: type is space.event, not space.publish",
    )

    # --- space.event.delta / done / cancel
    v["space-event-delta-missing-event-id"] = ev(
        "space-event-delta", "The first delta example without event_id.", ["ASP-032"],
        without(E["space-event-delta"], "event_id"), "invalid", "ASP-032: event_id missing",
    )
    v["space-event-delta-empty-event-id"] = ev(
        "space-event-delta", "The first delta example with event_id \"\".", ["ASP-032"],
        with_(E["space-event-delta"], ("event_id",), ""), "invalid", "ASP-032: event_id is empty",
    )
    v["space-event-delta-text-number"] = ev(
        "space-event-delta", "The second delta example with data.text the number 42.", ["ASP-032", "ASP-033"],
        with_(delta2, ("data", "text"), 42), "invalid", "ASP-032: data.text is not a string",
    )
    v["space-event-done-missing-event-id"] = ev(
        "space-event-done", "space.event.done without event_id.", ["ASP-034"],
        without(E["space-event-done"], "event_id"), "invalid", "ASP-034: event_id missing",
    )
    v["space-event-cancel-given-space-event-done"] = ev(
        "space-event-cancel", "The space.event.done example validated against the space.event.cancel schema (same shape, other type).",
        ["ASP-018", "ASP-036"], copy.deepcopy(E["space-event-done"]), "invalid",
        "ASP-018: type is space.event.done, not space.event.cancel",
    )

    # --- space.list (ASP-A2: request has no spaces; the reply has)
    v["space-list-request-without-id"] = ev(
        "space-list-request", "space.list request without id.", ["ASP-019", "ASP-038", "ASP-A7"],
        without(E["space-list-request"], "id"), "valid", "ASP-019: id is optional",
    )
    v["space-list-request-with-spaces"] = ev(
        "space-list-request", "space.list request carrying a spaces member.", ["ASP-038", "ASP-A2"],
        with_(E["space-list-request"], ("spaces",), []), "invalid",
        "ASP-A2: a client space.list carries no spaces",
    )
    v["space-list-reply-empty"] = ev(
        "space-list-reply", "space.list reply with an empty spaces array.", ["ASP-039"],
        with_(E["space-list-reply"], ("spaces",), []), "valid", "ASP-039: no Space listed",
    )
    v["space-list-reply-member-count-negative"] = ev(
        "space-list-reply", "The space.list reply example with member_count -1 for general.", ["ASP-039"],
        with_(E["space-list-reply"], ("spaces", 0, "member_count"), -1), "invalid",
        "ASP-039: member_count is negative",
    )
    v["space-list-reply-member-count-string"] = ev(
        "space-list-reply", "The space.list reply example with member_count \"3\" (a string) for general.", ["ASP-039"],
        with_(E["space-list-reply"], ("spaces", 0, "member_count"), "3"), "invalid",
        "ASP-039: member_count is not an integer",
    )
    v["space-list-reply-member-count-fraction"] = ev(
        "space-list-reply", "The space.list reply example with member_count 2.5 for general.", ["ASP-039"],
        with_(E["space-list-reply"], ("spaces", 0, "member_count"), 2.5), "invalid",
        "ASP-039: member_count is not an integer",
    )
    v["space-list-reply-given-request"] = ev(
        "space-list-reply", "The space.list request example validated against the reply schema.", ["ASP-039", "ASP-A2"],
        copy.deepcopy(E["space-list-request"]), "invalid", "ASP-A2: a reply carries spaces",
    )

    # --- error
    v["error-unknown-code"] = ev(
        "error", "error with a code outside the six of the spec: valid, the harness warns.", ["ASP-041", "ASP-042"],
        with_(E["error"], ("code",), "SPACE_ARCHIVED"), "valid",
        "ASP-042: an unknown code is a warning, not a schema violation",
    )
    v["error-without-request-id"] = ev(
        "error", "error without request_id (the failed request carried no id, or the error is connection-level).",
        ["ASP-041", "ASP-A7", "ASP-A21"],
        {"type": "error", "code": "INVALID_REQUEST", "message": "frame is not valid JSON"}, "valid",
        "ASP-A7: request_id is checked by the harness where the request had an id",
    )
    v["error-request-id-null"] = ev(
        "error", "error with request_id null, answering a frame that is not JSON and so carries no id.",
        ["ASP-041", "ASP-A7"],
        {"type": "error", "code": "INVALID_REQUEST", "message": "frame is not valid JSON", "request_id": None}, "valid",
        "ASP-A7: a failed request without an id leaves request_id undefined; null or absent are both read as no id",
    )
    v["error-missing-code"] = ev(
        "error", "The error example without code.", ["ASP-041"],
        without(E["error"], "code"), "invalid", "ASP-041: code missing",
    )
    v["error-code-number"] = ev(
        "error", "The error example with code the number 404.", ["ASP-041", "ASP-042"],
        with_(E["error"], ("code",), 404), "invalid", "ASP-041: code is not a string",
    )
    return v


# ---------------------------------------------------------------------------
# streams/
# ---------------------------------------------------------------------------

WORDS = (
    "agent", "space", "event", "delta", "chunk", "stream", "member", "publish", "general", "message",
    "heartbeat", "register", "connection", "order", "text", "server", "client", "frame", "done", "join",
)


def ten_kib_text():
    """10240 ASCII bytes: words picked by a fixed LCG, sentences of 12 words, no line feed."""
    state = 20240601
    words = []
    while sum(len(w) + 1 for w in words) < 10300:
        state = (state * 1103515245 + 12345) % 2**31
        w = WORDS[(state >> 16) % len(WORDS)]
        if len(words) % 12 == 0:
            w = w.capitalize()
        if len(words) % 12 == 11:
            w += "."
        words.append(w)
    out = " ".join(words)[:10239].rstrip(" ") + "."
    out = out + "." * (10240 - len(out))
    assert len(out.encode("utf-8")) == 10240 and out.isascii() and "\n" not in out
    return out


def delta(space, event_id, text, sender=None):
    data = {}
    if sender is not None:
        data["from"] = sender
    data["text"] = text
    return {"type": "space.event.delta", "space": space, "event_id": event_id, "data": data}


def done(space, event_id):
    return {"type": "space.event.done", "space": space, "event_id": event_id}


def frames_for(chunks, space="general", event_id="evt_001", sender="agent-002"):
    f = [delta(space, event_id, c, sender if i == 0 else None) for i, c in enumerate(chunks)]
    f.append(done(space, event_id))
    return f


def stream(description, published, frames, verdict, reason, requirements=None):
    reassembled = "".join(f["data"]["text"] for f in frames if f["type"] == "space.event.delta") if verdict == "valid" else None
    return {
        "description": description,
        "requirements": requirements or list(STREAM_REQS),
        "published_text": published,
        "frames": frames,
        "expect": {"verdict": verdict, "reassembled": reassembled, "reason": reason},
    }


UTF8_CHUNKS = ["日本語の", "テキスト、こんにちは ", "🌏", " emoji 🎉", "🚀 と café 終わり"]
LONG_CHUNKS = ["The quick brown fox ", "jumps over ", "the lazy dog."]


def stream_vectors():
    s = {}
    hw = ["Hello ", "world!"]
    base = frames_for(hw)
    s["spec-hello-world"] = stream(
        "The spec's streaming example: deltas \"Hello \" and \"world!\" (the two delta examples as printed) then done.",
        "Hello world!", base, "valid", "all rules hold; the spec's own flow",
        ["ASP-032", "ASP-033", "ASP-034", "ASP-035"],
    )
    utf8 = "".join(UTF8_CHUNKS)
    s["utf8-multibyte"] = stream(
        "Japanese text and emoji (4-byte UTF-8, outside the BMP) split on code point boundaries; one delta is a single emoji.",
        utf8, frames_for(UTF8_CHUNKS, event_id="evt_utf8"), "valid", "all rules hold; chunks join to the text",
    )
    s["single-delta"] = stream(
        "A stream of one delta carrying the whole text, then done.",
        "Hi there!", frames_for(["Hi there!"], event_id="evt_single"), "valid", "all rules hold; one chunk",
        ["ASP-032", "ASP-033", "ASP-034", "ASP-A12"],
    )
    big = ten_kib_text()
    s["ten-kib-three-chunks"] = stream(
        "A 10240-byte ASCII text (above the 4096-byte delta threshold) in three deltas of 4096, 4096 and 2048 bytes.",
        big, frames_for([big[:4096], big[4096:8192], big[8192:]], event_id="evt_10k"), "valid",
        "all rules hold; chunks join to the 10 KiB text",
    )

    # Invalid: each breaks exactly one rule (README.md, judge rules S1-S6).
    f = frames_for(hw)
    f[1]["event_id"] = "evt_002"
    s["two-event-ids"] = stream(
        "The second delta carries event_id evt_002 while the others carry evt_001.",
        "Hello world!", f, "invalid", "frames carry two different event_ids (ASP-032, rule S2)",
    )
    f = frames_for(hw)
    f[2]["space"] = "random"
    s["space-mismatch"] = stream(
        "The done frame names space random while the deltas name general.",
        "Hello world!", f, "invalid", "frames carry two different spaces (ASP-034, rule S2)",
    )
    f = frames_for(hw)
    f[1]["data"]["text"] = 42
    s["text-number"] = stream(
        "The second delta's data.text is the number 42.",
        "Hello world!", f, "invalid", "a delta's data.text is not a string (ASP-032, rule S3)",
    )
    f = frames_for(hw)
    del f[0]["data"]["from"]
    s["first-delta-without-from"] = stream(
        "The spec's example stream with data.from removed from the first delta.",
        "Hello world!", f, "invalid", "first delta carries no data.from (ASP-032, rule S4)",
    )
    f = frames_for(hw)[:-1]
    s["missing-done"] = stream(
        "Both deltas arrive but no space.event.done follows.",
        "Hello world!", f, "invalid", "no done frame (ASP-034, rule S5)",
    )
    f = frames_for(["Hello ", "world", "!"])
    f = [f[0], f[1], f[3], f[2]]
    s["delta-after-done"] = stream(
        "A delta arrives after the done frame (the concatenation of all deltas would still be right).",
        "Hello world!", f, "invalid", "a delta follows the done frame (ASP-034, rule S5)",
    )
    f = frames_for(hw)
    f.append(copy.deepcopy(f[-1]))
    s["two-done"] = stream(
        "The done frame is sent twice.",
        "Hello world!", f, "invalid", "two done frames (ASP-034, rule S5)",
    )
    f = frames_for(LONG_CHUNKS, event_id="evt_drop")
    del f[1]
    s["chunk-dropped"] = stream(
        "The middle of three deltas is missing: the deltas join to \"The quick brown fox the lazy dog.\".",
        "".join(LONG_CHUNKS), f, "invalid", "the concatenation differs from the published text (ASP-033, rule S6)",
    )
    return s


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
        path = folder / (stem + ".json")
        text = dump(doc)
        if not path.exists() or path.read_text(encoding="utf-8") != text:
            path.write_text(text, encoding="utf-8")


failures = []


def fail(msg):
    failures.append(msg)
    print("FAIL", msg)


def strings(value):
    """Every string in a JSON value, member names included."""
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for k, x in value.items():
            yield k
            yield from strings(x)
    elif isinstance(value, list):
        for x in value:
            yield from strings(x)


def judge(published, frames):
    """The judge rules S1-S6 of README.md. Returns (broken rules, reassembled or None)."""
    broken = []
    kinds = [f.get("type") if isinstance(f, dict) else None for f in frames]
    deltas = [f for f, k in zip(frames, kinds) if k == "space.event.delta"]
    if not frames or any(k not in ("space.event.delta", "space.event.done") for k in kinds) or not deltas:
        broken.append("S1")
    ids = {json.dumps(f.get("event_id")) for f in frames if isinstance(f, dict)}
    spaces = {json.dumps(f.get("space")) for f in frames if isinstance(f, dict)}
    eid = frames[0].get("event_id") if frames and isinstance(frames[0], dict) else None
    sp = frames[0].get("space") if frames and isinstance(frames[0], dict) else None
    if len(ids) != 1 or len(spaces) != 1 or not isinstance(eid, str) or not eid or not isinstance(sp, str) or not sp:
        broken.append("S2")
    texts_ok = all(isinstance(d.get("data"), dict) and isinstance(d["data"].get("text"), str) for d in deltas)
    if not texts_ok:
        broken.append("S3")
    if deltas and not (isinstance(deltas[0].get("data"), dict) and isinstance(deltas[0]["data"].get("from"), str)):
        broken.append("S4")
    if kinds.count("space.event.done") != 1 or kinds[-1:] != ["space.event.done"]:
        broken.append("S5")
    joined = "".join(d["data"]["text"] for d in deltas) if texts_ok else None
    if joined is not None and joined != published:
        broken.append("S6")
    return broken, (joined if not broken else None)


def self_check(events, streams):
    for stem, doc in events.items():
        text = (HERE / "events" / (stem + ".json")).read_text(encoding="utf-8")
        if text != dump(doc):
            fail(f"events/{stem}: file differs from the generated text")
        back = json.loads(text)
        if list(back) != ["description", "requirements", "schema", "input", "expect"]:
            fail(f"events/{stem}: wrong members {list(back)}")
        if back["schema"] not in SCHEMAS:
            fail(f"events/{stem}: unknown schema {back['schema']}")
        if not stem.startswith(back["schema"] + "-"):
            fail(f"events/{stem}: name does not start with its schema")
        if back["expect"].get("verdict") not in ("valid", "invalid") or not back["expect"].get("reason"):
            fail(f"events/{stem}: bad expect {back['expect']}")
        for r in back["requirements"]:
            if not REQ_ID.match(r):
                fail(f"events/{stem}: bad requirement id {r}")
        if any(s.endswith("\n") for s in strings(back)):
            fail(f"events/{stem}: a string ends with a line feed")
    for schema in SCHEMAS:
        if not any(d["schema"] == schema and d["expect"]["verdict"] == "valid" for d in events.values()):
            fail(f"events: no valid vector for {schema}")

    for stem, doc in streams.items():
        text = (HERE / "streams" / (stem + ".json")).read_text(encoding="utf-8")
        if text != dump(doc):
            fail(f"streams/{stem}: file differs from the generated text")
        back = json.loads(text)
        if list(back) != ["description", "requirements", "published_text", "frames", "expect"]:
            fail(f"streams/{stem}: wrong members {list(back)}")
        for r in back["requirements"]:
            if not REQ_ID.match(r):
                fail(f"streams/{stem}: bad requirement id {r}")
        if any(s.endswith("\n") for s in strings(back)):
            fail(f"streams/{stem}: a string ends with a line feed")
        broken, reassembled = judge(back["published_text"], back["frames"])
        exp = back["expect"]
        if exp["verdict"] == "valid":
            if broken or reassembled != back["published_text"] or exp["reassembled"] != reassembled:
                fail(f"streams/{stem}: valid stream breaks {broken} or reassembles wrongly")
        else:
            if len(broken) != 1 or exp["reassembled"] is not None or f"rule {broken[0]})" not in exp["reason"]:
                fail(f"streams/{stem}: invalid stream breaks {broken}, reason {exp['reason']!r}")
    # Properties the descriptions claim.
    big = streams["ten-kib-three-chunks"]
    sizes = [len(f["data"]["text"].encode("utf-8")) for f in big["frames"][:-1]]
    if sizes != [4096, 4096, 2048] or len(big["published_text"].encode("utf-8")) != 10240:
        fail(f"ten-kib-three-chunks: chunk sizes {sizes}")
    u = streams["utf8-multibyte"]
    if not any(ord(c) > 0xFFFF for c in u["published_text"]) or not any(
        f.get("data", {}).get("text") == "🌏" for f in u["frames"]
    ):
        fail("utf8-multibyte: no astral-plane character or no single-emoji chunk")
    hw = streams["spec-hello-world"]["frames"]
    ex = spec_examples()
    if hw != [ex["space-event-delta"][0][1], ex["space-event-delta"][1][1], ex["space-event-done"][0][1]]:
        fail("spec-hello-world: frames are not the spec's examples")


def main():
    events = event_vectors()
    streams = stream_vectors()
    write_folder("events", events)
    write_folder("streams", streams)
    self_check(events, streams)
    print(f"{len(events)} event vectors, {len(streams)} stream vectors written to {HERE}")
    if failures:
        print(f"{len(failures)} failure(s)")
        sys.exit(1)
    print("self-check passed")


if __name__ == "__main__":
    main()
