// Command fnload measures a composition function under load next to the no-op floor, in one
// run on one machine: latency percentiles, throughput, errors, and the servers' CPU seconds
// and peak resident memory. It only wires flags to package load and prints its reports.
package main

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/alecthomas/kong"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/protobuf/encoding/protojson"
	"sigs.k8s.io/yaml"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"
	fnv1 "github.com/crossplane/function-sdk-go/proto/v1"

	"github.com/example/function-memcached/internal/load"
)

type cli struct {
	Function    string        `help:"Function binary to start and measure." required:"" type:"existingfile"`
	Floor       string        `help:"No-op function binary to start and measure as the floor; empty skips it." type:"existingfile"`
	Request     string        `help:"RunFunctionRequest fixture (YAML) sent on every call." required:"" type:"existingfile"`
	Concurrency []int         `help:"Calls in flight at once; one run per value." default:"1,8"`
	Duration    time.Duration `help:"Length of each run." default:"10s"`
	Calls       int64         `help:"Bound each run by a number of calls instead (0: by duration only)."`
	Checkpoints []int64       `help:"Call counts at which to sample the servers' resident memory (with --calls)."`
	Warmup      time.Duration `help:"Load before measuring, to warm caches and the Go runtime." default:"2s"`
	TLSCertsDir string        `help:"Serve and call with mTLS using tls.crt, tls.key and ca.crt from this directory (for both server and client); empty means --insecure."`
}

type target struct {
	name string
	proc *load.Process
}

func (c *cli) Run() error {
	req, err := readRequest(c.Request)
	if err != nil {
		return err
	}
	serverArgs, creds, err := c.security()
	if err != nil {
		return err
	}
	ctx := context.Background()
	var targets []target
	defer func() {
		for _, t := range targets {
			t.proc.Stop()
		}
	}()
	for _, b := range []struct{ name, bin string }{{"floor (no-op)", c.Floor}, {filepath.Base(c.Function), c.Function}} {
		if b.bin == "" {
			continue
		}
		p, err := load.Start(ctx, b.bin, serverArgs...)
		if err != nil {
			return err
		}
		targets = append(targets, target{name: b.name, proc: p})
	}

	w := tabwriter.NewWriter(os.Stdout, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(w, "target\tconcurrency\tcalls\terrors\tcalls/s\tp50\tp90\tp99\tCPU/call\tpeak RSS\t")
	for _, conc := range c.Concurrency {
		reports := map[string]load.Report{}
		for _, t := range targets {
			cfg := load.Config{Address: t.proc.Address, Credentials: creds, Request: req, Concurrency: conc}
			if c.Warmup > 0 {
				cfg.Duration = c.Warmup
				if _, err := load.Run(ctx, cfg); err != nil {
					return err
				}
			}
			cfg.Duration, cfg.Calls, cfg.PID, cfg.Checkpoints = c.Duration, c.Calls, t.proc.PID(), c.Checkpoints
			if c.Calls > 0 {
				cfg.Duration = 0
			}
			r, err := load.Run(ctx, cfg)
			if err != nil {
				return err
			}
			if r.FirstError != nil {
				fmt.Fprintf(os.Stderr, "%s: %d errors, first: %v\n", t.name, r.Errors, r.FirstError)
			}
			reports[t.name] = r
			fmt.Fprintf(w, "%s\t%d\t%d\t%d\t%.0f\t%s\t%s\t%s\t%s\t%.1f MiB\t\n", t.name, conc, r.Calls, r.Errors, r.CallsPerSecond(),
				us(r.P50), us(r.P90), us(r.P99), us(r.CPUPerCall()), float64(r.PeakRSS)/(1<<20))
			for _, n := range c.Checkpoints {
				fmt.Fprintf(w, "%s\t\tRSS at %d calls: %.1f MiB\t\t\t\t\t\t\t\t\n", t.name, n, float64(r.RSSAt[n])/(1<<20))
			}
		}
		if len(targets) == 2 {
			f, o := reports[targets[0].name], reports[targets[1].name]
			fmt.Fprintf(w, "ratio to floor\t%d\t\t\t%.2fx\t%.2fx\t%.2fx\t%.2fx\t%.2fx\t%+.1f MiB\t\n", conc,
				o.CallsPerSecond()/f.CallsPerSecond(), ratio(o.P50, f.P50), ratio(o.P90, f.P90), ratio(o.P99, f.P99),
				ratio(o.CPUPerCall(), f.CPUPerCall()), (float64(o.PeakRSS)-float64(f.PeakRSS))/(1<<20))
		}
	}
	return w.Flush()
}

func (c *cli) security() ([]string, credentials.TransportCredentials, error) {
	if c.TLSCertsDir == "" {
		return []string{"--insecure"}, insecure.NewCredentials(), nil
	}
	crt, err := tls.LoadX509KeyPair(filepath.Join(c.TLSCertsDir, "tls.crt"), filepath.Join(c.TLSCertsDir, "tls.key"))
	if err != nil {
		return nil, nil, errors.Wrap(err, "cannot load the client certificate")
	}
	ca, err := os.ReadFile(filepath.Join(c.TLSCertsDir, "ca.crt"))
	if err != nil {
		return nil, nil, errors.Wrap(err, "cannot read the CA certificate")
	}
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(ca)
	return []string{"--tls-server-certs-dir=" + c.TLSCertsDir},
		credentials.NewTLS(&tls.Config{RootCAs: pool, Certificates: []tls.Certificate{crt}, MinVersion: tls.VersionTLS12}), nil
}

func readRequest(path string) (*fnv1.RunFunctionRequest, error) {
	y, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	j, err := yaml.YAMLToJSON(y)
	if err != nil {
		return nil, errors.Wrapf(err, "cannot parse %s", path)
	}
	req := &fnv1.RunFunctionRequest{}
	return req, errors.Wrapf(protojson.Unmarshal(j, req), "cannot parse %s as a RunFunctionRequest", path)
}

func us(d time.Duration) string {
	return strings.TrimSuffix(fmt.Sprintf("%.0fµs", float64(d)/float64(time.Microsecond)), "")
}

func ratio(a, b time.Duration) float64 {
	if b == 0 {
		return 0
	}
	return float64(a) / float64(b)
}

func main() {
	ctx := kong.Parse(&cli{}, kong.Description("Measure a composition function under load next to the no-op floor."))
	ctx.FatalIfErrorf(ctx.Run())
}
