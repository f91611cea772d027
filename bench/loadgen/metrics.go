package main

import (
	"fmt"
	"net/http"
	"net/url"
	"os"
	"time"

	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

// ledgerMetrics are dpproxy's ledger counters, read from its admin
// listener's /metrics: the transactions it committed and their wall time.
type ledgerMetrics struct {
	transactions float64
	seconds      float64
}

// scrapeLedger reads the ledger's counters from rawURL (the admin
// listener's /metrics, its login in the URL's user information); nil
// when rawURL is empty or the scrape fails (said on stderr).
func scrapeLedger(rawURL string) *ledgerMetrics {
	if rawURL == "" {
		return nil
	}
	m, err := fetchLedgerMetrics(rawURL)
	if err != nil {
		fmt.Fprintln(os.Stderr, "loadgen: metrics:", err)
		return nil
	}
	return m
}

func fetchLedgerMetrics(rawURL string) (*ledgerMetrics, error) {
	u, err := url.Parse(rawURL)
	if err != nil {
		return nil, err
	}
	req, err := http.NewRequest(http.MethodGet, (&url.URL{Scheme: u.Scheme, Host: u.Host, Path: u.Path}).String(), nil)
	if err != nil {
		return nil, err
	}
	if u.User != nil {
		password, _ := u.User.Password()
		req.SetBasicAuth(u.User.Username(), password)
	}
	client := http.Client{Timeout: 10 * time.Second}
	resp, err := client.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("%s: %s", u.Redacted(), resp.Status)
	}
	parser := expfmt.NewTextParser(model.UTF8Validation)
	families, err := parser.TextToMetricFamilies(resp.Body)
	if err != nil {
		return nil, err
	}
	value := func(name string) (float64, error) {
		f := families[name]
		if f == nil || len(f.GetMetric()) != 1 {
			return 0, fmt.Errorf("%s: no %s", u.Redacted(), name)
		}
		return f.GetMetric()[0].GetCounter().GetValue(), nil
	}
	var m ledgerMetrics
	if m.transactions, err = value("dpproxy_ledger_transactions_total"); err != nil {
		return nil, err
	}
	if m.seconds, err = value("dpproxy_ledger_transaction_seconds_total"); err != nil {
		return nil, err
	}
	return &m, nil
}

// meanTransactionUS is the mean wall time, in µs, of the ledger
// transactions committed between before and after (0 when none).
func meanTransactionUS(before, after *ledgerMetrics) float64 {
	if before == nil || after == nil || after.transactions <= before.transactions {
		return 0
	}
	return (after.seconds - before.seconds) / (after.transactions - before.transactions) * 1e6
}
