#!/usr/bin/env bash
# Writes .env.dev (git-ignored) once: a development JWT secret and admin token, plain HTTP
# on localhost. Production settings are never guessed: set them explicitly (README).
set -euo pipefail
cd "$(dirname "$0")/.."
if [ ! -f .env.dev ]; then
  umask 077
  {
    echo "# development settings written by make run; delete this file to regenerate"
    echo "JWT_SECRET=$(node -e 'process.stdout.write(require("crypto").randomBytes(32).toString("hex"))')"
    echo "ADMIN_TOKEN=$(node -e 'process.stdout.write(require("crypto").randomBytes(24).toString("base64url"))')"
    echo "ALLOW_HTTP=1"
    echo "HOST=127.0.0.1"
    echo "PORT=8080"
    echo "DATABASE_URL=postgres://postgres@127.0.0.1:5432/licensing"
    echo "REDIS_URL=redis://127.0.0.1:6379"
  } > .env.dev
  echo "dev-env: wrote .env.dev (development JWT_SECRET and ADMIN_TOKEN)" >&2
fi
