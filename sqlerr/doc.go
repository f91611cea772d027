// Package sqlerr defines the error that dpproxy returns to SQL clients.
//
// Every rejection (bad SQL, a disallowed query, an exhausted budget, a
// failed login) is an *Error carrying a SQLSTATE code. The PostgreSQL front
// end sends the code as is; the MySQL front end maps it to a MySQL error
// number. Callers branch on Code, never on message text.
package sqlerr
