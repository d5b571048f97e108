// Command memcached-app is an application as a team writes one against a Memcached claim: it
// reads the claim's connection Secret, mounted as files, and talks to the cache through
// gomemcache (github.com/bradfitz/gomemcache), the Go client most applications use, as
// docs/clients.md shows: TLS through gomemcache's DialContext and a tls.Dialer whose
// tls.Config verifies the server against the Secret's ca.crt with its host as server name and,
// when the Secret holds a client certificate (tls.crt, tls.key: the ClientCertificate mode),
// presents it; and, for what gomemcache lacks, memcached's text-protocol authentication (the
// Password mode: a `set` of "username password", sent on each new connection before gomemcache
// uses it). With --no-client-certificate it leaves the Secret's client certificate out, as an
// application without it would connect.
//
// It sets a key, gets it back, prints what it did and exits 0; on any error it prints it and
// exits 1. With --follow it is a sharding client instead (follow.go): gomemcache over the
// replicas DNS names for the Secret's srv, refreshed every second. With --serve it is that
// client in steady use for a while (serve.go), counting every request a rollout fails. Its
// last line goes to /dev/termination-log too, where the kubelet puts it in the pod's status.
package main

import (
	"bufio"
	"context"
	"crypto/tls"
	"crypto/x509"
	"flag"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/bradfitz/gomemcache/memcache"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"
)

func main() {
	dir := flag.String("secret", "/etc/memcached", "the directory the connection Secret is mounted at")
	key := flag.String("key", "app-key", "the key to set and get")
	followed := flag.String("follow", "", "server counts to wait for in turn, writing a batch of keys at each (e.g. 2,3)")
	keys := flag.Int("keys", 200, "keys in each batch, with --follow")
	timeout := flag.Duration("timeout", 3*time.Minute, "how long to wait for each count with --follow")
	served := flag.Duration("serve", 0, "set and get keys for this long, counting failures, instead")
	noClientCert := flag.Bool("no-client-certificate", false, "present no client certificate, whatever the Secret holds")
	flag.Parse()
	withClientCert = !*noClientCert
	var msg string
	var err error
	switch {
	case *served > 0:
		msg, err = serve(*dir, *served)
	case *followed == "":
		msg, err = run(*dir, *key)
	default:
		var n []int
		if n, err = counts(*followed); err == nil {
			msg, err = follow(*dir, n, *keys, *timeout)
		}
	}
	if err != nil {
		msg = "error: " + err.Error()
	}
	fmt.Println(msg)
	_ = os.WriteFile("/dev/termination-log", []byte(msg), 0o644) //nolint:gosec // The kubelet's file.
	if err != nil {
		os.Exit(1)
	}
}

// withClientCert is whether the application presents the Secret's client certificate, when it
// holds one: true unless --no-client-certificate.
var withClientCert = true

// secret reads one key of the mounted Secret; a missing key is empty.
func secret(dir, key string) string {
	b, _ := os.ReadFile(filepath.Join(dir, key)) //nolint:gosec // The mounted Secret.
	return strings.TrimSpace(string(b))
}

func run(dir, key string) (string, error) {
	endpoint := secret(dir, "endpoint")
	if endpoint == "" {
		return "", errors.Errorf("the connection Secret at %s has no endpoint", dir)
	}
	dial, err := dialer(dir)
	if err != nil {
		return "", err
	}
	c := memcache.New(endpoint)
	c.Timeout = 5 * time.Second
	c.DialContext = dial
	value := fmt.Sprintf("written at %s", time.Now().UTC().Format(time.RFC3339Nano))
	if err := c.Set(&memcache.Item{Key: key, Value: []byte(value)}); err != nil {
		return "", errors.Wrapf(err, "cannot set %s on %s", key, endpoint)
	}
	it, err := c.Get(key)
	if err != nil {
		return "", errors.Wrapf(err, "cannot get %s from %s", key, endpoint)
	}
	if string(it.Value) != value {
		return "", errors.Errorf("got %q for %s from %s, want %q", it.Value, key, endpoint, value)
	}
	return fmt.Sprintf("ok: set and got %s on %s (%s)", key, endpoint, mode(dir)), nil
}

// mode names how the application connected: plain or tls, +client-certificate when it
// presented the Secret's, +auth with the Secret's username and password.
func mode(dir string) string {
	m := "plain"
	if secret(dir, "tls") == "true" {
		m = "tls"
		if withClientCert && secret(dir, "tls.crt") != "" {
			m += "+client-certificate"
		}
	}
	if secret(dir, "username") != "" {
		m += "+auth"
	}
	return m
}

// dialer is how the application connects, from the Secret: plain TCP; with tls "true", TLS
// through a tls.Dialer whose tls.Config verifies the server's certificate against ca.crt for
// host and presents the client certificate tls.crt and tls.key when the Secret holds them (the
// ClientCertificate mode), which is all gomemcache needs (its DialContext); and, with a
// username (the Password mode), memcached's text-protocol authentication on every new
// connection, the lines gomemcache lacks.
func dialer(dir string) (func(ctx context.Context, network, address string) (net.Conn, error), error) {
	var tlsConfig *tls.Config
	if secret(dir, "tls") == "true" {
		pool := x509.NewCertPool()
		if ca := secret(dir, "ca.crt"); ca == "" || !pool.AppendCertsFromPEM([]byte(ca)) {
			return nil, errors.New("the connection Secret says tls but has no usable ca.crt")
		}
		tlsConfig = &tls.Config{RootCAs: pool, ServerName: secret(dir, "host"), MinVersion: tls.VersionTLS12}
		if crt, key := secret(dir, "tls.crt"), secret(dir, "tls.key"); withClientCert && crt != "" {
			pair, err := tls.X509KeyPair([]byte(crt), []byte(key))
			if err != nil {
				return nil, errors.Wrap(err, "the connection Secret's tls.crt and tls.key are not a client certificate and its key")
			}
			tlsConfig.Certificates = []tls.Certificate{pair}
		}
	}
	user, password := secret(dir, "username"), secret(dir, "password")
	if user == "" {
		if tlsConfig != nil {
			return (&tls.Dialer{Config: tlsConfig}).DialContext, nil
		}
		return (&net.Dialer{}).DialContext, nil
	}
	return func(ctx context.Context, network, address string) (net.Conn, error) {
		var d net.Dialer
		conn, err := d.DialContext(ctx, network, address)
		if err != nil {
			return nil, err
		}
		if tlsConfig != nil {
			tc := tls.Client(conn, tlsConfig)
			if err := tc.HandshakeContext(ctx); err != nil {
				_ = conn.Close()
				return nil, errors.Wrap(err, "TLS handshake")
			}
			conn = tc
		}
		if err := authenticate(conn, user, password); err != nil {
			_ = conn.Close()
			return nil, err
		}
		return conn, nil
	}, nil
}

// authenticate sends memcached's text-protocol credentials: a set of any key whose value is
// "username password". The server answers STORED, or CLIENT_ERROR when they are wrong.
func authenticate(conn net.Conn, user, password string) error {
	creds := user + " " + password
	_ = conn.SetDeadline(time.Now().Add(5 * time.Second))
	defer conn.SetDeadline(time.Time{}) //nolint:errcheck // Clearing a deadline.
	if _, err := fmt.Fprintf(conn, "set auth 0 0 %d\r\n%s\r\n", len(creds), creds); err != nil {
		return errors.Wrap(err, "cannot send the credentials")
	}
	line, err := bufio.NewReader(conn).ReadString('\n')
	if err != nil {
		return errors.Wrap(err, "no answer to the credentials")
	}
	if strings.TrimSpace(line) != "STORED" {
		return errors.Errorf("memcached refused the credentials: %s", strings.TrimSpace(line))
	}
	return nil
}
