package node

import (
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"
)

// PodLogs is the directory, in a node's log directory, where the kubelets write their pods'
// logs: one directory a node (podLogsDir), in it one a pod:
// <node>/<namespace>_<name>_<uid>/<container>/<n>.log.
const PodLogs = "node-pods"

// podLogsDir is the kubelet's podLogsDir for the node named node: its own, never shared. A
// kubelet's garbage collection removes every pod directory there whose pod it does not run, so
// two kubelets sharing one removed each other's pods' logs, running containers' too, within a
// minute (an application's output was lost while the suite waited for it).
func podLogsDir(logDir, node string) string {
	return filepath.Join(logDir, PodLogs, node)
}

// keptPodLogs is the directory, beside PodLogs in a node's log directory, that keeps the
// logs of the pods still running when the node stops. The kubelet deletes a container's log
// with the container, so the drain at the end took Crossplane's, the function's and the
// provider's logs with it, the ones a failed scenario needs most.
const keptPodLogs = "pods"

// keepPodLogs hard-links every file the kubelet wrote under logDir/PodLogs to the same path
// under logDir/keptPodLogs. A link outlives the kubelet's removal of the file and holds what
// the container writes until it stops. No PodLogs directory means nothing to keep.
func keepPodLogs(logDir string) error {
	src := filepath.Join(logDir, PodLogs)
	dst := filepath.Join(logDir, keptPodLogs)
	var failed []string
	err := filepath.WalkDir(src, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if !d.Type().IsRegular() {
			return nil
		}
		rel, err := filepath.Rel(src, p)
		if err != nil {
			return err
		}
		to := filepath.Join(dst, rel)
		if err := os.MkdirAll(filepath.Dir(to), 0o755); err != nil {
			failed = append(failed, err.Error())
			return nil
		}
		_ = os.Remove(to) // A link kept by an earlier stop of the same lane.
		if err := os.Link(p, to); err != nil {
			failed = append(failed, err.Error())
		}
		return nil
	})
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return errors.Wrapf(err, "cannot keep the pods' logs under %s", src)
	}
	if len(failed) > 0 {
		return errors.Errorf("cannot keep %d pod logs: %s", len(failed), strings.Join(failed, "; "))
	}
	return nil
}
