#!/usr/bin/env bash
# The GitHub Action's run step (action.yml): builds the agentconform command line
# of the mode from the AC_* variables, runs it, and hands its exit code, the folder
# to upload and a summary to GitHub. harness/tests/action.rs runs it locally with
# the GitHub variables set.
#
#   AC_MODE      run (default), client, fuzz or interop
#   AC_SUITE     suite id (run: or all)
#   AC_TARGET    run, fuzz: target URL; empty: the embedded reference
#   AC_CLIENT    client: the client driver, one shell command passed whole as
#                --client (never split); fuzz: with it, the campaign fuzzes that
#                client (--role client)
#   AC_CLIENTS   interop: the clients, one NAME=COMMAND (or NAME=reference) per line
#   AC_SERVERS   interop: the servers, one NAME=URL (or NAME=reference) per line
#   AC_PROFILE   target profile (TOML)
#   AC_BASELINE  run, client: baseline of expected failures; fuzz: what to leave
#                out (a baseline, a run report.json or a findings.json)
#   AC_REPORT    run, client, interop: where the reports go
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

# Each line of $1 as one argument after the flag $2.
lines_as() {
  local flag="$2" line
  while IFS= read -r line; do
    if [ -n "$line" ]; then args+=("$flag" "$line"); fi
  done <<< "$1"
}

case "$mode" in
  run)
    dir="${AC_REPORT:-agentconform-report}"
    args=(run --suite "$AC_SUITE" --report "$dir" --format short)
    if [ -n "${AC_BASELINE:-}" ]; then args+=(--baseline "$AC_BASELINE"); fi
    if [ -n "${AC_TARGET:-}" ]; then args+=(--target "$AC_TARGET"); fi
    ;;
  client)
    dir="${AC_REPORT:-agentconform-report}"
    args=(run --suite "$AC_SUITE" --role client --report "$dir" --format short)
    if [ -n "${AC_CLIENT:-}" ]; then args+=(--client "$AC_CLIENT"); fi
    if [ -n "${AC_BASELINE:-}" ]; then args+=(--baseline "$AC_BASELINE"); fi
    ;;
  fuzz)
    dir="${AC_FUZZ_OUT:-agentconform-fuzz}"
    args=(fuzz --suite "$AC_SUITE" --out "$dir" --duration "${AC_DURATION:-60s}" --seed "${AC_SEED:-1}")
    if [ -n "${AC_BASELINE:-}" ]; then args+=(--baseline "$AC_BASELINE"); fi
    if [ -n "${AC_CLIENT:-}" ]; then
      args+=(--role client --client "$AC_CLIENT")
    elif [ -n "${AC_TARGET:-}" ]; then
      args+=(--target "$AC_TARGET")
    fi
    ;;
  interop)
    dir="${AC_REPORT:-agentconform-report}"
    if [ -z "${AC_CLIENTS:-}" ] || [ -z "${AC_SERVERS:-}" ]; then
      echo "agentconform action: mode interop needs the clients and servers inputs" >&2
      exit 2
    fi
    args=(interop --suite "$AC_SUITE" --report "$dir")
    lines_as "$AC_CLIENTS" --client
    lines_as "$AC_SERVERS" --server
    ;;
  *)
    echo "agentconform action: mode must be run, client, fuzz or interop, not ${mode}" >&2
    exit 2
    ;;
esac
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
if [ "$mode" != fuzz ] && [ -f "$dir/summary.md" ]; then
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
