package images

import (
	"os"
	"path"
	"path/filepath"

	v1 "github.com/google/go-containerregistry/pkg/v1"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"
)

// The production-shaped lane's images: Crossplane as its chart runs it, CoreDNS and
// kube-proxy as the cluster's add-ons.

// nonroot is distroless's unprivileged user, as the official Crossplane and CoreDNS images
// run.
const nonroot = "65532"

// nonrootFiles are /etc/passwd and /etc/group naming nonroot, and its home.
func nonrootFiles() []File {
	return []File{
		{Path: "/etc/passwd", Mode: 0o644, Content: []byte("root:x:0:0:root:/root:/sbin/nologin\nnonroot:x:" + nonroot + ":" + nonroot + ":nonroot:/home/nonroot:/sbin/nologin\n")},
		{Path: "/etc/group", Mode: 0o644, Content: []byte("root:x:0:\nnonroot:x:" + nonroot + ":\n")},
	}
}

// Crossplane is Crossplane's image laid out as the official one is (crossplane/crossplane's
// nix/build.nix): the static binary at bin as /bin/crossplane, the entrypoint; every file of
// the module's cluster/crds under /crds, where `crossplane core init` reads them; every file of
// cluster/webhookconfigurations under /webhookconfigurations; run as nonroot.
func Crossplane(bin, crdsDir, webhooksDir string) (v1.Image, error) {
	f, err := HostFile(bin, "/bin/crossplane")
	if err != nil {
		return nil, err
	}
	files := append([]File{f}, nonrootFiles()...)
	for dir, under := range map[string]string{crdsDir: "/crds", webhooksDir: "/webhookconfigurations"} {
		tree, err := hostTree(dir, under)
		if err != nil {
			return nil, err
		}
		if len(tree) == 0 {
			return nil, errors.Errorf("no files in %s for the image's %s", dir, under)
		}
		files = append(files, tree...)
	}
	return Build(Spec{Files: files, User: nonroot, Entrypoint: []string{"/bin/crossplane"}})
}

// hostTree reads every regular file under the host directory dir as a file under the image
// directory under, keeping the relative paths.
func hostTree(dir, under string) ([]File, error) {
	var files []File
	err := filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if !d.Type().IsRegular() {
			return nil
		}
		rel, err := filepath.Rel(dir, p)
		if err != nil {
			return err
		}
		f, err := HostFile(p, path.Join(under, filepath.ToSlash(rel)))
		if err != nil {
			return err
		}
		f.Mode = 0o644
		files = append(files, f)
		return nil
	})
	return files, errors.Wrapf(err, "cannot read %s", dir)
}

// CoreDNS is the cluster DNS image from the static binary at bin (tools/coredns): /coredns as
// the entrypoint, run as nonroot, like the official image.
func CoreDNS(bin string) (v1.Image, error) {
	f, err := HostFile(bin, "/coredns")
	if err != nil {
		return nil, err
	}
	return Build(Spec{Files: append([]File{f}, nonrootFiles()...), User: nonroot, Entrypoint: []string{"/coredns"}})
}

// iptablesNames are the names Debian's xtables-nft-multi answers to (it dispatches on its
// own name), as kube-proxy runs them.
var iptablesNames = []string{"iptables", "iptables-save", "iptables-restore", "ip6tables", "ip6tables-save", "ip6tables-restore"}

// xtablesMulti and xtablesModules are Debian's iptables (nft backend) and the match and
// target modules it loads at run time (which ldd does not list).
const (
	xtablesMulti   = "/usr/sbin/xtables-nft-multi"
	xtablesModules = "/usr/lib/x86_64-linux-gnu/xtables"
)

// KubeProxy is kube-proxy's image from the static binary at bin, with what its iptables mode
// runs: Debian's iptables (the nft backend, under each name kube-proxy calls it by) with its
// libraries and modules. It runs as root: kube-proxy programs the node's netfilter.
func KubeProxy(bin string) (v1.Image, error) {
	f, err := HostFile(bin, "/usr/local/bin/kube-proxy")
	if err != nil {
		return nil, err
	}
	files := []File{f}
	for _, n := range iptablesNames {
		f, err := HostFile(xtablesMulti, "/usr/sbin/"+n)
		if err != nil {
			return nil, err
		}
		files = append(files, f)
	}
	modules, err := filepath.Glob(filepath.Join(xtablesModules, "*.so"))
	if err != nil || len(modules) == 0 {
		return nil, errors.Errorf("no iptables modules in %s (Debian package iptables)", xtablesModules)
	}
	for _, m := range modules {
		f, err := HostFile(m, m)
		if err != nil {
			return nil, err
		}
		files = append(files, f)
	}
	libs, err := librariesOf(append([]string{xtablesMulti}, modules...)...)
	if err != nil {
		return nil, err
	}
	files = append(files, libs...)
	return Build(Spec{Files: files, User: "0:0", Entrypoint: []string{"/usr/local/bin/kube-proxy"}})
}
