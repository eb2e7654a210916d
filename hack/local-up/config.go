package main

import (
	"errors"
	"fmt"
	"net"
	"net/url"
	"path/filepath"
	"strconv"
)

// config is what `make run` reads from the environment.
type config struct {
	RunDir       string // RUN_DIR: PKI, kubeconfigs, etcd data, logs
	BinDir       string // PORTCULLIS_BIN_DIR: the binaries `make run` built
	APIPort      int    // API_PORT
	EtcdPort     int    // ETCD_PORT
	EtcdPeerPort int    // ETCD_PEER_PORT
	KCMPort      int    // KCM_PORT: kube-controller-manager's health and metrics
	// PrometheusURL (PORTCULLIS_PROMETHEUS_URL) is a Prometheus for InitialResources, which
	// is enabled only with one.
	PrometheusURL string
}

// portSetting ties a port to the variable that moves it, for error messages.
type portSetting struct {
	variable string
	port     *int
	fallback int
}

func (c *config) ports() []portSetting {
	return []portSetting{
		{"API_PORT", &c.APIPort, 6443},
		{"ETCD_PORT", &c.EtcdPort, 2379},
		{"ETCD_PEER_PORT", &c.EtcdPeerPort, 2380},
		{"KCM_PORT", &c.KCMPort, 10257},
	}
}

func configFromEnv(getenv func(string) string) (config, error) {
	c := config{
		RunDir: valueOr(getenv("RUN_DIR"), filepath.Join("_output", "local")),
		BinDir: valueOr(getenv("PORTCULLIS_BIN_DIR"), filepath.Join("_output", "bin")),
	}
	var errs []error
	if raw := getenv("PORTCULLIS_PROMETHEUS_URL"); raw != "" {
		if u, err := url.Parse(raw); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			errs = append(errs, fmt.Errorf("PORTCULLIS_PROMETHEUS_URL=%q is not an http or https URL with a host", raw))
		}
		c.PrometheusURL = raw
	}
	for _, p := range c.ports() {
		raw := getenv(p.variable)
		if raw == "" {
			*p.port = p.fallback
			continue
		}
		n, err := strconv.Atoi(raw)
		if err != nil || n < 1 || n > 65535 {
			errs = append(errs, fmt.Errorf("%s=%q is not a port number (1-65535)", p.variable, raw))
			continue
		}
		*p.port = n
	}
	seen := map[int]string{}
	for _, p := range c.ports() {
		if other, ok := seen[*p.port]; ok && *p.port != 0 {
			errs = append(errs, fmt.Errorf("%s and %s are both %d; give each its own port", other, p.variable, *p.port))
		}
		seen[*p.port] = p.variable
	}
	var err error
	if c.RunDir, err = filepath.Abs(c.RunDir); err != nil {
		errs = append(errs, err)
	}
	if c.BinDir, err = filepath.Abs(c.BinDir); err != nil {
		errs = append(errs, err)
	}
	return c, errors.Join(errs...)
}

// checkPortsFree reports every port that something else already listens on, naming the
// variable that moves it, before anything is started.
func (c *config) checkPortsFree() error {
	var errs []error
	for _, p := range c.ports() {
		l, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(*p.port)))
		if err != nil {
			errs = append(errs, fmt.Errorf("port %d is already in use (%s): stop what holds it or set %s to another port", *p.port, p.variable, p.variable))
			continue
		}
		l.Close()
	}
	return errors.Join(errs...)
}

func valueOr(v, fallback string) string {
	if v == "" {
		return fallback
	}
	return v
}
