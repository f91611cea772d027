// Package admin is the operator's HTTP listener (policy key admin): what a
// platform team needs to run dpproxy like any proxy.
//
//	/metrics   Prometheus metrics (metrics.go): statements by protocol,
//	           kind and outcome, their latency, ε and δ charged and every
//	           budget's spending, cache hits, the backend pool, connections
//	           by state, failed logins, audit log errors
//	/healthz   200 while the process serves
//	/readyz    200 when the backend and the ledger answer, 503 otherwise
//
// Every request logs in with HTTP basic authentication as the policy's
// admin user (a SCRAM-SHA-256 verifier, checked once per password and
// remembered). Nothing served reveals an exact statistic of a protected
// table: the metrics count statements, rows released and privacy spent,
// never values.
package admin
