package load

import (
	"bufio"
	"bytes"
	"os"
	"strconv"
	"strings"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"
)

// clockTicks is USER_HZ, the unit of CPU times in /proc/<pid>/stat: 100 on every Linux
// architecture Go supports.
const clockTicks = 100

// procSample is a reading of a process's CPU and memory.
type procSample struct {
	cpuSeconds float64
	rss, hwm   uint64
}

// sample reads /proc/<pid>/stat (utime + stime) and /proc/<pid>/status (VmRSS, VmHWM).
func sample(pid int) (procSample, error) {
	var s procSample
	stat, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return s, errors.Wrapf(err, "cannot read CPU time of process %d", pid)
	}
	// The command name may hold spaces; fields are counted after its closing parenthesis.
	rest := stat[bytes.LastIndexByte(stat, ')')+2:]
	f := strings.Fields(string(rest))
	if len(f) < 13 {
		return s, errors.Errorf("cannot parse /proc/%d/stat", pid)
	}
	utime, _ := strconv.ParseUint(f[11], 10, 64)
	stime, _ := strconv.ParseUint(f[12], 10, 64)
	s.cpuSeconds = float64(utime+stime) / clockTicks

	status, err := os.Open("/proc/" + strconv.Itoa(pid) + "/status")
	if err != nil {
		return s, errors.Wrapf(err, "cannot read memory of process %d", pid)
	}
	defer status.Close() //nolint:errcheck // Read-only.
	sc := bufio.NewScanner(status)
	for sc.Scan() {
		k, v, ok := strings.Cut(sc.Text(), ":")
		if !ok {
			continue
		}
		kb, _ := strconv.ParseUint(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
		switch k {
		case "VmRSS":
			s.rss = kb * 1024
		case "VmHWM":
			s.hwm = kb * 1024
		}
	}
	return s, errors.Wrap(sc.Err(), "cannot read /proc status")
}
