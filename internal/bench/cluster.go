package bench

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/portcullis-k8s/portcullis/internal/controlplane"
	"github.com/portcullis-k8s/portcullis/internal/proc"
)

const (
	// stopGrace bounds a graceful stop; kube-apiserver drains for a few seconds by design.
	stopGrace = 60 * time.Second
	// readyTimeout bounds a start: on 2 busy cores kube-apiserver needs well under a minute.
	readyTimeout = 3 * time.Minute
	// readyPollInterval is the resolution of the start → /readyz measurement.
	readyPollInterval = 50 * time.Millisecond
)

// etcdServer is a single-member etcd on loopback.
type etcdServer struct {
	process   *proc.Process
	clientURL string
}

// startEtcd starts etcd with its data and log in dir and waits until it reports healthy.
func startEtcd(ctx context.Context, binary, dir string) (*etcdServer, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	clientPort, err := freePort()
	if err != nil {
		return nil, err
	}
	peerPort, err := freePort()
	if err != nil {
		return nil, err
	}
	flags := controlplane.EtcdFlags(filepath.Join(dir, "data"), clientPort, peerPort)
	// Benchmark data is thrown away: skip fsync, as the integration tests do, so the disk
	// of a shared machine does not dominate the figures.
	flags = append(flags, "--unsafe-no-fsync")
	p, err := proc.Start("etcd", filepath.Join(dir, "etcd.log"), binary, flags...)
	if err != nil {
		return nil, err
	}
	e := &etcdServer{process: p, clientURL: controlplane.EtcdURL(clientPort)}
	client := &http.Client{Timeout: 2 * time.Second}
	err = p.WaitFor(ctx, time.Minute, 100*time.Millisecond, "health", func() error {
		return controlplane.GetOK(client, e.clientURL+"/health")
	}, nil)
	if err != nil {
		return nil, errors.Join(err, p.Stop(stopGrace))
	}
	return e, nil
}

func (e *etcdServer) stop() error { return e.process.Stop(stopGrace) }

// apiServer is a kube-apiserver process on loopback.
type apiServer struct {
	process *proc.Process
	// config reaches the server as an admin (O=system:masters), whose requests the
	// server's priority and fairness exempts from queuing.
	config *rest.Config
	client kubernetes.Interface
	// readyAfter is the time from starting the process to the first successful /readyz.
	readyAfter time.Duration
	logFile    string
}

// startAPIServer runs binary against etcdURL with the flags of a single-node control plane
// plus extraFlags, keeping its log in dir, and waits for /readyz.
func startAPIServer(ctx context.Context, binary string, files *controlplane.PKI, dir, etcdURL string, extraFlags ...string) (*apiServer, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	port, err := freePort()
	if err != nil {
		return nil, err
	}
	config := &rest.Config{
		Host: controlplane.URL(port),
		TLSClientConfig: rest.TLSClientConfig{
			CAFile:   files.CA.CertFile,
			CertFile: files.Admin.CertFile,
			KeyFile:  files.Admin.KeyFile,
		},
		// No client-side rate limit: the load generator decides the pace.
		QPS:     -1,
		Timeout: 30 * time.Second,
	}
	client, err := kubernetes.NewForConfig(config)
	if err != nil {
		return nil, err
	}
	httpClient, err := rest.HTTPClientFor(config)
	if err != nil {
		return nil, err
	}
	httpClient.Timeout = 2 * time.Second
	readyz := config.Host + "/readyz"

	flags := append(controlplane.APIServerFlags(files, dir, etcdURL, port), extraFlags...)
	logFile := filepath.Join(dir, "kube-apiserver.log")
	started := time.Now()
	p, err := proc.Start(filepath.Base(binary), logFile, binary, flags...)
	if err != nil {
		return nil, err
	}
	var readyAt time.Time
	err = p.WaitFor(ctx, readyTimeout, readyPollInterval, "/readyz", func() error {
		resp, err := httpClient.Get(readyz)
		if err != nil {
			return err
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			return fmt.Errorf("/readyz: %s", resp.Status)
		}
		readyAt = time.Now()
		return nil
	}, nil)
	httpClient.CloseIdleConnections()
	if err != nil {
		return nil, errors.Join(err, p.Stop(stopGrace))
	}
	return &apiServer{process: p, config: config, client: client, readyAfter: readyAt.Sub(started), logFile: logFile}, nil
}

func (s *apiServer) stop() error { return s.process.Stop(stopGrace) }

// rss returns the server's resident set size in bytes.
func (s *apiServer) rss() (uint64, error) { return residentSetSize(s.process.Pid()) }

// residentSetSize reads VmRSS from /proc/<pid>/status.
func residentSetSize(pid int) (uint64, error) {
	path := fmt.Sprintf("/proc/%d/status", pid)
	f, err := os.Open(path)
	if err != nil {
		return 0, err
	}
	defer f.Close()
	return parseVmRSS(f, path)
}

func parseVmRSS(status io.Reader, path string) (uint64, error) {
	scanner := bufio.NewScanner(status)
	for scanner.Scan() {
		value, ok := strings.CutPrefix(scanner.Text(), "VmRSS:")
		if !ok {
			continue
		}
		fields := strings.Fields(value)
		if len(fields) != 2 || fields[1] != "kB" {
			return 0, fmt.Errorf("%s: unexpected VmRSS line %q", path, scanner.Text())
		}
		kib, err := strconv.ParseUint(fields[0], 10, 64)
		if err != nil {
			return 0, fmt.Errorf("%s: %w", path, err)
		}
		return kib * 1024, nil
	}
	if err := scanner.Err(); err != nil {
		return 0, fmt.Errorf("reading %s: %w", path, err)
	}
	return 0, fmt.Errorf("%s has no VmRSS line", path)
}

// freePort returns a TCP port on 127.0.0.1 that was free a moment ago.
func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// cpuDuring runs work and returns the server's CPU time (user and system) meanwhile, from
// /proc/<pid>/stat: unlike throughput, it does not depend on what else the machine runs.
func (s *apiServer) cpuDuring(work func() error) (time.Duration, error) {
	before, err := processCPU(s.process.Pid())
	if err != nil {
		return 0, err
	}
	if err := work(); err != nil {
		return 0, err
	}
	after, err := processCPU(s.process.Pid())
	if err != nil {
		return 0, err
	}
	return after - before, nil
}
