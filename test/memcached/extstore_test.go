package memcached_test

import (
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/example/function-memcached/internal/render"
)

// TestExternalStorage runs memcached with the rendered arguments of a Memcached with external
// storage (its volume laid out as a directory memcached's group writes), fills it with 1 KiB
// items at a bounded rate until extstore has written some to disk, and reads them back: items
// are served from disk (get_extstore), with the value that was stored, and memcached runs
// with the extstore settings and file size the renderer chose.
func TestExternalStorage(t *testing.T) {
	m := memcached()
	m.MemoryLimitMB = 16 // The smallest cache: fewer items fill it.
	m.ExternalStorage = &render.ExternalStorage{SizeMB: 512}
	p := run(t, m, nil)
	c := p.dial(t, p.public)
	c.NoDeadline()

	settings, err := c.Stats("settings")
	if err != nil {
		t.Fatal(err)
	}
	for k, want := range map[string]string{
		"ext_wbuf_size": strconv.Itoa(render.ExtstoreWriteBufferMB << 20),
		"ext_item_size": strconv.Itoa(render.ExtstoreItemSize),
	} {
		if settings[k] != want {
			t.Errorf("stats settings %s: %q, want %q", k, settings[k], want)
		}
	}
	stats, err := c.Stats("")
	if err != nil {
		t.Fatal(err)
	}
	if want := strconv.Itoa(448 << 20); stats["extstore_limit_maxbytes"] != want {
		t.Errorf("extstore_limit_maxbytes: %q, want %s (90%% of 512 MB in whole 64 MB pages)", stats["extstore_limit_maxbytes"], want)
	}

	// Fill at 10,000 sets a second: as fast as possible, memcached evicts items before its
	// writer pages them out (docs/performance.md).
	value := func(i int) string { return fmt.Sprintf("%08d", i) + strings.Repeat("v", 1016) }
	const rate, most = 10000, 60000
	start := time.Now()
	written := 0
	for i := 0; i < most; i++ {
		if got, err := c.Set("key:"+strconv.Itoa(i), value(i)); err != nil || got != "STORED" {
			t.Fatalf("set key:%d: %q, %v", i, got, err)
		}
		if i%100 == 99 {
			time.Sleep(time.Until(start.Add(time.Duration(i+1) * time.Second / rate)))
		}
		if i%5000 == 4999 {
			stats, err := c.Stats("")
			if err != nil {
				t.Fatal(err)
			}
			if written, _ = strconv.Atoi(stats["extstore_objects_written"]); written > 5000 {
				written = i + 1
				break
			}
		}
	}
	if written == 0 {
		t.Fatalf("after %d sets of 1 KiB at %d a second, extstore has written nothing to disk", most, rate)
	}
	hits := 0
	for i := range written {
		got, err := c.Get("key:" + strconv.Itoa(i))
		if err != nil {
			continue // Evicted: a miss, not a failure.
		}
		if got != value(i) {
			t.Fatalf("key:%d holds %q…, not what was stored", i, got[:min(len(got), 16)])
		}
		hits++
	}
	stats, err = c.Stats("")
	if err != nil {
		t.Fatal(err)
	}
	fromDisk, _ := strconv.Atoi(stats["get_extstore"])
	if fromDisk == 0 {
		t.Errorf("of %d items written, %d hit and none was served from disk (get_extstore 0): %v", written, hits, stats)
	}
	t.Logf("%d sets, %d hits, %d of them from disk (extstore_objects_written %s)", written, hits, fromDisk, stats["extstore_objects_written"])
}
