package render

import (
	"crypto/sha256"
	"encoding/hex"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation"
)

// MaxNameLength is the longest base name: a Service name is a DNS-1035 label, and the
// instance label value must fit in 63 characters too.
const MaxNameLength = 63

// Name derives a stable base name for the rendered objects from a claim's (or namespaced
// XR's) name. Names of up to 63 characters that are already DNS-1035 labels are kept as
// they are, so `kubectl get deploy` shows what the user typed. Anything else (dots, a
// leading digit, more than 63 characters, as DNS-1123 subdomains allow for claims) is
// mapped to a valid label, and when that changes it, a hash of the original keeps two
// different names from colliding.
func Name(s string) string {
	if isDNS1035Label(s) {
		return s
	}
	var b strings.Builder
	for _, r := range strings.ToLower(s) {
		switch {
		case r >= 'a' && r <= 'z', r >= '0' && r <= '9':
			b.WriteRune(r)
		default:
			b.WriteByte('-')
		}
	}
	n := b.String()
	if n == "" || n[0] < 'a' || n[0] > 'z' {
		n = "m-" + n
	}
	sum := sha256.Sum256([]byte(s))
	suffix := "-" + hex.EncodeToString(sum[:])[:8]
	if len(n) > MaxNameLength-len(suffix) {
		n = n[:MaxNameLength-len(suffix)]
	}
	return strings.TrimRight(n, "-") + suffix
}

// isDNS1035Label reports whether validation.IsDNS1035Label(s) finds nothing wrong, without its
// regular expression: Name runs on every call of the function, and the regular expression's
// matcher cost more than the rest of Name. A label is 1 to 63 characters of [-a-z0-9],
// beginning with a letter and not ending with '-'.
func isDNS1035Label(s string) bool {
	if s == "" || len(s) > validation.DNS1035LabelMaxLength || s[0] < 'a' || s[0] > 'z' || s[len(s)-1] == '-' {
		return false
	}
	for i := range len(s) {
		if c := s[i]; (c < 'a' || c > 'z') && (c < '0' || c > '9') && c != '-' {
			return false
		}
	}
	return true
}
