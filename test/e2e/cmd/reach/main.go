// Command reach is the client the end-to-end suite's network policy scenario runs in pods on
// the real node: it connects to a memcached (sending `version`) or to an exporter (GET
// /metrics), prints what happened, and exits 0 when it got an answer, 1 when it did not (the
// connection refused, reset or timed out). With -for it keeps trying until it gets an answer
// or that long has passed, so that a scenario can wait for a policy change to take effect
// from inside the cluster; on success it prints the time it got its answer (RFC 3339, UTC),
// which a suite on the same machine compares with its own clock. It also writes its last line to /dev/termination-log, where the
// kubelet reads it into the pod's status, so that the suite needs no log access.
//
// With -credentials it is a claim's application: it reads the claim's connection Secret
// mounted as files (username, password, tls, ca.crt, host), connects with TLS verifying the
// certificate against ca.crt and host when tls is "true", authenticates, and sets and gets a
// key before asking for the version.
package main

import (
	"bufio"
	"context"
	"crypto/tls"
	"crypto/x509"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"
)

func main() {
	proto := flag.String("proto", "memcached", "what to speak: memcached (version) or metrics (HTTP GET /metrics)")
	timeout := flag.Duration("timeout", 3*time.Second, "how long one attempt may take")
	until := flag.Duration("for", 0, "keep trying until an attempt succeeds or this long has passed; 0 tries once")
	credentials := flag.String("credentials", "", "a directory holding a claim's connection Secret: connect with TLS and credentials as it says")
	flag.Parse()
	if flag.NArg() != 1 {
		fmt.Fprintln(os.Stderr, "usage: reach [-proto memcached|metrics] [-timeout d] [-for d] host:port")
		os.Exit(2)
	}
	addr := flag.Arg(0)
	start := time.Now()
	attempts := 0
	for {
		attempts++
		answer, err := attempt(*proto, addr, *timeout, *credentials)
		elapsed := time.Since(start).Round(time.Millisecond)
		if err == nil {
			report(fmt.Sprintf("reached %s at %s after %d attempts in %s: %s", addr, time.Now().UTC().Format(time.RFC3339Nano), attempts, elapsed, answer))
			os.Exit(0)
		}
		if time.Since(start)+*timeout > *until {
			report(fmt.Sprintf("cannot reach %s after %d attempts in %s: %v", addr, attempts, elapsed, err))
			os.Exit(1)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// attempt connects to addr once and returns the first line of its answer.
func attempt(proto, addr string, timeout time.Duration, credentials string) (string, error) {
	switch {
	case proto == "memcached" && credentials != "":
		return session(addr, timeout, credentials)
	case proto == "memcached":
		return version(addr, timeout)
	case proto == "metrics":
		return metrics(addr, timeout)
	default:
		return "", errors.Errorf("unknown protocol %q", proto)
	}
}

// version sends memcached's `version` command and returns its reply.
func version(addr string, timeout time.Duration) (string, error) {
	c, err := net.DialTimeout("tcp", addr, timeout)
	if err != nil {
		return "", err
	}
	defer c.Close() //nolint:errcheck // Read-only.
	if err := c.SetDeadline(time.Now().Add(timeout)); err != nil {
		return "", err
	}
	if _, err := c.Write([]byte("version\r\n")); err != nil {
		return "", errors.Wrap(err, "cannot send version")
	}
	l, err := bufio.NewReader(c).ReadString('\n')
	if err != nil {
		return "", errors.Wrap(err, "cannot read the reply to version")
	}
	l = strings.TrimSpace(l)
	if !strings.HasPrefix(l, "VERSION ") {
		return "", errors.Errorf("unexpected reply to version: %q", l)
	}
	return l, nil
}

// session connects to addr as the connection Secret in dir says (TLS verified against its
// ca.crt and host, its username and password), sets and gets a key, and returns what it did
// and memcached's version.
func session(addr string, timeout time.Duration, dir string) (string, error) {
	read := func(key string) string {
		b, _ := os.ReadFile(filepath.Join(dir, key)) //nolint:gosec // The mounted Secret.
		return string(b)
	}
	var c net.Conn
	var err error
	how := "plaintext"
	if read("tls") == "true" {
		roots := x509.NewCertPool()
		if !roots.AppendCertsFromPEM([]byte(read("ca.crt"))) {
			return "", errors.New("the connection Secret's ca.crt holds no certificate")
		}
		c, err = tls.DialWithDialer(&net.Dialer{Timeout: timeout}, "tcp", addr,
			&tls.Config{RootCAs: roots, ServerName: read("host"), MinVersion: tls.VersionTLS12})
		how = "TLS verified for " + read("host")
	} else {
		c, err = net.DialTimeout("tcp", addr, timeout)
	}
	if err != nil {
		return "", err
	}
	defer c.Close() //nolint:errcheck // The session is over.
	if err := c.SetDeadline(time.Now().Add(timeout)); err != nil {
		return "", err
	}
	r := bufio.NewReader(c)
	// line sends cmd (nothing when empty: the next line of a reply) and reads a line.
	line := func(cmd string) (string, error) {
		if _, err := io.WriteString(c, cmd); err != nil {
			return "", errors.Wrap(err, "cannot send a command")
		}
		l, err := r.ReadString('\n')
		return strings.TrimSpace(l), errors.Wrap(err, "cannot read a reply")
	}
	if user := read("username"); user != "" {
		// memcached's text-protocol authentication: a set whose value is "username password".
		token := user + " " + read("password")
		if got, err := line(fmt.Sprintf("set auth 0 0 %d\r\n%s\r\n", len(token), token)); err != nil || got != "STORED" {
			return "", errors.Errorf("authenticating as %s: %q, %v", user, got, err)
		}
		how += ", authenticated as " + user
	}
	if got, err := line("set reach 0 0 5\r\nhello\r\n"); err != nil || got != "STORED" {
		return "", errors.Errorf("set: %q, %v", got, err)
	}
	if got, err := line("get reach\r\n"); err != nil || got != "VALUE reach 0 5" {
		return "", errors.Errorf("get: %q, %v", got, err)
	}
	if got, err := line(""); err != nil || got != "hello" {
		return "", errors.Errorf("get's value: %q, %v", got, err)
	}
	if got, err := line(""); err != nil || got != "END" {
		return "", errors.Errorf("get's end: %q, %v", got, err)
	}
	v, err := line("version\r\n")
	if err != nil {
		return "", err
	}
	return how + ", set and got a key; " + v, nil
}

// metrics gets /metrics and returns its status and the first metric line that is not a
// comment.
func metrics(addr string, timeout time.Duration) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+addr+"/metrics", nil)
	if err != nil {
		return "", err
	}
	rsp, err := http.DefaultClient.Do(req)
	if err != nil {
		return "", err
	}
	defer rsp.Body.Close() //nolint:errcheck // Read-only.
	if rsp.StatusCode != http.StatusOK {
		return "", errors.Errorf("GET /metrics: %s", rsp.Status)
	}
	sc := bufio.NewScanner(io.LimitReader(rsp.Body, 1<<20))
	for sc.Scan() {
		if l := sc.Text(); l != "" && !strings.HasPrefix(l, "#") {
			return rsp.Status + ", " + l, nil
		}
	}
	return "", errors.Errorf("GET /metrics: %s with no metric", rsp.Status)
}

// report prints line and writes it where the kubelet reads a container's termination message.
func report(line string) {
	fmt.Println(line)
	_ = os.WriteFile("/dev/termination-log", []byte(line), 0o644) //nolint:gosec // The kubelet's file.
}
