# The two commands: `make run` serves, `make test` tests (README.md). Each installs what it needs.
SHELL := /bin/bash
.DEFAULT_GOAL := run
.PHONY: run reset-dev test test-faults test-model build prune-tests deps lint typecheck services clean stop-services bench bench-front bench-flood bench-sign bench-lag bench-worker bench-memory bench-script bench-docs soak bench-soak profile profile-deployed load-tools browser-tools lighthouse-tools metrics-tools front-tools ha-tools model-tools fuzz

# tap's plugins are compiled into node_modules: built here, before the first run, so that
# not even the first run loads the TypeScript plugin the config turns off (a loader in every
# test process)
node_modules/.installed: package.json package-lock.json
	npm ci --no-audit --no-fund
	npx tap build
	@touch $@

deps: node_modules/.installed

# The build (`npm run build`, everything) runs only when a source, a tsconfig or the installed
# dependencies changed since the last one: a second `make run` starts at once. It never
# deletes what it does not rebuild, and holds dist/.build.lock while it writes: two builds
# never interleave, and one waits for a test run reading dist/ (scripts/build.sh).
BUILT := dist/.built
BUILD_INPUTS := $(shell scripts/build.sh --inputs)
# an empty list would leave the stamp fresh for ever: say so instead
$(if $(BUILD_INPUTS),,$(error scripts/build.sh --inputs listed no sources))
$(BUILT): node_modules/.installed $(BUILD_INPUTS)
	@scripts/build.sh $@

build: $(BUILT)

# The tests are found by glob (dist/test/**/*.test.js): before a test run, the compiled tests
# whose source is gone from test/ (deleted or renamed) are removed, so none runs on from an
# old build. Only `make test`'s path prunes: a build for run or bench deletes nothing.
prune-tests:
	@scripts/build.sh --prune

services:
	@scripts/services.sh

# Development server: generated secrets in .env.dev, plain HTTP on localhost, private
# Redis/Postgres started when none answer.
# Settings given on the command line (PORT=8091 REDIS_URL=... make run) win over .env.dev's;
# ADMIN_TOKENS given there replaces .env.dev's ADMIN_TOKEN (the server takes one or the other).
run: build
	@scripts/dev-env.sh
	@given=$$(export -p); set -a; source .env.dev; set +a; eval "$$given"; scripts/services.sh
	@given=$$(export -p); own_token=$${ADMIN_TOKEN+given}; set -a; source .env.dev; set +a; eval "$$given"; \
	  if [ -n "$$ADMIN_TOKENS" ] && [ -z "$$own_token" ]; then unset ADMIN_TOKEN; fi; \
	  base="http://$$HOST:$$PORT"; \
	  echo ""; \
	  echo "  License service (development): $$base/  (plain HTTP on localhost: ALLOW_HTTP=1)"; \
	  echo "  API documentation:             $$base/docs"; \
	  echo "  Quota dashboard:               $$base/dashboard"; \
	  if [ -n "$$ADMIN_TOKENS" ]; then \
	    echo "  Admin tokens: the ADMIN_TOKENS given (export ADMIN_TOKEN=<your token> for licensectl)"; \
	  else \
	    echo "  Admin token: $$ADMIN_TOKEN"; \
	    echo "  export ADMIN_TOKEN=$$ADMIN_TOKEN BASE=$$base   # for the README walk-through"; \
	  fi; \
	  echo ""; \
	  exec node dist/src/cli/server.js

# The development data of `make run` back to nothing (docs/cli.md#starting-over-in-development):
# the Redis keys of .env.dev's prefix and the service's schema in its database; the secrets
# of .env.dev stay. Refuses while the service answers, and without an .env.dev.
reset-dev: build
	@node dist/src/cli/resetDev.js

# tap runs holding dist/.build.lock shared: a build started meanwhile waits for it to end.
test: browser-tools metrics-tools front-tools ha-tools model-tools build prune-tests
	@REDIS_URL="$${TEST_REDIS_URL:-redis://127.0.0.1:6379}" DATABASE_URL="$${TEST_DATABASE_URL:-postgres://postgres@127.0.0.1:5432/test}" scripts/services.sh
	scripts/build.sh --reading npx tap run $(TAP_FLAGS) 'dist/test/**/*.test.js'

# Only the fault scenarios (test/faults: worker, server and Postgres failures; each test
# starts and breaks its own private Redis, server processes and Postgres proxy; the HA
# topologies need ha-tools).
test-faults: ha-tools build prune-tests
	@REDIS_URL="$${TEST_REDIS_URL:-redis://127.0.0.1:6379}" DATABASE_URL="$${TEST_DATABASE_URL:-postgres://postgres@127.0.0.1:5432/test}" scripts/services.sh
	scripts/build.sh --reading npx tap run $(TAP_FLAGS) 'dist/test/faults/*.test.js'

# Only the model check (test/model/spin.test.ts: spin searches lua/model/token.pml, the
# design and its mutants; docs/durability.md#a-model-that-is-checked). No service needed.
test-model: model-tools build prune-tests
	scripts/build.sh --reading npx tap run $(TAP_FLAGS) dist/test/model/spin.test.js

# Longer property-based fuzzing of every endpoint (make test runs the same file briefly with
# a fixed seed): FUZZ_RUNS per property, FUZZ_SEED to replay a failure (printed on failure).
fuzz: build
	@REDIS_URL="$${TEST_REDIS_URL:-redis://127.0.0.1:6379}" DATABASE_URL="$${TEST_DATABASE_URL:-postgres://postgres@127.0.0.1:5432/test}" scripts/services.sh
	FUZZ_RUNS=$${FUZZ_RUNS:-2000} FUZZ_SEED=$${FUZZ_SEED:-$$RANDOM$$RANDOM} scripts/build.sh --reading npx tap run --timeout=3600 dist/test/system/fuzz.test.js

# The browser test (test/system/cors.browser.test.ts) drives Debian's chromium through
# playwright-core, which never downloads a browser: installed when missing, as root or
# through passwordless sudo; otherwise the one command to run is printed.
browser-tools:
	@[ -x /usr/bin/chromium ] || { \
	  if [ "$$(id -u)" -eq 0 ]; then as=""; elif sudo -n true 2>/dev/null; then as="sudo -n"; \
	  else echo "chromium is missing (the browser test needs /usr/bin/chromium): sudo apt-get install -y chromium"; exit 1; fi; \
	  echo "installing chromium (Debian package)"; \
	  $$as env DEBIAN_FRONTEND=noninteractive apt-get install -y chromium >/dev/null 2>&1 || \
	    { $$as apt-get update >/dev/null && $$as env DEBIAN_FRONTEND=noninteractive apt-get install -y chromium >/dev/null; }; \
	  [ -x /usr/bin/chromium ] || { echo "chromium did not install: apt-get install -y chromium"; exit 1; }; }

# The metrics test (test/system/metrics.workers.test.ts) checks a scrape with promtool, from
# Debian's prometheus package: installed when missing, as root or through passwordless sudo;
# otherwise the one command to run is printed. Only promtool is used: on a machine with
# systemd the package also starts a Prometheus server (systemctl disable --now prometheus).
metrics-tools:
	@command -v promtool >/dev/null || { \
	  if [ "$$(id -u)" -eq 0 ]; then as=""; elif sudo -n true 2>/dev/null; then as="sudo -n"; \
	  else echo "promtool is missing (the metrics test needs it): sudo apt-get install -y prometheus"; exit 1; fi; \
	  echo "installing promtool (Debian package prometheus)"; \
	  $$as env DEBIAN_FRONTEND=noninteractive apt-get install -y prometheus >/dev/null 2>&1 || \
	    { $$as apt-get update >/dev/null && $$as env DEBIAN_FRONTEND=noninteractive apt-get install -y prometheus >/dev/null; }; \
	  command -v promtool >/dev/null || { echo "promtool did not install: apt-get install -y prometheus"; exit 1; }; }

# The front's tests (test/system/nginxFront.test.ts, deploy.systemd.test.ts) run Debian's nginx
# with deploy/nginx's config and check deploy/systemd's unit with systemd-analyze: installed
# when missing, as root or through passwordless sudo; otherwise the one command to run is
# printed. On a machine with systemd the nginx package also starts nginx on port 80
# (systemctl disable --now nginx); the tests run a private one on ports of their own.
front-tools:
	@{ [ -x /usr/sbin/nginx ] && command -v systemd-analyze >/dev/null; } || { \
	  if [ "$$(id -u)" -eq 0 ]; then as=""; elif sudo -n true 2>/dev/null; then as="sudo -n"; \
	  else echo "nginx or systemd-analyze is missing (the front's tests need them): sudo apt-get install -y nginx systemd"; exit 1; fi; \
	  echo "installing nginx and systemd-analyze (Debian packages nginx, systemd)"; \
	  $$as env DEBIAN_FRONTEND=noninteractive apt-get install -y nginx systemd >/dev/null 2>&1 || \
	    { $$as apt-get update >/dev/null && $$as env DEBIAN_FRONTEND=noninteractive apt-get install -y nginx systemd >/dev/null; }; \
	  [ -x /usr/sbin/nginx ] || { echo "nginx did not install: apt-get install -y nginx"; exit 1; }; }

# The HA topologies of the fault tests (test/helpers/redisHa.ts: Sentinel, a Cluster with
# replicas, a partition) run Debian's redis-sentinel, and cut a Cluster node off with
# iptables rules on its own loopback address: installed when missing, as root or through
# passwordless sudo; otherwise the one command to run is printed. The partition itself needs
# root or passwordless sudo when the tests run. On a machine with systemd the package also
# starts a sentinel on port 26379 (systemctl disable --now redis-sentinel); the tests run
# private ones on ports of their own.
ha-tools:
	@{ command -v redis-sentinel >/dev/null && [ -x /usr/sbin/iptables ]; } || { \
	  if [ "$$(id -u)" -eq 0 ]; then as=""; elif sudo -n true 2>/dev/null; then as="sudo -n"; \
	  else echo "redis-sentinel or iptables is missing (the HA fault tests need them): sudo apt-get install -y redis-sentinel iptables"; exit 1; fi; \
	  echo "installing redis-sentinel and iptables (Debian packages)"; \
	  $$as env DEBIAN_FRONTEND=noninteractive apt-get install -y redis-sentinel iptables >/dev/null 2>&1 || \
	    { $$as apt-get update >/dev/null && $$as env DEBIAN_FRONTEND=noninteractive apt-get install -y redis-sentinel iptables >/dev/null; }; \
	  command -v redis-sentinel >/dev/null || { echo "redis-sentinel did not install: apt-get install -y redis-sentinel"; exit 1; }; \
	  [ -x /usr/sbin/iptables ] || { echo "iptables did not install: apt-get install -y iptables"; exit 1; }; }

# The model test (test/model/spin.test.ts) runs Debian's spin on lua/model/token.pml and
# compiles the verifier it writes with gcc: installed when missing, as root or through
# passwordless sudo; otherwise the one command to run is printed.
model-tools:
	@{ command -v spin >/dev/null && command -v gcc >/dev/null; } || { \
	  if [ "$$(id -u)" -eq 0 ]; then as=""; elif sudo -n true 2>/dev/null; then as="sudo -n"; \
	  else echo "spin or gcc is missing (the model test needs them): sudo apt-get install -y spin gcc"; exit 1; fi; \
	  echo "installing spin and gcc (Debian packages spin, gcc)"; \
	  $$as env DEBIAN_FRONTEND=noninteractive apt-get install -y spin gcc >/dev/null 2>&1 || \
	    { $$as apt-get update >/dev/null && $$as env DEBIAN_FRONTEND=noninteractive apt-get install -y spin gcc >/dev/null; }; \
	  { command -v spin >/dev/null && command -v gcc >/dev/null; } || { echo "spin or gcc did not install: apt-get install -y spin gcc"; exit 1; }; }

# Performance (bench/README.md): wrk from Debian's packages, installed when missing.
load-tools:
	@command -v wrk >/dev/null || { echo "installing wrk (Debian package)"; apt-get install -y wrk >/dev/null 2>&1 || { apt-get update >/dev/null && apt-get install -y wrk >/dev/null; }; }
	@command -v taskset >/dev/null || { echo "taskset is missing: apt-get install util-linux"; exit 1; }

# Lighthouse for make bench-docs, pinned (12.2.3, which installs and runs on Node 20) in a folder of
# its own, .tools/lighthouse, never a dependency of the service; it drives Debian's chromium.
LIGHTHOUSE := .tools/lighthouse/node_modules/lighthouse/cli/index.js
lighthouse-tools: browser-tools
	@[ -f $(LIGHTHOUSE) ] || { echo "installing lighthouse 12.2.3 into .tools/lighthouse"; mkdir -p .tools/lighthouse && \
	  echo '{"private":true}' > .tools/lighthouse/package.json && \
	  npm install --prefix .tools/lighthouse --no-audit --no-fund -E lighthouse@12.2.3 >/dev/null; }

# The service against its ceiling servers in one run, then validate as deployed (usage worker writing; BENCH_DEPLOYED=0 skips it).
# BENCH_BASELINE=<the build before's dist> adds that build: in the ceiling rounds, and validate as deployed of both builds at
# npm start's defaults in pairs (BENCH_ONLY=baseline: that alone; bench/README.md, Method).
bench: build load-tools
	@REDIS_URL=redis://127.0.0.1:6379 DATABASE_URL="$${BENCH_DATABASE_URL:-postgres://postgres@127.0.0.1:5432/test}" scripts/services.sh
	node dist/bench/load/run.js

# Validate straight to the service and through deploy/nginx's front (HTTPS, and plain HTTP to
# tell TLS's share), in alternating rounds of one run, the service as deployed behind a proxy.
bench-front: build load-tools front-tools
	@REDIS_URL=redis://127.0.0.1:6379 DATABASE_URL="$${BENCH_DATABASE_URL:-postgres://postgres@127.0.0.1:5432/test}" scripts/services.sh
	node dist/bench/load/front.js

# A customer's get-token latency while 300 connections spray unknown license keys (flood.js);
# then other customers' validate latency under floods of /healthz, one holder's history,
# check-quota of random keys and /.well-known/jwks.json (publicFloods.js). FLOOD_ONLY=get-token
# or FLOOD_ONLY=public: one of them; FLOOD_PUBLIC=healthz,history,check-quota,jwks: which floods.
bench-flood: build load-tools
	@REDIS_URL=redis://127.0.0.1:6379 DATABASE_URL="$${BENCH_DATABASE_URL:-postgres://postgres@127.0.0.1:5432/test}" scripts/services.sh
	@case "$${FLOOD_ONLY:-}" in ''|get-token|public) ;; *) echo "FLOOD_ONLY: get-token or public (unset: both)"; exit 1;; esac
	[ "$${FLOOD_ONLY:-}" = public ] || node dist/bench/load/flood.js
	[ "$${FLOOD_ONLY:-}" = get-token ] || node dist/bench/load/publicFloods.js

# What a receipt costs: validate against POST /api/Signature/sign with 1 and 10 documents, as deployed, in
# rounds of one run (bench/load/sign.ts); and one Ed25519 signature per artefact in CPU time (bench/artefacts.ts).
bench-sign: build load-tools
	@REDIS_URL=redis://127.0.0.1:6379 DATABASE_URL="$${BENCH_DATABASE_URL:-postgres://postgres@127.0.0.1:5432/test}" scripts/services.sh
	taskset -c 0 node dist/bench/artefacts.js
	node dist/bench/load/sign.js

# The usage worker's lag at peak validate load, as deployed (what a Redis loss without persistence costs).
bench-lag: build load-tools
	@REDIS_URL=redis://127.0.0.1:6379 DATABASE_URL="$${BENCH_DATABASE_URL:-postgres://postgres@127.0.0.1:5432/test}" scripts/services.sh
	node dist/bench/load/lag.js

# The usage worker alone: CPU per event of the worker, Postgres and Redis (queued backlog and paced arrivals).
bench-worker: build
	@REDIS_URL=redis://127.0.0.1:6379 DATABASE_URL="$${BENCH_DATABASE_URL:-postgres://postgres@127.0.0.1:5432/test}" scripts/services.sh
	node dist/bench/worker.js

# Redis time per call of the redemption script around its tokens (set-up, deadline, failover
# fence); BENCH_BASELINE=<the build before's dist> adds that build's script in the same rounds
bench-script: build
	node dist/bench/scriptCall.js

# Redis memory per license, outstanding token, queued event, idempotency record and rate-limit key
# (MEMORY USAGE per key kind, used_memory per phase), against a private redis-server: docs/redis.md.
bench-memory: build load-tools
	@REDIS_URL=redis://127.0.0.1:6379 DATABASE_URL="$${BENCH_DATABASE_URL:-postgres://postgres@127.0.0.1:5432/test}" scripts/services.sh
	node dist/bench/memory.js

# Lighthouse's performance score and metrics of /docs (mobile and desktop presets), the service
# started as `npm start` starts it (bench/docs.ts; DOCS_PATHS=/docs,/docs/interactive for more
# pages, BENCH_BASELINE=<the build before's dist> for that build).
bench-docs: build lighthouse-tools
	@REDIS_URL=redis://127.0.0.1:6379 DATABASE_URL="$${BENCH_DATABASE_URL:-postgres://postgres@127.0.0.1:5432/test}" scripts/services.sh
	node dist/bench/docs.js

# The 10-minute soak at a third of the peak rate.
soak: build load-tools
	node dist/bench/load/soak.js

# The service as npm start runs it under a signing fleet's mix, held at 80 % of its peak for
# 12 minutes to settle (Redis reaches the size it keeps) and 10 measured, a row a minute
# (bench/load/soakDeployed.ts): bench/README.md, bench/soak.svg.
bench-soak: build load-tools
	node dist/bench/load/soakDeployed.js

# A CPU profile of the service under validate load (64 connections): bench/profiles/validate.{svg,folded}.
profile: build load-tools
	@REDIS_URL=redis://127.0.0.1:6379 DATABASE_URL="$${BENCH_DATABASE_URL:-postgres://postgres@127.0.0.1:5432/test}" scripts/services.sh
	rm -f bench/profiles/*.cpuprofile
	BENCH_PROFILE=bench/profiles BENCH_ONLY=validate BENCH_CONNECTIONS=64 BENCH_RUNS=1 BENCH_SECONDS=$${BENCH_SECONDS:-10} node dist/bench/load/run.js
	node dist/bench/flame.js bench/profiles validate

# Where the time goes as deployed (worker inside the server): a CPU profile of the server
# (bench/profiles/deployed.{svg,folded}), core use, CPU per redemption and Redis's time per command.
profile-deployed: build load-tools
	@REDIS_URL=redis://127.0.0.1:6379 DATABASE_URL="$${BENCH_DATABASE_URL:-postgres://postgres@127.0.0.1:5432/test}" scripts/services.sh
	rm -f bench/profiles/*.cpuprofile
	PROFILE_DIR=bench/profiles node dist/bench/load/deployedProfile.js
	node dist/bench/flame.js bench/profiles deployed
	rm -f bench/profiles/*.cpuprofile

lint: deps
	npm run lint

typecheck: deps
	npm run typecheck

stop-services:
	-@[ -f .run/redis/redis.pid ] && kill $$(cat .run/redis/redis.pid); true
	-@[ -f .run/pg/data/postmaster.pid ] && kill -INT $$(head -1 .run/pg/data/postmaster.pid); true

clean:
	rm -rf dist .build-* .tap
