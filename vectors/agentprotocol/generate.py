#!/usr/bin/env python3
"""Generate the agentprotocol golden vectors of agentconform.

Run from anywhere:  python3 vectors/agentprotocol/generate.py
Needs:              pip install rfc8785 cryptography
Optional:           jsonschema (>= 4.18), to cross-check messages/ against
                    schemas/agentprotocol/*.schema.json (check.py requires it)

Writes signed/*.json (signature vectors) and messages/*.json (schema vectors);
see README.md for both formats. Files this script did not write are removed
from signed/ and messages/, so the folders always hold exactly one run's output.

The script is deterministic: fixed Ed25519 seeds (Ed25519 signing is itself
deterministic), a fixed timestamp, message ids derived from the vector name.
Re-running it rewrites byte-identical files. After writing, it re-reads every
vector and checks it (see self_check); it exits non-zero if anything disagrees.

Signing rule (the project's reading of agentprotocol.md, Signature
Verification; ambiguities AGP-A1, AGP-A2, AGP-A4, AGP-A5): remove `signature`,
canonicalize the rest with RFC 8785 (JCS: object keys sorted recursively by
UTF-16 code units, arrays keep their order), sign the UTF-8 bytes with pure
Ed25519 (RFC 8032), write the 64-byte signature in standard padded base64.
from.agentId is the standard padded base64 of the raw 32-byte public key.

Libraries: rfc8785 (RFC 8785 JSON Canonicalization Scheme), cryptography
(Ed25519). None of the project's Rust code is used here.
"""

import base64
import copy
import glob
import hashlib
import json
import os
import sys
import uuid

import rfc8785
from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric.ed25519 import (
    Ed25519PrivateKey,
    Ed25519PublicKey,
)

HERE = os.path.dirname(os.path.abspath(__file__))
SIGNED = os.path.join(HERE, "signed")
MESSAGES = os.path.join(HERE, "messages")
SCHEMAS = os.path.join(HERE, "..", "..", "schemas", "agentprotocol")

PROTOCOL = "agentprotocol/0.1"
TS = "2026-02-01T15:08:00Z"  # timestamp of every generated message

NAIVE_REASON = "signed over naive sorted-key JSON"

# ---------------------------------------------------------------- keys, ids


def ed_key(seed_byte):
    return Ed25519PrivateKey.from_private_bytes(bytes([seed_byte]) * 32)


def raw_pub(priv):
    return priv.public_key().public_bytes(
        serialization.Encoding.Raw, serialization.PublicFormat.Raw
    )


def b64(data):
    return base64.standard_b64encode(data).decode("ascii")


def b64u_nopad(data):
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode("ascii")


def b64_any(s):
    """Decode standard or URL-safe base64, padded or not (ambiguity AGP-A4)."""
    s = s.replace("-", "+").replace("_", "/")
    s += "=" * (-len(s) % 4)
    return base64.b64decode(s, validate=True)


KEY_A = ed_key(0x11)  # the sender (harness side)
KEY_B = ed_key(0x22)  # the target, and the "other" key
PUB_A, PUB_B = raw_pub(KEY_A), raw_pub(KEY_B)
ID_A, ID_B = b64(PUB_A), b64(PUB_B)
CAPS = ["agentprotocol:core"]


def msg_id(name):
    """A UUID v4-shaped id derived from a name (deterministic)."""
    digest = hashlib.sha256(b"agentconform agentprotocol vector " + name.encode()).digest()
    return str(uuid.UUID(bytes=digest[:16], version=4))


# ---------------------------------------------------------------- signing


def unsigned(msg):
    m = copy.deepcopy(msg)
    m.pop("signature", None)
    return m


def jcs(msg):
    """RFC 8785 bytes of the message without signature: what a verifier computes."""
    return rfc8785.dumps(unsigned(msg))


def naive(msg):
    """Python's sorted-key JSON of the message without signature (the trap)."""
    return json.dumps(unsigned(msg), sort_keys=True, separators=(",", ":"),
                      ensure_ascii=True).encode("ascii")


def ed_verify(pub, sig, data):
    try:
        Ed25519PublicKey.from_public_bytes(pub).verify(sig, data)
        return True
    except (InvalidSignature, ValueError):
        return False


def message(name, mtype, payload, sender="A", caps=None, metadata=None):
    """A full base message (agentprotocol.md, Message Format), not yet signed.
    A sends to B; B (the target) replies to A."""
    frm, to = (ID_A, ID_B) if sender == "A" else (ID_B, ID_A)
    m = {
        "protocol": PROTOCOL,
        "id": msg_id(name),
        "timestamp": TS,
        "from": {"agentId": frm, "name": "Agent " + sender,
                 "capabilities": list(CAPS if caps is None else caps)},
        "to": {"agentId": to, "broadcast": False},
        "type": mtype,
        "payload": payload,
    }
    if metadata is not None:
        m["metadata"] = metadata
    return m


def sign(msg, key, over="jcs", encode=b64):
    data = jcs(msg) if over == "jcs" else naive(msg)
    msg["signature"] = encode(key.sign(data))
    return msg


# ---------------------------------------------------------------- vectors

SIGNED_V = {}    # file name -> vector (insertion order = write order)
MESSAGE_V = {}
PROOF = {}       # file name -> (signer public key, bytes actually signed)

VALID_REASON = ("signed by the key named in from.agentId over the RFC 8785 form of the "
                "message without signature; verifies")


def add_signed(name, description, requirements, msg, verdict, reason, *,
               informational, signer_pub, signed_bytes):
    canon = jcs(msg).decode("utf-8")
    nav = naive(msg).decode("ascii")
    v = {
        "description": description,
        "requirements": list(dict.fromkeys(requirements)),
        "informational": informational,
        "message": msg,
        "canonical": canon,
        "naive_sorted": nav,
        "naive_differs": canon != nav,
        "expect": {"signature": verdict, "reason": reason},
    }
    fname = name + ".json"
    assert fname not in SIGNED_V, name
    SIGNED_V[fname] = v
    PROOF[fname] = (signer_pub, signed_bytes)


def valid_signed(name, description, requirements, msg, key=KEY_A, informational=False,
                 encode=b64):
    sign(msg, key, encode=encode)
    add_signed(name, description, requirements, msg, "valid", VALID_REASON,
               informational=informational, signer_pub=raw_pub(key),
               signed_bytes=jcs(msg))
    return msg


def echo_request(name, params, correlation="req-1"):
    return message(name, "request", {"action": "echo", "correlationId": correlation,
                                     "params": params, "timeout": 30000})


SIG_REQS = ["AGP-005", "AGP-012", "AGP-030", "AGP-031", "AGP-032", "AGP-034",
            "AGP-A1", "AGP-A4", "AGP-A5"]

# The interop traps: each is an echo request whose params hold one value. For each
# the vector states whether Python's naive sorted-key JSON equals RFC 8785.
TRAPS = [
    ("trap-ascii-plain", {"text": "hello", "count": 3, "ok": True, "none": None},
     "plain ASCII strings, a small integer, true and null", False),
    ("trap-ascii-escapes", {"text": "tab\there \"quoted\" back\\slash unit\u001fsep a/b"},
     "ASCII text with a tab, quotes, a backslash, U+001F and a solidus: both escape "
     "them the same way (\\t, \\\", \\\\, \\u001f, / left alone)", True),
    ("trap-text-cafe", {"text": "café"},
     "the non-ASCII text \"café\": RFC 8785 writes é as literal UTF-8, "
     "ensure_ascii writes \\u00e9", True),
    ("trap-text-cjk", {"text": "日本語"},
     "the text \"日本語\": RFC 8785 keeps it literal (9 UTF-8 bytes), ensure_ascii "
     "writes \\u65e5\\u672c\\u8a9e", True),
    ("trap-text-emoji", {"text": "ok \U0001F600"},
     "an emoji outside the BMP (U+1F600): RFC 8785 keeps it literal (4 UTF-8 bytes), "
     "ensure_ascii writes the surrogate pair \\ud83d\\ude00", True),
    ("trap-text-del-u2028", {"text": "del\u007fline\u2028sep"},
     "U+007F (DEL) and U+2028 (LINE SEPARATOR): RFC 8785 escapes only U+0000..U+001F, "
     "so both stay literal; ensure_ascii writes \\u007f and \\u2028", True),
    ("trap-number-1e21", {"value": 1e21},
     "the number 1e21: RFC 8785 writes 1e+21 and so does Python's float repr, so the "
     "two agree here", True),
    ("trap-number-1e20", {"value": 1e20},
     "the number 1e20: RFC 8785 switches to exponent notation only from 1e21 and writes "
     "100000000000000000000; Python writes 1e+20", True),
    ("trap-number-1-0", {"value": 1.0},
     "the number 1.0: RFC 8785 writes 1, Python writes 1.0", True),
    ("trap-number-0-1", {"value": 0.1},
     "the number 0.1: both write 0.1", True),
    ("trap-number-1e-6", {"value": 1e-6},
     "the number 1e-6: RFC 8785 writes 0.000001 (plain notation down to 1e-6), Python "
     "writes 1e-06", True),
    ("trap-number-1e-7", {"value": 1e-7},
     "the number 1e-7: RFC 8785 writes 1e-7, Python writes 1e-07 (two-digit exponent)",
     True),
    ("trap-number-negative-zero", {"value": -0.0},
     "the number -0.0: RFC 8785 writes 0, Python writes -0.0", True),
    ("trap-key-non-ascii", {"clé": "value"},
     "a key with a non-ASCII character (\"clé\"): RFC 8785 keeps it literal, "
     "ensure_ascii writes cl\\u00e9", True),
    ("trap-key-order-utf16", {"\ue000": "private use U+E000", "\U0001F600": "emoji U+1F600"},
     "two keys, U+E000 and U+1F600, whose order depends on the sort: RFC 8785 "
     "sorts by UTF-16 code units (U+1F600 is the surrogate pair D83D DE00, below E000, "
     "so it comes first); Python sorts by code point (U+E000 first). The escapes differ "
     "too, and the order differs even with ensure_ascii=False", True),
]


def build_signed():
    n = "hello"
    valid_signed(n, "A hello from key A to key B with version \"0.1\" and the feature "
                    "signed-messages, signed over its RFC 8785 form.",
                 ["AGP-001", "AGP-013", "AGP-014", "AGP-015"] + SIG_REQS,
                 message(n, "hello", {"version": "0.1", "features": ["signed-messages"]}))

    echo_params = {"text": "hello agentprotocol"}
    n = "request-echo"
    valid_signed(n, "A request for the fixture action echo, from key A to key B, signed "
                    "over its RFC 8785 form.",
                 ["AGP-018"] + SIG_REQS, echo_request(n, echo_params))

    n = "response-echo"
    valid_signed(n, "The target's (key B's) response to request-echo: correlationId "
                    "echoed, status success, result equal to the params.",
                 ["AGP-009", "AGP-019"] + SIG_REQS,
                 message(n, "response", {"correlationId": "req-1", "status": "success",
                                         "result": copy.deepcopy(echo_params)},
                         sender="B"), key=KEY_B)

    n = "error-capability-not-supported"
    valid_signed(n, "The target's (key B's) error for an action it does not offer: code "
                    "CAPABILITY_NOT_SUPPORTED, correlationId echoed, details.requested "
                    "and details.available.",
                 ["AGP-009", "AGP-020", "AGP-022", "AGP-026"] + SIG_REQS,
                 message(n, "error", {"correlationId": "req-2",
                                      "code": "CAPABILITY_NOT_SUPPORTED",
                                      "message": "Agent does not support code-review "
                                                 "capability",
                                      "details": {"requested": "code-review",
                                                  "available": ["echo", "delay"]}},
                         sender="B"), key=KEY_B)

    n = "notify"
    valid_signed(n, "A one-way notify from key A to key B with metadata; the signature "
                    "covers metadata too.",
                 ["AGP-021", "AGP-033", "AGP-043"] + SIG_REQS,
                 message(n, "notify", {"event": "status", "state": "idle"},
                         metadata={"priority": "high", "custom-field": "value"}))

    n = "hello-capabilities-unsorted"
    valid_signed(n, "A hello whose from.capabilities is not in sorted order. Arrays keep "
                    "their order in the canonical form, so the signature is valid; an "
                    "implementation that also sorts arrays computes other bytes and "
                    "wrongly rejects it.",
                 ["AGP-007", "AGP-017", "AGP-A2"] + SIG_REQS,
                 message(n, "hello", {"version": "0.1", "features": ["streaming",
                                                                     "signed-messages"]},
                         caps=["myagent:code-review", "agentprotocol:tasks",
                               "agentprotocol:core"]),
                 informational=True)

    n = "request-base64url-encodings"
    msg = echo_request(n, echo_params)
    msg["from"]["agentId"] = b64u_nopad(PUB_A)
    valid_signed(n, "A request whose from.agentId and signature are written in base64url "
                    "without padding instead of standard padded base64. Both encodings "
                    "are accepted, so the signature is valid.",
                 ["AGP-005", "AGP-012", "AGP-A4"] + SIG_REQS, msg, encode=b64u_nopad)

    # ---- bad signatures
    n = "request-tampered-payload"
    msg = sign(echo_request(n, {"text": "transfer 1 credit"}), KEY_A)
    signed_bytes = jcs(msg)
    msg["payload"]["params"]["text"] = "transfer 1000 credits"
    add_signed(n, "A request signed by key A whose payload.params.text was changed after "
                  "signing; the receiver answers INVALID_SIGNATURE and does not act on it.",
               ["AGP-024", "AGP-035"] + SIG_REQS, msg, "invalid",
               "payload changed after signing",
               informational=False, signer_pub=PUB_A, signed_bytes=signed_bytes)

    n = "notify-tampered-metadata"
    msg = sign(message(n, "notify", {"event": "status", "state": "idle"},
                       metadata={"priority": "low"}), KEY_A)
    signed_bytes = jcs(msg)
    msg["metadata"]["priority"] = "high"
    add_signed(n, "A notify signed by key A whose metadata.priority was changed after "
                  "signing; the signature covers every member except signature, "
                  "metadata included.",
               ["AGP-033", "AGP-024"] + SIG_REQS, msg, "invalid",
               "metadata changed after signing",
               informational=False, signer_pub=PUB_A, signed_bytes=signed_bytes)

    n = "request-wrong-key"
    msg = sign(echo_request(n, echo_params), KEY_B)
    add_signed(n, "A request whose from.agentId is key A but which was signed by key B "
                  "over its RFC 8785 form; verification uses the key in from.agentId and "
                  "fails.",
               ["AGP-034", "AGP-035"] + SIG_REQS, msg, "invalid",
               "signed by key B, while from.agentId names key A",
               informational=False, signer_pub=PUB_B, signed_bytes=jcs(msg))

    # ---- canonicalization traps: RFC 8785 vs naive sorted-key JSON
    for name, params, what, informational in TRAPS:
        msg = echo_request(name, params)
        differs = jcs(msg).decode("utf-8") != naive(msg).decode("ascii")
        tail = ("The naive sorted-key form differs, so an implementation that signs or "
                "verifies over it disagrees with RFC 8785 here." if differs else
                "Here the naive sorted-key form is identical to RFC 8785.")
        valid_signed(name, f"A request whose params hold {what}. Signed over RFC 8785. "
                           + tail, ["AGP-A1"] + SIG_REQS, msg,
                     informational=informational)
        if not differs:
            continue
        nmsg = sign(echo_request(name, params), KEY_A, over="naive")
        add_signed(name + "-naive-signed",
                   f"The message of {name} (params hold {what}), but signed by key A over "
                   "Python's json.dumps(sort_keys=True, separators=(',', ':'), "
                   "ensure_ascii=True) instead of RFC 8785. It verifies over naive_sorted, "
                   "not over canonical, so under the project's RFC 8785 rule the "
                   "signature is invalid.",
                   ["AGP-A1"] + SIG_REQS, nmsg, "invalid", NAIVE_REASON,
                   informational=informational, signer_pub=PUB_A,
                   signed_bytes=naive(nmsg))


def add_msg(name, description, requirements, schema, inp, verdict, reason):
    fname = name + ".json"
    assert fname not in MESSAGE_V, name
    MESSAGE_V[fname] = {"description": description,
                        "requirements": list(dict.fromkeys(requirements)),
                        "schema": schema, "input": inp,
                        "expect": {"verdict": verdict, "reason": reason}}


SPEC_HELLO = {
    "protocol": "agentprotocol/0.1",
    "id": "550e8400-e29b-41d4-a716-446655440000",
    "timestamp": "2026-02-01T15:08:00Z",
    "from": {
        "agentId": "FVnKJxyz...",
        "name": "Freya",
        "capabilities": ["agentprotocol:core", "agentprotocol:tasks",
                         "agentprotocol:proofs"],
    },
    "to": {"agentId": "ABCdef123...", "broadcast": False},
    "type": "hello",
    "payload": {"version": "0.1", "features": ["signed-messages", "streaming"]},
    "signature": "...",
}
SPEC_REQUEST = {"type": "request", "payload": {
    "action": "code-review", "correlationId": "req-123",
    "params": {"code": "function add(a, b) { return a + b; }", "language": "javascript"},
    "timeout": 30000}}
SPEC_RESPONSE = {"type": "response", "payload": {
    "correlationId": "req-123", "status": "success",
    "result": {"rating": "good", "suggestions": ["Consider adding type annotations"]}}}
SPEC_ERROR = {"type": "error", "payload": {
    "correlationId": "req-123", "code": "CAPABILITY_NOT_SUPPORTED",
    "message": "Agent does not support code-review capability",
    "details": {"requested": "code-review", "available": ["translation", "summarization"]}}}


def completed(name, fragment, sender="A"):
    """A spec fragment (type and payload only) completed into a full signed message."""
    m = message(name, fragment["type"], copy.deepcopy(fragment["payload"]), sender=sender)
    return sign(m, KEY_A if sender == "A" else KEY_B)


def build_messages():
    add_msg("spec-hello", "The Hello Message example of agentprotocol.md, verbatim "
            "(placeholder agentId, to.agentId and signature strings included).",
            ["AGP-001", "AGP-002", "AGP-003", "AGP-004", "AGP-014", "AGP-015"],
            "message", copy.deepcopy(SPEC_HELLO), "valid",
            "all members present and well typed; the schema does not decode agentId "
            "or signature")
    add_msg("spec-hello-payload", "The payload of the spec's Hello Message example.",
            ["AGP-014"], "hello-payload", copy.deepcopy(SPEC_HELLO["payload"]), "valid",
            "version is a string, features an array of strings")
    for frag, schema, reqs in ((SPEC_REQUEST, "request-payload", ["AGP-018"]),
                               (SPEC_RESPONSE, "response-payload", ["AGP-019"]),
                               (SPEC_ERROR, "error-payload", ["AGP-020", "AGP-022"])):
        t = frag["type"]
        add_msg(f"spec-{t}-payload", f"The payload of the spec's {t} example "
                f"(agentprotocol.md, Request/Response).", reqs, schema,
                copy.deepcopy(frag["payload"]), "valid", "the spec's own example")
        add_msg(f"spec-{t}-completed", f"The spec's {t} example completed into a full "
                "message (protocol, id, timestamp, from, to, signature added; "
                "ambiguity AGP-A6).", ["AGP-001", "AGP-A6"] + reqs, "message",
                completed(f"spec-{t}-completed", frag,
                          sender="A" if t == "request" else "B"),
                "valid", "full envelope with a well-formed payload")
    add_msg("spec-request-fragment", "The spec's request example exactly as printed: "
            "only type and payload.", ["AGP-001", "AGP-A6"], "message",
            copy.deepcopy(SPEC_REQUEST), "invalid",
            "protocol, id, timestamp and from are missing (ambiguity AGP-A6)")
    add_msg("notify-with-metadata", "A notify carrying the metadata example of "
            "agentprotocol.md, Extensibility.", ["AGP-021", "AGP-043"], "message",
            sign(message("notify-with-metadata", "notify", {"event": "ping"},
                         metadata={"priority": "high", "custom-field": "value"}), KEY_A),
            "valid", "notify payload is any object; metadata is an object")

    def base(name, mtype="request", payload=None):
        return message(name, mtype, payload if payload is not None else
                       {"action": "echo", "correlationId": "req-1",
                        "params": {"text": "hi"}, "timeout": 30000})

    m = base("unsigned-without-to")
    del m["to"]
    add_msg("unsigned-without-to", "A request with neither signature nor to.",
            ["AGP-030", "AGP-A3", "AGP-A22"], "message", m, "valid",
            "signature and to are not required by the schema; their absence is a "
            "warning (ambiguities AGP-A3, AGP-A22), not a schema violation")
    m = base("timestamp-offset-fraction")
    m["timestamp"] = "2026-02-01T16:08:00.250+01:00"
    add_msg("timestamp-offset-fraction", "A request whose timestamp has a fraction of a "
            "second and the offset +01:00.", ["AGP-004", "AGP-A12"], "message",
            sign(m, KEY_A), "valid", "ISO 8601 with an offset is allowed; UTC is not "
            "required (ambiguity AGP-A12)")
    m = base("unknown-top-level-member")
    m["x-extra"] = {"note": "not in the spec"}
    add_msg("unknown-top-level-member", "A request with an extra top-level member "
            "x-extra.", ["AGP-A19"], "message", sign(m, KEY_A), "valid",
            "members beyond the defined ones are allowed (ambiguity AGP-A19)")

    def bad(name, description, reqs, mutate, reason, mtype="request", payload=None):
        m = base(name, mtype, payload)
        mutate(m)
        add_msg(name, description, reqs, "message", sign(m, KEY_A), "invalid", reason)

    bad("wrong-protocol", "A request with protocol \"agentprotocol/0.2\".",
        ["AGP-002", "AGP-A16"], lambda m: m.update(protocol="agentprotocol/0.2"),
        "protocol must be \"agentprotocol/0.1\"")
    bad("type-bogus", "A message with type \"bogus\".", ["AGP-010"],
        lambda m: m.update(type="bogus"), "type is not one of the five message types")
    bad("type-missing", "A request with no type member.", ["AGP-023"],
        lambda m: m.pop("type"), "type is required")
    bad("id-number", "A request whose id is the number 123.", ["AGP-003", "AGP-023"],
        lambda m: m.update(id=123), "id must be a string in UUID syntax")
    bad("id-not-uuid", "A request whose id is \"req-123\".", ["AGP-003"],
        lambda m: m.update(id="req-123"), "id does not match 8-4-4-4-12 hex syntax")
    bad("timestamp-not-iso8601", "A request whose timestamp is \"Feb 1 2026 15:08\".",
        ["AGP-004"], lambda m: m.update(timestamp="Feb 1 2026 15:08"),
        "timestamp is not an ISO 8601 date-time")
    bad("from-without-agentid", "A request whose from has name and capabilities but no "
        "agentId.", ["AGP-005"], lambda m: m["from"].pop("agentId"),
        "from.agentId is required")
    bad("to-broadcast-string", "A request whose to.broadcast is the string \"false\".",
        ["AGP-008"], lambda m: m["to"].update(broadcast="false"),
        "to.broadcast must be a boolean")
    bad("payload-array", "A notify whose payload is an array.", ["AGP-011"],
        lambda m: m.update(payload=["ping"]), "payload must be an object",
        mtype="notify", payload={})
    bad("request-params-string", "A request whose payload.params is a string.",
        ["AGP-018"], lambda m: m["payload"].update(params="text=hi"),
        "request payload params must be an object")
    bad("request-without-action", "A request whose payload has no action.",
        ["AGP-018"], lambda m: m["payload"].pop("action"),
        "request payload action is required")
    bad("request-timeout-negative", "A request whose payload.timeout is -1.",
        ["AGP-018", "AGP-A18"], lambda m: m["payload"].update(timeout=-1),
        "request payload timeout must be an integer >= 0")
    bad("error-without-code", "An error whose payload has message and correlationId "
        "but no code.", ["AGP-020", "AGP-022"], lambda m: None,
        "error payload code is required", mtype="error",
        payload={"correlationId": "req-1", "message": "something failed"})
    bad("hello-features-not-array", "A hello whose payload.features is the string "
        "\"signed-messages\".", ["AGP-014"], lambda m: None,
        "hello payload features must be an array of strings", mtype="hello",
        payload={"version": "0.1", "features": "signed-messages"})
    add_msg("request-payload-params-string", "A request payload alone whose params is a "
            "string.", ["AGP-018"], "request-payload",
            {"action": "echo", "params": "text=hi"}, "invalid",
            "params must be an object")
    add_msg("response-payload-without-status", "A response payload alone with "
            "correlationId and result but no status.", ["AGP-019"], "response-payload",
            {"correlationId": "req-1", "result": {}}, "invalid", "status is required")


# ---------------------------------------------------------------- checks


def strings_in(value):
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for k, v in value.items():
            yield k
            yield from strings_in(v)
    elif isinstance(value, list):
        for v in value:
            yield from strings_in(v)


def verify_signed_vector(fname, v):
    """Independent of PROOF: what any verifier can check from the file alone."""
    problems = []
    msg = v["message"]
    canon = jcs(msg)
    if v["canonical"].encode("utf-8") != canon:
        problems.append(f"{fname}: canonical is not RFC 8785 of message minus signature")
    if v["naive_sorted"] != naive(msg).decode("ascii"):
        problems.append(f"{fname}: naive_sorted is not json.dumps(sort_keys=True, ...)")
    if v["naive_differs"] != (v["canonical"] != v["naive_sorted"]):
        problems.append(f"{fname}: naive_differs is wrong")
    try:
        pub = b64_any(msg["from"]["agentId"])
        sig = b64_any(msg["signature"])
    except (KeyError, ValueError) as e:
        return problems + [f"{fname}: cannot decode agentId/signature: {e}"]
    if len(pub) != 32 or len(sig) != 64:
        problems.append(f"{fname}: key {len(pub)} bytes, signature {len(sig)} bytes")
    got = "valid" if ed_verify(pub, sig, canon) else "invalid"
    if got != v["expect"]["signature"]:
        problems.append(f"{fname}: signature verifies as {got}, vector says "
                        f"{v['expect']['signature']}")
    if v["expect"]["reason"] == NAIVE_REASON:
        if not v["naive_differs"]:
            problems.append(f"{fname}: naive-signed vector whose naive form equals JCS")
        if not ed_verify(pub, sig, v["naive_sorted"].encode("ascii")):
            problems.append(f"{fname}: does not verify over naive_sorted")
    return problems


def self_check():
    problems = []
    for folder, vectors in ((SIGNED, SIGNED_V), (MESSAGES, MESSAGE_V)):
        on_disk = sorted(os.path.basename(p) for p in glob.glob(os.path.join(folder, "*.json")))
        if on_disk != sorted(vectors):
            problems.append(f"{folder}: files on disk differ from the generated set")
    for fname in SIGNED_V:
        with open(os.path.join(SIGNED, fname), encoding="utf-8") as f:
            v = json.load(f)
        if v != SIGNED_V[fname]:
            problems.append(f"signed/{fname}: does not read back identically")
        problems += verify_signed_vector("signed/" + fname, v)
        # what the generator knows: the signer and the bytes it really signed
        signer, data = PROOF[fname]
        if not ed_verify(signer, b64_any(v["message"]["signature"]), data):
            problems.append(f"signed/{fname}: signature is not by the recorded signer")
        names_signer = b64_any(v["message"]["from"]["agentId"]) == signer
        over_canonical = data == v["canonical"].encode("utf-8")
        want = "valid" if names_signer and over_canonical else "invalid"
        if want != v["expect"]["signature"]:
            problems.append(f"signed/{fname}: signer/bytes imply {want}")
    for fname in MESSAGE_V:
        with open(os.path.join(MESSAGES, fname), encoding="utf-8") as f:
            v = json.load(f)
        if v != MESSAGE_V[fname]:
            problems.append(f"messages/{fname}: does not read back identically")
    for folder, vectors in (("signed", SIGNED_V), ("messages", MESSAGE_V)):
        for fname, v in vectors.items():
            if any(s.endswith("\n") for s in strings_in(v)):
                problems.append(f"{folder}/{fname}: a string ends in a line feed")
    problems += schema_check()
    return problems


def schema_check():
    """Cross-check messages/ verdicts (and signed/ messages) with jsonschema, if present."""
    try:
        from jsonschema import Draft202012Validator
    except ImportError:
        print("note: jsonschema not installed; schema verdicts not cross-checked")
        return []
    validators = {}
    for path in glob.glob(os.path.join(SCHEMAS, "*.schema.json")):
        with open(path, encoding="utf-8") as f:
            schema = json.load(f)
        Draft202012Validator.check_schema(schema)
        validators[os.path.basename(path)[:-len(".schema.json")]] = \
            Draft202012Validator(schema)
    problems = []
    for fname, v in MESSAGE_V.items():
        ok = validators[v["schema"]].is_valid(v["input"])
        if ok != (v["expect"]["verdict"] == "valid"):
            problems.append(f"messages/{fname}: schema says {'valid' if ok else 'invalid'}")
    for fname, v in SIGNED_V.items():
        if not validators["message"].is_valid(v["message"]):
            problems.append(f"signed/{fname}: message is not schema-valid")
    return problems


def write(folder, vectors):
    os.makedirs(folder, exist_ok=True)
    for path in glob.glob(os.path.join(folder, "*.json")):
        if os.path.basename(path) not in vectors:
            os.remove(path)
    for fname, v in vectors.items():
        data = json.dumps(v, indent=2, ensure_ascii=False) + "\n"
        with open(os.path.join(folder, fname), "w", encoding="utf-8", newline="\n") as f:
            f.write(data)


def main():
    build_signed()
    build_messages()
    write(SIGNED, SIGNED_V)
    write(MESSAGES, MESSAGE_V)
    problems = self_check()
    for p in problems:
        print("FAIL:", p, file=sys.stderr)
    differ = [f for f, v in SIGNED_V.items() if v["naive_differs"]
              and v["expect"]["reason"] != NAIVE_REASON]
    print(f"{len(SIGNED_V)} signed vectors ({len(differ)} where naive sorted-key JSON "
          f"differs from RFC 8785), {len(MESSAGE_V)} schema vectors written to {HERE}; "
          f"self-check {'FAILED' if problems else 'passed'}")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
