// Command function-memcached serves the Memcached composition function over gRPC. It only
// wires flags to package server; everything it serves lives in package fn.
package main

import (
	"context"
	"net"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/alecthomas/kong"
	"github.com/go-logr/zapr"
	"go.uber.org/zap"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"
	"github.com/crossplane/function-sdk-go/logging"

	"github.com/example/function-memcached/fn"
	"github.com/example/function-memcached/internal/server"
)

// cli holds the flags Crossplane's function runtime passes, with function-sdk-go's names.
type cli struct {
	Debug              bool          `short:"d" help:"Emit debug logs (one line per call) in addition to info logs."`
	Network            string        `help:"Network on which to listen for gRPC connections." default:"tcp"`
	Address            string        `help:"Address at which to listen for gRPC connections." default:":9443"`
	TLSServerCertsDir  string        `help:"Directory containing server certs (tls.key, tls.crt) and the CA used to verify client certificates (ca.crt)." env:"TLS_SERVER_CERTS_DIR"`
	Insecure           bool          `help:"Run without mTLS credentials. If you supply this flag --tls-server-certs-dir will be ignored."`
	MaxRecvMessageSize int           `help:"Maximum size of received messages in MB." default:"4"`
	MetricsAddress     string        `help:"Address at which to serve Prometheus metrics; empty disables them." default:":8080"`
	GracePeriod        time.Duration `help:"How long to let in-flight calls finish after SIGTERM." default:"20s"`
}

// Run serves until SIGTERM or SIGINT, then stops gracefully.
func (c *cli) Run() error {
	log, err := newLogger(c.Debug)
	if err != nil {
		return err
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	defer stop()
	return server.Serve(ctx, fn.New(log), server.Options{
		Network:            c.Network,
		Address:            c.Address,
		TLSServerCertsDir:  c.TLSServerCertsDir,
		Insecure:           c.Insecure,
		MaxRecvMessageSize: c.MaxRecvMessageSize * 1024 * 1024,
		MetricsAddress:     c.MetricsAddress,
		GracePeriod:        c.GracePeriod,
		Listening:          func(a net.Addr) { log.Info("Serving function", "address", a.String(), "insecure", c.Insecure) },
	})
}

// newLogger is function-sdk-go's logging.NewLogger without zap's log sampling at info level:
// the function logs one line at info level when it starts and per call only at debug level,
// so the sampler would never sample, yet its counters stay on the heap for the life of the
// process (docs/performance-history.md, the function over gRPC).
func newLogger(debug bool) (logging.Logger, error) {
	if debug {
		return logging.NewLogger(true)
	}
	cfg := zap.NewProductionConfig()
	cfg.Sampling = nil
	zl, err := cfg.Build(zap.AddCallerSkip(1))
	if err != nil {
		return nil, errors.Wrap(err, "cannot create production zap logger")
	}
	return logging.NewLogrLogger(zapr.NewLogger(zl)), nil
}

func main() {
	ctx := kong.Parse(&cli{}, kong.Description("A Crossplane composition function that runs Memcached."))
	ctx.FatalIfErrorf(ctx.Run())
}
