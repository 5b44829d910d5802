#!/usr/bin/env bash
# The local check of build.sh: runs it as the engine would, with SRC, OUT and WORK
# in a temporary folder (SRC/agentconform a link to this checkout) and
# SANITIZER=none (the stable toolchain), then checks that every target, its seed
# corpus and its dictionary are in OUT and that each target runs 200 inputs of its
# corpus without a crash. With SECONDS, each target fuzzes that long instead (the
# way .ci/run uses it: one build serves both the check and the CI fuzzing; a crash
# leaves its input in fuzz/artifacts/<target>/, as fuzz/run-ci.sh does).
#   bash .clusterfuzzlite/check.sh [SECONDS]
set -euo pipefail
secs="${1:-}"
root="$(cd "$(dirname "$0")/.." && pwd)"
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
mkdir -p "$tmp/src" "$tmp/out" "$tmp/work"
ln -s "$root" "$tmp/src/agentconform"
export SRC="$tmp/src" OUT="$tmp/out" WORK="$tmp/work" SANITIZER=none FUZZING_ENGINE=libfuzzer ARCHITECTURE=x86_64
bash "$root/.clusterfuzzlite/build.sh"
targets="$(cd "$root/fuzz" && cargo fuzz list)"
[ -n "$targets" ] || { echo "check: cargo fuzz list names no target" >&2; exit 1; }
for t in $targets; do
  for f in "$OUT/$t" "$OUT/$t.dict" "$OUT/${t}_seed_corpus.zip"; do
    [ -s "$f" ] || { echo "check: $f is missing or empty" >&2; exit 1; }
  done
  mkdir -p "$WORK/$t"
  unzip -q -o "$OUT/${t}_seed_corpus.zip" -d "$WORK/$t"
  if [ -n "$secs" ]; then
    budget=(-max_total_time="$secs" -print_final_stats=1)
    what="fuzzed for ${secs}s"
  else
    budget=(-runs=200)
    what="ran 200 inputs"
  fi
  mkdir -p "$root/fuzz/artifacts/$t"
  "$OUT/$t" "${budget[@]}" -dict="$OUT/$t.dict" -rss_limit_mb=2048 \
    -artifact_prefix="$root/fuzz/artifacts/$t/" "$WORK/$t" >"$WORK/$t.log" 2>&1 ||
    { tail -n 20 "$WORK/$t.log" >&2; echo "check: $t failed" >&2; exit 1; }
  echo "check: $t built and $what"
  grep -E "stat::(number_of_executed_units|average_exec_per_sec)" "$WORK/$t.log" || true
done
