// Package auth holds password verifiers and the server side of the
// authentication exchanges dpproxy's front ends speak: SCRAM-SHA-256
// (PostgreSQL) and mysql_native_password / caching_sha2_password (MySQL).
//
// The policy stores verifiers, never passwords: a verifier lets dpproxy
// check a login without being able to log in as the analyst elsewhere.
// The exchanges here are pure functions of bytes; the wire packages carry
// the messages.
package auth
