package packaging

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// fakeAptGet fails as apt-get does when another apt-get holds its lock, and records each call.
const fakeAptGet = `#!/bin/sh
if ! mkdir "$FAKE_APT/held" 2>/dev/null; then
	echo "E: Could not get lock /var/lib/apt/lists/lock. It is held by another apt-get"
	exit 100
fi
echo "$*" >>"$FAKE_APT/calls"
sleep 0.3
rmdir "$FAKE_APT/held"
`

// TestAptGetOneAtATime installs make test's packages (bin/memcached's build dependencies) and
// the node lane's side by side, as .ci/run does on a new machine (make -j2 test e2e), with an
// apt-get that fails when another one runs, as the real one does on its lock. Both installs
// must run, one after the other.
func TestAptGetOneAtATime(t *testing.T) {
	if _, err := exec.LookPath("flock"); err != nil {
		missing(t, "flock (util-linux) is not installed")
	}
	dir := t.TempDir()
	fakes := map[string]string{
		"apt-get": fakeAptGet,
		// Nothing is installed, so both targets install their packages.
		"dpkg-query": "#!/bin/sh\nexit 1\n",
		// The targets install only as root.
		"id": "#!/bin/sh\necho 0\n",
	}
	for name, script := range fakes {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(script), 0o755); err != nil { //nolint:gosec // An executable script.
			t.Fatal(err)
		}
	}
	env := []string{"FAKE_APT=" + dir, "PATH=" + dir + string(os.PathListSeparator) + os.Getenv("PATH")}
	out, err := runMakeEnv(t, env, "-j2", "memcached-build-deps", "node-packages", "APT_LOCK="+filepath.Join(dir, "apt.lock"))
	if err != nil {
		t.Fatalf("make -j2 memcached-build-deps node-packages: %v\n%s", err, out)
	}
	b, err := os.ReadFile(filepath.Join(dir, "calls"))
	if err != nil {
		t.Fatal(err)
	}
	var updates, installs []string
	for _, call := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		switch {
		case strings.HasPrefix(call, "update "):
			updates = append(updates, call)
		case strings.HasPrefix(call, "install "):
			installs = append(installs, call)
		default:
			t.Errorf("unexpected apt-get call %q", call)
		}
	}
	if len(updates) != 2 || len(installs) != 2 {
		t.Errorf("apt-get ran %d updates and %d installs, want 2 and 2 (one pair per target):\n%s", len(updates), len(installs), b)
	}
}
