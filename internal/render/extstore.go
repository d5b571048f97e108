package render

import (
	"strconv"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// ExternalStorage is the disk each replica keeps item values on: memcached's extstore, on a
// volume of the replica's own that lives and dies with its pod.
type ExternalStorage struct {
	// SizeMB is the size of each replica's volume in megabytes: the emptyDir's sizeLimit, or
	// the storage the generic ephemeral volume's claim requests.
	SizeMB int32
	// StorageClassName, when set, makes the volume a generic ephemeral volume of this
	// StorageClass; empty means an emptyDir on the node's disk.
	StorageClassName string
}

// The extstore settings every replica with external storage runs with (memcached 1.6.18's
// ext_* options). docs/operations.md says why each; docs/performance.md has the memory they
// were measured to take.
const (
	// ExtstoreDir is where the volume is mounted in the memcached container; the extstore
	// file is ExtstoreDir/extstore.
	ExtstoreDir = "/var/cache/memcached"
	// ExtstoreVolume names the volume, and so (with the pod's name) a generic ephemeral
	// volume's PersistentVolumeClaim: <pod>-extstore.
	ExtstoreVolume = "extstore"
	// ExtstorePageMB is ext_page_size, memcached's default: extstore allocates, compacts and
	// evicts the disk a page at a time, so the file is a whole number of pages.
	ExtstorePageMB = 64
	// ExtstoreWriteBufferMB is ext_wbuf_size, memcached's default: items are gathered in
	// write buffers of this size before they are written, and memcached refuses an item size
	// (maxItemSizeMB) larger than it. Larger buffers cost memory (docs/performance.md) for
	// fewer, larger writes that a local disk does not need.
	ExtstoreWriteBufferMB = 4
	// ExtstoreThreads is ext_threads: the threads that read values back from disk. memcached's
	// default, 1, serves one read at a time, which a network-attached disk (a generic
	// ephemeral volume) of a millisecond per read caps at about 1,000 gets from disk a second.
	ExtstoreThreads = 4
	// ExtstoreItemSize is ext_item_size, memcached's default: values smaller than this many
	// bytes stay in memory, where their header would cost about as much as the value.
	ExtstoreItemSize = 512
	// ExtstoreHeadroomPercent of the volume is left out of the extstore file: a volume past its
	// limit gets the pod evicted (an emptyDir's sizeLimit) or fills (a claim's filesystem,
	// whose ext4 keeps 5% for root and some for its metadata; memcached is not root).
	ExtstoreHeadroomPercent = 10
)

// ExtstoreFileMB is the size of the extstore file on a volume of sizeMB megabytes: at most
// 100-ExtstoreHeadroomPercent percent of it, in whole pages of ExtstorePageMB. memcached
// writes no more than that (the file grows a page at a time up to it, and nothing else is
// written to the volume), so the rest is headroom that the volume's own overhead may use.
func ExtstoreFileMB(sizeMB int32) int32 {
	usable := int64(sizeMB) * (100 - ExtstoreHeadroomPercent) / 100
	return int32(usable / ExtstorePageMB * ExtstorePageMB)
}

// ExtstoreMemoryMiB is what extstore keeps in memory beyond memoryLimitMB, measured on
// memcached 1.6.18 (docs/performance.md, "What extstore keeps in memory"): a fixed part (its
// write buffers, IO and background threads and page table) and memcached's hash table for the
// items whose values are on disk. Their headers live in memoryLimitMB's slabs, so disk adds
// items, not slab memory; but every item takes a bucket of the hash table, which is outside
// memoryLimitMB, grows by doubling at 1.5 items a bucket, and holds the old table beside the
// new one while it grows: at most 16 bytes an item. memoryLimitMB holds at most 10,922
// headers a megabyte (memcached's smallest slab chunk, 96 bytes, which a header with a short
// key fills), so the table takes at most 17% of memoryLimitMB.
func ExtstoreMemoryMiB(m Memcached) int64 {
	if m.ExternalStorage == nil {
		return 0
	}
	return ExtstoreFixedMiB + (int64(m.MemoryLimitMB)*ExtstoreHashPercent+99)/100
}

// The terms of ExtstoreMemoryMiB (docs/performance.md).
const (
	// ExtstoreFixedMiB is what extstore took whatever the number of items: 18.3 MiB more
	// resident memory at its peak than the same memcached without it, measured with few
	// items on disk, rounded up.
	ExtstoreFixedMiB = 20
	// ExtstoreHashPercent is the hash table of a cache full of item headers, in percent of
	// memoryLimitMB: 10,922 headers a megabyte at 16 bytes each.
	ExtstoreHashPercent = 17
)

// extstoreArgs are memcached's extstore flags. ext_page_size and ext_wbuf_size must come
// before ext_path, which memcached refuses otherwise.
func extstoreArgs(m Memcached) []string {
	e := m.ExternalStorage
	if e == nil {
		return nil
	}
	return []string{
		"--extended=ext_page_size=" + strconv.Itoa(ExtstorePageMB),
		"--extended=ext_wbuf_size=" + strconv.Itoa(ExtstoreWriteBufferMB),
		"--extended=ext_threads=" + strconv.Itoa(ExtstoreThreads),
		"--extended=ext_item_size=" + strconv.Itoa(ExtstoreItemSize),
		"--extended=ext_path=" + ExtstoreDir + "/extstore:" + strconv.Itoa(int(ExtstoreFileMB(e.SizeMB))) + "m",
	}
}

// extstoreVolume is each replica's own volume for extstore: an emptyDir limited to SizeMB, or
// a generic ephemeral volume (a PersistentVolumeClaim the pod owns, created and deleted with
// it) of SizeMB from the StorageClass. Both are volume types the restricted Pod Security
// Standard allows.
func extstoreVolume(m Memcached) corev1.Volume {
	e := m.ExternalStorage
	size := resource.MustParse(strconv.Itoa(int(e.SizeMB)) + "Mi")
	if e.StorageClassName == "" {
		return corev1.Volume{Name: ExtstoreVolume, VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{SizeLimit: &size}}}
	}
	return corev1.Volume{Name: ExtstoreVolume, VolumeSource: corev1.VolumeSource{Ephemeral: &corev1.EphemeralVolumeSource{
		VolumeClaimTemplate: &corev1.PersistentVolumeClaimTemplate{
			ObjectMeta: metav1.ObjectMeta{Labels: Labels(m)},
			Spec: corev1.PersistentVolumeClaimSpec{
				AccessModes:      []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
				StorageClassName: &e.StorageClassName,
				Resources:        corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: size}},
			},
		},
	}}}
}

// extstoreResources adds to memcached's resources what an emptyDir takes of the node's disk:
// its size as an ephemeral-storage request, so that the scheduler places the replica on a node
// with that much room. No limit: the emptyDir's own sizeLimit bounds it, and a limit would
// count the container's logs too.
func extstoreResources(m Memcached, res *corev1.ResourceRequirements) {
	if e := m.ExternalStorage; e != nil && e.StorageClassName == "" {
		res.Requests[corev1.ResourceEphemeralStorage] = resource.MustParse(strconv.Itoa(int(e.SizeMB)) + "Mi")
	}
}
