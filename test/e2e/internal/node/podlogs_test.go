package node

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// A pod's log the kubelet deletes with its container at the end is still there to read.
func TestKeepPodLogs(t *testing.T) {
	const log = "crossplane-system_crossplane-6b8685bdf-knrc9_cba0633f/crossplane/0.log"
	cases := map[string]struct {
		reason string
		files  map[string]string
		// written is appended to each file after keepPodLogs, before the kubelet deletes it.
		written string
		want    map[string]string
	}{
		"RunningPod": {
			reason:  "the log of a pod running at the stop, and what it writes until it stops, outlive the kubelet's deletion",
			files:   map[string]string{log: "started\n"},
			written: "stopped\n",
			want:    map[string]string{log: "started\nstopped\n"},
		},
		"NoPods": {
			reason: "a node that ran no pod keeps nothing and reports nothing",
			want:   map[string]string{},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			dir := t.TempDir()
			for rel, text := range tc.files {
				p := filepath.Join(dir, PodLogs, rel)
				if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(p, []byte(text), 0o600); err != nil {
					t.Fatal(err)
				}
			}
			if err := keepPodLogs(dir); err != nil {
				t.Fatalf("%s\nkeepPodLogs: %v", tc.reason, err)
			}
			for rel := range tc.files {
				p := filepath.Join(dir, PodLogs, rel)
				f, err := os.OpenFile(p, os.O_APPEND|os.O_WRONLY, 0)
				if err != nil {
					t.Fatal(err)
				}
				if _, err := f.WriteString(tc.written); err != nil {
					t.Fatal(err)
				}
				_ = f.Close()
			}
			if err := os.RemoveAll(filepath.Join(dir, PodLogs)); err != nil {
				t.Fatal(err)
			}
			got := map[string]string{}
			kept := filepath.Join(dir, keptPodLogs)
			_ = filepath.WalkDir(kept, func(p string, d os.DirEntry, err error) error {
				if err != nil || d.IsDir() {
					return nil //nolint:nilerr // No directory: nothing kept.
				}
				b, err := os.ReadFile(p) //nolint:gosec // The test's own files.
				if err != nil {
					t.Fatal(err)
				}
				rel, _ := filepath.Rel(kept, p)
				got[rel] = string(b)
				return nil
			})
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("%s\nkept logs: -want, +got:\n%s", tc.reason, diff)
			}
		})
	}
}
