#!/usr/bin/env python3
"""An agora-v1 client driver for `agentconform run --role client`, standard library only.

Scenario `request`: send a signed REQUEST for the input's resource, params and budget;
when an OFFER comes back, check it (envelope, protocol, fresh id, signature over
RFC 8785, timestamp, link to the REQUEST, cost within budget, ttl not run out) and
ACCEPT it by its id; check the RESULT the same way; print each reply as a JSON line
and the RESULT's data as {"result": ...}; exit 1 with {"error": ...} when the client
refuses or fails (an ERROR fails the task).

The harness gives the counterparty's URL and the input file in the environment
(AGENTCONFORM_URL, AGENTCONFORM_INPUT). Ed25519 (RFC 8032) and the RFC 8785 canonical
form come from agentcrypto.py, next to this file.
"""
import datetime, json, math, os, re, sys, time, urllib.error, urllib.parse, urllib.request, uuid

sys.dont_write_bytecode = True  # leave no __pycache__ beside the drivers
import agentcrypto as ac  # noqa: E402

PROTOCOL = "agora/1.0"
WINDOW_S = 60  # the replay window (AV1-007)
TIMEOUT_S = 10  # the longest wait for one reply
MAX_BYTES = 1 << 20  # the most read of one reply or of the input

SEED = os.urandom(32)
DID = ac.did_of(ac.public_key(SEED))
SEEN = set()  # every id of this conversation: our messages' and the replies' (AV1-004)


def utc_now():
    return datetime.datetime.now(datetime.timezone.utc)


STAMP = re.compile(r"(\d{4})-(\d\d)-(\d\d)[Tt](\d\d):(\d\d):(\d\d)(?:\.(\d+))?(?:[Zz]|\+00:00)")


def parse_stamp(text):
    """An RFC 3339 UTC date-time (Z or +00:00, optional fraction; AV1-006, AV1-A8)."""
    m = STAMP.fullmatch(text) if isinstance(text, str) else None
    try:
        if not m:
            raise ValueError
        micro = int((m.group(7) or "0")[:6].ljust(6, "0"))
        return datetime.datetime(*map(int, m.groups()[:6]), micro, tzinfo=datetime.timezone.utc)
    except ValueError:
        raise RuntimeError(f"the timestamp {text!r} is not an ISO 8601 UTC date-time") from None


def message(ty, payload):
    """A signed envelope with a fresh id (AV1-004), stamped now."""
    msg_id = str(uuid.uuid4())
    while msg_id in SEEN:
        msg_id = str(uuid.uuid4())
    SEEN.add(msg_id)
    env = {"protocol": PROTOCOL, "id": msg_id, "timestamp": utc_now().strftime("%Y-%m-%dT%H:%M:%SZ"),
           "type": ty, "sender": {"id": DID, "signature": ""}, "payload": payload}
    env["sender"]["signature"] = ac.b64url(ac.sign(SEED, ac.canonical(env)))
    return env


class NoRedirect(urllib.request.HTTPRedirectHandler):
    def redirect_request(self, *args, **kwargs):
        return None  # a signed message goes where it was sent, nowhere else


OPENER = urllib.request.build_opener(urllib.request.ProxyHandler({}), NoRedirect)


def read_capped(r, deadline):
    """The body of a response, at most MAX_BYTES, within the deadline."""
    body = b""
    while True:
        if time.monotonic() > deadline:
            raise RuntimeError(f"no whole reply within {TIMEOUT_S} s")
        chunk = r.read1(65536)
        if not chunk:
            return body
        body += chunk
        if len(body) > MAX_BYTES:
            raise RuntimeError(f"the reply is larger than {MAX_BYTES} bytes")


def post(url, env):
    """POSTs one envelope (its canonical bytes); prints and returns the reply."""
    deadline = time.monotonic() + TIMEOUT_S
    req = urllib.request.Request(url, data=ac.canonical(env), method="POST",
                                 headers={"content-type": "application/json"})
    try:
        try:
            with OPENER.open(req, timeout=TIMEOUT_S) as r:
                body = read_capped(r, deadline)
        except urllib.error.HTTPError as e:  # an ERROR may come with a 4xx or 5xx status
            with e:
                body = read_capped(e, deadline) if e.fp is not None else b""
    except (urllib.error.URLError, OSError) as e:
        raise RuntimeError(f"cannot reach {url}: {e}") from None
    try:
        reply = ac.loads(body)
    except ValueError as e:
        raise RuntimeError(f"the reply is not JSON: {e}") from None
    print(json.dumps({"received": reply}), flush=True)
    return reply


def check_envelope(reply):
    """A reply is an envelope (AV1-001, AV1-002)."""
    if not isinstance(reply, dict):
        raise RuntimeError("the reply is not a JSON object")
    missing = [m for m in ("protocol", "id", "timestamp", "type", "sender", "payload") if m not in reply]
    if missing:
        raise RuntimeError(f"the reply is not an agora envelope: no {', '.join(missing)}")
    if not isinstance(reply["type"], str) or not isinstance(reply["sender"], dict) \
            or not isinstance(reply["payload"], dict):
        raise RuntimeError("the reply's type, sender or payload has the wrong JSON type")


def check_protocol(reply):
    """`protocol` is exactly "agora/1.0" (AV1-003)."""
    if reply["protocol"] != PROTOCOL:
        raise RuntimeError(f"the {reply['type']} speaks protocol {reply['protocol']!r}, not {PROTOCOL!r}")


def check_fresh_id(reply):
    """The reply's id repeats no id of this conversation, ours or a reply's (AV1-004)."""
    rid = reply["id"]
    if not isinstance(rid, str) or not rid:
        raise RuntimeError(f"the {reply['type']} has id {rid!r}, not a string")
    if rid in SEEN:
        raise RuntimeError(f"the {reply['type']} repeats the id {rid!r} already seen in this conversation")
    SEEN.add(rid)


def check_signature(reply):
    """The signature verifies over the RFC 8785 form of the envelope, its signature
    blanked to "" or removed (AV1-016, AV1-017, AV1-023, AV1-A2), with a key that
    sender.id names (did:key or a raw key, AV1-A4)."""
    ty, sender = reply["type"], reply["sender"]
    sig_text = sender.get("signature")
    if not isinstance(sig_text, str) or not sig_text:
        raise RuntimeError(f"the {ty} is not signed")
    try:
        sig, keys = ac.unb64(sig_text), ac.candidate_keys(sender.get("id"))
        unsigned = {k: v for k, v in sender.items() if k != "signature"}
        forms = [ac.canonical(dict(reply, sender=dict(unsigned, signature=""))),
                 ac.canonical(dict(reply, sender=unsigned))]
    except (ValueError, TypeError) as e:
        raise RuntimeError(f"the {ty}'s signature cannot be checked: {e}") from None
    if not any(ac.verify(k, data, sig) for data in forms for k in keys):
        raise RuntimeError(f"the {ty} does not carry a valid signature over its RFC 8785 form")


def check_timestamp(reply):
    """Stamped within the replay window of now, either way (AV1-007, AV1-A6)."""
    at = parse_stamp(reply["timestamp"])
    if abs((utc_now() - at).total_seconds()) > WINDOW_S:
        raise RuntimeError(f"the {reply['type']} is stamped {reply['timestamp']}, outside the replay window")


def check_link(reply, request_id):
    """An OFFER or RESULT names our REQUEST (AV1-037, AV1-042)."""
    named = reply["payload"].get("request_id")
    if named != request_id:
        raise RuntimeError(f"the {reply['type']} names request {named!r}, not ours ({request_id!r})")


def check(reply, request_id):
    """Every check an OFFER or RESULT gets before it is taken."""
    check_protocol(reply)
    check_fresh_id(reply)
    check_signature(reply)
    check_timestamp(reply)
    check_link(reply, request_id)


def number(v):
    return not isinstance(v, bool) and isinstance(v, (int, float)) and math.isfinite(v)


def check_budget(offer, budget):
    """The OFFER's cost is a number within the budget (AV1-034)."""
    cost = offer["payload"].get("cost")
    if not number(cost):
        raise RuntimeError(f"the OFFER's cost is {cost!r}, not a number: not accepted")
    if budget is not None and cost > budget:
        raise RuntimeError(f"the OFFER costs {cost}, over the budget of {budget}: not accepted")


def check_ttl(offer):
    """The OFFER is still valid: its timestamp plus its ttl (ms) is not past (AV1-039)."""
    ttl = offer["payload"].get("ttl")
    if not number(ttl) or ttl < 0:
        raise RuntimeError(f"the OFFER's ttl is {ttl!r}, not a number of ms: not accepted")
    age_ms = (utc_now() - parse_stamp(offer["timestamp"])).total_seconds() * 1000
    if age_ms > ttl:
        raise RuntimeError(f"the OFFER stamped {offer['timestamp']} with ttl {ttl} ms has expired: not accepted")


def failed(reply):
    """An ERROR ends the task as failed (AV1-031)."""
    p = reply["payload"]
    raise RuntimeError(f"the provider refused: ERROR {p.get('code')} {p.get('message')!r}")


def main():
    if os.environ.get("AGENTCONFORM_SCENARIO", "request") != "request":
        raise RuntimeError(f"unknown scenario {os.environ['AGENTCONFORM_SCENARIO']!r}")
    base = os.environ["AGENTCONFORM_URL"]
    base = base[:-1] if base.endswith("/") else base
    url = base if urllib.parse.urlsplit(base).path else base + "/"
    with open(os.environ["AGENTCONFORM_INPUT"], "rb") as f:
        ask = ac.loads(f.read(MAX_BYTES))
    if not isinstance(ask, dict) or not isinstance(ask.get("resource"), str):
        raise RuntimeError("the input has no string resource")
    budget = ask.get("budget") if number(ask.get("budget")) else None
    payload = {"resource": ask["resource"], "params": ask.get("params", {})}
    if budget is not None:
        payload["budget"] = {"max": budget}
    request = message("REQUEST", payload)
    reply = post(url, request)
    check_envelope(reply)
    if reply["type"] == "ERROR":
        failed(reply)
    if reply["type"] == "OFFER":
        check(reply, request["id"])
        check_budget(reply, budget)
        check_ttl(reply)
        reply = post(url, message("ACCEPT", {"offer_id": reply["id"]}))
        check_envelope(reply)
        if reply["type"] == "ERROR":
            failed(reply)
    if reply["type"] != "RESULT":
        raise RuntimeError(f"no RESULT: {reply['type']}")
    check(reply, request["id"])
    print(json.dumps({"result": reply["payload"].get("data")}), flush=True)


if __name__ == "__main__":
    try:
        main()
    except Exception as e:  # the driver reports every failure of its client
        said = str(e) if isinstance(e, RuntimeError) else f"{type(e).__name__}: {e}"
        print(json.dumps({"error": said}), flush=True)
        sys.exit(1)
