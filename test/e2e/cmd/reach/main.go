// Command reach is the client the end-to-end suite's network policy scenario runs in pods on
// the real node: it connects to a memcached (sending `version`) or to an exporter (GET
// /metrics), prints what happened, and exits 0 when it got an answer, 1 when it did not (the
// connection refused, reset or timed out). With -for it keeps trying until it gets an answer
// or that long has passed, so that a scenario can wait for a policy change to take effect
// from inside the cluster; on success it prints the time it got its answer (RFC 3339, UTC),
// which a suite on the same machine compares with its own clock. It also writes its last line to /dev/termination-log, where the
// kubelet reads it into the pod's status, so that the suite needs no log access.
package main

import (
	"bufio"
	"context"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"strings"
	"time"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"
)

func main() {
	proto := flag.String("proto", "memcached", "what to speak: memcached (version) or metrics (HTTP GET /metrics)")
	timeout := flag.Duration("timeout", 3*time.Second, "how long one attempt may take")
	until := flag.Duration("for", 0, "keep trying until an attempt succeeds or this long has passed; 0 tries once")
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
		answer, err := attempt(*proto, addr, *timeout)
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
func attempt(proto, addr string, timeout time.Duration) (string, error) {
	switch proto {
	case "memcached":
		return version(addr, timeout)
	case "metrics":
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
