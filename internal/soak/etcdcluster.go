package soak

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/portcullis-k8s/portcullis/internal/controlplane"
	"github.com/portcullis-k8s/portcullis/internal/pki"
	"github.com/portcullis-k8s/portcullis/internal/proc"
)

// etcdClusterSize is the HA run's number of etcd members: the smallest that survives one.
const etcdClusterSize = 3

// etcdCluster is a three-member etcd on loopback whose peers and clients all speak mutual
// TLS, with certificates from internal/pki.
type etcdCluster struct {
	members []*proc.Process
	// clientURLs are the members' https client URLs.
	clientURLs []string
	// ca verifies the members; client is the pair kube-apiserver and the loss check present.
	ca     string
	client pki.Pair
	tls    *tls.Config
}

// startEtcdCluster writes the cluster's PKI into dir, starts the members together (none is
// healthy before a quorum is) and waits until each reports healthy over TLS.
func startEtcdCluster(ctx context.Context, binary, dir string, fsync bool) (c *etcdCluster, err error) {
	pkiDir := filepath.Join(dir, "pki")
	if err := os.MkdirAll(pkiDir, 0o700); err != nil {
		return nil, err
	}
	ca, err := pki.LoadOrCreateCA(pkiDir, "etcd-ca")
	if err != nil {
		return nil, err
	}
	c = &etcdCluster{ca: ca.CertFile}
	if c.client, err = ca.ClientCert(pkiDir, "etcd-client", "kube-apiserver-etcd-client"); err != nil {
		return nil, err
	}
	if c.tls, err = clientTLS(c.ca, c.client); err != nil {
		return nil, err
	}
	ports, err := freePorts(2 * etcdClusterSize)
	if err != nil {
		return nil, err
	}
	var initial []string
	for i := range etcdClusterSize {
		initial = append(initial, fmt.Sprintf("member-%d=https://127.0.0.1:%d", i, ports[2*i+1]))
		c.clientURLs = append(c.clientURLs, fmt.Sprintf("https://127.0.0.1:%d", ports[2*i]))
	}
	defer func() {
		if err != nil {
			err = errors.Join(err, c.stop())
		}
	}()
	for i := range etcdClusterSize {
		name := fmt.Sprintf("member-%d", i)
		// One certificate for serving clients and for the peer connections, both ways.
		pair, err := ca.PeerCert(pkiDir, name, []net.IP{net.IPv4(127, 0, 0, 1)}, []string{"localhost"})
		if err != nil {
			return nil, err
		}
		memberDir := filepath.Join(dir, name)
		if err := os.MkdirAll(memberDir, 0o755); err != nil {
			return nil, err
		}
		peerURL := fmt.Sprintf("https://127.0.0.1:%d", ports[2*i+1])
		flags := []string{
			"--name=" + name,
			"--data-dir=" + filepath.Join(memberDir, "data"),
			"--listen-client-urls=" + c.clientURLs[i],
			"--advertise-client-urls=" + c.clientURLs[i],
			"--listen-peer-urls=" + peerURL,
			"--initial-advertise-peer-urls=" + peerURL,
			"--initial-cluster=" + strings.Join(initial, ","),
			"--initial-cluster-state=new",
			"--initial-cluster-token=portcullis-soak",
			"--cert-file=" + pair.CertFile, "--key-file=" + pair.KeyFile,
			"--trusted-ca-file=" + ca.CertFile, "--client-cert-auth",
			"--peer-cert-file=" + pair.CertFile, "--peer-key-file=" + pair.KeyFile,
			"--peer-trusted-ca-file=" + ca.CertFile, "--peer-client-cert-auth",
			"--log-level=warn",
		}
		if !fsync {
			flags = append(flags, "--unsafe-no-fsync")
		}
		p, err := proc.Start(name, filepath.Join(memberDir, "etcd.log"), binary, flags...)
		if err != nil {
			return nil, err
		}
		c.members = append(c.members, p)
	}
	client := &http.Client{Timeout: 2 * time.Second, Transport: &http.Transport{TLSClientConfig: c.tls}}
	defer client.CloseIdleConnections()
	for i, p := range c.members {
		url := c.clientURLs[i] + "/health"
		if err := p.WaitFor(ctx, time.Minute, pollInterval, "health over TLS", func() error { return controlplane.GetOK(client, url) }, nil); err != nil {
			return nil, err
		}
	}
	return c, nil
}

// apiServerFlags point kube-apiserver at every member, over mutual TLS.
func (c *etcdCluster) apiServerFlags() []string {
	return []string{
		"--etcd-servers=" + strings.Join(c.clientURLs, ","),
		"--etcd-cafile=" + c.ca,
		"--etcd-certfile=" + c.client.CertFile,
		"--etcd-keyfile=" + c.client.KeyFile,
	}
}

func (c *etcdCluster) access() etcdAccess { return etcdAccess{endpoints: c.clientURLs, tls: c.tls} }

func (c *etcdCluster) logFiles() []string {
	var files []string
	for _, p := range c.members {
		files = append(files, p.LogFile)
	}
	return files
}

func (c *etcdCluster) stop() error {
	var errs []error
	for _, p := range c.members {
		errs = append(errs, p.Stop(stopGrace))
	}
	return errors.Join(errs...)
}

// clientTLS trusts caFile and presents pair.
func clientTLS(caFile string, pair pki.Pair) (*tls.Config, error) {
	caPEM, err := os.ReadFile(caFile)
	if err != nil {
		return nil, err
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(caPEM) {
		return nil, fmt.Errorf("%s holds no certificate", caFile)
	}
	cert, err := tls.LoadX509KeyPair(pair.CertFile, pair.KeyFile)
	if err != nil {
		return nil, err
	}
	return &tls.Config{RootCAs: pool, Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12}, nil
}
