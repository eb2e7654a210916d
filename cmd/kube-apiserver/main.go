// Command kube-apiserver is Portcullis's kube-apiserver: the stock server, flag for flag,
// with this distribution's admission plugins compiled in.
package main

import (
	"fmt"
	"os"
	_ "time/tzdata" // as stock: CronJob time zones on hosts without zoneinfo

	genericapiserver "k8s.io/apiserver/pkg/server"
	"k8s.io/component-base/cli"
	_ "k8s.io/component-base/logs/json/register"          // as stock: --logging-format=json and its flags
	_ "k8s.io/component-base/metrics/prometheus/clientgo" // as stock: client-go metrics
	_ "k8s.io/component-base/metrics/prometheus/version"  // as stock: the version metric

	"github.com/portcullis-k8s/portcullis/cmd/kube-apiserver/app"
	"github.com/portcullis-k8s/portcullis/cmd/kube-apiserver/app/preflight"
)

func main() {
	// Signal handling is process-wide, so it lives here and not in the command.
	var exitCode int
	command, err := app.NewAPIServerCommand(preflight.WithExitCode(genericapiserver.SetupSignalContext(), &exitCode))
	if err != nil {
		fmt.Fprintf(os.Stderr, "kube-apiserver: %v\n", err)
		os.Exit(1)
	}
	code := cli.Run(command)
	if code != 0 && exitCode != 0 {
		// A failure with an exit code of its own (preflight's: 2, it could not run; 3, a
		// blocked rollback).
		code = exitCode
	}
	os.Exit(code)
}
