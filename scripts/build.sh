#!/usr/bin/env bash
# The build behind the Makefile's targets (`npm run build` compiles everything), made so that
# make targets never break each other:
#   scripts/build.sh --inputs   what the build reads (the Makefile's stamp depends on these)
#   scripts/build.sh STAMP      build, then touch STAMP (dist/.built)
#   scripts/build.sh --prune    remove compiled tests whose source is gone from test/
#   scripts/build.sh --reading CMD...   run CMD (a test run) while no build may write dist/
# Every build and prune holds dist/.build.lock exclusively, a test run holds it shared: two
# builds never write the same files at once, and a build waits for the tests that read
# dist/ (a `make run` started during `make test`) instead of rewriting files under them.
set -euo pipefail
cd "$(dirname "$0")/.."

LOCK=dist/.build.lock

# Sources tsc compiles and the settings it reads. Directories too: a file deleted or renamed
# (mv keeps its old mtime) changes its directory's mtime, so the stamp goes stale.
inputs() {
  # the top folders as "src/": a bare "test" would be the phony target of the same name
  # A package's own folder is not listed, only its sources and settings: its build writes
  # dist/ there, which would leave the stamp older than the folder after every build.
  find src/ test/ bench/ packages/*/src/ \( -name node_modules -o -name dist -o -path bench/profiles \) -prune \
    -o -type d -print -o -type f \( -name '*.ts' -o -name '*.mts' -o -name '*.cts' -o -name '*.json' \) -print 2>/dev/null || true
  ls tsconfig*.json package.json package-lock.json scripts/bundle.mjs packages/*/package.json packages/*/tsconfig*.json 2>/dev/null || true
}

# Takes the lock (-x exclusive, -s shared) on fd 9, saying why when it has to wait. The
# commands run under it get `9>&-`: a daemon a test starts must not hold the lock for ever.
lock() {
  mkdir -p dist
  exec 9>>"$LOCK"
  if ! flock -n "$1" 9; then
    echo "build: waiting for dist/ (another build, or a test run reading it, holds $LOCK)" >&2
    flock "$1" 9
  fi
}

# Whether any input (or the installed dependencies) is newer than the file given.
newer_than() {
  local f
  while IFS= read -r f; do [ "$f" -nt "$1" ] && return 0; done < <(inputs; echo node_modules/.installed)
  return 1
}

case "${1:-}" in
  --inputs)
    inputs
    ;;
  --prune)
    lock -x
    # dist/test/x.test.js and its map, when test/x.test.ts is gone: tap finds the tests by
    # glob, so a test deleted or renamed must not run on from an old build
    [ -d dist/test ] && find dist/test -type f \( -name '*.js' -o -name '*.js.map' \) -print | while IFS= read -r out; do
      rel=${out#dist/}
      rel=${rel%.map}
      [ -e "${rel%.js}.ts" ] || { rm -f "$out"; echo "build: removed $out (its source is gone)"; }
    done
    true
    ;;
  --reading)
    shift
    lock -s
    "$@" 9>&-
    ;;
  ''|-*)
    echo "usage: scripts/build.sh STAMP | --inputs | --prune | --reading CMD..." >&2
    exit 2
    ;;
  *)
    stamp=$1
    lock -x
    # a build that ran while this one waited may have made the stamp fresh already
    if [ -e "$stamp" ] && ! newer_than "$stamp"; then exit 0; fi
    # Marked before compiling: a source saved during the build is newer than the stamp, so
    # the next make builds again. Renamed into place only when the build succeeded.
    touch "$stamp.next"
    npm run build 9>&-
    mv -f "$stamp.next" "$stamp"
    ;;
esac
