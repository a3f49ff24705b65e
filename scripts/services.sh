#!/usr/bin/env bash
# Makes sure Redis and Postgres answer where the service will look for them. When one does
# not, starts a private instance from the installed binaries under .run/ (kept between
# runs, never committed). When the binaries are missing, installs them with apt-get where
# it may (as root, or through passwordless sudo) and otherwise prints the one command to run.
#   REDIS_URL     default redis://127.0.0.1:6379
#   DATABASE_URL  default postgres://postgres@127.0.0.1:5432/licensing
#   PG_BINDIR     where Postgres's server binaries are (default: /usr/lib/postgresql/*/bin,
#                 /usr/local/pgsql/bin, then PATH)
#   SERVICES_DIR  where private instances live (default .run)
set -euo pipefail
cd "$(dirname "$0")/.."
root=$(pwd)
run=${SERVICES_DIR:-$root/.run}
mkdir -p "$run"
run=$(cd "$run" && pwd) # absolute: Postgres is started from /
shown=${run#"$root"/} # the folder as messages name it

redis_url=${REDIS_URL:-redis://127.0.0.1:6379}
redis_hostport=${redis_url#redis://}; redis_hostport=${redis_hostport##*@}; redis_hostport=${redis_hostport%%/*}
redis_host=${redis_hostport%%:*}; redis_port=${redis_hostport##*:}
[ "$redis_port" = "$redis_hostport" ] && redis_port=6379

db_url=${DATABASE_URL:-postgres://postgres@127.0.0.1:5432/licensing}
db_rest=${db_url#*://}; db_rest=${db_rest##*@}; db_hostport=${db_rest%%/*}
db_host=${db_hostport%%:*}; db_port=${db_hostport##*:}
[ "$db_port" = "$db_hostport" ] && db_port=5432

say() { echo "services: $*" >&2; }

redis_up() {
  if command -v redis-cli >/dev/null; then
    [ "$(redis-cli -h "$redis_host" -p "$redis_port" ping 2>/dev/null)" = PONG ]
  else
    (exec 3<>"/dev/tcp/$redis_host/$redis_port" && printf 'PING\r\n' >&3 && read -r -t 2 line <&3 && [[ $line == +PONG* ]]) 2>/dev/null
  fi
}

pg_bin() {
  local dir dirs=(/usr/lib/postgresql/*/bin /usr/local/pgsql/bin)
  [ -n "${PG_BINDIR:-}" ] && dirs=("$PG_BINDIR")
  for dir in "${dirs[@]}"; do
    [ -x "$dir/$1" ] && { echo "$dir/$1"; return 0; }
  done
  command -v "$1"
}

pg_up() {
  local isready
  isready=$(pg_bin pg_isready 2>/dev/null) || return 1
  "$isready" -q -h "$db_host" -p "$db_port" -t 2
}

# install_packages <package>...: one apt-get install as root or through passwordless sudo;
# otherwise (or without apt-get) says the one command to run, and stops. Without the
# recommended packages: postgresql would bring a mail server and cron along.
install_packages() {
  local as=()
  if ! command -v apt-get >/dev/null; then
    say "there is no apt-get here: install $* with your package manager."
    exit 1
  fi
  if [ "$(id -u)" != 0 ]; then
    if sudo -n true 2>/dev/null; then as=(sudo -n); else
      # a fresh machine or container may have no package lists yet: update first
      say "Run: sudo apt-get update && sudo apt-get install -y --no-install-recommends $*"
      exit 1
    fi
  fi
  say "installing $* (apt-get)"
  local get=("${as[@]}" env DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends "$@")
  "${get[@]}" >/dev/null 2>&1 || {
    "${as[@]}" apt-get update >/dev/null 2>&1 || true
    "${get[@]}" >/dev/null 2>&1 || {
      say "apt-get could not install $*. Run: sudo apt-get update && sudo apt-get install -y --no-install-recommends $*"; exit 1; }
  }
}

start_redis() {
  # the package's own service may be answering now
  redis_up && return 0
  say "Redis not answering on $redis_host:$redis_port: starting a private one ($shown/redis)"
  mkdir -p "$run/redis"
  # noeviction: the service refuses to start on a Redis that may evict its keys
  redis-server --daemonize yes --bind "$redis_host" --port "$redis_port" --save '' --appendonly no \
    --maxmemory-policy noeviction --dir "$run/redis" --logfile "$run/redis/redis.log" --pidfile "$run/redis/redis.pid" >/dev/null
  for _ in $(seq 50); do redis_up && return 0; sleep 0.1; done
  say "the private Redis did not start; see $shown/redis/redis.log"; exit 1
}

start_postgres() {
  local initdb pgctl as=() pg="$run/pg"
  # the package's own service may be answering now
  pg_up && return 0
  initdb=$(pg_bin initdb 2>/dev/null) && pgctl=$(pg_bin pg_ctl 2>/dev/null) || {
    say "Postgres's server binaries are still not found after the install (set PG_BINDIR)."; exit 1; }
  # Postgres refuses to run as root: run the private instance as the postgres user
  if [ "$(id -u)" = 0 ]; then
    id postgres >/dev/null 2>&1 || useradd --system --no-create-home postgres
    as=(runuser -u postgres --)
    # a checkout the postgres user cannot enter (root's home is mode 700) keeps its
    # instance in a folder of its own under /var/lib, linked as .run/pg
    if ! runuser -u postgres -- test -x "$run"; then
      pg=/var/lib/license-service-dev/$(printf '%s' "$run" | cksum | cut -d' ' -f1)
      mkdir -p "$pg"
      [ -L "$run/pg" ] || [ -f "$run/pg/data/PG_VERSION" ] || rm -rf "$run/pg"
      [ -f "$run/pg/data/PG_VERSION" ] || ln -sfn "$pg" "$run/pg"
      pg=$(cd "$run/pg" && pwd -P)
    fi
  fi
  local data="$pg/data"
  if [ ! -f "$data/PG_VERSION" ]; then
    say "initialising a private Postgres in $shown/pg (user postgres, trust auth on loopback)"
    mkdir -p "$pg"
    [ ${#as[@]} -gt 0 ] && chown -R postgres "$pg"
    # from /: the postgres user may not enter the current folder
    (cd / && "${as[@]}" "$initdb" -D "$data" -U postgres --auth=trust -E UTF8) >"$pg/initdb.log" 2>&1 || {
      say "initdb failed; see $shown/pg/initdb.log"; exit 1; }
  fi
  say "Postgres not answering on $db_host:$db_port: starting the private one ($shown/pg)"
  (cd / && "${as[@]}" "$pgctl" -D "$data" -l "$pg/postgres.log" -w -t 30 \
    -o "-c listen_addresses=$db_host -p $db_port -c unix_socket_directories=$pg" start) >/dev/null || {
    say "the private Postgres did not start; see $shown/pg/postgres.log"; exit 1; }
}

# pg_refuses: Postgres answers but will not let DATABASE_URL's user in (Debian's own cluster
# asks for a password over TCP); prints Postgres's words. A missing database is fine: the
# service creates it.
pg_refuses() {
  local psql err
  psql=$(pg_bin psql 2>/dev/null) || return 1
  err=$(PGCONNECT_TIMEOUT=3 "$psql" -w "$db_url" -Atqc 'select 1' 2>&1 >/dev/null) && return 1
  [[ $err == *"database \""*"\" does not exist"* ]] && return 1
  echo "${err##*failed: }"
}

# what is neither answering nor installed, installed in one go (or the one command to run)
missing=()
if ! redis_up && ! command -v redis-server >/dev/null; then
  say "redis-server (Redis is not answering on $redis_host:$redis_port) is not installed."
  missing+=(redis-server)
fi
if ! pg_up && ! { pg_bin initdb >/dev/null 2>&1 && pg_bin pg_ctl >/dev/null 2>&1; }; then
  say "Postgres's server (not answering on $db_host:$db_port) is not installed."
  missing+=(postgresql)
fi
[ ${#missing[@]} -eq 0 ] || install_packages "${missing[@]}"

redis_up || start_redis
pg_up || start_postgres
if why=$(pg_refuses); then
  say "Postgres on $db_host:$db_port answers but refuses DATABASE_URL's login: $why"
  say "give the user a password and put it in DATABASE_URL (.env.dev), e.g.: sudo -u postgres psql -p $db_port -c \"ALTER ROLE postgres PASSWORD 'dev'\" and DATABASE_URL=postgres://postgres:dev@$db_host:$db_port/licensing"
  exit 1
fi
say "Redis on $redis_host:$redis_port and Postgres on $db_host:$db_port are answering"
