#!/usr/bin/env bash
# Builds the seed corpora of every fuzz target from vectors/ (one command):
#   bash fuzz/seed-corpus.sh
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
vectors="$here/../vectors"
json_targets=(canonicalize differential decoders agora_v1_agent)
for t in "${json_targets[@]}"; do
  mkdir -p "$here/corpus/$t"
  find "$vectors/jcs" "$vectors/jsontestsuite/test_parsing" "$vectors/agora-v1" "$vectors/agora-exchange" \
       "$vectors/chorus" "$vectors/agora-spaces" "$vectors/agentprotocol" -name '*.json' -size -64k -print0 |
    while IFS= read -r -d '' f; do
      cp "$f" "$here/corpus/$t/$(echo "$f" | sha1sum | cut -c1-16).json"
    done
done
# Suite servers: the suite's own vectors, behind the selector byte that picks the
# endpoint (agora_exchange_server: 0 base URL, 1 unknown conversation, 2 live
# conversation; chorus_server: 0 register, 1 transfer, 2 job, 3 discover).
seed_with_selectors() {
  local target="$1" dir="$2"; shift 2
  mkdir -p "$here/corpus/$target"
  find "$vectors/$dir" -name '*.json' -size -64k -print0 |
    while IFS= read -r -d '' f; do
      for sel in "$@"; do
        { printf "\\x$sel"; cat "$f"; } > "$here/corpus/$target/$sel-$(echo "$f" | sha1sum | cut -c1-16)"
      done
    done
}
seed_with_selectors agora_exchange_server agora-exchange 00 01 02
seed_with_selectors chorus_server chorus 00 01 02
printf '\x03skill=echo&min_reputation=10&max_cost=5' > "$here/corpus/chorus_server/03-discover"
for t in agora_spaces_server:agora-spaces agentprotocol_agent:agentprotocol; do
  mkdir -p "$here/corpus/${t%%:*}"
  find "$vectors/${t#*:}" -name '*.json' -size -64k -print0 |
    while IFS= read -r -d '' f; do
      cp "$f" "$here/corpus/${t%%:*}/$(echo "$f" | sha1sum | cut -c1-16).json"
    done
done
mkdir -p "$here/corpus/signature" "$here/corpus/profile"
printf '\x00\x10\x01' > "$here/corpus/signature/seed-flip"
printf '[timing]\ncase_timeout_ms = 100\n[agora-v1]\ndirect_resource = "x"\n' > "$here/corpus/profile/seed.toml"
for t in "${json_targets[@]}" signature profile agora_exchange_server chorus_server agora_spaces_server agentprotocol_agent; do
  [ -d "$here/regressions/$t" ] && cp "$here/regressions/$t/"* "$here/corpus/$t/" 2>/dev/null || true
done
echo "seed corpora written under $here/corpus"
