package main

import (
	"fmt"
	"math"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// scrapeLedger logs in with the URL's user information and reads the two
// ledger counters; the mean transaction time is the counters' growth
// between two scrapes; a failed scrape (wrong login, counters missing)
// gives none.
func TestScrapeLedger(t *testing.T) {
	txs, secs := 100.0, 0.05
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if user, pw, ok := r.BasicAuth(); !ok || user != "ops" || pw != "p w" || r.URL.Path != "/metrics" {
			http.Error(w, "no", http.StatusUnauthorized)
			return
		}
		fmt.Fprintf(w, "# TYPE dpproxy_ledger_transactions_total counter\ndpproxy_ledger_transactions_total %v\n", txs)
		fmt.Fprintf(w, "# TYPE dpproxy_ledger_transaction_seconds_total counter\ndpproxy_ledger_transaction_seconds_total %v\n", secs)
	}))
	defer srv.Close()
	good := strings.Replace(srv.URL, "http://", "http://ops:p%20w@", 1) + "/metrics"
	before := scrapeLedger(good)
	txs, secs = 150, 0.075 // 50 transactions in 25 ms
	after := scrapeLedger(good)
	if got := meanTransactionUS(before, after); math.Abs(got-500) > 1e-6 {
		t.Errorf("mean transaction %v µs, want 500", got)
	}
	if meanTransactionUS(after, after) != 0 || meanTransactionUS(nil, after) != 0 {
		t.Error("a mean without transactions in between")
	}
	bad := strings.Replace(srv.URL, "http://", "http://ops:wrong@", 1) + "/metrics"
	if m := scrapeLedger(bad); m != nil {
		t.Errorf("wrong login: %+v", m)
	}
	if m := scrapeLedger(""); m != nil {
		t.Errorf("no URL: %+v", m)
	}
}

func TestScrapeLedgerMissingCounter(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprint(w, "# TYPE dpproxy_ledger_transactions_total counter\ndpproxy_ledger_transactions_total 3\n")
	}))
	defer srv.Close()
	if m := scrapeLedger(srv.URL + "/metrics"); m != nil {
		t.Errorf("without the seconds counter: %+v", m)
	}
}
