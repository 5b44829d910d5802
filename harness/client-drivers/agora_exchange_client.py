#!/usr/bin/env python3
"""An agora-exchange client driver for `agentconform run --role client`, standard library only.

Scenario `single` (input {"body", "protocolHash"}): POST {"protocolHash", "body"} to the
base URL; the reply must be HTTP 200 with "status": "success" (exactly that word); print
its `body` as {"result": ...}.

Scenario `conversation` (input {"body", "protocolHash", "followups": [...]}): POST the
first message with "multiround": true to the base URL; the reply must be a success that
opens a conversation (a `conversationId`); then POST each follow-up as {"body": ...}
(never protocolHash) to {base}/conversations/{id}, each reply a success; print one
{"result": ...} per reply, the bodies in order, once all have succeeded.

Every reply received is printed as {"received": reply} as it comes. The client stops at
the first error and sends nothing after it: an HTTP status other than 200, a reply that
is not a JSON object, a status other than "success" (a failure, "Conversation expired",
or a respelling such as "Success"), a conversation the server declined, or one whose
`conversationExpires` (Unix seconds, from the reply that opened it or a later one) has
been reached before the next follow-up. It then prints {"error": "..."} and exits 1.

The harness gives the server's base URL (with or without a trailing slash) and the
input file in the environment (AGENTCONFORM_URL, AGENTCONFORM_SCENARIO,
AGENTCONFORM_INPUT). Only POST is ever sent, only to the base URL and to the
conversation the server opened; redirects are not followed and no proxy is used.
Every request has a deadline and every reply a size cap.
"""
import json, os, signal, sys, time, urllib.error, urllib.parse, urllib.request

MAX_BYTES = 1 << 20  # the cap on every reply body
REQUEST_TIMEOUT_S = 5.0  # the deadline of one request
SCENARIO_TIMEOUT_S = 8.5  # the deadline of the whole scenario (the harness allows 10 s)


class ClientError(Exception):
    """Why the client gave up."""


class NoRedirect(urllib.request.HTTPRedirectHandler):
    """A redirect is an answer, not a new request: a POST is never re-sent elsewhere
    (nor turned into a GET)."""

    def redirect_request(self, req, fp, code, msg, headers, newurl):
        return None


OPENER = urllib.request.build_opener(urllib.request.ProxyHandler({}), NoRedirect())
DEADLINE = time.monotonic() + SCENARIO_TIMEOUT_S


def on_alarm(signum, frame):
    raise ClientError(f"no end within {SCENARIO_TIMEOUT_S} s")


def base_url():
    """AGENTCONFORM_URL without one trailing slash; only http and https."""
    base = os.environ["AGENTCONFORM_URL"]
    if base.endswith("/"):
        base = base[:-1]
    if urllib.parse.urlsplit(base).scheme not in ("http", "https"):
        raise ClientError(f"AGENTCONFORM_URL {base!r} is not an http or https URL")
    return base


def read_capped(resp):
    """The whole body, at most MAX_BYTES, read by the scenario's deadline."""
    chunks, size = [], 0
    while True:
        if time.monotonic() > DEADLINE:
            raise ClientError(f"no reply within {SCENARIO_TIMEOUT_S} s")
        chunk = resp.read1(65536)
        if not chunk:
            return b"".join(chunks)
        size += len(chunk)
        if size > MAX_BYTES:
            raise ClientError(f"reply larger than {MAX_BYTES} bytes")
        chunks.append(chunk)


def post(url, request):
    """POSTs `request` as application/json; returns (HTTP status, the JSON reply), the
    reply printed as received."""
    left = DEADLINE - time.monotonic()
    if left <= 0:
        raise ClientError(f"no end within {SCENARIO_TIMEOUT_S} s")
    data = json.dumps(request).encode()
    req = urllib.request.Request(url, data=data, method="POST",
                                 headers={"Content-Type": "application/json", "Accept": "application/json"})
    try:
        with OPENER.open(req, timeout=min(REQUEST_TIMEOUT_S, left)) as r:
            status, body = r.status, read_capped(r)
    except urllib.error.HTTPError as e:  # a 3xx, 4xx or 5xx: its body is still the reply
        with e:
            status, body = e.code, read_capped(e)
    except (urllib.error.URLError, OSError) as e:
        raise ClientError(f"HTTP: POST {url}: {getattr(e, 'reason', e)}") from None
    try:
        reply = json.loads(body)
    except ValueError as e:
        raise ClientError(f"the reply to POST {url} (HTTP {status}) is not JSON: {e}") from None
    print(json.dumps({"received": reply}), flush=True)
    return status, reply


def success_body(status, reply):
    """The body of a success reply; anything else is an error: only HTTP 200 with
    "status": "success", spelt exactly so, is a success."""
    if status != 200:
        raise ClientError(f"the server answered HTTP {status}: {json.dumps(reply)}")
    if not isinstance(reply, dict):
        raise ClientError(f"the reply is not a JSON object: {json.dumps(reply)}")
    if reply.get("status") != "success":
        why = reply.get("error") if isinstance(reply.get("error"), str) else "(no error given)"
        raise ClientError(f"the server answered status {json.dumps(reply.get('status'))}: {why}")
    return reply.get("body")


def expiry(reply, current):
    """The conversationExpires a reply carries (Unix seconds: an integer, or read
    leniently from a number or a numeric string; a value beyond year 5000 is taken as
    milliseconds), else `current`."""
    e = reply.get("conversationExpires") if isinstance(reply, dict) else None
    if isinstance(e, str):
        try:
            e = float(e.strip())
        except ValueError:
            return current
    if isinstance(e, bool) or not isinstance(e, (int, float)) or e != e:
        return current
    return e / 1000 if e > 1e11 else e


def check_not_expired(expires):
    """Before a follow-up: a conversation whose instant has come is used no more."""
    if expires is not None and time.time() >= expires:
        raise ClientError(f"the conversation expired at {expires} (conversationExpires); no follow-up sent")


def single(base, ask):
    status, reply = post(f"{base}/", {"protocolHash": ask.get("protocolHash"), "body": ask.get("body")})
    return [success_body(status, reply)]


def conversation(base, ask):
    followups = ask.get("followups", [])
    if not isinstance(followups, list):
        raise ClientError("the input's followups is not a list")
    first = {"protocolHash": ask.get("protocolHash"), "body": ask.get("body"), "multiround": True}
    status, reply = post(f"{base}/", first)
    bodies = [success_body(status, reply)]
    cid = reply.get("conversationId")
    if not isinstance(cid, str) or not cid:
        raise ClientError("the server did not open a conversation (no conversationId)")
    expires = expiry(reply, None)
    url = f"{base}/conversations/{urllib.parse.quote(cid, safe='')}"
    for body in followups:
        check_not_expired(expires)
        status, reply = post(url, {"body": body})
        expires = expiry(reply, expires)
        bodies.append(success_body(status, reply))
    return bodies


def main():
    signal.signal(signal.SIGALRM, on_alarm)
    signal.setitimer(signal.ITIMER_REAL, SCENARIO_TIMEOUT_S + 0.5)
    base = base_url()
    scenario = os.environ.get("AGENTCONFORM_SCENARIO", "")
    with open(os.environ["AGENTCONFORM_INPUT"]) as f:
        ask = json.load(f)
    if not isinstance(ask, dict):
        raise ClientError("the input is not a JSON object")
    if scenario == "single":
        bodies = single(base, ask)
    elif scenario == "conversation":
        bodies = conversation(base, ask)
    else:
        raise ClientError(f"unknown scenario {scenario!r} (known: single, conversation)")
    signal.setitimer(signal.ITIMER_REAL, 0)
    for body in bodies:
        print(json.dumps({"result": body}), flush=True)


if __name__ == "__main__":
    try:
        main()
    except Exception as e:  # the driver reports every failure of its client
        signal.setitimer(signal.ITIMER_REAL, 0)
        print(json.dumps({"error": str(e) or type(e).__name__}), flush=True)
        sys.exit(1)
