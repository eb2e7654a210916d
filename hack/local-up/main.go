// Command local-up is `make run`: a single-node control plane on loopback — etcd,
// Portcullis's kube-apiserver with every plugin of ours enabled, and kube-controller-manager
// — in the foreground until Ctrl-C. Settings come from the environment (see config.go).
package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"syscall"
)

func main() {
	cfg, err := configFromEnv(os.Getenv)
	if err != nil {
		fmt.Fprintf(os.Stderr, "make run: %v\n", err)
		os.Exit(2)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, cfg, os.Stdout); err != nil {
		fmt.Fprintf(os.Stderr, "make run: %v\n", err)
		os.Exit(1)
	}
}
