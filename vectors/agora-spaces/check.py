#!/usr/bin/env python3
"""Self-check of the agora-spaces vectors against the agora-spaces schemas and the stream judge rules.

Usage: python3 vectors/agora-spaces/check.py   (needs the jsonschema package)

Checks, in order:
  schemas/agora-spaces/  exactly the 15 event schemas; every one is valid JSON Schema
                   draft 2020-12, has the $id https://agentconform.dev/schemas/agora-spaces/<file>,
                   is an object schema with a `type` const, uses no "format", no $ref
                   outside its own $defs, and only anchored patterns (^…$).
  events/          every vector is well formed; its input validated against
                   schemas/agora-spaces/<schema>.schema.json gives its verdict; every invalid
                   vector either differs from a valid vector of the same schema in exactly
                   one place, or is the input of a valid vector of another schema (a type
                   mismatch); every schema has a valid vector; no string ends with a line
                   feed (Python's "$" would accept one, Rust's does not).
  streams/         every stream is well formed; the judge rules S1-S6 of README.md,
                   written out again here, give its verdict and its reassembled text; an
                   invalid stream breaks exactly one rule and its reason names it; every
                   frame of a valid stream is valid under its event schema.
Exits 1 on any disagreement. Independent of generate.py: it reads only the files.
"""

import json
import pathlib
import re
import sys

try:
    import jsonschema
except ImportError:  # pragma: no cover
    sys.exit("check.py needs the jsonschema package (pip install jsonschema)")

HERE = pathlib.Path(__file__).resolve().parent
SCHEMAS = HERE.parent.parent / "schemas" / "agora-spaces"
ID_BASE = "https://agentconform.dev/schemas/agora-spaces/"
REQ_ID = re.compile(r"^ASP-(00[1-9]|0[1-4][0-9]|05[01]|A([1-9]|1[0-9]|2[0-2]))$")  # ASP-001..051, ASP-A1..A22
TYPES = {
    "agent-register": "agent.register",
    "agent-registered": "agent.registered",
    "agent-heartbeat": "agent.heartbeat",
    "space-join": "space.join",
    "space-joined": "space.joined",
    "space-leave": "space.leave",
    "space-members": "space.members",
    "space-publish": "space.publish",
    "space-event": "space.event",
    "space-event-delta": "space.event.delta",
    "space-event-done": "space.event.done",
    "space-event-cancel": "space.event.cancel",
    "space-list-request": "space.list",
    "space-list-reply": "space.list",
    "error": "error",
}

failures = []


def fail(msg):
    failures.append(msg)
    print("FAIL", msg)


def strings(value):
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for k, x in value.items():
            yield k
            yield from strings(x)
    elif isinstance(value, list):
        for x in value:
            yield from strings(x)


def keyed(value, key):
    """Every value of a member named key, anywhere in value."""
    if isinstance(value, dict):
        for k, x in value.items():
            if k == key:
                yield x
            yield from keyed(x, key)
    elif isinstance(value, list):
        for x in value:
            yield from keyed(x, key)


def same(a, b):
    """JSON equality that tells 1, 1.0 and true apart."""
    if type(a) is not type(b):
        return False
    if isinstance(a, dict):
        return a.keys() == b.keys() and all(same(a[k], b[k]) for k in a)
    if isinstance(a, list):
        return len(a) == len(b) and all(same(x, y) for x, y in zip(a, b))
    return a == b


def changes(a, b):
    """Number of places where two JSON values differ: a member added or removed, or a leaf
    (or a whole value of another JSON type, or an array of another length) replaced."""
    if isinstance(a, dict) and isinstance(b, dict):
        return sum(1 if (k in a) != (k in b) else changes(a[k], b[k]) for k in a.keys() | b.keys())
    if isinstance(a, list) and isinstance(b, list) and len(a) == len(b):
        return sum(changes(x, y) for x, y in zip(a, b))
    return 0 if same(a, b) else 1


# ---------------------------------------------------------------------------
# schemas
# ---------------------------------------------------------------------------


def load_schemas():
    validators = {}
    files = sorted(p.name for p in SCHEMAS.glob("*.schema.json"))
    if files != sorted(f"{n}.schema.json" for n in TYPES):
        fail(f"schemas: files {files} are not the 15 expected")
    for name, t in TYPES.items():
        path = SCHEMAS / f"{name}.schema.json"
        if not path.exists():
            continue
        text = path.read_text(encoding="utf-8")
        schema = json.loads(text)
        try:
            jsonschema.Draft202012Validator.check_schema(schema)
        except jsonschema.SchemaError as e:
            fail(f"schemas/{path.name}: not a valid draft 2020-12 schema: {e.message}")
            continue
        if schema.get("$schema") != "https://json-schema.org/draft/2020-12/schema":
            fail(f"schemas/{path.name}: $schema is not draft 2020-12")
        if schema.get("$id") != ID_BASE + path.name:
            fail(f"schemas/{path.name}: $id {schema.get('$id')}")
        if schema.get("type") != "object" or schema.get("properties", {}).get("type", {}).get("const") != t:
            fail(f"schemas/{path.name}: not an object schema with type const {t!r}")
        if "type" not in schema.get("required", []):
            fail(f"schemas/{path.name}: type is not required")
        if schema.get("additionalProperties") is False:
            fail(f"schemas/{path.name}: additional properties must stay allowed")
        if not schema.get("description") or "agora-spaces.zh.md" not in schema["description"]:
            fail(f"schemas/{path.name}: description does not cite agora-spaces.zh.md")
        if '"format"' in text:
            fail(f"schemas/{path.name}: uses format")
        for ref in keyed(schema, "$ref"):
            if not ref.startswith("#/$defs/"):
                fail(f"schemas/{path.name}: $ref {ref} leaves the file")
        for pat in keyed(schema, "pattern"):
            if not (pat.startswith("^") and pat.endswith("$")):
                fail(f"schemas/{path.name}: pattern {pat} is not anchored")
        validators[name] = jsonschema.Draft202012Validator(schema)
    return validators


# ---------------------------------------------------------------------------
# events
# ---------------------------------------------------------------------------


def check_events(validators):
    docs = {}
    for path in sorted((HERE / "events").glob("*.json")):
        doc = json.loads(path.read_text(encoding="utf-8"))
        docs[path.stem] = doc
        where = f"events/{path.stem}"
        if list(doc) != ["description", "requirements", "schema", "input", "expect"]:
            fail(f"{where}: wrong members {list(doc)}")
            continue
        if not isinstance(doc["description"], str) or not doc["description"]:
            fail(f"{where}: no description")
        if not doc["requirements"] or not all(isinstance(r, str) and REQ_ID.match(r) for r in doc["requirements"]):
            fail(f"{where}: bad requirements {doc['requirements']}")
        exp = doc["expect"]
        if set(exp) != {"verdict", "reason"} or exp["verdict"] not in ("valid", "invalid") or not exp["reason"]:
            fail(f"{where}: bad expect {exp}")
            continue
        if any(s.endswith("\n") for s in strings(doc)):
            fail(f"{where}: a string ends with a line feed")
        v = validators.get(doc["schema"])
        if v is None:
            fail(f"{where}: unknown schema {doc['schema']}")
            continue
        errors = sorted(v.iter_errors(doc["input"]), key=lambda e: list(e.absolute_path))
        got = "invalid" if errors else "valid"
        if got != exp["verdict"]:
            detail = "; ".join(e.message for e in errors[:3])
            fail(f"{where}: schema says {got}, vector says {exp['verdict']} {detail}")
    if len(docs) < 30:
        fail(f"events: only {len(docs)} vectors")

    valid = {s: d for s, d in docs.items() if d.get("expect", {}).get("verdict") == "valid"}
    for name in TYPES:
        if not any(d["schema"] == name for d in valid.values()):
            fail(f"events: no valid vector for {name}")
        if not any(d["schema"] == name and s.startswith(name + "-spec-example") for s, d in valid.items()):
            fail(f"events: no spec example for {name}")
    for stem, doc in docs.items():
        if doc.get("expect", {}).get("verdict") != "invalid":
            continue
        one_off = any(changes(doc["input"], d["input"]) == 1 for d in valid.values() if d["schema"] == doc["schema"])
        mismatch = any(same(doc["input"], d["input"]) for d in valid.values() if d["schema"] != doc["schema"])
        if not (one_off or mismatch):
            fail(f"events/{stem}: not one change away from a valid vector of {doc['schema']}, nor another schema's valid input")
    return docs


# ---------------------------------------------------------------------------
# streams: judge rules S1-S6 (README.md)
# ---------------------------------------------------------------------------

DELTA, DONE = "space.event.delta", "space.event.done"


def judge(published, frames):
    broken = set()
    if not isinstance(frames, list) or not frames or not all(isinstance(f, dict) for f in frames):
        return {"S1"}, None
    types = [f.get("type") for f in frames]
    deltas = [f for f in frames if f.get("type") == DELTA]
    # S1: every frame is a delta or a done, and there is at least one delta.
    if any(t not in (DELTA, DONE) for t in types) or not deltas:
        broken.add("S1")
    # S2: one event_id and one space, both non-empty strings, across all frames.
    eid, sp = frames[0].get("event_id"), frames[0].get("space")
    if not (isinstance(eid, str) and eid and isinstance(sp, str) and sp) or any(
        not same(f.get("event_id"), eid) or not same(f.get("space"), sp) for f in frames
    ):
        broken.add("S2")
    # S3: every delta has a data object whose text is a string.
    texts = []
    for d in deltas:
        data = d.get("data")
        if isinstance(data, dict) and isinstance(data.get("text"), str):
            texts.append(data["text"])
        else:
            broken.add("S3")
    # S4: the first delta carries data.from, a string.
    if deltas:
        data = deltas[0].get("data")
        if not (isinstance(data, dict) and isinstance(data.get("from"), str)):
            broken.add("S4")
    # S5: exactly one done, and it is the last frame.
    if types.count(DONE) != 1 or types[-1] != DONE:
        broken.add("S5")
    # S6: the delta texts joined in frame order equal the published text (only when S3 holds).
    if "S3" not in broken and "".join(texts) != published:
        broken.add("S6")
    return broken, (None if broken else "".join(texts))


def check_streams(validators):
    n = 0
    for path in sorted((HERE / "streams").glob("*.json")):
        n += 1
        doc = json.loads(path.read_text(encoding="utf-8"))
        where = f"streams/{path.stem}"
        if list(doc) != ["description", "requirements", "published_text", "frames", "expect"]:
            fail(f"{where}: wrong members {list(doc)}")
            continue
        if not doc["requirements"] or not all(isinstance(r, str) and REQ_ID.match(r) for r in doc["requirements"]):
            fail(f"{where}: bad requirements {doc['requirements']}")
        if not isinstance(doc["published_text"], str):
            fail(f"{where}: published_text is not a string")
            continue
        if any(s.endswith("\n") for s in strings(doc)):
            fail(f"{where}: a string ends with a line feed")
        exp = doc["expect"]
        if list(exp) != ["verdict", "reassembled", "reason"] or exp["verdict"] not in ("valid", "invalid"):
            fail(f"{where}: bad expect {exp}")
            continue
        broken, reassembled = judge(doc["published_text"], doc["frames"])
        if exp["verdict"] == "valid":
            if broken:
                fail(f"{where}: valid, but breaks {sorted(broken)}")
            if exp["reassembled"] != reassembled or reassembled != doc["published_text"]:
                fail(f"{where}: reassembled text differs")
            for i, f in enumerate(doc["frames"]):
                name = {DELTA: "space-event-delta", DONE: "space-event-done"}[f["type"]]
                errs = list(validators[name].iter_errors(f))
                if errs:
                    fail(f"{where} frame {i}: invalid under {name}: {errs[0].message}")
        else:
            if len(broken) != 1:
                fail(f"{where}: invalid, but breaks {sorted(broken)} (want exactly one rule)")
            elif f"rule {next(iter(broken))})" not in exp["reason"]:
                fail(f"{where}: reason {exp['reason']!r} does not name rule {next(iter(broken))}")
            if exp["reassembled"] is not None:
                fail(f"{where}: an invalid stream has reassembled null")
    if n < 10:
        fail(f"streams: only {n} vectors")


def main():
    validators = load_schemas()
    docs = check_events(validators)
    check_streams(validators)
    print(f"{len(validators)} schemas, {len(docs)} event vectors, "
          f"{len(list((HERE / 'streams').glob('*.json')))} stream vectors checked")
    if failures:
        print(f"{len(failures)} failure(s)")
        sys.exit(1)
    print("all checks passed")


if __name__ == "__main__":
    main()
