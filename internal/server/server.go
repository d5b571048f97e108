// Package server serves a composition function over gRPC the way function-sdk-go's Serve
// does (the SDK's own options load the mTLS credentials, with TLS 1.2 as the floor and client
// certificates required; v1 and v1beta1 services; health; Prometheus metrics), and adds the
// one thing Serve lacks: Serve blocks until the process dies, while this package stops when
// its context is done, letting in-flight RunFunction calls finish (up to a grace period), so
// that a rolling update of the function never fails a reconcile.
package server

import (
	"context"
	"net"
	"net/http"
	"time"

	grpcprometheus "github.com/grpc-ecosystem/go-grpc-middleware/providers/prometheus"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/health"
	healthgrpc "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/reflection"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"
	function "github.com/crossplane/function-sdk-go"
	fnv1 "github.com/crossplane/function-sdk-go/proto/v1"
	fnv1beta1 "github.com/crossplane/function-sdk-go/proto/v1beta1"
)

// Options configure Serve.
type Options struct {
	// Network and Address to listen on, e.g. "tcp" and ":9443".
	Network, Address string
	// TLSServerCertsDir holds tls.crt, tls.key and the ca.crt that client certificates must
	// chain to. Required unless Insecure.
	TLSServerCertsDir string
	// Insecure serves without TLS: for local development and `crossplane render` only.
	Insecure bool
	// MaxRecvMessageSize bounds a request, in bytes: Crossplane's own limit is 4 MiB.
	MaxRecvMessageSize int
	// MetricsAddress serves Prometheus metrics over HTTP; empty disables them.
	MetricsAddress string
	// GracePeriod bounds how long a stop waits for in-flight calls before cutting them.
	GracePeriod time.Duration
	// Listening, if set, receives the bound address once the server accepts calls.
	Listening func(net.Addr)
}

// Serve serves fn until ctx is done, then stops gracefully: it stops accepting calls, lets
// the ones in flight finish (up to GracePeriod), and returns nil. It returns an error if it
// cannot start.
func Serve(ctx context.Context, fn fnv1.FunctionRunnerServiceServer, o Options) error {
	creds, err := credentialsFor(o)
	if err != nil {
		return err
	}
	lis, err := (&net.ListenConfig{}).Listen(ctx, o.Network, o.Address)
	if err != nil {
		return errors.Wrapf(err, "cannot listen for %s connections at address %q", o.Network, o.Address)
	}

	opts := []grpc.ServerOption{grpc.Creds(creds), grpc.MaxRecvMsgSize(o.MaxRecvMessageSize)}
	var metrics *grpcprometheus.ServerMetrics
	var reg *prometheus.Registry
	if o.MetricsAddress != "" {
		metrics = grpcprometheus.NewServerMetrics()
		reg = prometheus.NewRegistry()
		reg.MustRegister(metrics)
		opts = append(opts, grpc.ChainUnaryInterceptor(metrics.UnaryServerInterceptor()))
	}
	srv := grpc.NewServer(opts...)
	reflection.Register(srv)
	fnv1.RegisterFunctionRunnerServiceServer(srv, fn)
	fnv1beta1.RegisterFunctionRunnerServiceServer(srv, function.ServeBeta(fn))
	healthgrpc.RegisterHealthServer(srv, health.NewServer())

	var metricsServer *http.Server
	if metrics != nil {
		metrics.InitializeMetrics(srv)
		metricsServer = &http.Server{
			Addr:              o.MetricsAddress,
			Handler:           promhttp.HandlerFor(reg, promhttp.HandlerOpts{}),
			ReadHeaderTimeout: 30 * time.Second,
		}
		go func() { _ = metricsServer.ListenAndServe() }()
	}

	if o.Listening != nil {
		o.Listening(lis.Addr())
	}
	served := make(chan error, 1)
	go func() { served <- srv.Serve(lis) }()

	select {
	case err := <-served:
		return errors.Wrap(err, "cannot serve gRPC")
	case <-ctx.Done():
	}
	if metricsServer != nil {
		_ = metricsServer.Close()
	}
	stopped := make(chan struct{})
	go func() {
		srv.GracefulStop()
		close(stopped)
	}()
	select {
	case <-stopped:
	case <-time.After(o.GracePeriod):
		srv.Stop()
	}
	return nil
}

// credentialsFor returns the SDK's mTLS credentials, or insecure ones only when asked for
// explicitly.
func credentialsFor(o Options) (credentials.TransportCredentials, error) {
	so := &function.ServeOptions{}
	opt := function.Insecure(true)
	if !o.Insecure {
		if o.TLSServerCertsDir == "" {
			return nil, errors.New("no TLS certificates: set --tls-server-certs-dir (or TLS_SERVER_CERTS_DIR), or --insecure for local development")
		}
		opt = function.MTLSCertificates(o.TLSServerCertsDir)
	}
	if err := opt(so); err != nil {
		return nil, errors.Wrapf(err, "cannot load the TLS credentials in %s", o.TLSServerCertsDir)
	}
	return so.Credentials, nil
}
