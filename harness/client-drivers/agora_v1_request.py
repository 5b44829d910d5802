#!/usr/bin/env python3
"""An agora-v1 client driver for `agentconform run --role client`, standard library only.

Scenario `request`: send a signed REQUEST for the input's resource, params and budget;
when an OFFER comes back, check it (signature, freshness, link, cost within budget) and
ACCEPT it by its id; print each reply as a JSON line and the RESULT's data as
{"result": ...}; exit 1 with {"error": ...} when the client refuses or fails.

The harness gives the counterparty's URL and the input file in the environment
(AGENTCONFORM_URL, AGENTCONFORM_INPUT). Ed25519 (RFC 8032) and the RFC 8785 canonical
form are written out below so that the driver needs nothing but Python 3.
"""
import base64, datetime, hashlib, json, os, sys, urllib.request, uuid

# --- Ed25519 (RFC 8032, section 5.1), slow but short ---
P = 2**255 - 19
L = 2**252 + 27742317777372353535851937790883648493
D = -121665 * pow(121666, P - 2, P) % P
SQRT_M1 = pow(2, (P - 1) // 4, P)


def recover_x(y, sign):
    xx = (y * y - 1) * pow(D * y * y + 1, P - 2, P) % P
    x = pow(xx, (P + 3) // 8, P)
    if (x * x - xx) % P:
        x = x * SQRT_M1 % P
    if (x * x - xx) % P:
        raise ValueError("not a point")
    if x & 1 != sign:
        x = P - x
    return x


BY = 4 * pow(5, P - 2, P) % P
BASE = (recover_x(BY, 0), BY, 1, recover_x(BY, 0) * BY % P)


def add(a, b):
    x1, y1, z1, t1 = a
    x2, y2, z2, t2 = b
    aa, bb = (y1 - x1) * (y2 - x2) % P, (y1 + x1) * (y2 + x2) % P
    cc, dd = t1 * 2 * D * t2 % P, z1 * 2 * z2 % P
    e, f, g, h = bb - aa, dd - cc, dd + cc, bb + aa
    return (e * f % P, g * h % P, f * g % P, e * h % P)


def mul(s, pt):
    q = (0, 1, 1, 0)
    while s:
        if s & 1:
            q = add(q, pt)
        pt, s = add(pt, pt), s >> 1
    return q


def encode(pt):
    x, y, z, _ = pt
    zi = pow(z, P - 2, P)
    x, y = x * zi % P, y * zi % P
    return (y | (x & 1) << 255).to_bytes(32, "little")


def decode(b):
    y = int.from_bytes(b, "little") & ((1 << 255) - 1)
    x = recover_x(y, b[31] >> 7)
    return (x, y, 1, x * y % P)


def sha512(m):
    return hashlib.sha512(m).digest()


def secret(seed):
    h = sha512(seed)
    a = int.from_bytes(h[:32], "little") & ((1 << 254) - 8) | (1 << 254)
    return a, h[32:], encode(mul(a, BASE))


def sign(seed, msg):
    a, prefix, pub = secret(seed)
    r = int.from_bytes(sha512(prefix + msg), "little") % L
    big_r = encode(mul(r, BASE))
    k = int.from_bytes(sha512(big_r + pub + msg), "little") % L
    return big_r + ((r + k * a) % L).to_bytes(32, "little")


def verify(pub, msg, sig):
    try:
        s = int.from_bytes(sig[32:], "little")
        if len(sig) != 64 or s >= L:
            return False
        k = int.from_bytes(sha512(sig[:32] + pub + msg), "little") % L
        return encode(mul(s, BASE)) == encode(add(decode(sig[:32]), mul(k, decode(pub))))
    except ValueError:
        return False


# --- did:key (base58btc of 0xed01 + key) ---
B58 = "123456789ABCDEFGHJKLMNPQRSTUVWXYZabcdefghijkmnopqrstuvwxyz"


def b58encode(b):
    n, out = int.from_bytes(b, "big"), ""
    while n:
        n, r = divmod(n, 58)
        out = B58[r] + out
    return "1" * (len(b) - len(b.lstrip(b"\0"))) + out


def b58decode(s):
    n = 0
    for c in s:
        n = n * 58 + B58.index(c)
    body = n.to_bytes((n.bit_length() + 7) // 8, "big")
    return b"\0" * (len(s) - len(s.lstrip("1"))) + body


def did_of(pub):
    return "did:key:z" + b58encode(b"\xed\x01" + pub)


def key_of(did):
    raw = b58decode(did[len("did:key:z"):])
    if not did.startswith("did:key:z") or raw[:2] != b"\xed\x01" or len(raw) != 34:
        raise ValueError("not an Ed25519 did:key")
    return raw[2:]


# --- RFC 8785 for the values agora-v1 messages hold ---
def canon(v):
    if isinstance(v, float) and v.is_integer() and abs(v) < 2**53:
        v = int(v)
    if isinstance(v, dict):
        items = sorted(v.items(), key=lambda kv: kv[0].encode("utf-16-be"))
        return "{" + ",".join(json.dumps(k, ensure_ascii=False) + ":" + canon(x) for k, x in items) + "}"
    if isinstance(v, list):
        return "[" + ",".join(canon(x) for x in v) + "]"
    return json.dumps(v, ensure_ascii=False)


def b64url(b):
    return base64.urlsafe_b64encode(b).rstrip(b"=").decode()


def unb64url(s):
    return base64.urlsafe_b64decode(s + "=" * (-len(s) % 4))


SEED = os.urandom(32)
DID = did_of(secret(SEED)[2])


def message(ty, payload):
    now = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")
    env = {"protocol": "agora/1.0", "id": str(uuid.uuid4()), "timestamp": now, "type": ty,
           "sender": {"id": DID, "signature": ""}, "payload": payload}
    env["sender"]["signature"] = b64url(sign(SEED, canon(env).encode()))
    return env


def post(url, env):
    req = urllib.request.Request(url, data=canon(env).encode(), headers={"content-type": "application/json"})
    try:
        with urllib.request.urlopen(req, timeout=10) as r:
            body = r.read(1 << 20)
    except urllib.error.HTTPError as e:
        body = e.read(1 << 20)
    reply = json.loads(body)
    print(json.dumps({"received": reply}), flush=True)
    return reply


def check(reply, request_id):
    blank = json.loads(json.dumps(reply))
    sig = blank["sender"]["signature"]
    blank["sender"]["signature"] = ""
    if not verify(key_of(reply["sender"]["id"]), canon(blank).encode(), unb64url(sig)):
        raise RuntimeError(f"the {reply['type']} does not carry a valid signature")
    at = datetime.datetime.strptime(reply["timestamp"], "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=datetime.timezone.utc)
    if abs((datetime.datetime.now(datetime.timezone.utc) - at).total_seconds()) > 60:
        raise RuntimeError(f"the {reply['type']} is stamped {reply['timestamp']}, outside the replay window")
    if reply["payload"].get("request_id") != request_id:
        raise RuntimeError(f"the {reply['type']} does not name the REQUEST")


def main():
    url = os.environ["AGENTCONFORM_URL"]
    with open(os.environ["AGENTCONFORM_INPUT"]) as f:
        ask = json.load(f)
    payload = {"resource": ask["resource"], "params": ask.get("params", {})}
    if "budget" in ask:
        payload["budget"] = {"max": ask["budget"]}
    request = message("REQUEST", payload)
    reply = post(url, request)
    if reply.get("type") == "ERROR":
        raise RuntimeError(f"the provider refused: {reply['payload']}")
    if reply.get("type") == "OFFER":
        check(reply, request["id"])
        if "budget" in ask and reply["payload"]["cost"] > ask["budget"]:
            raise RuntimeError("the OFFER costs more than the budget")
        reply = post(url, message("ACCEPT", {"offer_id": reply["id"]}))
    if reply.get("type") != "RESULT":
        raise RuntimeError(f"no RESULT: {reply.get('type')}")
    check(reply, request["id"])
    print(json.dumps({"result": reply["payload"].get("data")}), flush=True)


if __name__ == "__main__":
    try:
        main()
    except Exception as e:  # the driver reports every failure of its client
        print(json.dumps({"error": str(e)}), flush=True)
        sys.exit(1)
