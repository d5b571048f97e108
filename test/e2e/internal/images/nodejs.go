package images

import (
	"strings"

	v1 "github.com/google/go-containerregistry/pkg/v1"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"
)

// HostNodejs is the machine's Node.js, which the memjs application's image holds (the Makefile
// checks its version: build/cluster.mk's NODEJS_VERSION).
const HostNodejs = "/usr/bin/node"

// memjsSkip are the files and directories of the memjs package an application does not load:
// its tests, benchmarks and documentation.
var memjsSkip = map[string]bool{"test": true, "bench": true, "docs": true}

// MemjsApp is the image of the application on memjs, the Node.js memcached client: the host's
// Node.js (HostNodejs, as /usr/bin/node, the entrypoint) and the libraries it links, the
// script at /app/app.js, and the node_modules directory npm installed for it (modules, holding
// memjs at the version of the application's lock file) at /app/node_modules, without memjs's
// tests, benchmarks and docs. Run as nonroot; a pod's arguments follow the script.
func MemjsApp(script, modules string) (v1.Image, error) {
	return nodejsApp(HostNodejs, script, modules)
}

func nodejsApp(node, script, modules string) (v1.Image, error) {
	bin, err := HostFile(node, "/usr/bin/node")
	if err != nil {
		return nil, errors.Wrap(err, "no Node.js (the machine's /usr/bin/node)")
	}
	app, err := HostFile(script, "/app/app.js")
	if err != nil {
		return nil, err
	}
	app.Mode = 0o644
	tree, err := hostTree(modules, "/app/node_modules")
	if err != nil {
		return nil, err
	}
	files := []File{bin, app}
	var memjs bool
	for _, f := range tree {
		rel := strings.Split(strings.TrimPrefix(f.Path, "/app/node_modules/"), "/")
		if len(rel) > 2 && rel[0] == "memjs" && memjsSkip[rel[1]] {
			continue
		}
		memjs = memjs || f.Path == "/app/node_modules/memjs/package.json"
		files = append(files, f)
	}
	if !memjs {
		return nil, errors.Errorf("no memjs in %s: `make` installs it there from test/e2e/apps/memjs/package-lock.json", modules)
	}
	libs, err := librariesOf(node)
	if err != nil {
		return nil, err
	}
	files = append(append(files, libs...), nonrootFiles()...)
	return Build(Spec{Files: files, User: nonroot, Entrypoint: []string{"/usr/bin/node", "/app/app.js"}})
}
