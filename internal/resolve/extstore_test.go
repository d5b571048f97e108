package resolve

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/utils/ptr"

	"github.com/example/function-memcached/apis/cache/v1alpha1"
	"github.com/example/function-memcached/input/v1beta1"
	"github.com/example/function-memcached/internal/render"
)

func TestExternalStorage(t *testing.T) {
	type args struct {
		spec v1alpha1.MemcachedSpec
		in   *v1beta1.Input
	}
	type want struct {
		es   *render.ExternalStorage
		errs []string
	}
	fast := &v1beta1.Input{Policy: v1beta1.Policy{AllowedStorageClasses: []string{"local-ssd", "gp3"}}}
	cases := map[string]struct {
		reason string
		args   args
		want   want
	}{
		"EmptyDir": {
			reason: "A size within the built-in policy and no StorageClass is an emptyDir of that size.",
			args:   args{spec: v1alpha1.MemcachedSpec{ExternalStorage: &v1alpha1.ExternalStorage{SizeMB: 1024}}},
			want:   want{es: &render.ExternalStorage{SizeMB: 1024}},
		},
		"AllowedStorageClass": {
			reason: "A StorageClass the platform lists makes a generic ephemeral volume of it.",
			args:   args{spec: v1alpha1.MemcachedSpec{ExternalStorage: &v1alpha1.ExternalStorage{SizeMB: 512, StorageClassName: "gp3"}}, in: fast},
			want:   want{es: &render.ExternalStorage{SizeMB: 512, StorageClassName: "gp3"}},
		},
		"OverPolicy": {
			reason: "A size over policy.maxExternalStorageMB is refused, naming the field, the value and the limit.",
			args:   args{spec: v1alpha1.MemcachedSpec{ExternalStorage: &v1alpha1.ExternalStorage{SizeMB: 4096}}},
			want:   want{errs: []string{"spec.externalStorage.sizeMB: Invalid value: 4096: must be an integer between 512 and 1024 (policy.maxExternalStorageMB)"}},
		},
		"RaisedPolicy": {
			reason: "A platform may allow more.",
			args: args{spec: v1alpha1.MemcachedSpec{ExternalStorage: &v1alpha1.ExternalStorage{SizeMB: 4096}},
				in: &v1beta1.Input{Policy: v1beta1.Policy{MaxExternalStorageMB: ptr.To[int32](16384)}}},
			want: want{es: &render.ExternalStorage{SizeMB: 4096}},
		},
		"TooSmall": {
			reason: "A volume too small for extstore to work with is refused (the schema's minimum says so too).",
			args:   args{spec: v1alpha1.MemcachedSpec{ExternalStorage: &v1alpha1.ExternalStorage{SizeMB: 100}}},
			want:   want{errs: []string{"spec.externalStorage.sizeMB: Invalid value: 100: must be an integer between 512 and 1024 (policy.maxExternalStorageMB)"}},
		},
		"PolicyRefusesAny": {
			reason: "A platform that sets policy.maxExternalStorageMB to 0 refuses external storage, saying so.",
			args: args{spec: v1alpha1.MemcachedSpec{ExternalStorage: &v1alpha1.ExternalStorage{SizeMB: 512}},
				in: &v1beta1.Input{Policy: v1beta1.Policy{MaxExternalStorageMB: ptr.To[int32](0)}}},
			want: want{errs: []string{"spec.externalStorage.sizeMB: Invalid value: 512: must be unset: the platform allows no external storage (policy.maxExternalStorageMB is 0)"}},
		},
		"StorageClassNotAllowed": {
			reason: "A StorageClass the platform does not list is refused, naming those it does.",
			args:   args{spec: v1alpha1.MemcachedSpec{ExternalStorage: &v1alpha1.ExternalStorage{SizeMB: 512, StorageClassName: "premium"}}, in: fast},
			want:   want{errs: []string{`spec.externalStorage.storageClassName: Invalid value: "premium": StorageClass premium is not allowed; policy.allowedStorageClasses allows local-ssd, gp3`}},
		},
		"NoStorageClassAllowed": {
			reason: "Without policy.allowedStorageClasses a claim cannot name one: its volume is an emptyDir.",
			args:   args{spec: v1alpha1.MemcachedSpec{ExternalStorage: &v1alpha1.ExternalStorage{SizeMB: 512, StorageClassName: "gp3"}}},
			want: want{errs: []string{`spec.externalStorage.storageClassName: Invalid value: "gp3": StorageClass gp3 is not allowed; ` +
				`policy.allowedStorageClasses allows none: external storage is an emptyDir on the node's disk (leave storageClassName unset)`}},
		},
		"ItemLargerThanWriteBuffer": {
			reason: "memcached refuses to start with extstore and an item size over its write buffer (-I cannot be larger than ext_wbuf_size): refused here.",
			args: args{spec: v1alpha1.MemcachedSpec{MemoryLimitMB: ptr.To[int32](64), MaxItemSizeMB: ptr.To[int32](8),
				ExternalStorage: &v1alpha1.ExternalStorage{SizeMB: 512}}},
			want: want{errs: []string{"spec.maxItemSizeMB: Invalid value: 8: must be at most 4 with spec.externalStorage: memcached refuses an item larger than extstore's write buffer (ext_wbuf_size, 4 MB)"}},
		},
		"ItemAsLargeAsWriteBuffer": {
			reason: "An item as large as the write buffer starts (measured with bin/memcached).",
			args: args{spec: v1alpha1.MemcachedSpec{MaxItemSizeMB: ptr.To[int32](4),
				ExternalStorage: &v1alpha1.ExternalStorage{SizeMB: 512}}},
			want: want{es: &render.ExternalStorage{SizeMB: 512}},
		},
		"InvalidItemSizeOnce": {
			reason: "An item size refused on its own is reported once, not again for extstore.",
			args: args{spec: v1alpha1.MemcachedSpec{MemoryLimitMB: ptr.To[int32](64), MaxItemSizeMB: ptr.To[int32](64),
				ExternalStorage: &v1alpha1.ExternalStorage{SizeMB: 512}}},
			want: want{errs: []string{"spec.maxItemSizeMB: Invalid value: 64: must be an integer between 1 and 32 (at most 128, and at most half of memoryLimitMB, 64)"}},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			s, err := NewSettings(tc.args.in)
			if err != nil {
				t.Fatal(err)
			}
			got, errs := Memcached(field.NewPath("spec"), tc.args.spec, "sessions", "team-a", s)
			if diff := cmp.Diff(tc.want.errs, messages(errs)); diff != "" {
				t.Errorf("%s\nMemcached(...) errors: -want, +got:\n%s", tc.reason, diff)
			}
			if diff := cmp.Diff(tc.want.es, got.ExternalStorage); diff != "" {
				t.Errorf("%s\nMemcached(...).ExternalStorage: -want, +got:\n%s", tc.reason, diff)
			}
		})
	}
}

func TestExternalStoragePolicy(t *testing.T) {
	cases := map[string]struct {
		reason string
		in     v1beta1.Input
		err    string
	}{
		"TooSmall": {
			reason: "A maximum below the smallest volume external storage takes lets no claim have one: 0 says that.",
			in:     v1beta1.Input{Policy: v1beta1.Policy{MaxExternalStorageMB: ptr.To[int32](100)}},
			err:    "invalid function Input: policy.maxExternalStorageMB: Invalid value: 100: must be 0 (no external storage) or at least 512, the smallest volume external storage takes",
		},
		"BadStorageClass": {
			reason: "An allowed StorageClass must be a name one can have.",
			in:     v1beta1.Input{Policy: v1beta1.Policy{AllowedStorageClasses: []string{"Fast SSD"}}},
			err:    `invalid function Input: policy.allowedStorageClasses[0]: Invalid value: "Fast SSD": must be a StorageClass name: a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')`,
		},
		"Zero": {
			reason: "0 is a valid policy: no external storage.",
			in:     v1beta1.Input{Policy: v1beta1.Policy{MaxExternalStorageMB: ptr.To[int32](0)}},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			_, err := NewSettings(&tc.in)
			got := ""
			if err != nil {
				got = err.Error()
			}
			if got != tc.err {
				t.Errorf("%s\nNewSettings(...): want %q, got %q", tc.reason, tc.err, got)
			}
		})
	}
}
