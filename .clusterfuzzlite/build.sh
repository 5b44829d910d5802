#!/bin/bash -eu
# ClusterFuzzLite / OSS-Fuzz build script: builds every cargo-fuzz target of
# fuzz/ with the engine's sanitizer and copies each to $OUT, with its seed corpus
# ($OUT/<target>_seed_corpus.zip, from vectors/) and the JSON dictionary
# ($OUT/<target>.dict). The engine sets SRC, OUT, WORK and SANITIZER; the local
# check (.clusterfuzzlite/check.sh) runs this script with them set to a temporary
# folder and SANITIZER=none.
# The real path: a checkout linked into SRC builds where it lies (and shares its
# fuzz/target with other builds of it).
project="$(realpath "$SRC/agentconform")"
cd "$project/fuzz"
case "${SANITIZER:-address}" in
  address|memory|thread|leak) sanitizer="$SANITIZER" ;;
  *) sanitizer=none ;;
esac
triple="${CARGO_BUILD_TARGET:-$(rustc -vV | sed -n 's/^host: //p')}"
cargo fuzz build -O -s "$sanitizer" --target "$triple"
bash seed-corpus.sh >/dev/null
for t in $(cargo fuzz list); do
  built="target/$triple/release/$t"
  if [ -n "${CARGO_TARGET_DIR:-}" ] && [ -x "$CARGO_TARGET_DIR/$triple/release/$t" ]; then
    built="$CARGO_TARGET_DIR/$triple/release/$t"
  fi
  cp "$built" "$OUT/$t"
  cp json.dict "$OUT/$t.dict"
  if [ -d "corpus/$t" ]; then
    rm -f "$OUT/${t}_seed_corpus.zip"
    (cd "corpus/$t" && zip -q -r "$OUT/${t}_seed_corpus.zip" .)
  fi
done
