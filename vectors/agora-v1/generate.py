#!/usr/bin/env python3
"""Generate the agora-v1 golden vectors of agentconform.

Run from anywhere:  python3 vectors/agora-v1/generate.py
Needs:              pip install rfc8785 cryptography base58
Optional:           jsonschema (>= 4.18), to cross-check the vectors against
                    schemas/agora-v1/*.schema.json

The script is deterministic: fixed Ed25519 seeds, fixed timestamps, message
ids derived from the vector name, RFC 6979 deterministic ECDSA. Re-running it
rewrites byte-identical files. After writing, it re-reads every vector and
checks it with an independent model receiver (see self_check); it exits
non-zero if anything disagrees.

Libraries: rfc8785 (RFC 8785 JSON Canonicalization Scheme), cryptography
(Ed25519 per RFC 8032, ECDSA P-256), base58 (base58btc for did:key).
None of the project's Rust code is used here.
"""

import base64
import copy
import datetime
import glob
import hashlib
import json
import os
import re
import sys
import uuid

import base58
import rfc8785
from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.hazmat.primitives.asymmetric.ed25519 import (
    Ed25519PrivateKey,
    Ed25519PublicKey,
)
from cryptography.hazmat.primitives.asymmetric.utils import decode_dss_signature

HERE = os.path.dirname(os.path.abspath(__file__))
ORIGIN = os.path.join(HERE, "origin", "tests", "vectors")
SCHEMAS = os.path.join(HERE, "..", "..", "schemas", "agora-v1")

PROTOCOL = "agora/1.0"
AT = "2024-01-01T00:00:10Z"  # receiver clock for every generated vector
TS = "2024-01-01T00:00:05Z"  # default message timestamp: 5 s before AT
REPLAY_WINDOW_S = 60

ECHO = "agora:echo:v1"
QUOTE = "agora:quote:v1"
QUOTE_COST = 5
KNOWN_RESOURCES = {ECHO, QUOTE}

# ---------------------------------------------------------------- keys, ids


def ed_key(seed_byte):
    return Ed25519PrivateKey.from_private_bytes(bytes([seed_byte]) * 32)


def raw_pub(priv):
    return priv.public_key().public_bytes(
        serialization.Encoding.Raw, serialization.PublicFormat.Raw
    )


def b64u(data):
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode("ascii")


def did_key_ed25519(pub):
    # multicodec ed25519-pub = 0xed, varint-encoded as 0xed 0x01
    return "did:key:z" + base58.b58encode(b"\xed\x01" + pub).decode("ascii")


def did_key_p256(priv):
    point = priv.public_key().public_bytes(
        serialization.Encoding.X962, serialization.PublicFormat.CompressedPoint
    )
    # multicodec p256-pub = 0x1200, varint-encoded as 0x80 0x24
    return "did:key:z" + base58.b58encode(b"\x80\x24" + point).decode("ascii")


KEY_A = ed_key(0x01)  # requester (the harness side in these vectors)
KEY_B = ed_key(0x02)  # provider (the agent side) and the "other" key
PUB_A, PUB_B = raw_pub(KEY_A), raw_pub(KEY_B)
DID_A, DID_B = did_key_ed25519(PUB_A), did_key_ed25519(PUB_B)
# P-256 key for the "not Ed25519" vector; the scalar is a fixed constant.
KEY_P256 = ec.derive_private_key(
    int.from_bytes(hashlib.sha256(b"agentconform p256 key").digest(), "big"),
    ec.SECP256R1(),
)


def msg_id(name):
    """A UUID v4-shaped id derived from a name (deterministic)."""
    digest = hashlib.sha256(b"agentconform agora-v1 vector " + name.encode()).digest()
    return str(uuid.UUID(bytes=digest[:16], version=4))


# ---------------------------------------------------------------- envelopes


def envelope(mtype, payload, sender_id, name, ts=TS):
    return {
        "protocol": PROTOCOL,
        "id": msg_id(name),
        "timestamp": ts,
        "type": mtype,
        "sender": {"id": sender_id, "signature": ""},
        "payload": payload,
    }


def signing_form(env, variant):
    e = copy.deepcopy(env)
    if variant == "blank":
        e["sender"]["signature"] = ""
    elif variant == "removed":
        e["sender"].pop("signature", None)
    else:
        raise ValueError(variant)
    return e


def jcs(value):
    return rfc8785.dumps(value)  # bytes, UTF-8


def canonical_bytes(env, variant):
    return jcs(signing_form(env, variant))


def sign(env, priv, variant="blank"):
    env["sender"]["signature"] = b64u(priv.sign(canonical_bytes(env, variant)))
    return env


# ---------------------------------------------------------------- vectors

VECTORS = {}  # file name -> vector dict (insertion order = write order)


def add(name, description, requirements, expect, *, input=None, input_text=None,
        variant=None, public_key=None, at=AT, canonical_from=None):
    assert (input is None) != (input_text is None), name
    v = {"description": description, "requirements": requirements, "at": at}
    if input is not None:
        v["input"] = input
    else:
        v["input_text"] = input_text
    v["signature_variant"] = variant
    if variant is not None:
        env = canonical_from if canonical_from is not None else input
        v["canonical"] = canonical_bytes(env, variant).decode("utf-8")
    if public_key is not None:
        v["public_key_b64url"] = b64u(public_key)
    verdict, code, sig = expect
    v["expect"] = {"verdict": verdict, "error_code": code, "signature": sig}
    assert name not in VECTORS, name
    VECTORS[name + ".json"] = v


ACCEPT_OK = ("accept", None, "valid")


def reject(code, sig="valid"):
    return ("reject", code, sig)


def signed_request(name, payload, key=KEY_A, sender_id=DID_A, ts=TS, mtype="REQUEST",
                   variant="blank"):
    return sign(envelope(mtype, payload, sender_id, name, ts), key, variant)


def build():
    echo_params = {"text": "hello agora"}

    # ---- valid requester-side messages
    n = "request-echo-valid"
    add(n, "A correctly signed REQUEST for the direct-flow resource agora:echo:v1 "
           "(did:key sender, signature over JCS with sender.signature blanked); "
           "the receiver answers with a RESULT.",
        ["AV1-001", "AV1-002", "AV1-012", "AV1-017", "AV1-019", "AV1-026", "AV1-032",
         "AV1-033", "AV1-034", "AV1-035"],
        ACCEPT_OK, input=signed_request(n, {"resource": ECHO, "params": echo_params}),
        variant="blank", public_key=PUB_A)

    n = "request-quote-valid"
    add(n, "A correctly signed REQUEST for the negotiated resource agora:quote:v1 with "
           "budget {\"max\": 10} (at least the cost 5) and timeout 10000; the receiver "
           "answers with an OFFER.",
        ["AV1-025", "AV1-032", "AV1-033", "AV1-034", "AV1-035"],
        ACCEPT_OK,
        input=signed_request(n, {"resource": QUOTE, "params": {"item": "widget"},
                                 "budget": {"max": 10}, "timeout": 10000}),
        variant="blank", public_key=PUB_A)

    n = "request-quote-budget-too-low"
    add(n, "A correctly signed REQUEST for agora:quote:v1 whose budget {\"max\": 3} is "
           "below the fixture cost 5; the receiver answers ERROR 402.",
        ["AV1-034", "AV1-048"], reject(402),
        input=signed_request(n, {"resource": QUOTE, "params": {"item": "widget"},
                                 "budget": {"max": 3}}),
        variant="blank", public_key=PUB_A)

    n = "request-unknown-resource"
    add(n, "A correctly signed REQUEST for a resource the receiver does not offer "
           "(agora:nonexistent:v1); the receiver answers ERROR 404.",
        ["AV1-045", "AV1-049"], reject(404),
        input=signed_request(n, {"resource": "agora:nonexistent:v1", "params": {}}),
        variant="blank", public_key=PUB_A)

    n = "request-timestamp-30s-old"
    add(n, "A correctly signed REQUEST stamped 30 s before the receiver clock is inside "
           "the 60 s replay window and is processed normally.",
        ["AV1-008", "AV1-006"], ACCEPT_OK,
        input=signed_request(n, {"resource": ECHO, "params": echo_params},
                             ts="2023-12-31T23:59:40Z"),
        variant="blank", public_key=PUB_A)

    n = "request-timestamp-offset-fraction"
    add(n, "A correctly signed REQUEST whose timestamp uses a fraction of a second and "
           "the +00:00 offset (RFC 3339 UTC) is accepted.",
        ["AV1-006"], ACCEPT_OK,
        input=signed_request(n, {"resource": ECHO, "params": echo_params},
                             ts="2024-01-01T00:00:05.250+00:00"),
        variant="blank", public_key=PUB_A)

    n = "request-signature-removed-variant"
    add(n, "A REQUEST signed over JCS of the envelope with sender.signature removed "
           "(not blanked); both signing variants are allowed, so it is accepted.",
        ["AV1-020", "AV1-023"], ACCEPT_OK,
        input=signed_request(n, {"resource": ECHO, "params": echo_params},
                             variant="removed"),
        variant="removed", public_key=PUB_A)

    # padded standard base64: pick the first probe whose signature uses + or /
    n = "request-signature-padded-base64"
    for i in range(1000):
        env = signed_request(n, {"resource": ECHO, "params": {"text": "padded", "n": i}})
        raw = base64.urlsafe_b64decode(env["sender"]["signature"] + "==")
        std = base64.standard_b64encode(raw).decode("ascii")
        if "+" in std or "/" in std:
            env["sender"]["signature"] = std
            break
    else:
        raise SystemExit("no probe gave a signature with + or /")
    add(n, "A valid REQUEST whose signature is written in standard padded base64 "
           "(alphabet with + or /, trailing ==) instead of unpadded base64url; receivers "
           "accept it and the harness reports it as informational.",
        ["AV1-021"], ACCEPT_OK, input=env, variant="blank", public_key=PUB_A)

    n = "request-sender-raw-key"
    add(n, "A valid REQUEST whose sender.id is the raw 32-byte Ed25519 public key in "
           "base64url without padding instead of a did:key; it is accepted.",
        ["AV1-012", "AV1-013"], ACCEPT_OK,
        input=signed_request(n, {"resource": ECHO, "params": echo_params},
                             sender_id=b64u(PUB_A)),
        variant="blank", public_key=PUB_A)

    # non-canonical spelling in the transmitted bytes, signature over JCS
    n = "request-noncanonical-spelling"
    template = (
        '{\n'
        '  "type" : "REQUEST",\n'
        '  "timestamp" : "' + TS + '",\n'
        '  "payload" : {\n'
        '    "params" : { "word" : "caf\\u00e9", "ratio" : 1.0, "count" : 1e2 },\n'
        '    "resource" : "agora:echo:v1"\n'
        '  },\n'
        '  "sender" : { "signature" : "@SIG@", "id" : "' + DID_A + '" },\n'
        '  "id" : "' + msg_id(n) + '",\n'
        '  "protocol" : "agora/1.0"\n'
        '}\n'
    )
    parsed = json.loads(template.replace("@SIG@", ""))
    sig = b64u(KEY_A.sign(canonical_bytes(parsed, "blank")))
    text = template.replace("@SIG@", sig)
    add(n, "A REQUEST transmitted with non-canonical key order, whitespace and spelling "
           "(1.0, 1e2 and \"caf\\u00e9\" in params) but signed over its JCS form "
           "(1, 100, literal UTF-8 e-acute); it is accepted.",
        ["AV1-017", "AV1-018"], ACCEPT_OK, input_text=text, variant="blank",
        public_key=PUB_A, canonical_from=json.loads(text))

    n = "hello-valid"
    add(n, "A correctly signed HELLO with an empty payload; the receiver answers with a "
           "WELCOME.",
        ["AV1-009", "AV1-011"], ACCEPT_OK,
        input=signed_request(n, {}, mtype="HELLO"), variant="blank", public_key=PUB_A)

    n = "status-query-valid"
    add(n, "A correctly signed STATUS query carrying only request_id, sent to a fresh "
           "receiver that has never seen that request: the receiver answers ERROR 404 "
           "(the project's choice; the target profile names no other answer). A STATUS "
           "for a known request is answered with a STATUS reply.",
        ["AV1-011"], reject(404),
        input=signed_request(n, {"request_id": msg_id("request-quote-valid")},
                             mtype="STATUS"),
        variant="blank", public_key=PUB_A)

    n = "accept-unknown-offer"
    add(n, "A correctly signed ACCEPT whose offer_id names no OFFER the receiver made; "
           "the receiver answers with an ERROR (this project expects 404) and no RESULT.",
        ["AV1-040"], reject(404),
        input=signed_request(n, {"offer_id": msg_id("offer-valid")}, mtype="ACCEPT"),
        variant="blank", public_key=PUB_A)

    n = "accept-payment-proof-number"
    add(n, "A correctly signed ACCEPT whose payment_proof is the number 123 instead of a "
           "string is a schema violation: ERROR 400.",
        ["AV1-041", "AV1-047"], reject(400),
        input=signed_request(n, {"offer_id": msg_id("offer-valid"), "payment_proof": 123},
                             mtype="ACCEPT"),
        variant="blank", public_key=PUB_A)

    # ---- schema violations (correctly signed, so only the schema is at fault)
    def bad(name, desc, reqs, payload=None, mutate=None, code=400):
        env = envelope("REQUEST", payload if payload is not None else
                       {"resource": ECHO, "params": echo_params}, DID_A, name)
        if mutate:
            mutate(env)
        sign(env, KEY_A)
        add(name, desc, reqs, reject(code), input=env, variant="blank", public_key=PUB_A)

    bad("request-missing-payload", "A correctly signed REQUEST envelope with no payload "
        "member is a schema violation: ERROR 400, never OFFER or RESULT.",
        ["AV1-002", "AV1-047"], mutate=lambda e: e.pop("payload"))
    bad("request-payload-array", "A correctly signed REQUEST whose payload is an array "
        "instead of an object: ERROR 400.", ["AV1-015", "AV1-047"],
        mutate=lambda e: e.__setitem__("payload", [ECHO, echo_params]))
    bad("request-protocol-2-0", "A correctly signed REQUEST with protocol \"agora/2.0\" "
        "instead of \"agora/1.0\": ERROR 400.", ["AV1-003", "AV1-047"],
        mutate=lambda e: e.__setitem__("protocol", "agora/2.0"))
    bad("request-type-ping", "A correctly signed envelope with type \"PING\", which is "
        "not one of the eight types: ERROR 400.", ["AV1-009", "AV1-047"],
        mutate=lambda e: e.__setitem__("type", "PING"))
    bad("request-type-lowercase", "A correctly signed envelope with type \"request\" "
        "(wrong case; types are exact upper case): ERROR 400.", ["AV1-009", "AV1-047"],
        mutate=lambda e: e.__setitem__("type", "request"))
    bad("request-missing-type", "A correctly signed envelope with a REQUEST payload but "
        "no type member: ERROR 400.", ["AV1-002", "AV1-047"],
        mutate=lambda e: e.pop("type"))
    bad("request-resource-missing", "A correctly signed REQUEST whose payload has params "
        "but no resource: ERROR 400.", ["AV1-032", "AV1-047"],
        payload={"params": echo_params})
    bad("request-resource-number", "A correctly signed REQUEST whose resource is the "
        "number 42 instead of a string: ERROR 400.", ["AV1-032", "AV1-047"],
        payload={"resource": 42, "params": echo_params})
    bad("request-params-string", "A correctly signed REQUEST whose params is a string "
        "instead of an object: ERROR 400.", ["AV1-033", "AV1-047"],
        payload={"resource": ECHO, "params": "hello agora"})
    bad("request-budget-number", "A correctly signed REQUEST whose budget is the number "
        "5 instead of an object: ERROR 400.", ["AV1-034", "AV1-047"],
        payload={"resource": QUOTE, "params": {"item": "widget"}, "budget": 5})
    bad("request-timeout-string", "A correctly signed REQUEST whose timeout is the "
        "string \"10s\" instead of an integer: ERROR 400.", ["AV1-035", "AV1-047"],
        payload={"resource": ECHO, "params": echo_params, "timeout": "10s"})
    bad("request-timeout-fraction", "A correctly signed REQUEST whose timeout is 1.5, "
        "not an integer: ERROR 400.", ["AV1-035", "AV1-047"],
        payload={"resource": ECHO, "params": echo_params, "timeout": 1.5})

    # malformed JSON: the first 120 bytes of a signed REQUEST
    n = "request-malformed-truncated"
    full = json.dumps(signed_request(n, {"resource": ECHO, "params": echo_params}),
                      indent=2)
    add(n, "The first 120 bytes of a signed REQUEST (truncated, not valid JSON): "
           "ERROR 400 wherever the binding allows a reply.",
        ["AV1-047"], reject(400, "absent"), input_text=full[:120])

    # ---- signature failures (well-formed envelopes)
    n = "request-tampered-payload"
    env = signed_request(n, {"resource": ECHO, "params": {"text": "pay 5 credits"}})
    env["payload"]["params"]["text"] = "pay 9 credits"
    add(n, "A signed REQUEST whose params.text was changed by one character after "
           "signing; the signature no longer matches the canonical bytes: ERROR 401.",
        ["AV1-022", "AV1-024"], reject(401, "invalid"), input=env, variant="blank",
        public_key=PUB_A)

    n = "request-wrong-key"
    env = envelope("REQUEST", {"resource": ECHO, "params": echo_params}, DID_A, n)
    sign(env, KEY_B)
    add(n, "A REQUEST whose sender.id names key A but which was signed with key B "
           "(public_key_b64url is B, the real signer): ERROR 401.",
        ["AV1-023", "AV1-024"], reject(401, "invalid"), input=env, variant="blank",
        public_key=PUB_B)

    n = "request-empty-signature"
    env = envelope("REQUEST", {"resource": ECHO, "params": echo_params}, DID_A, n)
    add(n, "An unsigned REQUEST whose sender.signature is the empty string: ERROR 401, "
           "never processed.",
        ["AV1-016", "AV1-024"], reject(401, "absent"), input=env)

    n = "request-signature-missing"
    env = envelope("REQUEST", {"resource": ECHO, "params": echo_params}, DID_A, n)
    del env["sender"]["signature"]
    add(n, "An unsigned REQUEST with no sender.signature member at all: this project "
           "expects ERROR 401 (unsigned), although the member is also required by the "
           "envelope schema.",
        ["AV1-016", "AV1-024", "AV1-002"], reject(401, "absent"), input=env)

    n = "request-signed-noncanonical"
    env = envelope("REQUEST", {"resource": ECHO, "params": echo_params}, DID_A, n)
    stringify = json.dumps(signing_form(env, "blank"), separators=(",", ":"),
                           ensure_ascii=False).encode("utf-8")
    assert stringify != canonical_bytes(env, "blank")
    env["sender"]["signature"] = b64u(KEY_A.sign(stringify))
    add(n, "A REQUEST signed over compact JSON in insertion order (as JSON.stringify "
           "gives: protocol, id, timestamp, type, sender, payload) instead of JCS; "
           "canonical is the JCS form a verifier computes, which the signature does not "
           "match: ERROR 401.",
        ["AV1-017", "AV1-024"], reject(401, "invalid"), input=env, variant="blank",
        public_key=PUB_A)

    n = "request-sender-did-web"
    env = signed_request(n, {"resource": ECHO, "params": echo_params},
                         sender_id="did:web:agent.example")
    add(n, "A REQUEST signed with key A whose sender.id is did:web:agent.example, a key "
           "format the receiver cannot resolve to an Ed25519 key: ERROR 401.",
        ["AV1-012", "AV1-024"], reject(401, "invalid"), input=env, variant="blank",
        public_key=PUB_A)

    n = "request-p256-did-key"
    env = envelope("REQUEST", {"resource": ECHO, "params": echo_params},
                   did_key_p256(KEY_P256), n)
    der = KEY_P256.sign(canonical_bytes(env, "blank"),
                        ec.ECDSA(hashes.SHA256(), deterministic_signing=True))
    r, s = decode_dss_signature(der)
    env["sender"]["signature"] = b64u(r.to_bytes(32, "big") + s.to_bytes(32, "big"))
    add(n, "A REQUEST signed with ECDSA P-256 (RFC 6979, r||s) by the did:key zDn... in "
           "sender.id; v1.0 requires Ed25519, so ERROR 401 (no Ed25519 key, so "
           "public_key_b64url is omitted).",
        ["AV1-019", "AV1-024"], reject(401, "invalid"), input=env, variant="blank")

    n = "request-stale-timestamp"
    add(n, "A correctly signed REQUEST stamped 120 s before the receiver clock, older "
           "than the 60 s replay window, must not be processed; the spec names no code "
           "and this project expects ERROR 401.",
        ["AV1-007"], reject(401),
        input=signed_request(n, {"resource": ECHO, "params": echo_params},
                             ts="2023-12-31T23:58:10Z"),
        variant="blank", public_key=PUB_A)

    # ---- replies sent by an agent (key B); accept = well formed and correctly signed
    req_echo = msg_id("request-echo-valid")
    req_quote = msg_id("request-quote-valid")

    def reply(name, mtype, payload, desc, reqs, expect=ACCEPT_OK):
        add(name, desc, reqs, expect,
            input=sign(envelope(mtype, payload, DID_B, name), KEY_B),
            variant="blank", public_key=PUB_B)

    reply("offer-valid", "OFFER", {"request_id": req_quote, "cost": 5, "ttl": 2000,
                                   "eta": 100},
          "A correctly signed OFFER answering request-quote-valid (cost 5, ttl 2000 ms, "
          "eta 100 ms); well formed.", ["AV1-010", "AV1-025", "AV1-037", "AV1-038"])
    reply("result-echo-valid", "RESULT", {"request_id": req_echo, "status": "success",
                                          "data": echo_params},
          "A correctly signed RESULT answering request-echo-valid with the echoed params "
          "as data; well formed.", ["AV1-026", "AV1-042", "AV1-043", "AV1-044"])
    reply("error-valid", "ERROR", {"code": 404, "message": "unknown resource "
                                   "agora:nonexistent:v1",
                                   "request_id": msg_id("request-unknown-resource")},
          "A correctly signed ERROR 404 answering request-unknown-resource; well formed.",
          ["AV1-045", "AV1-046", "AV1-049"])
    reply("welcome-valid", "WELCOME", {"resources": [ECHO, QUOTE]},
          "A correctly signed WELCOME listing the fixture resources; well formed.",
          ["AV1-011"])
    reply("status-reply-valid", "STATUS", {"request_id": req_quote, "state": "NEGOTIATING"},
          "A correctly signed STATUS reply carrying request_id and state NEGOTIATING; "
          "well formed.", ["AV1-011"])
    reply("result-status-uppercase", "RESULT", {"request_id": req_echo,
                                                "status": "SUCCESS", "data": echo_params},
          "A correctly signed RESULT whose status is \"SUCCESS\" (status values are "
          "exact lower case) is a schema violation: rejected, 400.",
          ["AV1-043", "AV1-047"], expect=reject(400))

    # ---- the two origin vectors (raw base64url keys, signature over blanked JCS)
    for sub, at, expect, desc, reqs in (
        ("request-basic", "2024-01-01T00:00:10Z", reject(404),
         "Upstream vector origin/tests/vectors/request-basic (raw base64url sender key, "
         "signature valid) received 10 s after its timestamp; its resource "
         "agora:search:v1 is not a fixture resource, so ERROR 404.",
         ["AV1-012", "AV1-013", "AV1-017", "AV1-020", "AV1-049"]),
        ("result-basic", "2024-01-02T12:35:06Z", ACCEPT_OK,
         "Upstream vector origin/tests/vectors/result-basic (raw base64url sender key, "
         "signature valid) received 10 s after its timestamp; a well-formed RESULT.",
         ["AV1-012", "AV1-013", "AV1-017", "AV1-020", "AV1-042", "AV1-043", "AV1-044"]),
    ):
        d = os.path.join(ORIGIN, sub)
        with open(os.path.join(d, "input.json"), encoding="utf-8") as f:
            env = json.load(f)
        with open(os.path.join(d, "publicKey.txt"), encoding="utf-8") as f:
            pub = base64.urlsafe_b64decode(f.read().strip() + "==")
        add("origin-" + sub, desc, reqs, expect, input=env, variant="blank",
            public_key=pub, at=at)


# ---------------------------------------------------------------- self-check


def b64_any(s):
    """Decode base64url or standard base64, padding optional."""
    t = s.replace("-", "+").replace("_", "/")
    t += "=" * (-len(t) % 4)
    return base64.b64decode(t, validate=True)


def key_from_sender_id(sid):
    """Ed25519 public key from sender.id: did:key z6Mk..., or a raw 32-byte key in
    base64url/base64, hex or base58btc. None when not an Ed25519 key."""
    if sid.startswith("did:key:z"):
        try:
            raw = base58.b58decode(sid[len("did:key:z"):])
        except ValueError:
            return None
        return raw[2:] if raw[:2] == b"\xed\x01" and len(raw) == 34 else None
    if sid.startswith("did:"):
        return None
    for decode in (bytes.fromhex, b64_any, base58.b58decode):
        try:
            raw = decode(sid)
        except ValueError:
            continue
        if len(raw) == 32:
            return raw
    return None


def ed_verify(pub, sig, msg):
    try:
        Ed25519PublicKey.from_public_bytes(pub).verify(sig, msg)
        return True
    except (InvalidSignature, ValueError):
        return False


def parse_time(s):
    return datetime.datetime.fromisoformat(s.replace("Z", "+00:00"))


def make_schema_validator():
    try:
        import jsonschema
        from referencing import Registry, Resource
    except ImportError:
        print("note: jsonschema not installed; schema cross-check skipped")
        return None
    resources = []
    for path in sorted(glob.glob(os.path.join(SCHEMAS, "*.schema.json"))):
        with open(path, encoding="utf-8") as f:
            doc = json.load(f)
        jsonschema.Draft202012Validator.check_schema(doc)
        resources.append((doc["$id"], Resource.from_contents(doc)))
    registry = Registry().with_resources(resources)
    env_schema = dict(resources)["https://agentconform.dev/schemas/agora-v1/envelope.schema.json"]
    return jsonschema.Draft202012Validator(env_schema.contents, registry=registry)


TYPES = ["HELLO", "WELCOME", "STATUS", "REQUEST", "OFFER", "ACCEPT", "RESULT", "ERROR"]
TIMESTAMP_RE = re.compile(r"[0-9]{4}-(0[1-9]|1[0-2])-(0[1-9]|[12][0-9]|3[01])T"
                          r"([01][0-9]|2[0-3]):[0-5][0-9]:([0-5][0-9]|60)(\.[0-9]+)?"
                          r"(Z|\+00:00)")


def well_formed(env):
    """Hand-written envelope + payload check (mirrors schemas/agora-v1; the two are
    compared by self_check when jsonschema is installed)."""
    def is_int(x):
        return (isinstance(x, int) and not isinstance(x, bool)) or \
            (isinstance(x, float) and x.is_integer())

    def is_num(x):
        return isinstance(x, (int, float)) and not isinstance(x, bool)

    def opt(d, k, pred):
        return k not in d or pred(d[k])

    if not isinstance(env, dict) or "signature" in env:
        return False
    if any(k not in env for k in ("protocol", "id", "timestamp", "type", "sender",
                                  "payload")):
        return False
    s, p = env["sender"], env["payload"]
    if env["protocol"] != PROTOCOL or env["type"] not in TYPES:
        return False
    if not (isinstance(env["id"], str) and env["id"]):
        return False
    if not (isinstance(env["timestamp"], str) and TIMESTAMP_RE.fullmatch(env["timestamp"])):
        return False
    if not (isinstance(s, dict) and isinstance(s.get("id"), str) and s["id"]
            and isinstance(s.get("signature"), str)):
        return False
    if not isinstance(p, dict):
        return False
    t = env["type"]
    st = lambda x: isinstance(x, str)  # noqa: E731
    nonneg_int = lambda x: is_int(x) and x >= 0  # noqa: E731
    if t == "REQUEST":
        return (st(p.get("resource")) and isinstance(p.get("params"), dict)
                and opt(p, "budget", lambda x: isinstance(x, dict))
                and opt(p, "timeout", nonneg_int))
    if t == "OFFER":
        return (st(p.get("request_id")) and is_num(p.get("cost")) and p["cost"] >= 0
                and nonneg_int(p.get("ttl")) and nonneg_int(p.get("eta")))
    if t == "ACCEPT":
        return st(p.get("offer_id")) and opt(p, "payment_proof", st)
    if t == "RESULT":
        return (st(p.get("request_id")) and p.get("status") in ("success", "partial")
                and isinstance(p.get("data"), dict))
    if t == "ERROR":
        return is_int(p.get("code")) and st(p.get("message")) and opt(p, "request_id", st)
    if t == "WELCOME":
        return opt(p, "resources", lambda x: isinstance(x, list) and all(map(st, x)))
    if t == "STATUS":
        return opt(p, "request_id", st) and opt(p, "state", lambda x: x in (
            "PENDING", "NEGOTIATING", "PROCESSING", "COMPLETED", "FAILED"))
    return True  # HELLO: any object


def model_receive(text, at):
    """Independent model of the agora-v1 fixture receiver. Order of checks:
    JSON -> signature present -> key + signature -> schema -> age -> semantics.
    Returns (verdict, error_code, signature_state)."""
    try:
        env = json.loads(text)
    except ValueError:
        return "reject", 400, "absent"
    sender = env.get("sender") if isinstance(env, dict) else None
    if not isinstance(sender, dict) or not isinstance(sender.get("id"), str):
        return "reject", 400, "absent"
    sig_text = sender.get("signature")
    if not isinstance(sig_text, str) or sig_text == "":
        return "reject", 401, "absent"
    pub = key_from_sender_id(sender["id"])
    try:
        sig = b64_any(sig_text)
    except ValueError:
        sig = b""
    ok = pub is not None and len(sig) == 64 and any(
        ed_verify(pub, sig, canonical_bytes(env, v)) for v in ("blank", "removed"))
    if not ok:
        return "reject", 401, "invalid"
    if not well_formed(env):
        return "reject", 400, "valid"
    age = (parse_time(at) - parse_time(env["timestamp"])).total_seconds()
    if age > REPLAY_WINDOW_S:
        return "reject", 401, "valid"
    p = env["payload"]
    if env["type"] == "REQUEST":
        if p["resource"] not in KNOWN_RESOURCES:
            return "reject", 404, "valid"
        budget = p.get("budget", {})
        if p["resource"] == QUOTE and isinstance(budget.get("max"), (int, float)) \
                and budget["max"] < QUOTE_COST:
            return "reject", 402, "valid"
    if env["type"] == "ACCEPT":
        return "reject", 404, "valid"  # a fresh receiver has made no offer
    if env["type"] == "STATUS" and "state" not in p:
        return "reject", 404, "valid"  # a fresh receiver knows no request
    return "accept", None, "valid"


def self_check():
    schema = make_schema_validator()
    problems = []
    for fname in VECTORS:
        with open(os.path.join(HERE, fname), encoding="utf-8") as f:
            v = json.load(f)
        exp = v["expect"]
        if ("input" in v) == ("input_text" in v):
            problems.append(f"{fname}: exactly one of input / input_text")
        text = v["input_text"] if "input_text" in v else json.dumps(v["input"])
        got = model_receive(text, v["at"])
        try:
            parsed = json.loads(text)
        except ValueError:
            parsed = None
        if schema is not None and parsed is not None \
                and schema.is_valid(parsed) != well_formed(parsed):
            problems.append(f"{fname}: JSON Schema and well_formed() disagree")
        want = (exp["verdict"], exp["error_code"], exp["signature"])
        if got != want:
            problems.append(f"{fname}: model receiver says {got}, vector says {want}")
        variant = v["signature_variant"]
        if variant is not None:
            env = json.loads(text)
            if v["canonical"].encode("utf-8") != canonical_bytes(env, variant):
                problems.append(f"{fname}: canonical is not JCS of the input")
            sig = b64_any(env["sender"]["signature"])
            if "public_key_b64url" in v:
                pub = base64.urlsafe_b64decode(v["public_key_b64url"] + "==")
                verifies = ed_verify(pub, sig, v["canonical"].encode("utf-8"))
                # The signer's key verifies over canonical unless the signed bytes
                # differ from it (tampered payload, non-JCS signing). A vector with a
                # valid signature has sender.id naming the signer; an invalid one
                # either names another key (or none) or has different signed bytes.
                names_signer = key_from_sender_id(env["sender"]["id"]) == pub
                if exp["signature"] == "valid":
                    ok = verifies and names_signer
                else:
                    ok = verifies != names_signer
                if not ok:
                    problems.append(f"{fname}: public_key_b64url verifies={verifies}, "
                                    f"sender.id names it={names_signer}")
        elif "canonical" in v or "public_key_b64url" in v:
            problems.append(f"{fname}: canonical/public key without signature_variant")
    # origin vectors: canonical.json is JCS(blanked input) plus a trailing newline
    for sub in ("request-basic", "result-basic"):
        d = os.path.join(ORIGIN, sub)
        with open(os.path.join(d, "input.json"), "rb") as f:
            env = json.loads(f.read())
        with open(os.path.join(d, "canonical.json"), "rb") as f:
            canon_file = f.read()
        with open(os.path.join(d, "signature.txt"), encoding="ascii") as f:
            sig_txt = f.read().strip()
        with open(os.path.join(d, "publicKey.txt"), encoding="ascii") as f:
            pub_txt = f.read().strip()
        mine = canonical_bytes(env, "blank")
        if canon_file != mine + b"\n":
            problems.append(f"origin {sub}: canonical.json != JCS(input) + newline")
        if sig_txt != env["sender"]["signature"] or pub_txt != env["sender"]["id"]:
            problems.append(f"origin {sub}: signature.txt/publicKey.txt differ from input")
        if not ed_verify(b64_any(pub_txt), b64_any(sig_txt), mine):
            problems.append(f"origin {sub}: signature does not verify over JCS bytes")
        with open(os.path.join(HERE, f"origin-{sub}.json"), encoding="utf-8") as f:
            v = json.load(f)
        if v["input"] != env or v["canonical"].encode() + b"\n" != canon_file:
            problems.append(f"origin-{sub}.json does not match the origin files")
    return problems


def main():
    build()
    for fname, v in VECTORS.items():
        data = json.dumps(v, indent=2, ensure_ascii=False) + "\n"
        with open(os.path.join(HERE, fname), "w", encoding="utf-8", newline="\n") as f:
            f.write(data)
    problems = self_check()
    for p in problems:
        print("FAIL:", p, file=sys.stderr)
    print(f"{len(VECTORS)} vectors written to {HERE}; self-check "
          f"{'FAILED' if problems else 'passed'}")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
