// Command extstore-rss measures what memcached's external storage (extstore) keeps in
// memory: it starts memcached (bin/memcached, as the pods run it: UID 11211 when run as root)
// with the arguments given after --, fills it with 1 KiB items at a bounded rate, and prints
// memcached's resident memory (VmRSS and VmHWM) and its item and extstore stats, then the
// number of items that still hit. docs/performance.md ("What extstore keeps in memory") has
// the figures it printed and the formula render.MemoryMiB takes from them.
//
//	go run ./test/memcached/extstore-rss -items 1000000 -rate 10000 -- -m 64 -o ext_path=/tmp/x/extstore:1024m
//
// Everything it starts is bounded: memcached is killed by its PID when the tool ends, and
// -timeout caps the whole run.
package main

import (
	"bufio"
	"flag"
	"fmt"
	"net"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"time"
)

func main() {
	bin := flag.String("memcached", "bin/memcached", "the memcached binary")
	items := flag.Int("items", 1000000, "items to write")
	size := flag.Int("size", 1024, "value size in bytes")
	rate := flag.Int("rate", 10000, "sets per second")
	settle := flag.Duration("settle", 10*time.Second, "wait after the fill, for the writer to page items out")
	timeout := flag.Duration("timeout", 10*time.Minute, "bound of the whole run")
	flag.Parse()
	if err := run(*bin, flag.Args(), *items, *size, *rate, *settle, *timeout); err != nil {
		fmt.Fprintln(os.Stderr, "extstore-rss:", err)
		os.Exit(1)
	}
}

func run(bin string, args []string, items, size, rate int, settle, timeout time.Duration) error {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	port := l.Addr().(*net.TCPAddr).Port
	_ = l.Close()
	args = append([]string{"-l", "127.0.0.1", "-p", strconv.Itoa(port), "-U", "0"}, args...)
	cmd := exec.Command(bin, args...) //nolint:gosec // The operator's own arguments.
	cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	if os.Geteuid() == 0 {
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 11211, Gid: 11211}}
	}
	if err := cmd.Start(); err != nil {
		return err
	}
	defer func() { _ = cmd.Process.Kill(); _ = cmd.Wait() }()
	stop := time.AfterFunc(timeout, func() { _ = cmd.Process.Kill() })
	defer stop.Stop()

	var c net.Conn
	for i := 0; ; i++ {
		if c, err = net.Dial("tcp", l.Addr().String()); err == nil {
			break
		}
		if i > 100 {
			return err
		}
		time.Sleep(50 * time.Millisecond)
	}
	defer c.Close() //nolint:errcheck // The run ends.
	r := bufio.NewReader(c)
	w := bufio.NewWriter(c)
	pid := cmd.Process.Pid
	fmt.Printf("memcached %s\n", strings.Join(args, " "))
	report("empty", pid, r, w)

	value := strings.Repeat("x", size)
	start := time.Now()
	const batch = 100
	for i := 0; i < items; i += batch {
		for j := i; j < min(i+batch, items); j++ {
			fmt.Fprintf(w, "set key:%08d 0 0 %d noreply\r\n%s\r\n", j, size, value)
		}
		if err := w.Flush(); err != nil {
			return err
		}
		// Pace: item i+batch is due at start + (i+batch)/rate.
		if d := time.Until(start.Add(time.Duration(i+batch) * time.Second / time.Duration(rate))); d > 0 {
			time.Sleep(d)
		}
		if (i+batch)%(items/5) == 0 {
			report(fmt.Sprintf("after %d sets", i+batch), pid, r, w)
		}
	}
	fmt.Printf("filled %d items of %d bytes in %s (%.0f sets/s)\n", items, size, time.Since(start).Round(time.Millisecond),
		float64(items)/time.Since(start).Seconds())
	time.Sleep(settle)
	report("settled", pid, r, w)

	hits := 0
	for i := 0; i < items; i += batch {
		n := min(batch, items-i)
		for j := i; j < i+n; j++ {
			fmt.Fprintf(w, "mg key:%08d v\r\n", j)
		}
		if err := w.Flush(); err != nil {
			return err
		}
		for j := 0; j < n; j++ {
			line, err := r.ReadString('\n')
			if err != nil {
				return err
			}
			if strings.HasPrefix(line, "VA ") {
				hits++
				if _, err := r.Discard(size + 2); err != nil {
					return err
				}
			}
		}
	}
	fmt.Printf("hits: %d of %d\n", hits, items)
	report("after reading back", pid, r, w)
	return nil
}

// report prints memcached's resident memory and the stats that explain it.
func report(when string, pid int, r *bufio.Reader, w *bufio.Writer) {
	status, _ := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	var rss, hwm string
	for _, l := range strings.Split(string(status), "\n") {
		f := strings.Fields(l)
		if len(f) >= 2 && f[0] == "VmRSS:" {
			rss = f[1]
		}
		if len(f) >= 2 && f[0] == "VmHWM:" {
			hwm = f[1]
		}
	}
	stats := map[string]string{}
	fmt.Fprint(w, "stats\r\n")
	_ = w.Flush()
	for {
		line, err := r.ReadString('\n')
		if err != nil || strings.HasPrefix(line, "END") {
			break
		}
		f := strings.Fields(line)
		if len(f) == 3 {
			stats[f[1]] = f[2]
		}
	}
	fmt.Printf("%-22s VmRSS %s kB, VmHWM %s kB", when, rss, hwm)
	for _, k := range []string{"curr_items", "bytes", "evictions", "total_malloced", "extstore_objects_written",
		"extstore_objects_used", "extstore_bytes_used", "extstore_bytes_written", "extstore_page_evictions", "extstore_pages_free",
		"extstore_memory_pressure", "extstore_limit_maxbytes", "get_extstore", "evictions"} {
		if v, ok := stats[k]; ok {
			fmt.Printf(" %s=%s", k, v)
		}
	}
	fmt.Println()
}
