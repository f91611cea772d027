package admin

import (
	"sync"

	"github.com/dpproxy/dpproxy/backend"
	"github.com/dpproxy/dpproxy/budget"
	"github.com/dpproxy/dpproxy/config"
	"github.com/dpproxy/dpproxy/session"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
)

// Sources are what the metrics read when scraped.
type Sources struct {
	// Policy is the policy in force (it changes on reload).
	Policy func() *config.Policy
	// Accountant holds every budget's spending.
	Accountant *budget.Accountant
	Backend    backend.Backend
	// Connections reports the client connections open and those still
	// logging in; Active the statements running; LoginFailures the failed
	// logins so far; AuditErrors the audit lines not written (each may be
	// nil).
	Connections   func() (open, handshakes int)
	Active        func() int
	LoginFailures func() int64
	AuditErrors   func() int64
	// TemplateHits counts the DP plans taken from their shape's template
	// (engine.Engine.TemplateHits; may be nil).
	TemplateHits func() uint64
	// Ledger reads the ledger store's counters (budget.SQLiteStore.Stats,
	// budget.PostgresStore.Stats; may be nil).
	Ledger func() budget.StoreStats
}

// Metrics are dpproxy's Prometheus metrics: counters fed by Observe, one
// statement at a time, and gauges read from Sources at each scrape.
type Metrics struct {
	registry   *prometheus.Registry
	statements *prometheus.CounterVec
	duration   *prometheus.HistogramVec
	epsilon    *prometheus.CounterVec
	delta      *prometheus.CounterVec
	rows       *prometheus.CounterVec
	cacheHits  prometheus.Counter

	// The series Observe feeds, looked up once per label set:
	// WithLabelValues hashes the labels at every call, the most of what
	// Observe cost on each statement (labels → *statementSeries, analyst →
	// *chargeSeries). Both sets are bounded: the labels by the kinds,
	// outcomes and SQLSTATE classes, the analysts by the policy.
	series  sync.Map
	charged sync.Map
}

// statementLabels are the labels of the series one statement feeds.
type statementLabels struct{ protocol, kind, outcome, class string }

// statementSeries are the series of one statementLabels.
type statementSeries struct {
	statements prometheus.Counter
	duration   prometheus.Observer
	rows       prometheus.Counter
}

// chargeSeries are one analyst's ε and δ counters.
type chargeSeries struct{ epsilon, delta prometheus.Counter }

// NewMetrics registers the metrics, with Go's and the process's own.
func NewMetrics(src Sources) *Metrics {
	m := &Metrics{
		registry: prometheus.NewRegistry(),
		statements: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "dpproxy_statements_total",
			Help: "Statements run, by front-end protocol, kind (dp, cached, public, catalog, session), outcome (answered, budget_exhausted, refused, failed) and SQLSTATE class (00 when answered).",
		}, []string{"protocol", "kind", "outcome", "sqlstate_class"}),
		duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "dpproxy_statement_duration_seconds",
			Help:    "Time from a statement's arrival to its answer, by kind.",
			Buckets: prometheus.ExponentialBuckets(0.0001, 2.5, 14), // 100 µs to ~15 s
		}, []string{"kind"}),
		epsilon: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "dpproxy_epsilon_charged_total",
			Help: "ε charged by this instance, by analyst.",
		}, []string{"analyst"}),
		delta: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "dpproxy_delta_charged_total",
			Help: "δ charged by this instance, by analyst.",
		}, []string{"analyst"}),
		rows: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "dpproxy_rows_released_total",
			Help: "Rows sent to clients, by statement kind.",
		}, []string{"kind"}),
		cacheHits: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "dpproxy_cache_hits_total",
			Help: "DP answers given again from an earlier release (the result cache, or derived from one), at no cost.",
		}),
	}
	m.registry.MustRegister(m.statements, m.duration, m.epsilon, m.delta, m.rows, m.cacheHits,
		collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}),
		&stateCollector{src: src})
	return m
}

// Registry is the registry /metrics serves.
func (m *Metrics) Registry() *prometheus.Registry { return m.registry }

// Observe counts one statement (session.Server.Observe).
func (m *Metrics) Observe(st session.Statement) {
	class := "00"
	if st.SQLState != "" {
		class = st.SQLState.Class()
	}
	labels := statementLabels{st.Protocol, st.Kind, st.Outcome(), class}
	v, ok := m.series.Load(labels)
	if !ok {
		v, _ = m.series.LoadOrStore(labels, &statementSeries{
			statements: m.statements.WithLabelValues(labels.protocol, labels.kind, labels.outcome, labels.class),
			duration:   m.duration.WithLabelValues(labels.kind),
			rows:       m.rows.WithLabelValues(labels.kind),
		})
	}
	series := v.(*statementSeries)
	series.statements.Inc()
	series.duration.Observe(st.Duration.Seconds())
	series.rows.Add(float64(st.Rows))
	if st.Charged.Epsilon > 0 || st.Charged.Delta > 0 {
		v, ok := m.charged.Load(st.Analyst)
		if !ok {
			v, _ = m.charged.LoadOrStore(st.Analyst, &chargeSeries{
				epsilon: m.epsilon.WithLabelValues(st.Analyst),
				delta:   m.delta.WithLabelValues(st.Analyst),
			})
		}
		charge := v.(*chargeSeries)
		charge.epsilon.Add(st.Charged.Epsilon)
		charge.delta.Add(st.Charged.Delta)
	}
	if st.CacheHit {
		m.cacheHits.Inc()
	}
}

// stateCollector reads the gauges of Sources at each scrape.
type stateCollector struct{ src Sources }

var (
	budgetSpent = prometheus.NewDesc("dpproxy_budget_epsilon_spent",
		"ε spent of a budget (the current window's for one that renews), as its accountant composes it, every instance's charges included; scope is analyst, team or table.",
		[]string{"scope", "name"}, nil)
	budgetLimit = prometheus.NewDesc("dpproxy_budget_epsilon_limit",
		"ε limit of a budget.", []string{"scope", "name"}, nil)
	budgetRemaining = prometheus.NewDesc("dpproxy_budget_epsilon_remaining",
		"ε a budget has left (limit − spent − held by queries running).", []string{"scope", "name"}, nil)
	budgetDeltaSpent = prometheus.NewDesc("dpproxy_budget_delta_spent",
		"δ spent of a budget.", []string{"scope", "name"}, nil)
	budgetDeltaLimit = prometheus.NewDesc("dpproxy_budget_delta_limit",
		"δ limit of a budget.", []string{"scope", "name"}, nil)
	poolConns = prometheus.NewDesc("dpproxy_backend_connections",
		"Backend pool connections by state (in_use, idle) and the pool's maximum (max).", []string{"state"}, nil)
	poolWaits = prometheus.NewDesc("dpproxy_backend_waits_total",
		"Statements that found every backend connection in use and waited.", nil, nil)
	poolWaited = prometheus.NewDesc("dpproxy_backend_wait_seconds_total",
		"Time statements waited for a backend connection.", nil, nil)
	pipelined = prometheus.NewDesc("dpproxy_backend_pipelined_statements_total",
		"Short statements sent combined with others in pipeline batches (public-table statements on PostgreSQL and MySQL; on PostgreSQL also DP queries' backend SQL).", nil, nil)
	pipelineBatches = prometheus.NewDesc("dpproxy_backend_pipeline_batches_total",
		"Pipeline batches sent: pipelined statements ÷ batches is the mean batch size.", nil, nil)
	unioned = prometheus.NewDesc("dpproxy_backend_unioned_statements_total",
		"Pipelined statements answered together with others of their shape by one UNION ALL (MySQL).", nil, nil)
	lookups = prometheus.NewDesc("dpproxy_backend_key_lookups_total",
		"Pipelined lookups by one integer key answered together with others of their shape by one statement listing their keys (MySQL).", nil, nil)
	clientConns = prometheus.NewDesc("dpproxy_client_connections",
		"Client connections by state: handshake (logging in), active (running a statement), idle.", []string{"state"}, nil)
	loginFailures = prometheus.NewDesc("dpproxy_login_failures_total",
		"Failed logins (wrong password, unknown user): both front ends and the admin listener.", nil, nil)
	auditErrors = prometheus.NewDesc("dpproxy_audit_errors_total",
		"Audit log lines that could not be written.", nil, nil)
	ledgerCharges = prometheus.NewDesc("dpproxy_ledger_charges_total",
		"Charges this process committed to the ledger.", nil, nil)
	ledgerTxs = prometheus.NewDesc("dpproxy_ledger_transactions_total",
		"Ledger transactions this process committed. On the embedded ledger they are the charges' group commits, one WAL sync each: charges ÷ transactions is the mean batch. The shared ledger also counts those that hold, release or renew budget.", nil, nil)
	ledgerTxTime = prometheus.NewDesc("dpproxy_ledger_transaction_seconds_total",
		"Wall time of those transactions, their durable commit included. On the embedded ledger, ÷ transactions is how long a charge's own transaction kept it waiting, on average; the shared ledger's concurrent transactions add up.", nil, nil)
	templateHits = prometheus.NewDesc("dpproxy_plan_template_hits_total",
		"DP queries planned from the template of their shape (an earlier query's text with other integers in its WHERE), without parsing or analysis.", nil, nil)
)

func (c *stateCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{budgetSpent, budgetLimit, budgetRemaining, budgetDeltaSpent, budgetDeltaLimit, poolConns, poolWaits, poolWaited, pipelined, pipelineBatches, unioned, lookups, clientConns, loginFailures, auditErrors, templateHits, ledgerCharges, ledgerTxs, ledgerTxTime} {
		ch <- d
	}
}

func (c *stateCollector) Collect(ch chan<- prometheus.Metric) {
	gauge := func(d *prometheus.Desc, v float64, labels ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, v, labels...)
	}
	counter := func(d *prometheus.Desc, v float64) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.CounterValue, v)
	}
	if c.src.Accountant != nil && c.src.Policy != nil {
		pol := c.src.Policy()
		report := func(scope, name string, st budget.Status) {
			gauge(budgetSpent, st.Spent.Epsilon, scope, name)
			gauge(budgetLimit, st.Limit.Epsilon, scope, name)
			gauge(budgetRemaining, st.Remaining.Epsilon, scope, name)
			gauge(budgetDeltaSpent, st.Spent.Delta, scope, name)
			gauge(budgetDeltaLimit, st.Limit.Delta, scope, name)
		}
		for _, a := range pol.Analysts {
			if st, ok := c.src.Accountant.Status(a.Name); ok {
				report("analyst", a.Name, st)
			}
		}
		for _, t := range pol.Teams {
			if st, ok := c.src.Accountant.TeamStatus(t.Name); ok {
				report("team", t.Name, st)
			}
		}
		for _, t := range pol.ProtectedTables {
			if t.Budget == nil {
				continue
			}
			if st, ok := c.src.Accountant.TableStatus(t.Name); ok {
				report("table", t.Name, st)
			}
		}
	}
	if c.src.Backend != nil {
		s := c.src.Backend.Stats()
		gauge(poolConns, float64(s.InUse), "in_use")
		gauge(poolConns, float64(s.Idle), "idle")
		gauge(poolConns, float64(s.Max), "max")
		counter(poolWaits, float64(s.Waits))
		counter(poolWaited, s.Waited.Seconds())
		counter(pipelined, float64(s.Pipelined))
		counter(pipelineBatches, float64(s.Batches))
		counter(unioned, float64(s.Unioned))
		counter(lookups, float64(s.Lookups))
	}
	if c.src.Connections != nil {
		open, handshakes := c.src.Connections()
		active := 0
		if c.src.Active != nil {
			active = c.src.Active()
		}
		idle := max(0, open-handshakes-active)
		gauge(clientConns, float64(handshakes), "handshake")
		gauge(clientConns, float64(active), "active")
		gauge(clientConns, float64(idle), "idle")
	}
	if c.src.LoginFailures != nil {
		counter(loginFailures, float64(c.src.LoginFailures()))
	}
	if c.src.AuditErrors != nil {
		counter(auditErrors, float64(c.src.AuditErrors()))
	}
	if c.src.TemplateHits != nil {
		counter(templateHits, float64(c.src.TemplateHits()))
	}
	if c.src.Ledger != nil {
		st := c.src.Ledger()
		counter(ledgerCharges, float64(st.Charges))
		counter(ledgerTxs, float64(st.Transactions))
		counter(ledgerTxTime, st.TransactionTime.Seconds())
	}
}
