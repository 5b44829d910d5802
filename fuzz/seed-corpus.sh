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
mkdir -p "$here/corpus/signature" "$here/corpus/profile"
printf '\x00\x10\x01' > "$here/corpus/signature/seed-flip"
printf '[timing]\ncase_timeout_ms = 100\n[agora-v1]\ndirect_resource = "x"\n' > "$here/corpus/profile/seed.toml"
for t in "${json_targets[@]}" signature profile; do
  [ -d "$here/regressions/$t" ] && cp "$here/regressions/$t/"* "$here/corpus/$t/" 2>/dev/null || true
done
echo "seed corpora written under $here/corpus"
