// Package engine is the budgeted release: the one place where the policy,
// the backend, the noise mechanisms and the budget meet. Every session
// (package session), whatever its protocol, answers through the same
// Engine, so an analyst has one budget whatever the protocol.
//
// For a query on protected data, once a session has analyzed it into a
// plan (package rewrite), Answer runs the fixed order of steps:
//
//  1. look the release up in the result cache: the same analyst asking the
//     same parsed statement at the same ε and δ within the cache's TTL gets
//     the identical answer again, at no cost (cache.go);
//  2. reserve the query's ε with the accountant (refuse if it would overspend);
//  3. run the bounded backend SQL;
//  4. add calibrated noise per measurement and post-process (release.go);
//  5. commit the charge durably to the ledger;
//  6. only then return the rows (and cache them).
//
// A reservation is released only when nothing derived from the data left
// the proxy (the backend was unreachable, or noise generation failed).
// Identical queries racing each other are charged once: the second waits
// for the first's answer.
//
// The engine also runs what costs nothing: public-table queries
// (Passthrough, DescribePassthrough), held to the policy's result limits; it counts each analyst's open sessions (OpenSession) and keeps
// the sessions' shared memos of analyzed public-table queries and of DP
// plan templates (Templates). Explain and
// ExplainSummary describe a plan without running it.
package engine
