#!/bin/sh
# Starts a throwaway PostgreSQL 15 cluster for the backend and demo tests
# and prints the DSN to export:
#
#   eval "$(backend/testdata/start-postgres.sh)"
#   go test ./backend/ ./demo/
#
# Stop it with: backend/testdata/start-postgres.sh stop
#
# PostgreSQL refuses to run as root, so as root the cluster runs as the
# user $PGTEST_USER (created if missing). Trust authentication, listening on
# 127.0.0.1 only.
set -eu

PGBIN=${PGBIN:-/usr/lib/postgresql/15/bin}
PGTEST_DATA=${PGTEST_DATA:-/tmp/pgtest-data}
PGTEST_PORT=${PGTEST_PORT:-55432}
PGTEST_USER=${PGTEST_USER:-pgtest}

run() {
	if [ "$(id -u)" = 0 ]; then
		su "$PGTEST_USER" -s /bin/sh -c "$*"
	else
		sh -c "$*"
	fi
}

if [ "$(id -u)" = 0 ] && ! id "$PGTEST_USER" >/dev/null 2>&1; then
	useradd -m "$PGTEST_USER"
fi

if [ "${1:-start}" = stop ]; then
	run "'$PGBIN/pg_ctl' -D '$PGTEST_DATA' -m fast stop" >&2
	exit 0
fi

if [ ! -f "$PGTEST_DATA/PG_VERSION" ]; then
	run "'$PGBIN/initdb' -D '$PGTEST_DATA' -U postgres --auth=trust" >/dev/null
fi
if ! run "'$PGBIN/pg_ctl' -D '$PGTEST_DATA' status" >/dev/null 2>&1; then
	run "'$PGBIN/pg_ctl' -D '$PGTEST_DATA' -l '$PGTEST_DATA/server.log' -w \
		-o \"-p $PGTEST_PORT -k /tmp -c listen_addresses=127.0.0.1\" start" >&2
fi
echo "export DPPROXY_TEST_PG_DSN=postgres://postgres@127.0.0.1:$PGTEST_PORT/postgres?sslmode=disable"
