package resolve

import (
	"fmt"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation/field"

	cachev1alpha1 "github.com/example/function-memcached/apis/cache/v1alpha1"
	"github.com/example/function-memcached/internal/render"
)

// externalStorage resolves spec.externalStorage into m: a size within the platform's policy,
// a StorageClass the platform allows, and no combination memcached refuses to start with.
// The one memcached 1.6.18 refuses with the rendered settings is an item size larger than
// extstore's write buffer ("-I (item_size_max) cannot be larger than ext_wbuf_size"): it then
// exits, so it is refused here, at maxItemSizeMB.
func externalStorage(root *field.Path, spec cachev1alpha1.MemcachedSpec, m *render.Memcached, s Settings) field.ErrorList {
	e := spec.ExternalStorage
	p := root.Child("externalStorage")
	var errs field.ErrorList
	if n := int64(e.SizeMB); n < MinExternalStorageMB || n > s.MaxExternalStorageMB {
		errs = append(errs, field.Invalid(p.Child("sizeMB"), n, "must be "+s.Rule("externalStorage.sizeMB")))
	}
	if sc := e.StorageClassName; sc != "" && !slices.Contains(s.AllowedStorageClasses, sc) {
		allowed := "allows none: external storage is an emptyDir on the node's disk (leave storageClassName unset)"
		if len(s.AllowedStorageClasses) > 0 {
			allowed = "allows " + strings.Join(s.AllowedStorageClasses, ", ")
		}
		errs = append(errs, field.Invalid(p.Child("storageClassName"), sc, "StorageClass "+sc+" is not allowed; policy.allowedStorageClasses "+allowed))
	}
	if v := spec.MaxItemSizeMB; v != nil && *v > render.ExtstoreWriteBufferMB && m.MaxItemSizeMB > 0 {
		// Only when maxItemSizeMB itself is valid: a refused one was reported already.
		errs = append(errs, field.Invalid(root.Child("maxItemSizeMB"), int64(*v), fmt.Sprintf(
			"must be at most %d with %s: memcached refuses an item larger than extstore's write buffer (ext_wbuf_size, %d MB)",
			render.ExtstoreWriteBufferMB, p, render.ExtstoreWriteBufferMB)))
	}
	if len(errs) == 0 {
		m.ExternalStorage = &render.ExternalStorage{SizeMB: e.SizeMB, StorageClassName: e.StorageClassName}
	}
	return errs
}
