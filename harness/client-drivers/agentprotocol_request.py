#!/usr/bin/env python3
"""An agentprotocol client driver for `agentconform run --role client`, standard
library only.

Scenario `request` (input {"action", "capability", "params", "peer"}): say hello to
`peer` over `POST {url}/agentprotocol`, check the peer's hello (signature, sender,
addressee) and that it lists `capability` (else send no request); send a signed
request for `action` with `params`; take the response only when its signature
verifies, it comes from the peer, it is addressed to us and it echoes the
correlationId; print each reply as a JSON line and the response's result as
{"result": ...}; exit 1 with {"error": ...} when the client refuses or fails (an error
message from the peer fails the request).

The harness gives the peer's URL and the input file in the environment
(AGENTCONFORM_URL, AGENTCONFORM_INPUT). Ed25519 (RFC 8032) and the RFC 8785 canonical
form come from agentcrypto.py, next to this file.
"""
import datetime, json, os, sys, time, urllib.error, urllib.request, uuid

sys.dont_write_bytecode = True  # leave no __pycache__ beside the drivers
import agentcrypto as ac  # noqa: E402

PROTOCOL = "agentprotocol/0.1"
TIMEOUT_S = 10  # the longest wait for one reply
MAX_BYTES = 1 << 20  # the most read of one reply or of the input

SEED = os.urandom(32)
ME = ac.b64std(ac.public_key(SEED))  # our agentId: the key in standard base64 (AGP-005)
SENT = set()  # ids of our messages (AGP-003)
SEEN = set()  # ids of the replies (AGP-003)


def new_id():
    """A UUID no message of ours has carried (AGP-003)."""
    msg_id = str(uuid.uuid4())
    while msg_id in SENT:
        msg_id = str(uuid.uuid4())
    SENT.add(msg_id)
    return msg_id


def addressed_to(peer):
    """`to` for the peer (AGP-008): exactly the agentId given, else a broadcast."""
    return {"agentId": peer, "broadcast": False} if peer is not None else {"broadcast": True}


def message(ty, to, payload):
    """A message signed over the RFC 8785 form of all but `signature` (AGP-031)."""
    msg = {"protocol": PROTOCOL, "id": new_id(),
           "timestamp": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
           "from": {"agentId": ME, "capabilities": ["agentprotocol:core"]},
           "to": to, "type": ty, "payload": payload}
    msg["signature"] = ac.b64std(ac.sign(SEED, ac.canonical(msg)))
    return msg


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


def post(endpoint, msg):
    """POSTs one message as application/json (AGP-040); prints and returns the reply
    in the response body, whatever the HTTP status (AGP-A10)."""
    deadline = time.monotonic() + TIMEOUT_S
    req = urllib.request.Request(endpoint, data=ac.canonical(msg), method="POST",
                                 headers={"content-type": "application/json"})
    try:
        try:
            with OPENER.open(req, timeout=TIMEOUT_S) as r:
                status, body = r.status, read_capped(r, deadline)
        except urllib.error.HTTPError as e:
            with e:
                status, body = e.code, read_capped(e, deadline) if e.fp is not None else b""
    except (urllib.error.URLError, OSError) as e:
        raise RuntimeError(f"cannot reach {endpoint}: {e}") from None
    if not body:
        raise RuntimeError(f"HTTP {status} with no reply message in the response")
    try:
        reply = ac.loads(body)
    except ValueError as e:
        raise RuntimeError(f"the reply is not JSON: {e}") from None
    print(json.dumps({"received": reply}), flush=True)
    if not isinstance(reply, dict) or not isinstance(reply.get("type"), str) \
            or not isinstance(reply.get("payload"), dict):
        raise RuntimeError(f"HTTP {status}: the reply is not an agentprotocol message")
    return reply


def refused(reply):
    """An error message (type error, code and message in its payload) fails the
    request: it is never a result (AGP-020, AGP-022)."""
    p = reply["payload"]
    raise RuntimeError(f"the peer answered error {p.get('code')}: {p.get('message')!r}")


def same_agent(a, b):
    """The same agentId, or the same 32 key bytes in two base64 flavours (AGP-A4)."""
    if not isinstance(a, str) or not isinstance(b, str):
        return False
    if a == b:
        return True
    try:
        x, y = ac.unb64(a), ac.unb64(b)
    except ValueError:
        return False
    return x == y and len(x) == 32


def check_fresh_id(reply):
    """The reply's id is a string no message of this exchange carried (AGP-003)."""
    rid = reply.get("id")
    if not isinstance(rid, str) or not rid:
        raise RuntimeError(f"the {reply['type']} has id {rid!r}, not a string")
    if rid in SENT or rid in SEEN:
        raise RuntimeError(f"the {reply['type']} repeats the id {rid!r} already seen in this exchange")
    SEEN.add(rid)


def verify_signature(reply):
    """The signature verifies over the RFC 8785 form of the message without
    `signature`, with the key from.agentId names (AGP-031, AGP-034, AGP-035)."""
    ty, sender = reply["type"], reply.get("from")
    sig_text = reply.get("signature")
    if not isinstance(sig_text, str) or not sig_text:
        raise RuntimeError(f"the {ty} is not signed")
    try:
        sig = ac.unb64(sig_text)
        keys = ac.candidate_keys(sender.get("agentId") if isinstance(sender, dict) else None)
        data = ac.canonical({k: v for k, v in reply.items() if k != "signature"})
    except (ValueError, TypeError) as e:
        raise RuntimeError(f"the {ty}'s signature cannot be checked: {e}") from None
    if not any(ac.verify(k, data, sig) for k in keys):
        raise RuntimeError(f"the {ty} does not carry a valid signature over its RFC 8785 form")


def check_sender(reply, peer):
    """The reply comes from the agent we addressed (AGP-009: reply.from is request.to)."""
    sender = reply["from"].get("agentId")
    if peer is not None and not same_agent(sender, peer):
        raise RuntimeError(f"the {reply['type']} comes from {sender!r}, not from the peer {peer!r}")


def check_addressee(reply, required):
    """The reply is addressed to us (AGP-009: reply.to is request.from). A hello may
    leave `to` out (AGP-A22); a response may not."""
    to = reply.get("to")
    named = to.get("agentId") if isinstance(to, dict) else None
    if named is None and not required:
        return
    if not same_agent(named, ME):
        raise RuntimeError(f"the {reply['type']} is addressed to {named!r}, not to us ({ME!r})")


def check_capability(hello, capability):
    """The peer's hello lists the capability; else no request is sent (AGP-036)."""
    caps = hello["from"].get("capabilities")
    if not isinstance(caps, list) or capability not in caps:
        raise RuntimeError(f"the peer does not list {capability} ({caps!r}): no request sent")


def check_correlation(reply, corr):
    """The response echoes our request's correlationId (AGP-019)."""
    echoed = reply["payload"].get("correlationId")
    if echoed != corr:
        raise RuntimeError(f"the {reply['type']} echoes correlationId {echoed!r}, not {corr!r}")


def take(reply, peer, required_to):
    """The checks every reply gets before it is believed."""
    if not isinstance(reply.get("from"), dict):
        raise RuntimeError(f"the {reply['type']} has no `from`")
    check_fresh_id(reply)
    verify_signature(reply)
    check_sender(reply, peer)
    check_addressee(reply, required_to)


def take_response(reply, peer, corr):
    """The result of a response we may take: signed, from the peer, to us, echoing
    our correlationId, status success. Anything else fails the request."""
    if reply["type"] == "error":
        refused(reply)
    if reply["type"] != "response":
        raise RuntimeError(f"the request was answered with {reply['type']}, not a response")
    take(reply, peer, required_to=True)
    check_correlation(reply, corr)
    status = reply["payload"].get("status")
    if status != "success":
        raise RuntimeError(f"the response has status {status!r}, not success")
    if "result" not in reply["payload"]:
        raise RuntimeError("the response carries no result")
    return reply["payload"]["result"]


def main():
    if os.environ.get("AGENTCONFORM_SCENARIO", "request") != "request":
        raise RuntimeError(f"unknown scenario {os.environ['AGENTCONFORM_SCENARIO']!r}")
    base = os.environ["AGENTCONFORM_URL"]
    endpoint = f"{base[:-1] if base.endswith('/') else base}/agentprotocol"
    with open(os.environ["AGENTCONFORM_INPUT"], "rb") as f:
        ask = ac.loads(f.read(MAX_BYTES))
    if not isinstance(ask, dict) or not isinstance(ask.get("action"), str) \
            or not isinstance(ask.get("capability"), str) or not isinstance(ask.get("peer") or "", str):
        raise RuntimeError("the input needs a string action, capability and peer")
    peer = ask.get("peer")

    hello = message("hello", addressed_to(peer), {"version": "0.1", "features": ["signed-messages"]})
    reply = post(endpoint, hello)
    if reply["type"] == "error":
        refused(reply)
    if reply["type"] != "hello":
        raise RuntimeError(f"the peer answered hello with {reply['type']}")
    take(reply, peer, required_to=False)
    check_capability(reply, ask["capability"])
    if peer is None:  # a broadcast hello: the request goes to the agent that answered
        peer = reply["from"].get("agentId")

    corr = str(uuid.uuid4())
    request = message("request", addressed_to(peer),
                      {"action": ask["action"], "correlationId": corr,
                       "params": ask.get("params", {}), "timeout": TIMEOUT_S * 1000})
    reply = post(endpoint, request)
    print(json.dumps({"result": take_response(reply, peer, corr)}), flush=True)


if __name__ == "__main__":
    try:
        main()
    except Exception as e:  # the driver reports every failure of its client
        said = str(e) if isinstance(e, RuntimeError) else f"{type(e).__name__}: {e}"
        print(json.dumps({"error": said}), flush=True)
        sys.exit(1)
