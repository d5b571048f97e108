// Command function-memcached serves the Memcached composition function over gRPC. It only
// wires flags to the function-sdk-go server; everything it serves lives in package fn.
package main

import (
	"github.com/alecthomas/kong"

	function "github.com/crossplane/function-sdk-go"

	"github.com/example/function-memcached/fn"
)

// cli holds the flags Crossplane's function runtime passes, with function-sdk-go's names.
type cli struct {
	Debug              bool   `short:"d" help:"Emit debug logs (one line per call) in addition to info logs."`
	Network            string `help:"Network on which to listen for gRPC connections." default:"tcp"`
	Address            string `help:"Address at which to listen for gRPC connections." default:":9443"`
	TLSServerCertsDir  string `help:"Directory containing server certs (tls.key, tls.crt) and the CA used to verify client certificates (ca.crt)." env:"TLS_SERVER_CERTS_DIR"`
	Insecure           bool   `help:"Run without mTLS credentials. If you supply this flag --tls-server-certs-dir will be ignored."`
	MaxRecvMessageSize int    `help:"Maximum size of received messages in MB." default:"4"`
	MetricsAddress     string `help:"Address at which to serve Prometheus metrics; empty disables them." default:":8080"`
}

// Run starts the server and blocks until it fails.
func (c *cli) Run() error {
	log, err := function.NewLogger(c.Debug)
	if err != nil {
		return err
	}
	return function.Serve(fn.New(log),
		function.Listen(c.Network, c.Address),
		function.MTLSCertificates(c.TLSServerCertsDir),
		function.Insecure(c.Insecure),
		function.MaxRecvMessageSize(c.MaxRecvMessageSize*1024*1024),
		function.WithMetricsServer(c.MetricsAddress))
}

func main() {
	ctx := kong.Parse(&cli{}, kong.Description("A Crossplane composition function that runs Memcached."))
	ctx.FatalIfErrorf(ctx.Run())
}
