// Package testcert makes the self-signed TLS certificates the front ends'
// and the integration tests serve: one place for what a test certificate
// holds, for every client that checks it (Go's crypto/tls, libpq, the
// mariadb CLI).
package testcert
