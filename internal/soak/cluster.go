package soak

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/portcullis-k8s/portcullis/internal/controlplane"
	"github.com/portcullis-k8s/portcullis/internal/proc"
	portcullisadmission "github.com/portcullis-k8s/portcullis/pkg/admission"
)

const (
	// stopGrace bounds a graceful stop of a server.
	stopGrace = 30 * time.Second
	// startTimeout bounds a start; on two busy cores kube-apiserver needs well under a minute.
	startTimeout = 3 * time.Minute
	// pollInterval paces every readiness and recovery poll.
	pollInterval = 100 * time.Millisecond
)

// etcdMember is a single-member etcd on loopback that can be killed and restarted on the
// same data dir and ports.
type etcdMember struct {
	binary, dir string
	flags       []string
	clientURL   string
	process     *proc.Process
}

// startEtcdMember starts a single-member etcd with its data and log in dir.
func startEtcdMember(ctx context.Context, binary, dir string, fsync bool) (*etcdMember, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	ports, err := freePorts(2)
	if err != nil {
		return nil, err
	}
	flags := controlplane.EtcdFlags(filepath.Join(dir, "data"), ports[0], ports[1])
	if !fsync {
		flags = append(flags, "--unsafe-no-fsync")
	}
	e := &etcdMember{binary: binary, dir: dir, flags: flags, clientURL: controlplane.EtcdURL(ports[0])}
	return e, e.start(ctx)
}

// start runs etcd, appending to its log, and waits until it reports healthy.
func (e *etcdMember) start(ctx context.Context) error {
	p, err := proc.Start("etcd", filepath.Join(e.dir, "etcd.log"), e.binary, e.flags...)
	if err != nil {
		return err
	}
	e.process = p
	client := &http.Client{Timeout: 2 * time.Second}
	err = p.WaitFor(ctx, time.Minute, pollInterval, "health", func() error {
		return controlplane.GetOK(client, e.clientURL+"/health")
	}, nil)
	if err != nil {
		return errors.Join(err, p.Stop(stopGrace))
	}
	return nil
}

// kill sends SIGKILL and waits for the process to be gone.
func (e *etcdMember) kill() error { return killProcess(e.process) }

func (e *etcdMember) stop() error {
	if e.process == nil {
		return nil
	}
	return e.process.Stop(stopGrace)
}

// killProcess SIGKILLs p and waits, boundedly, for it to exit.
func killProcess(p *proc.Process) error {
	if err := syscall.Kill(p.Pid(), syscall.SIGKILL); err != nil && !errors.Is(err, syscall.ESRCH) {
		return fmt.Errorf("killing %s: %w", p.Name, err)
	}
	select {
	case <-p.Exited():
		return nil
	case <-time.After(30 * time.Second):
		return fmt.Errorf("%s did not exit within 30s of SIGKILL", p.Name)
	}
}

// apiServer is a kube-apiserver process on loopback.
type apiServer struct {
	binary, dir string
	flags       []string
	port        int
	process     *proc.Process
	// admin reaches the server as O=system:masters.
	admin  *rest.Config
	client kubernetes.Interface
}

// serverSetup is what every kube-apiserver of a run shares.
type serverSetup struct {
	binary  string
	kind    string // Ours or Stock
	pki     *controlplane.PKI
	etcdURL string
	// admissionConfig is ours' admission configuration file.
	admissionConfig string
	// plugins are the plugins of ours ours enables; nil: every one.
	plugins []string
	// extraFlags go after the rest, and may override them.
	extraFlags []string
}

// startAPIServer starts a kube-apiserver on a fresh port, its log in dir, and waits for
// /readyz. Ours runs with every plugin of ours enabled (or s.plugins); stock with its defaults.
func startAPIServer(ctx context.Context, s serverSetup, dir string) (*apiServer, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	ports, err := freePorts(1)
	if err != nil {
		return nil, err
	}
	flags := controlplane.APIServerFlags(s.pki, dir, s.etcdURL, ports[0])
	if s.kind == Ours {
		plugins := s.plugins
		if plugins == nil {
			plugins = ourPluginNames()
		}
		flags = append(flags,
			"--enable-admission-plugins="+strings.Join(plugins, ","),
			"--admission-control-config-file="+s.admissionConfig)
	}
	flags = append(flags, s.extraFlags...)
	admin := &rest.Config{
		Host: controlplane.URL(ports[0]),
		TLSClientConfig: rest.TLSClientConfig{
			CAFile: s.pki.CA.CertFile, CertFile: s.pki.Admin.CertFile, KeyFile: s.pki.Admin.KeyFile,
		},
		QPS:            -1,
		Timeout:        30 * time.Second,
		WarningHandler: rest.NoWarnings{},
		UserAgent:      "portcullis-soak-admin",
	}
	client, err := kubernetes.NewForConfig(admin)
	if err != nil {
		return nil, err
	}
	a := &apiServer{binary: s.binary, dir: dir, flags: flags, port: ports[0], admin: admin, client: client}
	return a, a.start(ctx)
}

// start runs the server, appending to its log, and waits for /readyz.
func (a *apiServer) start(ctx context.Context) error {
	p, err := proc.Start(filepath.Base(a.binary), a.logFile(), a.binary, a.flags...)
	if err != nil {
		return err
	}
	a.process = p
	if err := a.waitReady(ctx, p); err != nil {
		return errors.Join(err, p.Stop(stopGrace))
	}
	return nil
}

func (a *apiServer) waitReady(ctx context.Context, p *proc.Process) error {
	return p.WaitFor(ctx, startTimeout, pollInterval, "/readyz", func() error { return a.readyz(ctx) }, nil)
}

// readyz returns nil when /readyz answers ok.
func (a *apiServer) readyz(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	_, err := a.client.Discovery().RESTClient().Get().AbsPath("/readyz").DoRaw(ctx)
	return err
}

func (a *apiServer) logFile() string { return filepath.Join(a.dir, "kube-apiserver.log") }

func (a *apiServer) stop() error {
	if a.process == nil {
		return nil
	}
	return a.process.Stop(stopGrace)
}

// ourPluginNames are the plugins of pkg/admission's registry: the one list of ours.
func ourPluginNames() []string {
	var names []string
	for _, p := range portcullisadmission.Plugins() {
		names = append(names, p.Name)
	}
	return names
}

// writeAdmissionConfig writes ours' --admission-control-config-file, as `make run` writes it
// (controlplane.AdmissionConfig): each plugin's example configuration from the registry, and
// the Portcullis entry with our webhook dispatch on.
func writeAdmissionConfig(path string) error {
	return os.WriteFile(path, []byte(controlplane.AdmissionConfig(false, "")), 0o600)
}

// freePorts returns n distinct TCP ports of 127.0.0.1 that were free a moment ago.
func freePorts(n int) ([]int, error) {
	var listeners []net.Listener
	defer func() {
		for _, l := range listeners {
			l.Close()
		}
	}()
	ports := make([]int, n)
	for i := range ports {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, err
		}
		listeners = append(listeners, l)
		ports[i] = l.Addr().(*net.TCPAddr).Port
	}
	return ports, nil
}
