// Command node-down undoes on this host what the end-to-end suite's real node left behind when
// the suite could not stop it itself (a go test timeout, a kill): containers, mounts, network
// namespaces, the bridge, iptables chains, cgroups and sysctls, from the state the node
// recorded in <output>/<dir>/state.json before changing anything: dir is node for the node lane's
// one node, cluster for the production-shaped lane's. `make e2e` runs it after each lane when
// that file is still there. It only wires flags to node.Down.
package main

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"

	"github.com/example/function-memcached/test/e2e/internal/node"
)

func main() {
	output := flag.String("output", "_output/e2e", "the suite's output directory (E2E_OUTPUT)")
	dir := flag.String("dir", "node", "the nodes' directory under output: node (the node lane) or cluster (the production-shaped lane)")
	flag.Parse()
	if err := node.Down(filepath.Join(*output, *dir)); err != nil {
		fmt.Fprintln(os.Stderr, "node-down:", err)
		os.Exit(1)
	}
}
