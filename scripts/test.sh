#!/usr/bin/env bash
# Runs every dpproxy test on this machine: unit tests, golden rewrites,
# statistical noise tests and the end-to-end tests with real servers and
# clients.
#
# It installs what the tests need from Debian packages when missing
# (PostgreSQL 15 server and client; needs root for apt-get), starts a
# throwaway PostgreSQL cluster on a free local port, runs `go test ./...`
# against it and removes the cluster afterwards.
#
#   bash scripts/test.sh            # everything
#   bash scripts/test.sh -run Foo   # extra flags go to `go test`
set -euo pipefail
cd "$(dirname "$0")/.."

log() { printf '==> %s\n' "$*" >&2; }

as_root() {
  if [ "$(id -u)" = 0 ]; then "$@"; elif command -v sudo >/dev/null; then sudo "$@"; else
    log "need root for: $*"; return 1; fi
}

PG_BIN=${PG_BIN:-/usr/lib/postgresql/15/bin}
apt_updated=
apt_install() {
  if [ -z "$apt_updated" ]; then as_root apt-get update -qq; apt_updated=1; fi
  as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "$@" >/dev/null
}
if [ ! -x "$PG_BIN/initdb" ] || ! command -v psql >/dev/null; then
  log "installing PostgreSQL 15"
  apt_install postgresql-15 postgresql-client-15
fi

# PostgreSQL refuses to run as root: run the cluster as an unprivileged user.
PG_USER=$(id -un)
if [ "$(id -u)" = 0 ]; then
  PG_USER=postgres
  id "$PG_USER" >/dev/null 2>&1 || useradd --system --no-create-home "$PG_USER"
fi
run_pg() { if [ "$(id -un)" = "$PG_USER" ]; then "$@"; else runuser -u "$PG_USER" -- "$@"; fi; }

free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }

PG_DIR=$(mktemp -d /tmp/dpproxy-pg.XXXXXX)
chown "$PG_USER" "$PG_DIR" 2>/dev/null || true
PG_PORT=$(free_port)
cleanup() {
  run_pg "$PG_BIN/pg_ctl" -D "$PG_DIR/data" -m immediate stop >/dev/null 2>&1 || true
  rm -rf "$PG_DIR"
}
trap cleanup EXIT

log "starting PostgreSQL 15 on 127.0.0.1:$PG_PORT"
run_pg "$PG_BIN/initdb" -D "$PG_DIR/data" -U postgres --auth=trust -E UTF8 --locale=C >/dev/null
run_pg "$PG_BIN/pg_ctl" -D "$PG_DIR/data" -l "$PG_DIR/server.log" -w \
  -o "-p $PG_PORT -k $PG_DIR -c listen_addresses=127.0.0.1 -c fsync=off -c max_connections=200" start >/dev/null
export DPPROXY_TEST_PG_DSN="postgres://postgres@127.0.0.1:$PG_PORT/postgres?sslmode=disable"

# node-postgres for the integration tests (npm registry).
if command -v npm >/dev/null; then
  log "installing node-postgres for the integration tests"
  (cd integration/testdata/node && npm install --no-audit --no-fund --silent >/dev/null)
fi

log "go vet"
go vet ./...
log "go test ./..."
go test -count=1 -timeout 20m "$@" ./...
log "go test -race (budget, engine, rewrite, pgwire: the concurrent paths)"
go test -race -count=1 -timeout 20m "$@" ./budget/ ./engine/ ./rewrite/ ./proxy/pgwire/
