package main

import (
	"bufio"
	"errors"
	"flag"
	"fmt"
	"io"
	"strings"

	"github.com/dpproxy/dpproxy/config"
)

// runPasswd prints the verifiers of a password in the policy's YAML form.
// The password is read from standard input (one line), so it never appears
// in the process list or the shell history.
func runPasswd(args []string, stdin io.Reader, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("passwd", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Bool("password-stdin", true, "read the password from standard input (the default; kept for scripts)")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	fmt.Fprint(stderr, "password: ")
	line, err := bufio.NewReader(stdin).ReadString('\n')
	if err != nil && !errors.Is(err, io.EOF) {
		return fmt.Errorf("reading password: %w", err)
	}
	password := strings.TrimRight(line, "\r\n")
	fmt.Fprintln(stderr)
	if password == "" {
		return errors.New("empty password")
	}
	v, err := config.NewVerifiers(password)
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "    password:\n      scram_sha_256: %q\n      mysql_native_password: %q\n      caching_sha2_password: %q\n",
		v.SCRAMSHA256, v.MySQLNativePassword, v.CachingSHA2Password)
	return nil
}
