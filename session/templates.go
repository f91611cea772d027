package session

import (
	"errors"
	"fmt"
	"strconv"

	"github.com/dpproxy/dpproxy/config"
	"github.com/dpproxy/dpproxy/engine"
	"github.com/dpproxy/dpproxy/rewrite"
	"github.com/dpproxy/dpproxy/sqltypes"
	"github.com/pingcap/tidb/pkg/parser/ast"
)

// A service asking for one unit's figures at a time sends a new text each
// time (WHERE patient_id = 42, then 43): the plan memo, keyed by text,
// never hits. Such texts have one shape (rewrite.Shape) and, when the
// analysis of the shape is the same whatever the slots hold, one template
// (rewrite.Template) that gives each text its plan without parsing or
// analysis. The engine keeps the templates for every session
// (engine.Templates), by shape and by the session settings analysis
// reads; a shape that has none is remembered too, so it is tried once.
//
// Only plain DP plans have templates: not a plan chosen for a target
// error (its ε is chosen per query), nor one a cached release could answer
// (derived.go: the derivation reads the constants). Templates are kept
// per analyst: a template's speed must not tell one analyst what shapes
// another has asked about.

// templateKey keys sql's shape under the session's analyst and settings.
func (s *Session) templateKey(shape string) engine.TemplateKey {
	return engine.TemplateKey{Shape: shape, Analyst: s.analyst, Database: s.database,
		Settings: strconv.Itoa(int(s.frontEnd)) + "\x00" + strconv.FormatFloat(s.epsilon, 'g', -1, 64) + "\x00" + s.intervals + "\x00" + s.autoBound + "\x00" + strconv.FormatBool(s.reportBias)}
}

// canonicalSuffix marks the result cache's key of a release with the bias
// report: another release than the one without.
func (s *Session) canonicalSuffix() string {
	if s.reportBias {
		return " -- with the bias report"
	}
	return ""
}

// templatedPlan returns the prepared DP statement for sql from its
// shape's template (a PostgreSQL client's text). Without one it returns
// nil, and the shape when it is to be learned (unknown, and seen before:
// engine.SeenBefore): the caller analyzes sql in full and then learns the
// shape (learnText).
func (s *Session) templatedPlan(sql string) (*prepared, *rewrite.Shape) {
	if s.frontEnd != rewrite.PostgresFrontEnd || s.targetError > 0 {
		return nil, nil
	}
	shape, ok := rewrite.PostgresShape(sql)
	if !ok {
		return nil, nil
	}
	return s.fromTemplate(&shape)
}

// templatedExecution is templatedPlan for an execution of a prepared
// statement with parameters (rewrite.ParamShape), on either front end; the
// caller learns a new shape with learnExecution.
func (s *Session) templatedExecution(sql string, markerParams []int, params []any, types []sqltypes.Type) (*prepared, *rewrite.Shape) {
	if s.targetError > 0 {
		return nil, nil
	}
	shape, ok := rewrite.ParamShape(sql, markerParams, params, types)
	if !ok {
		return nil, nil
	}
	return s.fromTemplate(&shape)
}

// fromTemplate instantiates shape's template; see templatedPlan.
func (s *Session) fromTemplate(shape *rewrite.Shape) (*prepared, *rewrite.Shape) {
	key := s.templateKey(shape.Key)
	t, known := s.engine.Templates().Get(key)
	switch {
	case !known || t.Policy != s.engine.Policy():
		if !s.engine.SeenBefore(key) {
			return nil, nil // learned at its second sighting
		}
		return nil, shape
	case !t.Usable():
		return nil, nil // a shape without a template
	}
	q, canonical, err := t.Instantiate(shape)
	if err != nil {
		s.engine.Logger().Warn("a template does not fit its shape", "err", err)
		return nil, nil
	}
	canonical += s.canonicalSuffix()
	s.engine.CountTemplateHit()
	return &prepared{query: q, canonical: canonical, release: s.engine.Release(s.analyst, q.Plan, canonical)}, nil
}

// learnText makes the template of a text's shape, the text having just
// been analyzed in full into p, and keeps it; or remembers that the shape
// has none.
func (s *Session) learnText(shape *rewrite.Shape, p *prepared) {
	s.learnTemplate(shape, p, func(values []int64) (ast.StmtNode, *rewrite.Parsed, error) {
		parsed, err := rewrite.ParseStatement(shape.Text(values), s.frontEnd)
		if err != nil {
			return nil, nil, err
		}
		if len(parsed.Stmts) != 1 || len(parsed.Params) > 0 {
			return nil, nil, errors.New("not one statement without parameters")
		}
		return parsed.Stmts[0], parsed, nil
	})
}

// learnExecution is learnText for an execution of a prepared statement:
// the probes bind their values into the statement, as ExecutePrepared
// binds a client's.
func (s *Session) learnExecution(shape *rewrite.Shape, p *prepared, sql string, markerParams []int, params []any, types []sqltypes.Type) {
	s.learnTemplate(shape, p, func(values []int64) (ast.StmtNode, *rewrite.Parsed, error) {
		parsed, err := rewrite.ParseStatement(sql, s.frontEnd)
		if err != nil {
			return nil, nil, err
		}
		if len(parsed.Stmts) != 1 {
			return nil, nil, errors.New("not one statement")
		}
		if err := rewrite.BindParams(parsed.Stmts[0], markerParams, shape.ProbeParams(params, values), types); err != nil {
			return nil, nil, err
		}
		return parsed.Stmts[0], parsed, nil
	})
}

// learnTemplate makes the template of shape from the statements probe
// gives for the probe values, and keeps it (or the mark of a shape without
// one).
func (s *Session) learnTemplate(shape *rewrite.Shape, p *prepared, probe func(values []int64) (ast.StmtNode, *rewrite.Parsed, error)) {
	pol := s.engine.Policy()
	t, err := s.buildTemplate(shape, p, pol, probe)
	if err != nil {
		s.engine.Logger().Debug("the query's shape has no template", "err", err)
		t = rewrite.NoTemplate(pol)
	}
	s.engine.Templates().Add(s.templateKey(shape.Key), t)
}

func (s *Session) buildTemplate(shape *rewrite.Shape, p *prepared, pol *config.Policy, probe func(values []int64) (ast.StmtNode, *rewrite.Parsed, error)) (*rewrite.Template, error) {
	if p.query == nil || p.query.Plan == nil || p.notice != "" || p.canonical == "" || len(p.derived) > 0 {
		return nil, errors.New("not a DP plan that is answered by itself")
	}
	texts := make([]rewrite.TemplateText, 0, len(rewrite.ProbeBases))
	for _, base := range rewrite.ProbeBases {
		values := shape.Probe(base)
		stmt, parsed, err := probe(values)
		if err != nil {
			return nil, err
		}
		// A derivation from an earlier release reads the constants it
		// matches the release's rows with (derived.go).
		if len(s.deriveFrom(stmt, p.query.Plan, castLookup(parsed), s.canonicalSuffix())) > 0 {
			return nil, errors.New("an earlier release may answer it (derived.go)")
		}
		texts = append(texts, rewrite.TemplateText{Stmt: stmt, Casts: castLookup(parsed), Values: values})
	}
	t, err := rewrite.BuildTemplate(shape, texts, pol, s.analyzeOptions(s.epsilon, nil))
	if err != nil {
		return nil, fmt.Errorf("session: %w", err)
	}
	return t, nil
}
