package config

import (
	"strconv"
	"strings"
)

// MaxErrors is the most errors a ValidationError lists; further ones are
// counted in ValidationError.Omitted.
const MaxErrors = 20

// FieldError is one problem in a policy file.
type FieldError struct {
	// File is the policy file's name as given to Load or Parse.
	File string
	// Line and Column locate the problem, both 1-based; 0 when unknown.
	Line, Column int
	// Field is the path of the offending field, such as
	// "protected_tables[1].columns[2].bounds" ("" for the whole file).
	Field string
	// Message says what is wrong and what is expected.
	Message string
}

// Error formats the error as "file:line:col: field: message", leaving out
// the parts that are unknown.
func (e FieldError) Error() string {
	var b strings.Builder
	b.WriteString(e.File)
	if e.Line > 0 {
		b.WriteByte(':')
		b.WriteString(strconv.Itoa(e.Line))
		if e.Column > 0 {
			b.WriteByte(':')
			b.WriteString(strconv.Itoa(e.Column))
		}
	}
	if b.Len() > 0 {
		b.WriteString(": ")
	}
	if e.Field != "" {
		b.WriteString(e.Field)
		b.WriteString(": ")
	}
	b.WriteString(e.Message)
	return b.String()
}

// ValidationError is every problem found in a policy file, in file order.
// Load and Parse return it (as a *ValidationError) for syntax errors as
// well as for invalid content.
type ValidationError struct {
	// Errors holds at most MaxErrors problems, sorted by position.
	Errors []FieldError
	// Omitted counts the problems left out of Errors.
	Omitted int
}

// Error lists the problems one per line.
func (e *ValidationError) Error() string {
	lines := make([]string, 0, len(e.Errors)+1)
	for _, fe := range e.Errors {
		lines = append(lines, fe.Error())
	}
	if e.Omitted > 0 {
		lines = append(lines, "... and "+strconv.Itoa(e.Omitted)+" more errors")
	}
	return strings.Join(lines, "\n")
}
