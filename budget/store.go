package budget

import (
	"context"
	"time"
)

// Charge is one entry of the ledger: an answer released to an analyst and
// what it cost.
type Charge struct {
	// ID is assigned by the store: unique, and increasing in commit order
	// on the embedded ledger (on a shared one, per process).
	ID      int64
	Analyst string
	Cost    Cost
	// Query is the normalized query text, kept for the analyst's own log.
	Query string
	// At is when the charge was recorded (UTC); the store sets it when zero.
	At time.Time
	// Tables are the protected tables the query read (for table budgets);
	// Charges does not read them back.
	Tables []string
}

// Store is the durable ledger behind an Accountant.
//
// Implementations must be safe for concurrent use. An accountant starts
// from a store's History (see History): a store that is not the shared
// ledger must have that method too, or NewAccountant refuses it.
type Store interface {
	// Append records c and returns it with ID (and At, when zero) set. When
	// Append returns nil the charge is durable: it survives a crash of the
	// process or machine. When it returns an error the charge may or may not
	// have been recorded; callers must treat the budget as spent.
	Append(ctx context.Context, c Charge) (Charge, error)
	// Charges returns up to limit charges of analyst, newest first; limit
	// ≤ 0 means all of them.
	Charges(ctx context.Context, analyst string, limit int) ([]Charge, error)
	// Close flushes pending appends and releases the store.
	Close() error
}

// Request states of the stores' writer queues, for an operation whose
// context ends while it waits.
const (
	reqPending   int32 = iota // queued, not yet taken by the writer
	reqTaken                  // in a transaction: the outcome will be reported
	reqAbandoned              // the caller gave up before the writer took it
)
