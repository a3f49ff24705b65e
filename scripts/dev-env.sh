#!/usr/bin/env bash
# Writes .env.dev (git-ignored) once: a development JWT secret, admin token and Ed25519
# signing key, plain HTTP on localhost (a signing key is added to an older .env.dev).
# Production settings are never guessed: set them explicitly (docs/operations.md#configuration).
set -euo pipefail
cd "$(dirname "$0")/.."
signing_key() {
  node -e 'process.stdout.write(require("crypto").generateKeyPairSync("ed25519").privateKey.export({ format: "der", type: "pkcs8" }).toString("base64"))'
}
if [ ! -f .env.dev ]; then
  umask 077
  {
    echo "# development settings written by make run; delete this file to regenerate"
    echo "JWT_SECRET=$(node -e 'process.stdout.write(require("crypto").randomBytes(32).toString("hex"))')"
    echo "ADMIN_TOKEN=$(node -e 'process.stdout.write(require("crypto").randomBytes(24).toString("base64url"))')"
    echo "SIGNING_KEYS=$(signing_key)"
    echo "ALLOW_HTTP=1"
    echo "HOST=127.0.0.1"
    echo "PORT=8080"
    echo "DATABASE_URL=postgres://postgres@127.0.0.1:5432/licensing"
    echo "REDIS_URL=redis://127.0.0.1:6379"
  } > .env.dev
  echo "dev-env: wrote .env.dev (development JWT_SECRET, ADMIN_TOKEN and SIGNING_KEYS)" >&2
elif ! grep -q '^SIGNING_KEYS' .env.dev; then
  echo "SIGNING_KEYS=$(signing_key)" >> .env.dev
  echo "dev-env: added a development SIGNING_KEYS to .env.dev" >&2
fi
