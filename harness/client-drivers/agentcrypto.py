"""Ed25519 (RFC 8032) and the RFC 8785 canonical form for the Python client drivers,
standard library only.

The drivers in this folder import it (`import agentcrypto`): they run as
`python3 /path/driver.py`, which puts this folder on sys.path.

- Ed25519: `public_key(seed)`, `sign(seed, msg)`, `verify(pub, msg, sig)`. Verification
  is strict, as the reference's (ed25519-dalek `verify_strict`): s below the group
  order, A and R canonical points of more than small order, and R compared byte for
  byte with [s]B - [k]A.
- Keys and encodings: base64 in either alphabet (`b64std`, `b64url`, `unb64`),
  base58btc, `did_of(pub)`, and `candidate_keys(id)` for every key an identifier may
  name (did:key, or a raw 32-byte key in base64, base64url, hex or base58btc).
- RFC 8785: `canonical(value)` gives the UTF-8 bytes of the canonical form of a JSON
  value as `loads` reads it (numbers as ECMAScript writes doubles, strings with only
  the prescribed escapes, members ordered by UTF-16 code units); `loads` reads JSON
  text strictly as I-JSON (UTF-8, no duplicate member names, no NaN or Infinity).
  A value outside I-JSON has no canonical form (ValueError): a lone surrogate, or an
  integer no double holds exactly, whose signed form would differ from what is read.
"""
import base64, binascii, hashlib, json, math

# --- Ed25519 (RFC 8032, section 5.1), slow but short ---
P = 2**255 - 19
L = 2**252 + 27742317777372353535851937790883648493
D = -121665 * pow(121666, P - 2, P) % P
SQRT_M1 = pow(2, (P - 1) // 4, P)
IDENTITY = (0, 1, 1, 0)


def recover_x(y, sign):
    """The x of the point with this y and sign bit (RFC 8032 5.1.3, steps 2-4)."""
    if y >= P:
        raise ValueError("not a point: y is not reduced")
    xx = (y * y - 1) * pow(D * y * y + 1, P - 2, P) % P
    if xx == 0:
        if sign:
            raise ValueError("not a point: x is 0 with the sign bit set")
        return 0
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
    """Sum of two points in extended coordinates (complete: doubling included)."""
    x1, y1, z1, t1 = a
    x2, y2, z2, t2 = b
    aa, bb = (y1 - x1) * (y2 - x2) % P, (y1 + x1) * (y2 + x2) % P
    cc, dd = t1 * 2 * D * t2 % P, z1 * 2 * z2 % P
    e, f, g, h = bb - aa, dd - cc, dd + cc, bb + aa
    return (e * f % P, g * h % P, f * g % P, e * h % P)


def neg(pt):
    x, y, z, t = pt
    return (-x % P, y, z, -t % P)


def mul(s, pt):
    q = IDENTITY
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
    """The point of a 32-byte encoding; ValueError when it names none."""
    if len(b) != 32:
        raise ValueError("a point is 32 bytes")
    y = int.from_bytes(b, "little") & ((1 << 255) - 1)
    x = recover_x(y, b[31] >> 7)
    return (x, y, 1, x * y % P)


def small_order(pt):
    x, y, z, _ = mul(8, pt)
    return x % P == 0 and (y - z) % P == 0


def sha512(m):
    return hashlib.sha512(m).digest()


def expand(seed):
    """The secret scalar, the nonce prefix and the public key of a 32-byte seed."""
    if len(seed) != 32:
        raise ValueError("an Ed25519 seed is 32 bytes")
    h = sha512(seed)
    a = int.from_bytes(h[:32], "little") & ((1 << 254) - 8) | (1 << 254)
    return a, h[32:], encode(mul(a, BASE))


def public_key(seed):
    return expand(seed)[2]


def sign(seed, msg):
    a, prefix, pub = expand(seed)
    r = int.from_bytes(sha512(prefix + msg), "little") % L
    big_r = encode(mul(r, BASE))
    k = int.from_bytes(sha512(big_r + pub + msg), "little") % L
    return big_r + ((r + k * a) % L).to_bytes(32, "little")


def verify(pub, msg, sig):
    """Whether `sig` is a valid Ed25519 signature of `msg` by the key `pub` (strict)."""
    if len(pub) != 32 or len(sig) != 64:
        return False
    s = int.from_bytes(sig[32:], "little")
    if s >= L:
        return False
    try:
        a, r = decode(pub), decode(sig[:32])
    except ValueError:
        return False
    if small_order(a) or small_order(r):
        return False
    k = int.from_bytes(sha512(sig[:32] + pub + msg), "little") % L
    return encode(add(mul(s, BASE), mul(k, neg(a)))) == sig[:32]


# --- base64 in either alphabet, base58btc, did:key ---
def b64std(b):
    """Standard base64 with padding."""
    return base64.b64encode(b).decode()


def b64url(b):
    """Base64url without padding."""
    return base64.urlsafe_b64encode(b).rstrip(b"=").decode()


def unb64(s):
    """Bytes of base64 in the standard or the URL-safe alphabet, padded or not, in
    its one canonical spelling (no stray characters, no stray bits); ValueError
    otherwise."""
    if not isinstance(s, str) or not s.isascii():
        raise ValueError("not base64")
    url, std = any(c in s for c in "-_"), any(c in s for c in "+/")
    if url and std:
        raise ValueError("not base64: both alphabets")
    body = s.rstrip("=")
    if s != body and (len(s) % 4 or len(s) - len(body) > 2):
        raise ValueError("not base64: bad padding")
    if len(body) % 4 == 1:
        raise ValueError("not base64: bad length")
    try:
        raw = base64.b64decode(body.translate(str.maketrans("-_", "+/")) + "=" * (-len(body) % 4), validate=True)
    except binascii.Error as e:
        raise ValueError(f"not base64: {e}") from None
    if b64std(raw).rstrip("=") != body.translate(str.maketrans("-_", "+/")):
        raise ValueError("not base64: stray bits")
    return raw


B58 = "123456789ABCDEFGHJKLMNPQRSTUVWXYZabcdefghijkmnopqrstuvwxyz"


def b58encode(b):
    n, out = int.from_bytes(b, "big"), ""
    while n:
        n, r = divmod(n, 58)
        out = B58[r] + out
    return "1" * (len(b) - len(b.lstrip(b"\0"))) + out


def b58decode(s):
    if not s or len(s) > 128 or any(c not in B58 for c in s):
        raise ValueError("not base58btc")
    n = 0
    for c in s:
        n = n * 58 + B58.index(c)
    body = n.to_bytes((n.bit_length() + 7) // 8, "big")
    return b"\0" * (len(s) - len(s.lstrip("1"))) + body


def unhex(s):
    if len(s) != 64 or any(c not in "0123456789abcdefABCDEF" for c in s):
        raise ValueError("not 64 hex digits")
    return bytes.fromhex(s)


ED25519_MULTICODEC = b"\xed\x01"


def did_of(pub):
    """did:key of an Ed25519 public key."""
    return "did:key:z" + b58encode(ED25519_MULTICODEC + pub)


def candidate_keys(ident):
    """Every Ed25519 key (32 bytes, a valid point) that an identifier may name:
    did:key (Ed25519 multicodec only), else a raw key in base64 or base64url, hex, or
    base58btc (with or without the multibase `z`). ValueError when it names none."""
    if not isinstance(ident, str) or not ident:
        raise ValueError("no key identifier")
    if ident.startswith("did:key:"):
        if not ident.startswith("did:key:z"):
            raise ValueError("did:key is not base58btc multibase")
        raw = b58decode(ident[len("did:key:z"):])
        if raw[:2] != ED25519_MULTICODEC or len(raw) != 34:
            raise ValueError("did:key is not an Ed25519 key")
        found = [raw[2:]]
    else:
        found = []
        readers = [unb64, unhex, b58decode, lambda s: b58decode(s[1:]) if s[:1] == "z" else b""]
        for read in readers:
            try:
                raw = read(ident)
            except ValueError:
                continue
            if len(raw) == 32 and raw not in found:
                found.append(raw)
    keys = []
    for k in found:
        try:
            decode(k)
            keys.append(k)
        except ValueError:
            pass
    if not keys:
        raise ValueError(f"{ident!r} names no Ed25519 public key")
    return keys


# --- RFC 8785 (JSON Canonicalization Scheme) ---
def es_number(x):
    """A JSON number as ECMAScript's Number.prototype.toString writes the double
    nearest it (RFC 8785 3.2.2.3): 1e+21, 1.5e-7, 0.000001, -0 as 0."""
    if isinstance(x, bool) or not isinstance(x, (int, float)):
        raise TypeError(f"not a number: {x!r}")
    try:
        if isinstance(x, int) and float(x) != x:  # I-JSON: what is signed is what is read
            raise ValueError(f"the integer {x} is not exactly an IEEE 754 double (not I-JSON)")
        x = float(x)
    except OverflowError:
        raise ValueError("a number out of the range of IEEE 754 doubles") from None
    if math.isnan(x) or math.isinf(x):
        raise ValueError("NaN and Infinity have no JSON form")
    if x == 0:
        return "0"
    sign = "-" if x < 0 else ""
    # repr gives the shortest digits that round-trip (the same as ECMAScript's).
    mant, _, exp = repr(abs(x)).partition("e")
    whole, _, frac = mant.partition(".")
    digits = (whole + frac).lstrip("0")
    n = len(whole) + int(exp or 0) - (len(whole + frac) - len(digits))  # value = 0.DIGITS x 10^n
    digits = digits.rstrip("0")
    k = len(digits)
    if k <= n <= 21:
        out = digits + "0" * (n - k)
    elif 0 < n <= 21:
        out = digits[:n] + "." + digits[n:]
    elif -6 < n <= 0:
        out = "0." + "0" * -n + digits
    else:
        e = n - 1
        out = digits[0] + ("." + digits[1:] if k > 1 else "") + "e" + ("+" if e > 0 else "-") + str(abs(e))
    return sign + out


SHORT_ESCAPES = {'"': '\\"', "\\": "\\\\", "\b": "\\b", "\t": "\\t", "\n": "\\n", "\f": "\\f", "\r": "\\r"}


def es_string(s):
    """A string as RFC 8785 3.2.2.2 writes it: only " \\ and the controls escaped."""
    out = ['"']
    for c in s:
        o = ord(c)
        if c in SHORT_ESCAPES:
            out.append(SHORT_ESCAPES[c])
        elif o < 0x20:
            out.append("\\u%04x" % o)
        elif 0xD800 <= o <= 0xDFFF:
            raise ValueError("a lone surrogate has no canonical form (I-JSON)")
        else:
            out.append(c)
    out.append('"')
    return "".join(out)


def canon(v):
    """The RFC 8785 canonical form of a JSON value, as text."""
    if v is None:
        return "null"
    if v is True:
        return "true"
    if v is False:
        return "false"
    if isinstance(v, (int, float)):
        return es_number(v)
    if isinstance(v, str):
        return es_string(v)
    if isinstance(v, (list, tuple)):
        return "[" + ",".join(canon(x) for x in v) + "]"
    if isinstance(v, dict):
        if not all(isinstance(k, str) for k in v):
            raise TypeError("member names are strings")
        names = sorted(v, key=lambda k: k.encode("utf-16-be"))  # lone surrogates raise
        return "{" + ",".join(es_string(k) + ":" + canon(v[k]) for k in names) + "}"
    raise TypeError(f"not a JSON value: {type(v).__name__}")


def canonical(v):
    """The bytes of the canonical form (UTF-8): what is signed."""
    return canon(v).encode("utf-8")


def _members(pairs):
    obj = {}
    for k, x in pairs:
        if k in obj:
            raise ValueError(f"duplicate member name {k!r} (not I-JSON)")
        obj[k] = x
    return obj


def _no_constant(name):
    raise ValueError(f"{name} is not JSON")


def loads(data):
    """JSON text (bytes or str) read strictly: UTF-8, no duplicate member names, no
    NaN or Infinity. ValueError otherwise."""
    if isinstance(data, (bytes, bytearray)):
        data = bytes(data).decode("utf-8")  # UnicodeDecodeError is a ValueError
    return json.loads(data, object_pairs_hook=_members, parse_constant=_no_constant)
