package server

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/structpb"

	fnv1 "github.com/crossplane/function-sdk-go/proto/v1"
)

// pki is a throwaway CA with a server certificate for 127.0.0.1 and client certificates.
type pki struct {
	dir                  string
	ca                   *x509.Certificate
	caKey                *ecdsa.PrivateKey
	client, strangerCert tls.Certificate
	pool                 *x509.CertPool
}

func newPKI(t *testing.T) *pki {
	t.Helper()
	p := &pki{dir: t.TempDir()}
	p.ca, p.caKey = selfSigned(t, "test CA")
	p.pool = x509.NewCertPool()
	p.pool.AddCert(p.ca)
	srvDER, srvKey := issue(t, p.ca, p.caKey, "function", x509.ExtKeyUsageServerAuth, net.ParseIP("127.0.0.1"))
	write(t, filepath.Join(p.dir, "tls.crt"), "CERTIFICATE", srvDER)
	keyDER, _ := x509.MarshalECPrivateKey(srvKey)
	write(t, filepath.Join(p.dir, "tls.key"), "EC PRIVATE KEY", keyDER)
	write(t, filepath.Join(p.dir, "ca.crt"), "CERTIFICATE", p.ca.Raw)

	cliDER, cliKey := issue(t, p.ca, p.caKey, "crossplane", x509.ExtKeyUsageClientAuth, nil)
	p.client = tls.Certificate{Certificate: [][]byte{cliDER}, PrivateKey: cliKey}
	otherCA, otherKey := selfSigned(t, "someone else's CA")
	strDER, strKey := issue(t, otherCA, otherKey, "stranger", x509.ExtKeyUsageClientAuth, nil)
	p.strangerCert = tls.Certificate{Certificate: [][]byte{strDER}, PrivateKey: strKey}
	return p
}

func selfSigned(t *testing.T, cn string) (*x509.Certificate, *ecdsa.PrivateKey) {
	t.Helper()
	key, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: cn},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	c, _ := x509.ParseCertificate(der)
	return c, key
}

func issue(t *testing.T, ca *x509.Certificate, caKey *ecdsa.PrivateKey, cn string, usage x509.ExtKeyUsage, ip net.IP) ([]byte, *ecdsa.PrivateKey) {
	t.Helper()
	key, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(time.Now().UnixNano()), Subject: pkix.Name{CommonName: cn},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{usage},
	}
	if ip != nil {
		tmpl.IPAddresses = []net.IP{ip}
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca, &key.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	return der, key
}

func write(t *testing.T, path, typ string, der []byte) {
	t.Helper()
	if err := os.WriteFile(path, pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: der}), 0o600); err != nil {
		t.Fatal(err)
	}
}

// echo answers every call, optionally after a delay, counting finished calls.
type echo struct {
	fnv1.UnimplementedFunctionRunnerServiceServer
	delay    time.Duration
	started  chan struct{}
	finished atomic.Int32
}

func (e *echo) RunFunction(_ context.Context, req *fnv1.RunFunctionRequest) (*fnv1.RunFunctionResponse, error) {
	if e.started != nil {
		close(e.started)
	}
	time.Sleep(e.delay)
	e.finished.Add(1)
	return &fnv1.RunFunctionResponse{Meta: &fnv1.ResponseMeta{Tag: req.GetMeta().GetTag()}}, nil
}

// start serves fn and returns its address and a stop function that waits for Serve.
func start(t *testing.T, fn fnv1.FunctionRunnerServiceServer, o Options) (string, func() error) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	o.Network, o.Address = "tcp", "127.0.0.1:0"
	if o.MaxRecvMessageSize == 0 {
		o.MaxRecvMessageSize = 4 << 20
	}
	if o.GracePeriod == 0 {
		o.GracePeriod = 10 * time.Second
	}
	addrs := make(chan string, 1)
	o.Listening = func(a net.Addr) { addrs <- a.String() }
	done := make(chan error, 1)
	go func() { done <- Serve(ctx, fn, o) }()
	select {
	case a := <-addrs:
		stop := func() error { cancel(); return <-done }
		t.Cleanup(func() { cancel() })
		return a, stop
	case err := <-done:
		cancel()
		t.Fatalf("Serve: %v", err)
	}
	return "", nil
}

func call(addr string, creds credentials.TransportCredentials, req *fnv1.RunFunctionRequest) (*fnv1.RunFunctionResponse, error) {
	conn, err := grpc.NewClient(addr, grpc.WithTransportCredentials(creds))
	if err != nil {
		return nil, err
	}
	defer conn.Close() //nolint:errcheck // Test client.
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	return fnv1.NewFunctionRunnerServiceClient(conn).RunFunction(ctx, req)
}

func TestMTLS(t *testing.T) {
	p := newPKI(t)
	addr, _ := start(t, &echo{}, Options{TLSServerCertsDir: p.dir})
	cases := map[string]struct {
		reason  string
		cfg     *tls.Config
		wantErr bool
	}{
		"ClientWithCertificate": {
			reason: "Crossplane presents a certificate signed by the CA in ca.crt: served.",
			cfg:    &tls.Config{RootCAs: p.pool, Certificates: []tls.Certificate{p.client}, MinVersion: tls.VersionTLS12},
		},
		"ClientWithoutCertificate": {
			reason:  "A client without a certificate is refused.",
			cfg:     &tls.Config{RootCAs: p.pool, MinVersion: tls.VersionTLS12},
			wantErr: true,
		},
		"ClientWithStrangerCertificate": {
			reason:  "A certificate from another CA is refused.",
			cfg:     &tls.Config{RootCAs: p.pool, Certificates: []tls.Certificate{p.strangerCert}, MinVersion: tls.VersionTLS12},
			wantErr: true,
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			rsp, err := call(addr, credentials.NewTLS(tc.cfg), &fnv1.RunFunctionRequest{Meta: &fnv1.RequestMeta{Tag: "t"}})
			if tc.wantErr != (err != nil) {
				t.Fatalf("%s\nRunFunction: want error %t, got %v", tc.reason, tc.wantErr, err)
			}
			if err == nil && rsp.GetMeta().GetTag() != "t" {
				t.Errorf("%s\nRunFunction: want the tag echoed, got %v", tc.reason, rsp)
			}
		})
	}
}

// TestTLSVersionFloor dials with a raw TLS 1.1 handshake (gRPC clients would refuse it
// themselves) to show that the server, not the client, refuses old TLS. Two things hold the
// floor: the MinVersion of the SDK's credentials and gRPC's TLS 1.2-only default cipher suites.
func TestTLSVersionFloor(t *testing.T) {
	p := newPKI(t)
	addr, _ := start(t, &echo{}, Options{TLSServerCertsDir: p.dir})
	for v, wantErr := range map[uint16]bool{tls.VersionTLS11: true, tls.VersionTLS12: false, tls.VersionTLS13: false} {
		c, err := tls.Dial("tcp", addr, &tls.Config{
			RootCAs: p.pool, Certificates: []tls.Certificate{p.client}, NextProtos: []string{"h2"},
			MinVersion: tls.VersionTLS10, MaxVersion: v,
		})
		if err == nil {
			err = c.Handshake()
			_ = c.Close()
		}
		if wantErr != (err != nil) {
			t.Errorf("TLS handshake with max version %s: want error %t, got %v", tls.VersionName(v), wantErr, err)

		}
	}
}

func TestNoCredentials(t *testing.T) {
	err := Serve(context.Background(), &echo{}, Options{Network: "tcp", Address: "127.0.0.1:0"})
	if err == nil || !strings.Contains(err.Error(), "--tls-server-certs-dir") {
		t.Errorf("Serve without certificates or --insecure: want an error naming the flag, got %v", err)
	}
}

func TestMaxMessageSize(t *testing.T) {
	p := newPKI(t)
	addr, _ := start(t, &echo{}, Options{TLSServerCertsDir: p.dir, MaxRecvMessageSize: 64 << 10})
	big := &fnv1.RunFunctionRequest{Input: &structpb.Struct{Fields: map[string]*structpb.Value{
		"padding": structpb.NewStringValue(strings.Repeat("x", 128<<10)),
	}}}
	_, err := call(addr, credentials.NewTLS(&tls.Config{RootCAs: p.pool, Certificates: []tls.Certificate{p.client}, MinVersion: tls.VersionTLS12}), big)
	if status.Code(err) != codes.ResourceExhausted {
		t.Errorf("RunFunction with a 128 KiB request over a 64 KiB limit: want ResourceExhausted, got %v", err)
	}
}

// TestGracefulStop shows that a stop (SIGTERM in main) lets a call in flight finish.
func TestGracefulStop(t *testing.T) {
	fn := &echo{delay: 500 * time.Millisecond, started: make(chan struct{})}
	addr, stop := start(t, fn, Options{Insecure: true})
	errs := make(chan error, 1)
	go func() {
		_, err := call(addr, insecure.NewCredentials(), &fnv1.RunFunctionRequest{})
		errs <- err
	}()
	<-fn.started
	if err := stop(); err != nil {
		t.Fatalf("Serve returned %v after stop, want nil", err)
	}
	if err := <-errs; err != nil {
		t.Errorf("call in flight during stop: want it to finish, got %v", err)
	}
	if fn.finished.Load() != 1 {
		t.Errorf("want 1 finished call, got %d", fn.finished.Load())
	}
	if _, err := call(addr, insecure.NewCredentials(), &fnv1.RunFunctionRequest{}); err == nil {
		t.Error("after stop: want new calls refused, got served")
	}
}
