#!/usr/bin/env python3
"""Self-check of the agora-exchange vectors against the agora-exchange schemas.

Usage: python3 vectors/agora-exchange/check.py   (needs the jsonschema package;
PyYAML, when installed, is used to parse the document metadata as YAML too)

Checks, in order:
  documents/  every <name>.json: its sha1 equals SHA1 of the exact bytes of <name>.txt,
              its metadata equals the YAML block above the first '---' line, and the
              properties the vectors claim (CRLF twin, no trailing newline, non-ASCII
              UTF-8, multiround false) hold.
  responses/  every vector with verdict valid or warning passes the response schema (or
              the wellknown schema); every invalid vector whose fault a schema can express
              fails it; the others (not JSON, wrong Content-Type) are skipped with a
              printed reason. A small model of the harness's reply checks must reproduce
              every verdict.
  requests/   the format is well formed; every input whose expected status is success
              passes request.schema.json; echo-protocol expectations follow the echo rules;
              the expected /wellknown object passes wellknown.schema.json.
Exits 1 on any disagreement.
"""

import hashlib
import json
import pathlib
import re
import sys

try:
    import jsonschema
except ImportError:  # pragma: no cover
    sys.exit("check.py needs the jsonschema package (pip install jsonschema)")

try:
    import yaml  # optional
except ImportError:  # pragma: no cover
    yaml = None

HERE = pathlib.Path(__file__).resolve().parent
SCHEMAS = HERE.parent.parent / "schemas" / "agora-exchange"
ECHO_HASH = "8b7257591b2941de9824e0b4651f1e22ee753edb"
REQ_ID = re.compile(r"^AEX-(0[0-5][0-9]|A([1-9]|1[0-9]|2[0-2]))$")  # AEX-001..059, AEX-A1..A22
HEX40 = re.compile(r"^[0-9a-f]{40}\Z")

failures = []


def fail(msg):
    failures.append(msg)
    print("FAIL", msg)


def load_schema(name):
    schema = json.loads((SCHEMAS / name).read_text(encoding="utf-8"))
    jsonschema.Draft202012Validator.check_schema(schema)
    return jsonschema.Draft202012Validator(schema)


REQUEST = load_schema("request.schema.json")
RESPONSE = load_schema("response.schema.json")
WELLKNOWN = load_schema("wellknown.schema.json")


def schema_errors(validator, instance):
    return [f"{'/'.join(map(str, e.absolute_path)) or '(root)'}: {e.message}"
            for e in validator.iter_errors(instance)]


def check_requirements(where, reqs):
    if not isinstance(reqs, list) or not reqs:
        fail(f"{where}: requirements must be a non-empty list")
        return
    for r in reqs:
        if not isinstance(r, str) or not REQ_ID.match(r):
            fail(f"{where}: unknown requirement id {r!r}")


# ---------------------------------------------------------------- documents

def split_document(text):
    """Split at the first line equal to '---' (line terminator LF or CRLF)."""
    lines = text.splitlines(keepends=True)
    for i, line in enumerate(lines):
        if line.rstrip("\r\n") == "---":
            return "".join(lines[:i]), "".join(lines[i + 1:])
    return None


def parse_metadata(block):
    """Minimal reader for 'key: plain scalar' lines; PyYAML is used as well if present."""
    meta = {}
    for line in block.splitlines():
        if not line.strip():
            continue
        key, sep, value = line.partition(": ")
        if not sep:
            raise ValueError(f"not a 'key: value' line: {line!r}")
        value = value.strip()
        meta[key] = {"true": True, "false": False}.get(value, value)
    if yaml is not None:
        parsed = yaml.safe_load(block)
        if parsed != meta:
            raise ValueError(f"YAML reads {parsed!r}, the minimal reader {meta!r}")
    return meta


def check_documents():
    docs = HERE / "documents"
    raw = {}
    for txt in sorted(docs.glob("*.txt")):
        if not txt.with_suffix(".json").exists():
            fail(f"documents/{txt.name}: no sibling .json")
    for js in sorted(docs.glob("*.json")):
        where = f"documents/{js.name}"
        v = json.loads(js.read_text(encoding="utf-8"))
        if set(v) != {"description", "sha1", "requirements", "metadata"}:
            fail(f"{where}: keys {sorted(v)}")
        check_requirements(where, v.get("requirements"))
        txt = js.with_suffix(".txt")
        if not txt.exists():
            fail(f"{where}: no sibling .txt")
            continue
        data = txt.read_bytes()
        raw[txt.stem] = data
        sha = hashlib.sha1(data).hexdigest()
        if not HEX40.match(v.get("sha1", "")):
            fail(f"{where}: sha1 is not 40 lower-case hex")
        if v.get("sha1") != sha:
            fail(f"{where}: sha1 {v.get('sha1')} but SHA1({txt.name}) = {sha}")
        try:
            text = data.decode("utf-8")
        except UnicodeDecodeError as e:
            fail(f"{where}: not UTF-8 ({e})")
            continue
        parts = split_document(text)
        if parts is None:
            fail(f"{where}: no '---' separator line")
            continue
        try:
            meta = parse_metadata(parts[0])
        except Exception as e:  # noqa: BLE001
            fail(f"{where}: metadata: {e}")
            continue
        if meta != v.get("metadata"):
            fail(f"{where}: metadata {v.get('metadata')!r} but the document says {meta!r}")
        types = {"name": str, "description": str, "multiround": bool}
        for key, typ in types.items():
            if not isinstance(meta.get(key), typ):
                fail(f"{where}: metadata {key} is not a {typ.__name__}")
        print(f"ok   documents/{txt.name} sha1 {sha}")

    # The properties the document set is meant to have.
    if hashlib.sha1(raw.get("echo", b"")).hexdigest() != ECHO_HASH:
        fail("documents/echo.txt: SHA1 is not the reference server's echo hash")
    crlf, lf = raw.get("greet-crlf"), raw.get("greet")
    if crlf is None or lf is None or b"\r\n" not in crlf or b"\r" in lf \
            or crlf.replace(b"\r\n", b"\n") != lf \
            or hashlib.sha1(crlf).digest() == hashlib.sha1(lf).digest():
        fail("documents/greet-crlf.txt must be greet.txt with CRLF line endings and a different SHA1")
    if not raw.get("no-newline") or raw["no-newline"].endswith((b"\n", b"\r")):
        fail("documents/no-newline.txt must not end with a line terminator")
    if not raw.get("utf8") or raw["utf8"].isascii() \
            or "café" not in raw["utf8"].decode("utf-8") or "日本語" not in raw["utf8"].decode("utf-8"):
        fail("documents/utf8.txt must hold non-ASCII UTF-8 text (café, 日本語)")
    metas = [json.loads(p.read_text(encoding="utf-8"))["metadata"] for p in docs.glob("*.json")]
    if not any(m.get("multiround") is False for m in metas):
        fail("documents/: no document with multiround: false")
    for name, data in raw.items():
        if data.startswith(b"\xef\xbb\xbf"):
            fail(f"documents/{name}.txt starts with a BOM")


# ---------------------------------------------------------------- responses

class NotJson(ValueError):
    pass


def strict_loads(text):
    """RFC 8259 parse: no NaN/Infinity. Returns (value, duplicate_keys)."""
    dups = []

    def pairs(items):
        obj = {}
        for k, val in items:
            if k in obj:
                dups.append(k)
            obj[k] = val
        return obj

    def bad_constant(name):
        raise NotJson(f"{name} is not JSON")

    try:
        value = json.loads(text, object_pairs_hook=pairs, parse_constant=bad_constant)
    except (ValueError, NotJson) as e:
        raise NotJson(str(e)) from None
    return value, dups


def media_type(content_type):
    if content_type is None:
        return None
    return content_type.split(";", 1)[0].strip().lower()


def model_verdict(v):
    """A small model of the harness's reply checks. Returns (verdict, schema_expressible)."""
    if media_type(v["content_type"]) != "application/json" and v["http_status"] == 200:
        return "invalid", False  # AEX-004
    if "input_text" in v:
        try:
            reply, dups = strict_loads(v["input_text"])
        except NotJson:
            return "invalid", False  # AEX-058
    else:
        reply, dups = v["input"], []
    validator = WELLKNOWN if v["context"] == "wellknown" else RESPONSE
    if schema_errors(validator, reply):
        return "invalid", True
    if v["context"] == "wellknown":
        return ("warning" if dups else "valid"), True
    warn = bool(dups)
    status = reply["status"]
    if status == "success" and "error" in reply:      # AEX-012 / AEX-A4
        warn = True
    if status == "success" and "body" not in reply:   # AEX-011 / AEX-A4
        warn = True
    if status == "failure" and "body" in reply:       # AEX-011 / AEX-A4
        warn = True
    exp = reply.get("conversationExpires")
    if isinstance(exp, int) and exp >= 10 ** 12:      # AEX-A11: 13 digits = milliseconds
        warn = True
    return ("warning" if warn else "valid"), True


def check_responses():
    keys_required = {"description", "requirements", "context", "http_status", "content_type", "expect"}
    skipped = []
    for path in sorted((HERE / "responses").glob("*.json")):
        where = f"responses/{path.name}"
        v = json.loads(path.read_text(encoding="utf-8"))
        extra = set(v) - keys_required - {"input", "input_text"}
        if not keys_required <= set(v) or extra or (("input" in v) == ("input_text" in v)):
            fail(f"{where}: keys {sorted(v)} (need exactly one of input and input_text)")
            continue
        check_requirements(where, v["requirements"])
        if v["context"] not in ("single-round", "multi-round", "failure-expected", "wellknown"):
            fail(f"{where}: context {v['context']!r}")
        exp = v["expect"]
        if set(exp) != {"verdict", "reason"} or exp["verdict"] not in ("valid", "invalid", "warning"):
            fail(f"{where}: expect {exp!r}")
            continue
        verdict, expressible = model_verdict(v)
        if verdict != exp["verdict"]:
            fail(f"{where}: model verdict {verdict}, vector says {exp['verdict']}")
        validator = WELLKNOWN if v["context"] == "wellknown" else RESPONSE
        schema_name = "wellknown" if v["context"] == "wellknown" else "response"
        if not expressible:
            skipped.append((path.name, exp["reason"]))
            print(f"skip responses/{path.name}: not schema-expressible ({exp['reason']})")
            continue
        reply = v["input"] if "input" in v else strict_loads(v["input_text"])[0]
        errs = schema_errors(validator, reply)
        if exp["verdict"] in ("valid", "warning"):
            if errs:
                fail(f"{where}: {exp['verdict']} vector fails the {schema_name} schema: {errs}")
            else:
                print(f"ok   {where}: {exp['verdict']}, passes the {schema_name} schema")
        else:
            if not errs:
                fail(f"{where}: invalid vector passes the {schema_name} schema")
            else:
                print(f"ok   {where}: invalid, {schema_name} schema says {errs[0]}")
    return skipped


# ---------------------------------------------------------------- requests

def check_requests():
    keys = {"description", "requirements", "method", "path", "content_type", "expect"}
    expect_keys = {"http_status", "status", "error_matches", "body", "conversation"}
    expect_optional = {"not_status", "body_has_error"}
    echo_text = (HERE / "documents" / "echo.txt").read_bytes().decode("utf-8")
    for path in sorted((HERE / "requests").glob("*.json")):
        where = f"requests/{path.name}"
        v = json.loads(path.read_text(encoding="utf-8"))
        if not keys <= set(v) or set(v) - keys - {"input", "input_text"}:
            fail(f"{where}: keys {sorted(v)}")
            continue
        check_requirements(where, v["requirements"])
        has_input = ("input" in v) + ("input_text" in v)
        if v["method"] == "POST":
            if has_input != 1:
                fail(f"{where}: a POST needs exactly one of input and input_text")
        elif v["method"] == "GET":
            if has_input or v["content_type"] is not None:
                fail(f"{where}: a GET has no input and no content_type")
        else:
            fail(f"{where}: method {v['method']!r}")
        if not isinstance(v["path"], str) or not v["path"].startswith("/"):
            fail(f"{where}: path {v['path']!r}")
        if v["content_type"] not in (None, "application/json"):
            print(f"note {where}: content_type {v['content_type']!r}")
        e = v["expect"]
        if not expect_keys <= set(e) or set(e) - expect_keys - expect_optional:
            fail(f"{where}: expect keys {sorted(e)}")
            continue
        if not (isinstance(e["http_status"], list) and e["http_status"]
                and all(isinstance(s, int) and 100 <= s <= 599 for s in e["http_status"])):
            fail(f"{where}: http_status {e['http_status']!r}")
        if e["status"] not in ("success", "failure", None):
            fail(f"{where}: status {e['status']!r}")
        if e.get("not_status") not in (None, "success", "failure"):
            fail(f"{where}: not_status {e['not_status']!r}")
        if e["status"] is not None and e["status"] == e.get("not_status"):
            fail(f"{where}: status and not_status agree")
        if e.get("body_has_error") not in (None, True, False):
            fail(f"{where}: body_has_error {e['body_has_error']!r}")
        if e.get("body_has_error") and e["status"] != "success":
            fail(f"{where}: body_has_error needs status success (a protocol-level error)")
        if e["error_matches"] is not None:
            try:
                re.compile(e["error_matches"])
            except re.error as err:
                fail(f"{where}: error_matches does not compile: {err}")
            if e["status"] != "failure":
                fail(f"{where}: error_matches needs status failure")
        if not isinstance(e["conversation"], bool):
            fail(f"{where}: conversation must be a boolean")
        if e["conversation"] and (e["status"] != "success" or e["http_status"] != [200]):
            fail(f"{where}: conversation true needs HTTP 200 and status success")

        inp = v.get("input")
        if e["status"] == "success":
            errs = schema_errors(REQUEST, inp)
            if errs:
                fail(f"{where}: input of a success vector fails the request schema: {errs}")
            else:
                print(f"ok   {where}: success, input passes the request schema")
            # echo rules: a valid echo body comes back unchanged; anything else is body.error
            if isinstance(inp, dict) and inp.get("protocolHash") == ECHO_HASH:
                body = inp.get("body")
                valid = isinstance(body, dict) and isinstance(body.get("text"), str)
                if valid and e["body"] != {"text": body["text"]}:
                    fail(f"{where}: the echo protocol answers body {{'text': {body['text']!r}}}")
                if not valid and not e.get("body_has_error"):
                    fail(f"{where}: an echo protocol violation needs body_has_error")
            if isinstance(inp, dict) and inp.get("multiround") is True and not e["conversation"]:
                fail(f"{where}: the reference server approves multiround true")
        elif v["method"] == "POST":
            if "input" in v:
                errs = schema_errors(REQUEST, inp)
                verdict = "rejects" if errs else "accepts"
                print(f"ok   {where}: expects {e['status'] or 'no Agora status'} "
                      f"{e['http_status']}; the request schema {verdict} the input")
            else:
                try:
                    json.loads(v["input_text"])
                    fail(f"{where}: input_text is JSON; use input")
                except ValueError:
                    print(f"ok   {where}: input_text is not JSON, expects {e['http_status']}")
        if v["method"] == "GET" and v["path"] == "/wellknown":
            expected = {ECHO_HASH: [echo_text]}
            if e["body"] != expected:
                fail(f"{where}: body must map the echo hash to the text of documents/echo.txt")
            errs = schema_errors(WELLKNOWN, e["body"])
            if errs:
                fail(f"{where}: expected body fails the wellknown schema: {errs}")
            else:
                print(f"ok   {where}: expected body passes the wellknown schema")


def main():
    print("== documents")
    check_documents()
    print("== responses")
    skipped = check_responses()
    print("== requests")
    check_requests()
    print("== not schema-expressible (checked by the harness only):")
    for name, reason in skipped:
        print(f"   {name}: {reason}")
    if failures:
        print(f"{len(failures)} failure(s)")
        return 1
    print("all checks passed")
    return 0


if __name__ == "__main__":
    sys.exit(main())
