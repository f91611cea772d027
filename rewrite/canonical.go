package rewrite

import (
	"fmt"
	"strings"

	"github.com/pingcap/tidb/pkg/parser/ast"
	"github.com/pingcap/tidb/pkg/parser/format"
)

// canonicalFlags fix how Canonical re-emits a statement: keywords in upper
// case, names and strings quoted with their quote characters doubled, so
// the text is independent of the client's spelling and yet no two
// different statements share it.
const canonicalFlags = format.RestoreStringSingleQuotes | format.RestoreKeyWordUppercase |
	format.RestoreNameDoubleQuotes | format.RestoreStringWithoutCharset

// Canonical returns the canonical text of a parsed statement: the AST
// re-emitted with fixed restore flags. Statements that differ only in
// whitespace, comments or the case of keywords and function names get the
// same text; any change to the parsed statement (an added `WHERE 1=1`, an
// `x+0`, another literal, another identifier spelling) gives a different
// text. It is a cache key, not SQL to run on any backend.
func Canonical(stmt ast.StmtNode) (string, error) {
	if stmt == nil {
		return "", fmt.Errorf("rewrite: Canonical: nil statement")
	}
	var sb strings.Builder
	if err := stmt.Restore(format.NewRestoreCtx(canonicalFlags, &sb)); err != nil {
		return "", fmt.Errorf("rewrite: canonical text: %w", err)
	}
	return sb.String(), nil
}
