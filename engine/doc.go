// Package engine answers an analyst's SQL: it is the one place where the
// policy, the rewrite, the backend, the noise mechanisms and the budget meet.
// Every front end (PostgreSQL and MySQL wire protocols) drives the same
// engine through a Session, so an analyst has one budget whatever the
// protocol.
//
// For a query on protected data the order of steps is fixed:
//
//  1. parse and analyze (package rewrite); reject before anything runs;
//  2. look the release up in the result cache: the same analyst asking the
//     same parsed statement at the same ε and δ within the cache's TTL gets
//     the identical answer again, at no cost (cache.go);
//  3. reserve the query's ε with the accountant (refuse if it would overspend);
//  4. run the bounded backend SQL;
//  5. add calibrated noise per measurement and post-process;
//  6. commit the charge durably to the ledger;
//  7. only then return the rows (and cache them).
//
// A reservation is released only when nothing derived from the data left
// the proxy (the backend was unreachable, or noise generation failed).
// Identical queries racing each other are charged once: the second waits
// for the first's answer.
//
// A Session also answers, without the backend and at no cost, the
// statements SET/RESET/SHOW dpproxy.epsilon (the ε of the session's next
// queries), EXPLAIN DP <query> (how the query would be answered) and
// SELECTs on the read-only views dpproxy.budget and dpproxy.queries (the
// analyst's own budget and charges); see session.go, settings.go and
// virtual.go.
package engine
