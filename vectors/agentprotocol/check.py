#!/usr/bin/env python3
"""Check the agentprotocol vectors and schemas of agentconform.

Run from anywhere:  python3 vectors/agentprotocol/check.py
Needs:              pip install rfc8785 cryptography jsonschema

Independent of generate.py: it reads only the files on disk.
- schemas/agentprotocol/*.schema.json are valid draft 2020-12 schemas in the
  project's style (matching $id, no `format`, anchored patterns, local $ref
  only), and each *-payload schema has the same shape as the matching
  $defs/<type>Payload of message.schema.json;
- every messages/*.json gets the verdict it states from its schema;
- every signed/*.json: canonical is the RFC 8785 form of message minus
  signature, naive_sorted and naive_differs are right, the signature verifies
  (or not) with the key in from.agentId as expect.signature says, a vector
  signed over naive JSON verifies over naive_sorted, and the message itself is
  schema-valid;
- no string in any vector ends in a line feed.
Exits non-zero on the first run with any failure and lists them all.
"""

import base64
import glob
import json
import os
import sys

import rfc8785
from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey
from jsonschema import Draft202012Validator

HERE = os.path.dirname(os.path.abspath(__file__))
SCHEMAS = os.path.normpath(os.path.join(HERE, "..", "..", "schemas", "agentprotocol"))
ID_BASE = "https://agentconform.dev/schemas/agentprotocol/"
NAIVE_REASON = "signed over naive sorted-key JSON"
SIGNED_KEYS = {"description", "requirements", "informational", "message", "canonical",
               "naive_sorted", "naive_differs", "expect"}
MESSAGE_KEYS = {"description", "requirements", "schema", "input", "expect"}


def load(path):
    with open(path, encoding="utf-8") as f:
        return json.load(f)


def b64_any(s):
    s = s.replace("-", "+").replace("_", "/")
    s += "=" * (-len(s) % 4)
    return base64.b64decode(s, validate=True)


def ed_verify(pub, sig, data):
    try:
        Ed25519PublicKey.from_public_bytes(pub).verify(sig, data)
        return True
    except (InvalidSignature, ValueError):
        return False


def walk(value, path=""):
    """Yield (path, key, value) for every object member, recursively."""
    if isinstance(value, dict):
        for k, v in value.items():
            yield path, k, v
            yield from walk(v, f"{path}/{k}")
    elif isinstance(value, list):
        for i, v in enumerate(value):
            yield from walk(v, f"{path}/{i}")


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


def shape(schema):
    """A schema without its annotations, for comparing payload shapes."""
    if isinstance(schema, dict):
        return {k: shape(v) for k, v in schema.items()
                if k not in ("$schema", "$id", "title", "description", "examples")}
    if isinstance(schema, list):
        return [shape(v) for v in schema]
    return schema


def check_schemas(problems):
    validators = {}
    for path in sorted(glob.glob(os.path.join(SCHEMAS, "*.schema.json"))):
        fname = os.path.basename(path)
        schema = load(path)
        Draft202012Validator.check_schema(schema)
        if schema.get("$schema") != "https://json-schema.org/draft/2020-12/schema":
            problems.append(f"{fname}: $schema is not draft 2020-12")
        if schema.get("$id") != ID_BASE + fname:
            problems.append(f"{fname}: $id is not {ID_BASE + fname}")
        for where, key, value in walk(schema):
            in_properties = where.endswith("/properties")
            if key == "format" and not in_properties:
                problems.append(f"{fname}{where}: uses format")
            if key == "pattern" and not in_properties and not (
                    value.startswith("^") and value.endswith("$")):
                problems.append(f"{fname}{where}: pattern not anchored")
            if key == "$ref" and not in_properties and not value.startswith("#/$defs/"):
                problems.append(f"{fname}{where}: $ref {value} is not local")
        validators[fname[:-len(".schema.json")]] = Draft202012Validator(schema)
    message = load(os.path.join(SCHEMAS, "message.schema.json"))
    for t in ("hello", "request", "response", "error"):
        separate = load(os.path.join(SCHEMAS, f"{t}-payload.schema.json"))
        if shape(separate) != shape(message["$defs"][f"{t}Payload"]):
            problems.append(f"{t}-payload.schema.json differs from message.schema.json "
                            f"$defs/{t}Payload")
    return validators


def check_messages(validators, problems):
    files = sorted(glob.glob(os.path.join(HERE, "messages", "*.json")))
    for path in files:
        name = "messages/" + os.path.basename(path)
        v = load(path)
        if set(v) != MESSAGE_KEYS:
            problems.append(f"{name}: members {sorted(v)}")
            continue
        validator = validators.get(v["schema"])
        if validator is None:
            problems.append(f"{name}: unknown schema {v['schema']}")
            continue
        errors = list(validator.iter_errors(v["input"]))
        got = "invalid" if errors else "valid"
        if got != v["expect"]["verdict"]:
            detail = "; ".join(e.message for e in errors[:3])
            problems.append(f"{name}: schema says {got}, vector says "
                            f"{v['expect']['verdict']} {detail}")
        if any(s.endswith("\n") for s in strings_in(v)):
            problems.append(f"{name}: a string ends in a line feed")
    return len(files)


def check_signed(validators, problems):
    files = sorted(glob.glob(os.path.join(HERE, "signed", "*.json")))
    differ = []
    for path in files:
        name = "signed/" + os.path.basename(path)
        v = load(path)
        if set(v) != SIGNED_KEYS:
            problems.append(f"{name}: members {sorted(v)}")
            continue
        msg = dict(v["message"])
        sig_text = msg.pop("signature", None)
        canon = rfc8785.dumps(msg)
        naive = json.dumps(msg, sort_keys=True, separators=(",", ":"), ensure_ascii=True)
        if v["canonical"].encode("utf-8") != canon:
            problems.append(f"{name}: canonical is not RFC 8785 of message minus signature")
        if v["naive_sorted"] != naive:
            problems.append(f"{name}: naive_sorted is not Python's sorted-key JSON")
        if v["naive_differs"] != (canon.decode("utf-8") != naive):
            problems.append(f"{name}: naive_differs is wrong")
        if v["naive_differs"] and v["expect"]["reason"] != NAIVE_REASON:
            differ.append(os.path.basename(path)[:-5])
        if not validators["message"].is_valid(v["message"]):
            problems.append(f"{name}: message is not valid against message.schema.json")
        try:
            pub = b64_any(v["message"]["from"]["agentId"])
            sig = b64_any(sig_text)
        except (TypeError, ValueError) as e:
            problems.append(f"{name}: cannot decode agentId or signature ({e})")
            continue
        if len(pub) != 32 or len(sig) != 64:
            problems.append(f"{name}: key of {len(pub)} bytes, signature of {len(sig)}")
            continue
        got = "valid" if ed_verify(pub, sig, canon) else "invalid"
        if got != v["expect"]["signature"]:
            problems.append(f"{name}: signature is {got}, vector says "
                            f"{v['expect']['signature']}")
        if v["expect"]["reason"] == NAIVE_REASON and not (
                v["naive_differs"] and ed_verify(pub, sig, naive.encode("ascii"))):
            problems.append(f"{name}: said to be signed over naive JSON, but is not")
        if any(s.endswith("\n") for s in strings_in(v)):
            problems.append(f"{name}: a string ends in a line feed")
    return len(files), differ


def main():
    problems = []
    validators = check_schemas(problems)
    n_msg = check_messages(validators, problems)
    n_sig, differ = check_signed(validators, problems)
    for p in problems:
        print("FAIL:", p, file=sys.stderr)
    print(f"{len(validators)} schemas, {n_msg} schema vectors, {n_sig} signed vectors "
          f"checked: {'FAILED' if problems else 'all pass'}")
    print("naive sorted-key JSON differs from RFC 8785 in: " + ", ".join(differ))
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
