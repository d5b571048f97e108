//go:build e2e

package e2e

import (
	"context"
	"flag"
	"fmt"
	"os"
	"testing"

	"github.com/example/function-memcached/test/e2e/internal/suite"
)

// env is the running suite every scenario shares: one control plane, one Crossplane, one
// function. Scenarios isolate themselves by namespace.
var env *suite.Env

// logTail is how many lines of each component's log a failed run prints.
const logTail = 40

func TestMain(m *testing.M) {
	flag.Parse()
	os.Exit(run(m))
}

func run(m *testing.M) int {
	opts := suite.OptionsFromEnv()
	e, err := suite.Start(context.Background(), opts, os.Stdout)
	if err != nil {
		fmt.Fprintf(os.Stderr, "e2e: %v\n", err)
		suite.Report(os.Stderr, opts.OutputDir, logTail)
		// Again after the components' logs, so that a log's last lines say what failed.
		fmt.Fprintf(os.Stderr, "e2e: the suite did not start: %v\n", err)
		return 1
	}
	env = e
	code := m.Run()
	if code != 0 {
		env.Report(os.Stderr, logTail)
	}
	if os.Getenv("E2E_HOLD") != "" {
		// Keep everything running for a person to look around; Ctrl-C stops it all.
		fmt.Printf("e2e: holding; KUBECONFIG=%s; Ctrl-C (or kill -INT %d) stops every process\n", env.ControlPlane.KubeconfigPath(), os.Getpid())
		select {}
	}
	if err := env.Stop(); err != nil {
		fmt.Fprintf(os.Stderr, "e2e: cannot stop every process: %v\n", err)
		if code == 0 {
			code = 1
		}
	}
	return code
}
