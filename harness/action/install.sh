#!/usr/bin/env bash
# The GitHub Action's install step (action.yml): puts agentconform on the PATH, in
# this order of preference:
#   1. the binary the cache step restored into AC_INSTALL_DIR (keyed on the
#      action's ref), when it runs;
#   2. the release binary for the action's ref and this runner, downloaded with its
#      SHA-256 file and checked against it (a mismatch is an error, never installed);
#   3. a build from source, when the ref has no release binary for this runner.
# harness/tests/action.rs runs it locally against a loopback release server.
#
#   AC_REF          the action's ref (github.action_ref): a release tag, a branch
#                   or a commit; empty when the action is used from a checkout
#   AC_REPO         the action's repository (github.action_repository)
#   AC_RELEASE_URL  where releases are downloaded from (default:
#                   https://github.com/$AC_REPO/releases/download)
#   AC_INSTALL_DIR  where the binary goes (default: $HOME/.agentconform/bin)
#   AC_ACTION_PATH  the action's checkout (github.action_path), built from source
#   AC_BUILD        the build command (default: cargo install into AC_INSTALL_DIR)
#   RUNNER_OS, RUNNER_ARCH  set by GitHub: Linux, macOS; X64, ARM64
set -euo pipefail

dir="${AC_INSTALL_DIR:-$HOME/.agentconform/bin}"
path_file="${GITHUB_PATH:-/dev/null}"
mkdir -p "$dir"

installed() {
  echo "$dir" >> "$path_file"
  "$dir/agentconform" --version
}

if [ -x "$dir/agentconform" ] && "$dir/agentconform" --version > /dev/null 2>&1; then
  echo "agentconform: the cached binary"
  installed
  exit 0
fi

case "${RUNNER_OS:-}/${RUNNER_ARCH:-}" in
  Linux/X64) triple=x86_64-unknown-linux-gnu ;;
  macOS/ARM64) triple=aarch64-apple-darwin ;;
  macOS/X64) triple=x86_64-apple-darwin ;;
  *) triple="" ;;
esac

sha256() {
  if command -v sha256sum > /dev/null; then
    sha256sum "$1" | cut -d' ' -f1
  else
    shasum -a 256 "$1" | cut -d' ' -f1
  fi
}

ref="${AC_REF:-}"
if [ -n "$ref" ] && [ -n "$triple" ]; then
  base="${AC_RELEASE_URL:-https://github.com/${AC_REPO:-}/releases/download}"
  asset="agentconform-${triple}.tar.gz"
  tmp="$(mktemp -d)"
  trap 'rm -rf "$tmp"' EXIT
  if curl -fsSL --max-time 120 -o "$tmp/$asset" "$base/$ref/$asset" \
    && curl -fsSL --max-time 30 -o "$tmp/$asset.sha256" "$base/$ref/$asset.sha256"; then
    want="$(cut -d' ' -f1 < "$tmp/$asset.sha256")"
    got="$(sha256 "$tmp/$asset")"
    if [ "$want" != "$got" ]; then
      echo "agentconform: the release binary $asset of $ref does not match its checksum (want $want, got $got); not installed" >&2
      exit 1
    fi
    tar -xzf "$tmp/$asset" -C "$tmp"
    install -m 755 "$tmp/agentconform" "$dir/agentconform"
    echo "agentconform: the release binary of $ref for $triple (SHA-256 $got)"
    installed
    exit 0
  fi
  echo "agentconform: no release binary of $ref for $triple; building from source"
else
  echo "agentconform: no release binary to look for (ref '${ref}', runner ${RUNNER_OS:-?}/${RUNNER_ARCH:-?}); building from source"
fi

if [ -n "${AC_BUILD:-}" ]; then
  bash -c "$AC_BUILD"
else
  root="$(dirname "$dir")"
  cargo install --locked --root "$root" --path "${AC_ACTION_PATH:?AC_ACTION_PATH (the checkout of the action) is needed to build}/harness"
fi
installed
