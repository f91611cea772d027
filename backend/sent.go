package backend

import "context"

// sentKey keys the function WithSent puts in a context.
type sentKey struct{}

// WithSent returns a context whose statement calls sent once it is on its
// way to the database, before its result is read, so that what waits for
// the result can start meanwhile (the engine starts a DP query's durable
// charge). A backend calls it only for a text that has run there
// successfully before: a statement the database refuses (a text seen for
// the first time, a policy that does not match the schema) fails before
// its hook. PostgreSQL's backend calls it once a pooled connection is
// taken for a statement run alone (a write that then fails, the server
// gone, comes after it), and after the flush of a combined batch; a
// combined statement the server sends back to run alone (its table
// changed) calls it again, so sent must act once. The other backends
// never call it, and what waits starts when the result is in.
func WithSent(ctx context.Context, sent func()) context.Context {
	return context.WithValue(ctx, sentKey{}, sent)
}

// SentHook is the function WithSent put in ctx, or nil: what a backend
// calls once the statement is sent.
func SentHook(ctx context.Context) func() {
	f, _ := ctx.Value(sentKey{}).(func())
	return f
}
