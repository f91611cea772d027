// Package integration holds dpproxy's end-to-end tests: the real binary,
// started as a process, queried with real clients (psql, pgx) against the
// embedded SQLite demo and a real PostgreSQL 15 server
// (DPPROXY_TEST_PG_DSN, set by scripts/test.sh).
package integration
