#!/usr/bin/env bash
# The GitHub Action's one step (action.yml): builds the agentconform command line
# of the mode from the AC_* variables, runs it, and hands its exit code, the folder
# to upload and a summary to GitHub. harness/tests/action.rs runs it locally with
# the GitHub variables set.
#
#   AC_MODE      run (default) or fuzz
#   AC_SUITE     suite id (run: or all)
#   AC_TARGET    target URL; empty: the embedded reference
#   AC_PROFILE   target profile (TOML)
#   AC_BASELINE  run: baseline of expected failures; fuzz: what to leave out (a
#                baseline, a run report.json or a findings.json)
#   AC_REPORT    run: where the reports go
#   AC_FUZZ_OUT  fuzz: where the crash corpus and findings.json go
#   AC_DURATION  fuzz: how long (e.g. 60s, 10m)
#   AC_SEED      fuzz: the seed
#   AC_EXTRA     more arguments, one per line (a line is one argument, spaces and
#                quotes included)
#   AGENTCONFORM the binary (default: agentconform on PATH)
set -euo pipefail

bin="${AGENTCONFORM:-agentconform}"
mode="${AC_MODE:-run}"
out="${GITHUB_OUTPUT:-/dev/null}"
summary="${GITHUB_STEP_SUMMARY:-/dev/null}"

if [ -z "${AC_SUITE:-}" ]; then
  echo "agentconform action: the suite input is required" >&2
  exit 2
fi

case "$mode" in
  run)
    dir="${AC_REPORT:-agentconform-report}"
    args=(run --suite "$AC_SUITE" --report "$dir" --format short)
    if [ -n "${AC_BASELINE:-}" ]; then args+=(--baseline "$AC_BASELINE"); fi
    ;;
  fuzz)
    dir="${AC_FUZZ_OUT:-agentconform-fuzz}"
    args=(fuzz --suite "$AC_SUITE" --out "$dir" --duration "${AC_DURATION:-60s}" --seed "${AC_SEED:-1}")
    if [ -n "${AC_BASELINE:-}" ]; then args+=(--baseline "$AC_BASELINE"); fi
    ;;
  *)
    echo "agentconform action: mode must be run or fuzz, not ${mode}" >&2
    exit 2
    ;;
esac
if [ -n "${AC_TARGET:-}" ]; then args+=(--target "$AC_TARGET"); fi
if [ -n "${AC_PROFILE:-}" ]; then args+=(--profile "$AC_PROFILE"); fi
if [ -n "${AC_EXTRA:-}" ]; then
  while IFS= read -r line; do
    if [ -n "$line" ]; then args+=("$line"); fi
  done <<< "$AC_EXTRA"
fi

log="$(mktemp)"
set +e
"$bin" "${args[@]}" 2>&1 | tee "$log"
code=${PIPESTATUS[0]}
set -e

echo "exit-code=$code" >> "$out"
echo "artifact-path=$dir" >> "$out"
if [ "$mode" = run ] && [ -f "$dir/summary.md" ]; then
  cat "$dir/summary.md" >> "$summary"
else
  {
    echo "## agentconform ${mode} ${AC_SUITE}"
    echo
    echo '```text'
    # The progress lines go to the terminal only.
    grep -v '^… ' "$log" || true
    echo '```'
  } >> "$summary"
fi
rm -f "$log"
exit "$code"
