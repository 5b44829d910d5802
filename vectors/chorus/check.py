#!/usr/bin/env python3
"""Self-check of the chorus vectors against the chorus schemas and the §4 formula.

Usage: python3 vectors/chorus/check.py   (needs the jsonschema package)

Checks, in order:
  schemas/chorus/  every *.schema.json is valid JSON Schema draft 2020-12, has the
                   $id https://agentconform.dev/schemas/chorus/<file>, and uses no
                   "format" (the project encodes UUIDs and timestamps as patterns).
  messages/        every vector is well formed; its input validated against
                   schemas/chorus/<kind>.schema.json gives its verdict; every invalid
                   vector differs from some valid vector of the same kind in exactly one
                   place (so it fails for the reason it names); no string ends with a
                   line feed (Python's "$" would accept one, Rust's does not).
  reputation/      every sequence is well formed and every expected score equals, bit
                   for bit, the score recomputed here with chorus.md §4:
                   SUCCESS: old + ((2.0 * hirer_reputation) / 100.0)
                   FAILURE: old - (3.0 * 1.5)
                   then min(100.0, max(0.0, new)).
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
SCHEMAS = HERE.parent.parent / "schemas" / "chorus"
ID_BASE = "https://agentconform.dev/schemas/chorus/"
REQ_ID = re.compile(r"^CHO-(0[0-3][0-9]|04[0-6]|A([1-9]|1[0-9]|2[01]))$")  # CHO-001..046, CHO-A1..A21
UUID_V = re.compile(r"^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-([0-9a-fA-F])[0-9a-fA-F]{3}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$")

failures = []
notes = []


def fail(msg):
    failures.append(msg)
    print("FAIL", msg)


def walk(value, path=""):
    """Yields (json pointer, leaf value) for every leaf, and a marker for empty containers."""
    if isinstance(value, dict):
        if not value:
            yield path, "{}"
        for k, v in value.items():
            yield from walk(v, f"{path}/{k}")
    elif isinstance(value, list):
        if not value:
            yield path, "[]"
        for i, v in enumerate(value):
            yield from walk(v, f"{path}/{i}")
    else:
        # Distinguish 1 from 1.0 and from True.
        yield path, (type(value).__name__, value)


ABSENT = object()


def differences(a, b):
    """Number of places where a and b differ: a member added, removed or replaced counts
    once, however large the replaced value; objects and equal-length arrays are compared
    member by member. 1 and 1.0 and True are different values."""
    if isinstance(a, dict) and isinstance(b, dict):
        return sum(differences(a.get(k, ABSENT), b.get(k, ABSENT)) for k in set(a) | set(b))
    if isinstance(a, list) and isinstance(b, list) and len(a) == len(b):
        return sum(differences(x, y) for x, y in zip(a, b))
    if a is ABSENT or b is ABSENT or type(a) is not type(b) or a != b:
        return 1
    return 0


# ---------------------------------------------------------------- schemas
validators = {}
for path in sorted(SCHEMAS.glob("*.schema.json")):
    doc = json.loads(path.read_text(encoding="utf-8"))
    try:
        jsonschema.Draft202012Validator.check_schema(doc)
    except jsonschema.SchemaError as e:
        fail(f"{path.name}: not a valid draft 2020-12 schema: {e.message}")
        continue
    if doc.get("$schema") != "https://json-schema.org/draft/2020-12/schema":
        fail(f"{path.name}: $schema is not draft 2020-12")
    if doc.get("$id") != ID_BASE + path.name:
        fail(f"{path.name}: $id is {doc.get('$id')!r}")
    if '"format"' in path.read_text(encoding="utf-8"):
        fail(f"{path.name}: uses format")
    validators[path.name[: -len(".schema.json")]] = jsonschema.Draft202012Validator(doc)

# ---------------------------------------------------------------- messages
messages = {}
for path in sorted((HERE / "messages").glob("*.json")):
    stem = path.stem
    v = json.loads(path.read_text(encoding="utf-8"))
    if set(v) != {"description", "requirements", "kind", "input", "expect"}:
        fail(f"messages/{stem}: members {sorted(v)}")
        continue
    if not v["requirements"] or any(not REQ_ID.match(r) for r in v["requirements"]):
        fail(f"messages/{stem}: bad requirements {v['requirements']}")
    if v["kind"] not in validators or v["kind"] == "error":
        fail(f"messages/{stem}: no schema for kind {v['kind']!r}")
        continue
    verdict = v["expect"].get("verdict")
    if verdict not in ("valid", "invalid") or not isinstance(v["expect"].get("reason"), str):
        fail(f"messages/{stem}: bad expect {v['expect']}")
        continue
    errors = sorted(validators[v["kind"]].iter_errors(v["input"]), key=lambda e: list(e.absolute_path))
    got = "valid" if not errors else "invalid"
    if got != verdict:
        why = "; ".join(f"/{'/'.join(map(str, e.absolute_path))}: {e.message}" for e in errors[:4])
        fail(f"messages/{stem}: schema says {got}, vector says {verdict} {why}")
    for pointer, leaf in walk(v["input"]):
        if isinstance(leaf, tuple) and isinstance(leaf[1], str) and leaf[1].endswith("\n"):
            fail(f"messages/{stem}: {pointer} ends with a line feed")
        if isinstance(leaf, tuple) and isinstance(leaf[1], float) and leaf[1] == int(leaf[1]) and pointer.endswith("_ms"):
            fail(f"messages/{stem}: {pointer} is an integral float, which JSON Schema counts as an integer")
        if isinstance(leaf, tuple) and isinstance(leaf[1], str) and pointer.endswith("_id"):
            m = UUID_V.match(leaf[1])
            if m and m.group(1) != "4":
                notes.append(f"messages/{stem}: {pointer} is a version-{m.group(1)} UUID (CHO-A7)")
    messages[stem] = v

for stem, v in messages.items():
    if v["expect"]["verdict"] != "invalid":
        continue
    bases = [b for b in messages.values() if b["kind"] == v["kind"] and b["expect"]["verdict"] == "valid"]
    best = min((differences(v["input"], b["input"]) for b in bases), default=None)
    if best != 1:
        fail(f"messages/{stem}: differs from the nearest valid {v['kind']} vector in {best} places, not 1")

kinds = {v["kind"] for v in messages.values()}
for kind in validators:
    if kind != "error" and not {"valid", "invalid"} <= {v["expect"]["verdict"] for v in messages.values() if v["kind"] == kind}:
        fail(f"kind {kind}: needs at least one valid and one invalid vector")

# ---------------------------------------------------------------- reputation
def clamp(x):
    if x > 100.0:
        return 100.0
    if x < 0.0:
        return 0.0
    return x


sequences = 0
for path in sorted((HERE / "reputation").glob("*.json")):
    stem = path.stem
    r = json.loads(path.read_text(encoding="utf-8"))
    if set(r) != {"description", "requirements", "initial", "steps"}:
        fail(f"reputation/{stem}: members {sorted(r)}")
        continue
    if not r["requirements"] or any(not REQ_ID.match(x) for x in r["requirements"]):
        fail(f"reputation/{stem}: bad requirements {r['requirements']}")
    score = r["initial"]
    if not isinstance(score, float) or not 0.0 <= score <= 100.0:
        fail(f"reputation/{stem}: initial {score!r}")
        continue
    if not r["steps"]:
        fail(f"reputation/{stem}: no steps")
    for i, step in enumerate(r["steps"]):
        outcome = step.get("outcome")
        if outcome == "SUCCESS":
            if set(step) != {"outcome", "hirer_reputation", "expected"}:
                fail(f"reputation/{stem} step {i}: members {sorted(step)}")
                break
            hirer = step["hirer_reputation"]
            if not isinstance(hirer, float) or not 0.0 <= hirer <= 100.0:
                fail(f"reputation/{stem} step {i}: hirer_reputation {hirer!r}")
            score = clamp(score + ((2.0 * hirer) / 100.0))
        elif outcome == "FAILURE":
            if set(step) != {"outcome", "expected"}:
                fail(f"reputation/{stem} step {i}: members {sorted(step)}")
                break
            score = clamp(score - (3.0 * 1.5))
        else:
            fail(f"reputation/{stem} step {i}: outcome {outcome!r}")
            break
        exp = step["expected"]
        if not isinstance(exp, float) or exp.hex() != score.hex():
            fail(f"reputation/{stem} step {i}: expected {exp!r}, recomputed {score!r}")
            break
        if abs(exp - float(f"{exp:.2f}")) > 0.005 + 1e-12:  # pragma: no cover - sanity of the tolerance
            fail(f"reputation/{stem} step {i}: 2-decimal rounding moves {exp!r} by more than 0.005")
    sequences += 1

if notes:
    print(f"note: {len(notes)} id values are UUIDs of a version other than 4 (valid by syntax, CHO-A7), e.g.")
    print("     ", notes[0])
print(f"{len(validators)} schemas, {len(messages)} message vectors, {sequences} reputation sequences checked")
if failures:
    print(f"{len(failures)} failure(s)")
    sys.exit(1)
print("all checks passed")
