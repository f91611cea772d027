// Package engine answers an analyst's SQL: it is the one place where the
// policy, the rewrite, the backend, the noise mechanisms and the budget meet.
// Every front end (PostgreSQL and MySQL wire protocols) drives the same
// engine through a Session, so an analyst has one budget whatever the
// protocol.
//
// For a query on protected data the order of steps is fixed:
//
//  1. parse and analyze (package rewrite); reject before anything runs;
//  2. reserve the query's ε with the accountant (refuse if it would overspend);
//  3. run the bounded backend SQL;
//  4. add calibrated noise per measurement and post-process;
//  5. commit the charge durably to the ledger;
//  6. only then return the rows.
//
// A reservation is released only when nothing derived from the data left
// the proxy (the backend was unreachable, or noise generation failed).
package engine
