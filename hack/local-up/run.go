package main

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"time"

	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/portcullis-k8s/portcullis/internal/controlplane"
	"github.com/portcullis-k8s/portcullis/internal/proc"
	portcullisadmission "github.com/portcullis-k8s/portcullis/pkg/admission"
	"github.com/portcullis-k8s/portcullis/plugin/pkg/admission/initialresources"
)

// ReadyBanner starts the line printed once the whole control plane serves.
const ReadyBanner = "Portcullis is running."

const (
	stopGrace    = 30 * time.Second
	startTimeout = 3 * time.Minute
)

// layout is where everything lives under RUN_DIR.
type layout struct {
	pki, etcdData, logs, certs   string
	adminKubeconfig, kcmKubeconf string
	admissionConfig              string
}

func newLayout(runDir string) layout {
	return layout{
		pki:             filepath.Join(runDir, "pki"),
		etcdData:        filepath.Join(runDir, "etcd"),
		logs:            filepath.Join(runDir, "logs"),
		certs:           filepath.Join(runDir, "certs"),
		adminKubeconfig: filepath.Join(runDir, "admin.kubeconfig"),
		kcmKubeconf:     filepath.Join(runDir, "controller-manager.kubeconfig"),
		admissionConfig: filepath.Join(runDir, "admission-config.yaml"),
	}
}

// run starts the control plane, prints how to use it, and keeps it up until ctx ends or a
// component dies; then it stops kube-controller-manager, kube-apiserver and etcd, in that
// order.
func run(ctx context.Context, cfg config, out io.Writer) (err error) {
	binaries := map[string]string{}
	for _, name := range []string{"etcd", "kube-apiserver", "kube-controller-manager"} {
		path := filepath.Join(cfg.BinDir, name)
		if _, statErr := os.Stat(path); statErr != nil {
			return fmt.Errorf("%s is not built (%v): run `make run`, which builds it", path, statErr)
		}
		binaries[name] = path
	}
	if err := cfg.checkPortsFree(); err != nil {
		return err
	}

	dirs := newLayout(cfg.RunDir)
	for _, dir := range []string{dirs.pki, dirs.logs, dirs.certs} {
		if err := os.MkdirAll(dir, 0o700); err != nil {
			return err
		}
	}
	files, err := controlplane.WritePKI(dirs.pki)
	if err != nil {
		return fmt.Errorf("writing the PKI under %s: %w", dirs.pki, err)
	}
	server := controlplane.URL(cfg.APIPort)
	if err := controlplane.WriteKubeconfig(dirs.adminKubeconfig, server, files.CA, files.Admin); err != nil {
		return err
	}
	if err := controlplane.WriteKubeconfig(dirs.kcmKubeconf, server, files.CA, files.ControllerManager); err != nil {
		return err
	}
	if err := writeAdmissionConfigIfMissing(dirs.admissionConfig, cfg.PrometheusURL); err != nil {
		return err
	}

	// Stop whatever was started, last first, however run returns.
	var started []*proc.Process
	defer func() {
		fmt.Fprintln(out, "Stopping...")
		for i := len(started) - 1; i >= 0; i-- {
			if stopErr := started[i].Stop(stopGrace); stopErr != nil {
				err = errors.Join(err, stopErr)
			}
		}
		fmt.Fprintln(out, "Stopped.")
	}()
	start := func(name string, args ...string) (*proc.Process, error) {
		p, err := proc.Start(name, filepath.Join(dirs.logs, name+".log"), binaries[name], args...)
		if err != nil {
			return nil, err
		}
		started = append(started, p)
		return p, nil
	}

	fmt.Fprintf(out, "Starting etcd on 127.0.0.1:%d (data in %s)\n", cfg.EtcdPort, dirs.etcdData)
	etcd, err := start("etcd", controlplane.EtcdFlags(dirs.etcdData, cfg.EtcdPort, cfg.EtcdPeerPort)...)
	if err != nil {
		return err
	}
	plain := &http.Client{Timeout: 2 * time.Second}
	if err := etcd.WaitFor(ctx, startTimeout, 200*time.Millisecond, "health", func() error {
		return controlplane.GetOK(plain, controlplane.EtcdURL(cfg.EtcdPort)+"/health")
	}, nil); err != nil {
		return err
	}

	ours := pluginNames(cfg.PrometheusURL != "")
	fmt.Fprintf(out, "Starting kube-apiserver on %s with %s enabled\n", server, strings.Join(ours, ", "))
	apiserverFlags := append(controlplane.APIServerFlags(files, dirs.certs, controlplane.EtcdURL(cfg.EtcdPort), cfg.APIPort),
		"--enable-admission-plugins="+strings.Join(ours, ","),
		"--admission-control-config-file="+dirs.admissionConfig,
	)
	apiserver, err := start("kube-apiserver", apiserverFlags...)
	if err != nil {
		return err
	}
	client, dyn, err := adminClient(dirs.adminKubeconfig)
	if err != nil {
		return err
	}
	if err := apiserver.WaitFor(ctx, startTimeout, time.Second, "/readyz", func() error {
		return readyz(ctx, client)
	}, progress(out, "kube-apiserver /readyz")); err != nil {
		return err
	}

	// Before any controller creates a pod: PodSecurityPolicy is enabled, and refuses pods no
	// policy admits.
	created, err := createPodSecurityPolicyExamples(ctx, dyn)
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "Example PodSecurityPolicies and grants: %d created (build/deploy/podsecuritypolicy/)\n", created)

	fmt.Fprintf(out, "Starting kube-controller-manager (health on 127.0.0.1:%d)\n", cfg.KCMPort)
	kcm, err := start("kube-controller-manager", controlplane.ControllerManagerFlags(files, dirs.kcmKubeconf, dirs.certs, cfg.KCMPort)...)
	if err != nil {
		return err
	}
	// Its serving certificate is self-signed: only its health is read here.
	selfSigned := &http.Client{Timeout: 2 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}}
	if err := kcm.WaitFor(ctx, startTimeout, time.Second, "/healthz", func() error {
		return controlplane.GetOK(selfSigned, fmt.Sprintf("https://127.0.0.1:%d/healthz", cfg.KCMPort))
	}, progress(out, "kube-controller-manager /healthz")); err != nil {
		return err
	}

	printSummary(out, cfg, dirs, apiserver.LogFile)

	select {
	case <-ctx.Done():
		fmt.Fprintln(out, "\nInterrupted.")
		return nil
	case <-etcd.Exited():
		return etcd.Running()
	case <-apiserver.Exited():
		return apiserver.Running()
	case <-kcm.Exited():
		return kcm.Running()
	}
}

// pluginNames are the plugins of ours make run enables: every one, but InitialResources only
// with a Prometheus to read (PORTCULLIS_PROMETHEUS_URL).
func pluginNames(prometheus bool) []string {
	var names []string
	for _, p := range portcullisadmission.Plugins() {
		if p.Name == initialresources.PluginName && !prometheus {
			continue
		}
		names = append(names, p.Name)
	}
	return names
}

func adminClient(kubeconfig string) (kubernetes.Interface, dynamic.Interface, error) {
	restConfig, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		return nil, nil, fmt.Errorf("reading %s: %w", kubeconfig, err)
	}
	restConfig.Timeout = 5 * time.Second
	client, err := kubernetes.NewForConfig(restConfig)
	if err != nil {
		return nil, nil, err
	}
	dyn, err := dynamic.NewForConfig(restConfig)
	return client, dyn, err
}

// readyz returns nil when /readyz passes, or an error naming the checks still failing.
func readyz(ctx context.Context, client kubernetes.Interface) error {
	body, err := client.Discovery().RESTClient().Get().AbsPath("/readyz").Param("verbose", "true").DoRaw(ctx)
	if err == nil {
		return nil
	}
	var failing []string
	for _, line := range strings.Split(string(body), "\n") {
		if strings.HasPrefix(line, "[-]") {
			failing = append(failing, strings.Fields(strings.TrimPrefix(line, "[-]"))[0])
		}
	}
	if len(failing) > 0 {
		return fmt.Errorf("waiting on %s", strings.Join(failing, ", "))
	}
	return err
}

// progress prints a line every few seconds while a component is not yet ready.
func progress(out io.Writer, what string) func(time.Duration, error) {
	var last time.Duration
	return func(elapsed time.Duration, err error) {
		if elapsed-last < 3*time.Second {
			return
		}
		last = elapsed
		fmt.Fprintf(out, "  waiting for %s (%ds): %v\n", what, int(elapsed.Seconds()), err)
	}
}

func printSummary(out io.Writer, cfg config, dirs layout, apiserverLog string) {
	fmt.Fprintf(out, "\n%s\n\n", ReadyBanner)
	fmt.Fprintf(out, "  kubeconfig:  %s\n", dirs.adminKubeconfig)
	fmt.Fprintf(out, "  try:         kubectl --kubeconfig %s get ns\n", dirs.adminKubeconfig)
	fmt.Fprintf(out, "  admission:   %s (edit it, then restart)\n", dirs.admissionConfig)
	if data, err := os.ReadFile(apiserverLog); err == nil {
		if chains, err := controlplane.ParseChains(data); err == nil {
			fmt.Fprintf(out, "  mutating:    %s\n", strings.Join(chains.Mutating, ", "))
			fmt.Fprintf(out, "  validating:  %s\n", strings.Join(chains.Validating, ", "))
		}
	}
	fmt.Fprintf(out, "  logs:        %s/\n", dirs.logs)
	fmt.Fprintf(out, "\nNo scheduler and no nodes run here: pods are admitted and stay Pending.\n")
	fmt.Fprintf(out, "Press Ctrl-C to stop; objects are kept in %s for the next run.\n", dirs.etcdData)
}
