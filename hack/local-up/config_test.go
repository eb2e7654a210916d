package main

import (
	"strings"
	"testing"
)

func TestConfigFromEnv(t *testing.T) {
	tests := []struct {
		name    string
		env     map[string]string
		wantErr string
		check   func(*testing.T, config)
	}{
		{
			name: "defaults",
			env:  map[string]string{},
			check: func(t *testing.T, c config) {
				if c.APIPort != 6443 || c.EtcdPort != 2379 || c.EtcdPeerPort != 2380 || c.KCMPort != 10257 {
					t.Errorf("default ports: %+v", c)
				}
				if !strings.HasSuffix(c.RunDir, "/_output/local") {
					t.Errorf("default RUN_DIR %s", c.RunDir)
				}
			},
		},
		{
			name: "overrides",
			env:  map[string]string{"API_PORT": "7443", "RUN_DIR": "/tmp/x"},
			check: func(t *testing.T, c config) {
				if c.APIPort != 7443 || c.RunDir != "/tmp/x" {
					t.Errorf("overrides ignored: %+v", c)
				}
			},
		},
		{
			name: "a Prometheus",
			env:  map[string]string{"PORTCULLIS_PROMETHEUS_URL": "http://127.0.0.1:9090"},
			check: func(t *testing.T, c config) {
				if c.PrometheusURL != "http://127.0.0.1:9090" {
					t.Errorf("PrometheusURL %q", c.PrometheusURL)
				}
			},
		},
		{name: "a Prometheus that is no URL", env: map[string]string{"PORTCULLIS_PROMETHEUS_URL": "127.0.0.1:9090"}, wantErr: `PORTCULLIS_PROMETHEUS_URL="127.0.0.1:9090" is not an http or https URL`},
		{name: "not a number", env: map[string]string{"ETCD_PORT": "abc"}, wantErr: `ETCD_PORT="abc" is not a port number`},
		{name: "out of range", env: map[string]string{"API_PORT": "70000"}, wantErr: `API_PORT="70000" is not a port number`},
		{name: "two variables, one port", env: map[string]string{"KCM_PORT": "6443"}, wantErr: "API_PORT and KCM_PORT are both 6443"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c, err := configFromEnv(func(k string) string { return tc.env[k] })
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("want error %q, got %v", tc.wantErr, err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			tc.check(t, c)
		})
	}
}
