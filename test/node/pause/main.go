// pause holds a pod sandbox's namespaces: it sleeps until SIGINT or SIGTERM and reaps
// orphaned children, as upstream's pause does. As upstream's, given -v it prints its version
// and exits: kubeadm's upgrade health check runs the pause image as a Job with -v and waits
// for it to complete.
package main

import (
	"fmt"
	"os"
	"os/signal"
	"strings"
	"syscall"
)

func main() {
	for _, arg := range os.Args[1:] {
		if strings.EqualFold(arg, "-v") {
			fmt.Println("pause (Portcullis's test/node/pause, in place of upstream's pause.c)")
			return
		}
	}
	sig := make(chan os.Signal, 4)
	signal.Notify(sig, syscall.SIGINT, syscall.SIGTERM, syscall.SIGCHLD)
	for s := range sig {
		if s == syscall.SIGCHLD {
			for {
				pid, err := syscall.Wait4(-1, nil, syscall.WNOHANG, nil)
				if pid <= 0 || err != nil {
					break
				}
			}
			continue
		}
		os.Exit(0)
	}
}
