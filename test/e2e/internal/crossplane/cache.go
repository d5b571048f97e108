package crossplane

import (
	"bufio"
	"compress/gzip"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"

	"github.com/example/function-memcached/test/e2e/internal/kube"
)

// PackageCacheDir is where the suite's Crossplane caches the packages it pulls
// (--xpkg-cache-dir), under the suite's work directory.
func PackageCacheDir(workDir string) string {
	return filepath.Join(workDir, "xpkg-cache")
}

// annotationCacheCleared asks Crossplane to reconcile a revision again after the suite cleared
// its package cache; its value is when.
const annotationCacheCleared = "e2e.example.com/package-cache-cleared"

// RepairEmptyRevision works around a Crossplane package cache that lost a package's objects.
//
// Under load, Crossplane v2.4's package cache has been seen holding a package's YAML cut after
// its first document (the package's metadata; crossplane/crossplane#7817 reports the same cut
// in another place). The revision then parses, establishes nothing, reports
// RevisionHealthy=True and lists no objects, and Crossplane never reads the package again: the
// RBAC manager renders no role for it and its CRDs never appear. A restart keeps the cache.
//
// When rev, a package revision as read from the API server, is in that state,
// RepairEmptyRevision removes every cached package in cacheDir and annotates the revision, so
// that Crossplane reconciles it, pulls the package again and establishes its objects. It
// returns what it found and did, for the suite's output, or "" when the revision needed
// nothing. Only a revision whose package holds objects (a provider's always does) may be
// passed.
func RepairEmptyRevision(ctx context.Context, c *kube.Client, rev *unstructured.Unstructured, cacheDir string) (string, error) {
	if !emptyRevision(rev) {
		return "", nil
	}
	held, err := clearPackageCache(cacheDir)
	if err != nil {
		return "", err
	}
	gvk := rev.GroupVersionKind()
	patch := fmt.Appendf(nil, `{"metadata":{"annotations":{%q:%q}}}`, annotationCacheCleared, time.Now().UTC().Format(time.RFC3339Nano))
	if _, err := c.MergePatch(ctx, gvk, "", rev.GetName(), patch); err != nil {
		return "", errors.Wrapf(err, "cannot annotate %s %s", gvk.Kind, rev.GetName())
	}
	return fmt.Sprintf("Crossplane reports %s %s healthy with no objects; its package cache held %s; "+
		"cleared the cache and asked Crossplane to reconcile the revision again (docs/e2e.md)",
		gvk.Kind, rev.GetName(), held), nil
}

// emptyRevision reports whether Crossplane calls rev healthy while it lists no objects.
func emptyRevision(rev *unstructured.Unstructured) bool {
	refs, _, _ := unstructured.NestedSlice(rev.Object, "status", "objectRefs")
	s, _, _, _ := kube.Condition(rev, "RevisionHealthy")
	return s == "True" && len(refs) == 0
}

// RevisionState says how far Crossplane got with a package revision: how many objects it
// lists (the RBAC manager renders roles only for those) and its conditions.
func RevisionState(rev *unstructured.Unstructured) string {
	refs, _, _ := unstructured.NestedSlice(rev.Object, "status", "objectRefs")
	conds, _, _ := unstructured.NestedSlice(rev.Object, "status", "conditions")
	var b strings.Builder
	fmt.Fprintf(&b, "%s %s (resourceVersion %s) lists %d objects", rev.GetKind(), rev.GetName(), rev.GetResourceVersion(), len(refs))
	for _, c := range conds {
		m, _ := c.(map[string]any)
		fmt.Fprintf(&b, "; %v=%v %v", m["type"], m["status"], m["reason"])
		if msg, _ := m["message"].(string); msg != "" {
			fmt.Fprintf(&b, " %q", msg)
		}
	}
	return b.String()
}

// clearPackageCache removes every cached package in dir, and says what each held.
func clearPackageCache(dir string) (string, error) {
	files, err := filepath.Glob(filepath.Join(dir, "*"))
	if err != nil {
		return "", errors.Wrapf(err, "cannot list %s", dir)
	}
	held := make([]string, 0, len(files))
	for _, f := range files {
		held = append(held, fmt.Sprintf("%s: %s", filepath.Base(f), cachedDocuments(f)))
		if err := os.Remove(f); err != nil {
			return "", errors.Wrapf(err, "cannot remove %s", f)
		}
	}
	return strings.Join(held, ", "), nil
}

// cachedDocuments says how many YAML document separators a cached package (gzipped YAML) holds:
// a whole package has one before each of its objects.
func cachedDocuments(path string) string {
	f, err := os.Open(path) //nolint:gosec // The suite's own cache directory.
	if err != nil {
		return err.Error()
	}
	defer f.Close() //nolint:errcheck // Only read.
	z, err := gzip.NewReader(f)
	if err != nil {
		return err.Error()
	}
	docs := 0
	s := bufio.NewScanner(z)
	s.Buffer(make([]byte, 0, 64*1024), 16*1024*1024)
	for s.Scan() {
		if strings.HasPrefix(s.Text(), "---") {
			docs++
		}
	}
	if err := s.Err(); err != nil {
		return fmt.Sprintf("%d document separators, then %v", docs, err)
	}
	return fmt.Sprintf("%d document separators", docs)
}
