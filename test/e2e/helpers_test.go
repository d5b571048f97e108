//go:build e2e

// Helpers every kind of scenario shares.

package e2e

import (
	"os"
	"strconv"
	"sync"
	"testing"
)

// optIn skips t, an opt-in scenario, unless the environment variable enable is set (saying
// how: "set enable=1 (" + how), and returns how many objects it should create: the number
// the variable count holds, def when it is unset; fewer than least fails the test.
func optIn(t *testing.T, enable, how, count string, def, least int) int {
	t.Helper()
	if os.Getenv(enable) == "" {
		t.Skipf("set %s=1 (%s", enable, how)
	}
	v := os.Getenv(count)
	if v == "" {
		return def
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < least {
		t.Fatalf("%s=%q: want a number of at least %d", count, v, least)
	}
	return n
}

// inParallel calls do for every item from 20 clients at once, as many users creating objects
// together would, and fails t on the first error.
func inParallel[T any](t *testing.T, items []T, do func(T) error) {
	t.Helper()
	work := make(chan T)
	errs := make(chan error, len(items))
	var wg sync.WaitGroup
	for range 20 {
		wg.Go(func() {
			for item := range work {
				if err := do(item); err != nil {
					errs <- err
				}
			}
		})
	}
	for _, item := range items {
		work <- item
	}
	close(work)
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
}
