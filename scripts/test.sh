#!/usr/bin/env bash
# Runs every dpproxy test on this machine: unit tests, golden rewrites,
# statistical noise tests and the end-to-end tests with real servers and
# clients.
#
# It installs what the tests need from Debian packages when missing
# (PostgreSQL 15 server and client, MariaDB server and client; needs root
# for apt-get), starts a throwaway PostgreSQL cluster and a throwaway
# MariaDB server on free local ports, runs `go test ./...` against them and
# removes both afterwards.
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
MARIADBD=${MARIADBD:-/usr/sbin/mariadbd}
if [ ! -x "$MARIADBD" ] || ! command -v mariadb-install-db >/dev/null || ! command -v mariadb-admin >/dev/null; then
  log "installing MariaDB"
  apt_install mariadb-server mariadb-client
fi

# MariaDB Connector/J for the JDBC test (Debian's libmariadb-java: 0.6 MB,
# about 2 s to install). Only when a JDK is already there: a JDK is ~110 MB
# of packages, so without javac the JDBC test skips instead.
if command -v javac >/dev/null && [ ! -f /usr/share/java/mariadb-java-client.jar ] && [ -z "${DPPROXY_TEST_JDBC_JAR:-}" ]; then
  log "installing MariaDB Connector/J (libmariadb-java)"
  apt_install libmariadb-java || log "libmariadb-java not installed: the JDBC test will skip"
fi

# PostgreSQL's JDBC driver, for the catalog tests (DatabaseMetaData).
if command -v javac >/dev/null && [ ! -f /usr/share/java/postgresql.jar ]; then
  log "installing the PostgreSQL JDBC driver (libpostgresql-jdbc-java)"
  apt_install libpostgresql-jdbc-java || log "libpostgresql-jdbc-java not installed: the JDBC catalog test will skip"
fi

# A Python ORM and its drivers (Debian's packages; PyPI is not needed), for
# the catalog and cursor tests: SQLAlchemy's inspector over psycopg2 and
# PyMySQL, psycopg2's named cursors.
if ! /usr/bin/python3 -c 'import sqlalchemy, psycopg2, pymysql' 2>/dev/null; then
  log "installing python3-sqlalchemy, python3-psycopg2, python3-pymysql"
  apt_install python3-sqlalchemy python3-psycopg2 python3-pymysql || log "Python packages not installed: the ORM tests will skip"
fi

# Headless Chromium renders the admin listener's budget page (about two
# minutes to install the first time).
if ! command -v chromium >/dev/null; then
  log "installing chromium"
  apt_install chromium || log "chromium not installed: the budget page test will skip"
fi

# PostgreSQL refuses to run as root: run the cluster as an unprivileged user.
PG_USER=$(id -un)
if [ "$(id -u)" = 0 ]; then
  PG_USER=postgres
  id "$PG_USER" >/dev/null 2>&1 || useradd --system --no-create-home "$PG_USER"
fi
run_pg() { if [ "$(id -un)" = "$PG_USER" ]; then "$@"; else runuser -u "$PG_USER" -- "$@"; fi; }

free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }

# MariaDB, like PostgreSQL, is run as an unprivileged user (the package's
# "mysql" user when we are root).
MY_USER=$(id -un)
if [ "$(id -u)" = 0 ]; then
  MY_USER=mysql
  id "$MY_USER" >/dev/null 2>&1 || useradd --system --no-create-home "$MY_USER"
fi
run_my() { if [ "$(id -un)" = "$MY_USER" ]; then "$@"; else runuser -u "$MY_USER" -- "$@"; fi; }

PG_DIR=$(mktemp -d /tmp/dpproxy-pg.XXXXXX)
chown "$PG_USER" "$PG_DIR" 2>/dev/null || true
PG_PORT=$(free_port)
MY_DIR=$(mktemp -d /tmp/dpproxy-my.XXXXXX)
chown "$MY_USER" "$MY_DIR" 2>/dev/null || true
MY_PORT=$(free_port)
MY_PID=
cleanup() {
  run_pg "$PG_BIN/pg_ctl" -D "$PG_DIR/data" -m immediate stop >/dev/null 2>&1 || true
  if [ -n "$MY_PID" ]; then
    # The server's own pid (MY_PID may be runuser's); SIGTERM is a clean
    # shutdown, SIGKILL if it takes more than 10 s.
    my_server=$(cat "$MY_DIR/mysqld.pid" 2>/dev/null || echo "$MY_PID")
    kill "$my_server" "$MY_PID" 2>/dev/null || true
    for _ in $(seq 1 100); do kill -0 "$my_server" 2>/dev/null || break; sleep 0.1; done
    kill -9 "$my_server" "$MY_PID" 2>/dev/null || true
  fi
  rm -rf "$PG_DIR" "$MY_DIR"
}
trap cleanup EXIT

log "starting PostgreSQL 15 on 127.0.0.1:$PG_PORT"
run_pg "$PG_BIN/initdb" -D "$PG_DIR/data" -U postgres --auth=trust -E UTF8 --locale=C >/dev/null
run_pg "$PG_BIN/pg_ctl" -D "$PG_DIR/data" -l "$PG_DIR/server.log" -w \
  -o "-p $PG_PORT -k $PG_DIR -c listen_addresses=127.0.0.1 -c fsync=off -c max_connections=200" start >/dev/null
export DPPROXY_TEST_PG_DSN="postgres://postgres@127.0.0.1:$PG_PORT/postgres?sslmode=disable"
# The shared-ledger restart test runs a cluster of its own with these.
export DPPROXY_TEST_PG_BIN="$PG_BIN"

log "starting MariaDB on 127.0.0.1:$MY_PORT"
# root@localhost without a password (authentication method "normal", not
# unix_socket), so the tests can connect over TCP and create databases.
run_my mariadb-install-db --no-defaults --datadir="$MY_DIR/data" \
  --auth-root-authentication-method=normal --skip-test-db --skip-name-resolve >"$MY_DIR/install.log" 2>&1 ||
  { cat "$MY_DIR/install.log" >&2; exit 1; }
# --no-defaults: nothing from /etc/mysql (no system socket, port or datadir).
run_my "$MARIADBD" --no-defaults --datadir="$MY_DIR/data" --socket="$MY_DIR/mysqld.sock" \
  --port="$MY_PORT" --bind-address=127.0.0.1 --pid-file="$MY_DIR/mysqld.pid" \
  --log-error="$MY_DIR/server.log" --skip-name-resolve --max-connections=200 \
  --innodb-flush-log-at-trx-commit=0 --innodb-buffer-pool-size=64M >/dev/null 2>&1 &
MY_PID=$!
for _ in $(seq 1 300); do
  mariadb-admin --no-defaults -uroot -h127.0.0.1 -P"$MY_PORT" ping >/dev/null 2>&1 && break
  kill -0 "$MY_PID" 2>/dev/null || { cat "$MY_DIR/server.log" >&2; exit 1; }
  sleep 0.1
done
mariadb-admin --no-defaults -uroot -h127.0.0.1 -P"$MY_PORT" ping >/dev/null ||
  { log "MariaDB did not start"; cat "$MY_DIR/server.log" >&2; exit 1; }
export DPPROXY_TEST_MYSQL_DSN="root@tcp(127.0.0.1:$MY_PORT)/"

# node-postgres and mysql2 for the integration tests (npm registry).
if command -v npm >/dev/null; then
  log "installing node-postgres and mysql2 for the integration tests"
  (cd integration/testdata/node && npm install --no-audit --no-fund --silent >/dev/null)
fi

log "go vet"
go vet ./...
log "go test ./..."
go test -count=1 -timeout 20m "$@" ./...
log "go test -race (backend, budget, engine, session, rewrite, pgwire, mysqlwire, directio, procs: the concurrent paths)"
go test -race -count=1 -timeout 20m "$@" ./backend/ ./budget/ ./engine/ ./session/ ./session/catalog/ ./rewrite/ ./proxy/pgwire/ ./proxy/mysqlwire/ ./directio/ ./procs/
# A short run of every fuzz target (their seed corpora under testdata/fuzz
# also run as ordinary tests above), unless flags chose tests.
# The budget is a count of executions, not a duration: Go 1.26's fuzz
# coordinator can report a bare "context deadline exceeded" failure when a
# duration runs out while a worker is mid-call (golang/go#75804, fixed in
# Go 1.27); a count has no deadline to race. DPPROXY_FUZZTIME overrides it.
[ $# -eq 0 ] || exit 0
log "fuzz targets, ${DPPROXY_FUZZTIME:-8000x} each"
for target in rewrite:FuzzAnalyze rewrite:FuzzNormalizePostgres config:FuzzParse auth:FuzzSCRAMServer \
  auth:FuzzParseSCRAMVerifier session:FuzzSessionStatements session:FuzzPreparedParams proxy/pgwire:FuzzStartup \
  proxy/pgwire:FuzzMessages proxy/mysqlwire:FuzzPacketParsing proxy/mysqlwire:FuzzCommands session/catalog:FuzzCatalogQueries \
  engine:FuzzLedgerText; do
  go test "./${target%%:*}" -run '^$' -fuzz "^${target##*:}\$" -fuzztime "${DPPROXY_FUZZTIME:-8000x}"
done
