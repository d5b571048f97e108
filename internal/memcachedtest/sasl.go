package memcachedtest

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// SASLBinary is a memcached that reads SASL passwords from a plain file, as the official
// image's does (--enable-sasl-pwdb), which Debian's package cannot: $MEMCACHED_BIN, or the
// repository's bin/memcached, built from source by `make bin/memcached`. Missing, it skips
// the test outside CI and fails it under CI (CI=true).
func SASLBinary(t testing.TB) string {
	t.Helper()
	if p := os.Getenv("MEMCACHED_BIN"); p != "" {
		return Binary(t)
	}
	if root := moduleRoot(); root != "" {
		p := filepath.Join(root, "bin", "memcached")
		if _, err := os.Stat(p); err == nil {
			return p
		}
	}
	if os.Getenv("CI") != "" {
		t.Fatal("no memcached that reads SASL passwords from a file: `make bin/memcached` builds one, or set MEMCACHED_BIN")
	}
	t.Skip("no memcached that reads SASL passwords from a file: run `make bin/memcached`, or set MEMCACHED_BIN to one built with --enable-sasl-pwdb, to run this test")
	return ""
}

// moduleRoot is the repository's root above the working directory (a test's package
// directory, maybe in one of the repository's other modules), or empty.
func moduleRoot() string {
	d, err := os.Getwd()
	if err != nil {
		return ""
	}
	for {
		if b, err := os.ReadFile(filepath.Join(d, "go.mod")); err == nil && //nolint:gosec // The repository's own go.mod.
			strings.Contains(string(b), "module github.com/example/function-memcached\n") {
			return d
		}
		up := filepath.Dir(d)
		if up == d {
			return ""
		}
		d = up
	}
}

// StartSASL runs SASLBinary with SASL on (-S) on 127.0.0.1 until the test ends, as the official
// image does with a mounted password file: PLAIN only (Cyrus reads mech_list from
// $SASL_CONF_PATH/memcached.conf) and the passwords of users, "name@realm" to password, from
// $MEMCACHED_SASL_PWDB. A user name needs its realm: without one, Cyrus appends the host
// name. It returns memcached's address. It sets environment variables for the test, so the
// test must not be parallel.
func StartSASL(t *testing.T, users map[string]string, args ...string) string {
	t.Helper()
	bin := SASLBinary(t)
	dir := Dir(t)
	var pwdb strings.Builder
	for user, password := range users {
		pwdb.WriteString(user + ":" + password + "\n")
	}
	WriteFile(t, filepath.Join(dir, "auth", "sasl-pwdb"), []byte(pwdb.String()))
	WriteFile(t, filepath.Join(dir, "sasl", "memcached.conf"), []byte("mech_list: plain\n"))
	// Start runs $MEMCACHED_BIN, in the environment of the test.
	t.Setenv("MEMCACHED_BIN", bin)
	t.Setenv("MEMCACHED_SASL_PWDB", filepath.Join(dir, "auth", "sasl-pwdb"))
	t.Setenv("SASL_CONF_PATH", filepath.Join(dir, "sasl"))
	port := strconv.Itoa(FreePort(t))
	Start(t, append([]string{"-S", "--listen=127.0.0.1", "--port=" + port}, args...), "127.0.0.1:"+port)
	return "127.0.0.1:" + port
}
