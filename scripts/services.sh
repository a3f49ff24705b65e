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

# install_package <package> <what is missing>: apt-get as root or through passwordless sudo;
# otherwise (or without apt-get) says the one command to run, and stops.
install_package() {
  local package=$1 what=$2 as=()
  if ! command -v apt-get >/dev/null; then
    say "$what is not installed, and there is no apt-get here: install $package with your package manager."
    exit 1
  fi
  if [ "$(id -u)" != 0 ]; then
    if sudo -n true 2>/dev/null; then as=(sudo -n); else
      say "$what is not installed. Run: sudo apt-get install -y $package"
      exit 1
    fi
  fi
  say "$what is not installed: installing $package (apt-get)"
  "${as[@]}" env DEBIAN_FRONTEND=noninteractive apt-get install -y "$package" >/dev/null 2>&1 || {
    "${as[@]}" apt-get update >/dev/null 2>&1 || true
    "${as[@]}" env DEBIAN_FRONTEND=noninteractive apt-get install -y "$package" >/dev/null 2>&1 || {
      say "apt-get could not install $package. Run: sudo apt-get install -y $package"; exit 1; }
  }
}

start_redis() {
  command -v redis-server >/dev/null || install_package redis-server "redis-server (Redis is not answering on $redis_host:$redis_port)"
  # the package's own service may be answering now
  redis_up && return 0
  say "Redis not answering on $redis_host:$redis_port: starting a private one ($shown/redis)"
  mkdir -p "$run/redis"
  redis-server --daemonize yes --bind "$redis_host" --port "$redis_port" --save '' --appendonly no \
    --dir "$run/redis" --logfile "$run/redis/redis.log" --pidfile "$run/redis/redis.pid" >/dev/null
  for _ in $(seq 50); do redis_up && return 0; sleep 0.1; done
  say "the private Redis did not start; see $shown/redis/redis.log"; exit 1
}

start_postgres() {
  local initdb pgctl as=()
  if ! { pg_bin initdb >/dev/null 2>&1 && pg_bin pg_ctl >/dev/null 2>&1; }; then
    install_package postgresql "Postgres's server (not answering on $db_host:$db_port)"
    pg_up && return 0
  fi
  initdb=$(pg_bin initdb 2>/dev/null) && pgctl=$(pg_bin pg_ctl 2>/dev/null) || {
    say "Postgres's server binaries are still not found after the install (set PG_BINDIR)."; exit 1; }
  # Postgres refuses to run as root: run the private instance as the postgres user
  if [ "$(id -u)" = 0 ]; then
    id postgres >/dev/null 2>&1 || useradd --system --no-create-home postgres
    as=(runuser -u postgres --)
  fi
  local data="$run/pg/data"
  if [ ! -f "$data/PG_VERSION" ]; then
    say "initialising a private Postgres in $shown/pg (user postgres, trust auth on loopback)"
    mkdir -p "$run/pg"
    [ ${#as[@]} -gt 0 ] && chown -R postgres "$run/pg"
    "${as[@]}" "$initdb" -D "$data" -U postgres --auth=trust -E UTF8 >"$run/pg/initdb.log" 2>&1 || {
      say "initdb failed; see $shown/pg/initdb.log"; exit 1; }
  fi
  say "Postgres not answering on $db_host:$db_port: starting the private one ($shown/pg)"
  "${as[@]}" "$pgctl" -D "$data" -l "$run/pg/postgres.log" -w -t 30 \
    -o "-c listen_addresses=$db_host -p $db_port -c unix_socket_directories=$run/pg" start >/dev/null || {
    say "the private Postgres did not start; see $shown/pg/postgres.log"; exit 1; }
}

redis_up || start_redis
pg_up || start_postgres
say "Redis on $redis_host:$redis_port and Postgres on $db_host:$db_port are answering"
