// Package budget is dpproxy's privacy budget accountant and its durable
// ledgers: an embedded SQLite file, or a PostgreSQL database several
// dpproxy processes share.
//
// # Accounting model
//
// Budgets compose sequentially (basic composition): every released answer
// costs (ε, δ) and an analyst may spend at most their limit, ε and δ
// separately. An analyst's account may also use advanced composition or
// zCDP (Composition, SetComposition): the charges then spend the smaller
// of their sum and Σ ε_i(e^ε_i − 1) + √(2 ln(1/δ′) Σ ε_i²) (or, for zCDP,
// ρ + 2√(ρ ln(1/δ′)) with ρ = Σ ε_i²/2), with δ′ more δ. The analyst
// chooses each query's ε after seeing earlier answers, so the accountant
// works as a privacy filter: it refuses the charge that would cross the
// limit. That is sound for advanced composition because the bound used is
// at least the fully adaptive one of Whitehouse et al. (2023), and for
// zCDP by Rényi filters (Feldman and Zrnic 2021) for pure-ε charges; the
// δ_i of approximate-DP charges (partition selection) add up on top. A comparison tolerance of 1e-9 relative to the limit absorbs
// floating-point rounding, so that, for example, one hundred queries of
// ε = 0.1 fit in a limit of ε = 10.
//
// # Scopes
//
// A query is charged against every scope it falls in and refused if any is
// exhausted (the ExhaustedError names it): the analyst's budget; each team
// the analyst belongs to (SetTeams), whose spending is its members'
// together; and each protected table the query reads that has a budget of
// its own (SetTableLimits, ReserveFor), a privacy domain every analyst
// draws on. Charges record the tables they read, so tables' spending, like
// analysts', comes from the ledger after a restart.
//
// An analyst's, a team's or a table's budget may renew (Window,
// SetWindow, Team.Window, SetTableWindow): its limit then applies to the
// charges of the current day, week, month or rolling period, computed from
// the charges' times, under an optional lifetime cap. The accountant's
// clock never goes back before a time it has read, so a clock set back
// cannot reopen a period or date a charge into a spent one.
//
// # Reserve, then commit or release
//
// A query is answered in three steps:
//
//  1. Reserve the query's cost before touching data. Reserve fails with an
//     *ExhaustedError unless spent + reserved + cost ≤ limit. Reserved budget
//     counts against the limit, so two concurrent queries can never both
//     spend the last of a budget.
//  2. Commit the reservation before the answer leaves the proxy. Commit
//     appends a Charge to the Store and returns only once it is durable
//     (fsynced); the answer may be sent after Commit returns nil.
//  3. Release the reservation instead when nothing data-dependent was sent
//     (the query was rejected, the backend failed, the client went away
//     before the answer was computed). Release is idempotent and does
//     nothing after Commit, so `defer r.Release()` is the usual pattern.
//
// The accountant fails closed: when Commit fails (the store returned an
// error, or ctx ended while the charge was being written) the reservation
// stays held, Release becomes a no-op for it, and the budget it covers cannot
// be spent again by this process. The answer must then not be sent. Commit
// may be retried on the same reservation. On the next start the ledger is
// the only source of truth: held reservations are not persisted, charges
// that reached the ledger are counted.
//
// # Ledger
//
// Store is the durable ledger. OpenSQLite returns the SQLite implementation:
// one table, charges, in WAL mode with synchronous=FULL, so a committed
// charge survives a crash of the process (kill -9) and of the machine. A
// single writer goroutine group-commits: every Append waiting while a
// transaction is being written and synced joins the next transaction, so
// many concurrent commits share one fsync. The charge_log view shows the
// table with readable timestamps:
//
//	sqlite3 ledger.db 'SELECT * FROM charge_log ORDER BY id DESC LIMIT 20'
//
// OpenPostgres returns the ledger several dpproxy processes share, in a
// PostgreSQL database: besides the charges it keeps each scope's totals
// and the holds (reservations) of queries in progress, so that a
// reservation is decided on what every process has spent and holds, in a
// transaction that first locks the scopes' rows in one order (no two
// processes can spend the same budget, and they cannot deadlock). A hold
// lives for a lease its process renews; a process that dies gives its
// holds back when the lease ends, and a hold that expired can no longer be
// charged (Commit fails with ErrHoldLost and the answer is withheld). A
// writer goroutine per process group-commits reservations, charges and
// releases; when the database cannot be reached they fail with
// ErrLedgerUnavailable, so queries are refused rather than answered
// uncharged. The accountant's own totals are then a cache of the ledger's,
// which Refresh reloads for status.
//
// A ledger file may be used by one SQLiteStore at a time; OpenSQLite takes
// an advisory lock on "<path>.lock" and fails with ErrLedgerLocked if another
// store (in this or another process) holds it, because two accountants
// sharing a ledger could each spend the same budget. OpenSQLiteReadOnly
// opens a ledger for reading without the lock (for status commands while
// the proxy runs); reading the file with other tools is safe too.
package budget
