// Package author holds the policy author's tools: Draft writes a first
// policy from a live schema (`dpproxy init`), Check compares a policy
// with the database it protects (`dpproxy check`) — tables, columns and
// types exist, dpproxy's backend role can only read, and what each bound
// and per-person limit would cut from the data as it is today — and
// Closeness audits a table (or a CSV file) for (n, ε)-closeness before
// it is declared public (`dpproxy audit closeness`).
//
// These tools read the data with dpproxy's backend credentials and report
// exact figures (the share of values a bound clips, of people a limit
// truncates). They are for the policy author, who may see the data; no
// analyst path reaches them.
package author
