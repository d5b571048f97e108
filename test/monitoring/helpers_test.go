package monitoring_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/example/function-memcached/internal/render"
	"github.com/example/function-memcached/internal/resolve"
)

// sessions is the Memcached whose alerts testdata/alerts.test.yaml expects: team-a's
// sessions, 1024 connections and 64 MB a replica and 1024 MB of external storage, with
// metrics, a ServiceMonitor and the PrometheusRule on.
func sessions() render.Memcached {
	return render.Memcached{
		Name: "sessions", Namespace: "team-a", Size: 3, Image: resolve.DefaultImage,
		MemoryLimitMB: 64, MaxConnections: 1024, Threads: 2,
		Metrics: true, ExporterImage: resolve.DefaultExporterImage,
		ServiceMonitor: true, PrometheusRule: true,
		ExternalStorage: &render.ExternalStorage{SizeMB: 1024},
	}
}

// binary is the absolute path of the tool an environment variable names (make test sets it
// to bin/<name>), or bin/<name> of this checkout. A missing one skips the test, unless
// CI=true: CI must never pass by skipping.
func binary(t *testing.T, env, name string) string {
	t.Helper()
	p := os.Getenv(env)
	if p == "" {
		p = filepath.Join("..", "..", "bin", name)
	}
	abs, err := filepath.Abs(p)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(abs); err != nil {
		why := env + ": no " + name + " at " + abs + " (make test builds it)"
		if os.Getenv("CI") == "true" {
			t.Fatal(why)
		}
		t.Skip(why)
	}
	return abs
}
