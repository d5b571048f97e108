package images

import (
	"debug/elf"
	"path"
	"path/filepath"
	"strings"

	v1 "github.com/google/go-containerregistry/pkg/v1"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"
)

// Debian's Python 3.11 (python3.11, libpython3.11-stdlib), pymemcache (python3-pymemcache,
// with six, which it imports) and pylibmc (python3-pylibmc, on libmemcached11), as installed on
// the host by `make node-packages`.
const (
	HostPython     = "/usr/bin/python3.11"
	pythonStdlib   = "/usr/lib/python3.11"
	pythonDynload  = pythonStdlib + "/lib-dynload"
	distPackages   = "/usr/lib/python3/dist-packages"
	HostPymemcache = distPackages + "/pymemcache"
	hostSix        = distPackages + "/six.py"
	HostPylibmc    = distPackages + "/pylibmc"
	// hostPylibmcModules matches pylibmc's extension module, which links libmemcached.
	hostPylibmcModules = distPackages + "/_pylibmc.*.so"
)

// pythonSkip are the directories of the standard library (and of pymemcache) an application
// does not run: tests, the IDE, Tk, the installer of pip, 2to3, pydoc's topics, the files for
// building extensions (libpython's static archive among them), and the host's byte code,
// which the interpreter compiles again from the sources.
var pythonSkip = map[string]bool{
	"test": true, "idlelib": true, "tkinter": true, "turtledemo": true, "ensurepip": true,
	"lib2to3": true, "pydoc_data": true, "config-3.11-x86_64-linux-gnu": true, "__pycache__": true,
}

// PythonApps is the image of applications on Python's memcached clients, built from Debian's
// packages on the host like the kube-proxy image's iptables: the interpreter (as
// /usr/bin/python3.11 and /usr/bin/python3, the entrypoint), the libraries it and its extension
// modules load, the standard library, pymemcache and six, pylibmc with the libraries its
// extension module links (libmemcached, Cyrus SASL) and Cyrus SASL's PLAIN plugin, which
// libsasl2 loads at run time to authenticate (SASLPluginDir); and each host script of scripts
// at its image path (the key), which a pod names as its first argument. Run as nonroot.
func PythonApps(scripts map[string]string) (v1.Image, error) {
	return pythonApps(scripts, SASLPluginDir)
}

// pythonApps is PythonApps with the SASL plugins read from the host's pluginDir.
func pythonApps(scripts map[string]string, pluginDir string) (v1.Image, error) {
	var files []File
	for _, p := range []string{"/usr/bin/python3.11", "/usr/bin/python3"} {
		f, err := HostFile(HostPython, p)
		if err != nil {
			return nil, errors.Wrap(err, "no Python interpreter (Debian package python3.11)")
		}
		files = append(files, f)
	}
	sources := []struct{ host, image string }{{hostSix, hostSix}}
	for image, host := range scripts {
		sources = append(sources, struct{ host, image string }{host, image})
	}
	for _, p := range sources {
		f, err := HostFile(p.host, p.image)
		if err != nil {
			return nil, err
		}
		f.Mode = 0o644
		files = append(files, f)
	}
	for _, dir := range []string{pythonStdlib, HostPymemcache, HostPylibmc} {
		tree, err := hostTree(dir, dir)
		if err != nil {
			return nil, err
		}
		if len(tree) == 0 {
			return nil, errors.Errorf("no files in %s", dir)
		}
		for _, f := range tree {
			if !skipped(f.Path) && f.Path != HostPylibmc+"/test.py" {
				files = append(files, f)
			}
		}
	}
	modules, err := filepath.Glob(filepath.Join(pythonDynload, "*.so"))
	if err != nil || len(modules) == 0 {
		return nil, errors.Errorf("no extension modules in %s (Debian package libpython3.11-stdlib)", pythonDynload)
	}
	pylibmc, err := filepath.Glob(hostPylibmcModules)
	if err != nil || len(pylibmc) != 1 {
		return nil, errors.Errorf("no pylibmc extension module %s (Debian package python3-pylibmc; `make node-packages` installs it)", hostPylibmcModules)
	}
	f, err := HostFile(pylibmc[0], pylibmc[0])
	if err != nil {
		return nil, err
	}
	files = append(files, f)
	plugins, err := saslPluginFiles(pluginDir)
	if err != nil {
		return nil, err
	}
	libs, err := librariesOf(append(append([]string{HostPython, pylibmc[0]}, modules...), plugins.hosts...)...)
	if err != nil {
		return nil, err
	}
	files = append(append(append(files, libs...), plugins.files...), nonrootFiles()...)
	return Build(Spec{Files: files, User: nonroot, Entrypoint: []string{"/usr/bin/python3"}})
}

// skipped reports whether the image path p lies in one of pythonSkip's directories.
func skipped(p string) bool {
	for _, d := range strings.Split(path.Dir(p), "/") {
		if pythonSkip[d] {
			return true
		}
	}
	return false
}

// librariesOf returns the shared libraries the dynamic binaries or modules bins load, each
// once. A module that names none (several of Python's take every symbol from the
// interpreter, and ldd calls them statically linked) adds nothing.
func librariesOf(bins ...string) ([]File, error) {
	libs := map[string]File{}
	for _, b := range bins {
		needed, err := neededLibraries(b)
		if err != nil {
			return nil, err
		}
		if len(needed) == 0 {
			continue
		}
		ls, err := Libraries(b)
		if err != nil {
			return nil, err
		}
		for _, l := range ls {
			libs[l.Path] = l
		}
	}
	files := make([]File, 0, len(libs))
	for _, l := range libs {
		files = append(files, l) // Build sorts them.
	}
	return files, nil
}

// neededLibraries returns the libraries the ELF file at p names (DT_NEEDED).
func neededLibraries(p string) ([]string, error) {
	f, err := elf.Open(p)
	if err != nil {
		return nil, errors.Wrapf(err, "cannot open %s", p)
	}
	defer f.Close() //nolint:errcheck // Read-only.
	needed, err := f.ImportedLibraries()
	return needed, errors.Wrapf(err, "cannot read the libraries %s needs", p)
}
