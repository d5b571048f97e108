package render

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestExternalStorageSizes(t *testing.T) {
	cases := map[string]struct {
		reason       string
		m            Memcached
		file, memory int64
	}{
		"None": {
			reason: "Without external storage the memory is what it always was.",
			m:      Memcached{MemoryLimitMB: 64, MaxConnections: 1024},
			memory: 64 + 32 + 16,
		},
		"Smallest": {
			reason: "512 MB leave 448 MB (7 pages) for the file: 64 MB of headroom, 12.5%.",
			m:      Memcached{MemoryLimitMB: 64, MaxConnections: 1024, ExternalStorage: &ExternalStorage{SizeMB: 512}},
			file:   448, memory: 64 + 32 + 16 + 20 + 11,
		},
		"OneGiB": {
			reason: "1024 MB leave 896 MB (14 pages): 90% is 921.6, rounded down to whole pages.",
			m:      Memcached{MemoryLimitMB: 64, MaxConnections: 1024, ExternalStorage: &ExternalStorage{SizeMB: 1024}},
			file:   896, memory: 143,
		},
		"Large": {
			reason: "16 GiB on a 1 GiB cache: the file is 90% in whole pages; memory grows with the cache, not the disk.",
			m:      Memcached{MemoryLimitMB: 1024, MaxConnections: 1024, ExternalStorage: &ExternalStorage{SizeMB: 16384, StorageClassName: "gp3"}},
			file:   14720, memory: 1024 + 102 + 16 + 20 + 175,
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			var file int64
			if e := tc.m.ExternalStorage; e != nil {
				file = int64(ExtstoreFileMB(e.SizeMB))
				if head := int64(e.SizeMB) - file; head*100 < int64(e.SizeMB)*ExtstoreHeadroomPercent {
					t.Errorf("%s\nthe file leaves %d MB of %d, less than %d%%", tc.reason, head, e.SizeMB, ExtstoreHeadroomPercent)
				}
			}
			if diff := cmp.Diff(tc.file, file); diff != "" {
				t.Errorf("%s\nExtstoreFileMB: -want, +got:\n%s", tc.reason, diff)
			}
			if diff := cmp.Diff(tc.memory, MemoryMiB(tc.m)); diff != "" {
				t.Errorf("%s\nMemoryMiB: -want, +got:\n%s", tc.reason, diff)
			}
		})
	}
}
