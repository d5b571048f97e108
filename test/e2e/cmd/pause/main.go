// Command pause is the pod sandbox ("pause") container of the end-to-end suite's real node:
// PID 1 of every pod's shared namespaces, it holds them open until SIGTERM or SIGINT and reaps
// any process re-parented to it. No public registry is reachable, so the suite builds the
// sandbox image from this.
package main

import (
	"os"
	"os/signal"
	"syscall"
)

func main() {
	sigs := make(chan os.Signal, 4)
	signal.Notify(sigs, syscall.SIGTERM, syscall.SIGINT, syscall.SIGCHLD)
	for s := range sigs {
		if s != syscall.SIGCHLD {
			os.Exit(0)
		}
		for {
			var ws syscall.WaitStatus
			if pid, err := syscall.Wait4(-1, &ws, syscall.WNOHANG, nil); pid <= 0 || err != nil {
				break
			}
		}
	}
}
