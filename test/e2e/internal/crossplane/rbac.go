package crossplane

import (
	"context"
	"math/rand/v2"
	"strings"
	"time"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"

	"github.com/example/function-memcached/test/e2e/internal/proc"
)

// RBACOptions configure Crossplane's RBAC manager.
type RBACOptions struct {
	// Binary is the Crossplane core binary (`crossplane rbac start`).
	Binary string
	// Kubeconfig is an admin kubeconfig of the control plane.
	Kubeconfig string
	LogDir     string
	PIDs       *proc.PIDFile
}

// RunRBACManager runs Crossplane's RBAC manager (`crossplane rbac start`) until done reports
// that it did what the caller needs (for a provider: its ClusterRoles, and the binding of the
// system one to the provider's ServiceAccount), then stops it.
//
// It does not keep running: the RBAC manager of Crossplane v2.4.0 takes no flag for its
// metrics address and binds :8080 on every interface, which another suite running on the same
// machine may hold at the same moment. A start that loses that race is retried after a
// short, random pause; stopping it once done frees the port for the next suite.
//
// A start that has not granted it within attemptTimeout is stopped and started again: on a
// busy machine (a cold CI run) its provider revision roles controller once reconciled the
// revision and then logged nothing for three minutes, roles never applied; a new start lists
// and reconciles every revision again.
func RunRBACManager(ctx context.Context, o RBACOptions, timeout time.Duration, done func(context.Context) error) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	env := []string{"KUBECONFIG=" + o.Kubeconfig, "POD_NAMESPACE=" + Namespace}
	var last error
	for attempt := 1; ; attempt++ {
		p, err := proc.Start(proc.Spec{Name: "crossplane-rbac-manager", Path: o.Binary, Args: []string{"rbac", "start", "--debug"}, Env: env}, o.LogDir, o.PIDs)
		if err != nil {
			return err
		}
		exited, _ := p.Exited()
		actx, acancel := context.WithTimeout(ctx, attemptTimeout)
		err = waitOrExit(actx, exited, done)
		stalled := actx.Err() != nil && ctx.Err() == nil
		acancel()
		_ = p.Stop()
		if err == nil {
			return nil
		}
		last = err
		if stalled {
			continue
		}
		if !strings.Contains(p.Tail(20), "address already in use") {
			// The cause first, the log after: a failure's first line says what is missing.
			return errors.Errorf("Crossplane's RBAC manager did not grant what is needed (%d starts): %v; last lines of %s:\n%s", attempt, err, p.LogPath(), p.Tail(20))
		}
		select {
		case <-ctx.Done():
			return errors.Wrapf(last, "Crossplane's RBAC manager could not bind :8080 in %d attempts", attempt)
		case <-time.After(time.Second + time.Duration(rand.Int64N(int64(2*time.Second)))):
		}
	}
}

// attemptTimeout bounds one start of the RBAC manager: it grants a provider's roles in about a
// second when it works.
const attemptTimeout = 45 * time.Second

// waitOrExit polls done every 200ms until it succeeds, the process exits or ctx ends.
func waitOrExit(ctx context.Context, exited <-chan struct{}, done func(context.Context) error) error {
	t := time.NewTicker(200 * time.Millisecond)
	defer t.Stop()
	var last error
	for {
		if last = done(ctx); last == nil {
			return nil
		}
		select {
		case <-exited:
			return errors.Wrap(last, "the RBAC manager exited")
		case <-ctx.Done():
			return errors.Wrap(last, "timed out")
		case <-t.C:
		}
	}
}
