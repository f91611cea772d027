// Package auth holds password verifiers and the server side of the
// authentication exchanges dpproxy's front ends speak: SCRAM-SHA-256
// (PostgreSQL) and mysql_native_password / caching_sha2_password (MySQL).
//
// The policy stores verifiers, never passwords: a verifier lets dpproxy
// check a login without being able to log in as the analyst elsewhere.
// The exchanges here are pure functions of bytes; the wire packages carry
// the messages. Two pieces of state serve every front end: Throttle slows
// down password guessing per analyst name and per client address, and
// LoadOrCreateSecret keeps the server secret that makes what unknown user
// names see (SCRAM salts) the same across restarts.
package auth
