#!/usr/bin/env bash
# Runs every fuzz target for a short, bounded time (default 20 s each) on the stable
# toolchain (-s none: no sanitizer). Any crash fails the script, and libFuzzer leaves
# the input in fuzz/artifacts/<target>/; copy it into fuzz/regressions/<target>/ so
# that `cargo test` replays it from then on.
#   bash fuzz/run-ci.sh [seconds]
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
secs="${1:-20}"
cd "$here"
bash seed-corpus.sh >/dev/null
for t in $(cargo fuzz list); do
  echo "== fuzz $t for ${secs}s"
  cargo fuzz run -s none "$t" "corpus/$t" -- -max_total_time="$secs" -dict=json.dict -rss_limit_mb=2048 -print_final_stats=1 2>&1 | tail -n 12
done
