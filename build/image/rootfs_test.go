package main

import (
	"crypto/x509"
	"encoding/pem"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	v1 "github.com/google/go-containerregistry/pkg/v1"
)

func TestPasswdAndGroupFiles(t *testing.T) {
	tests := []struct {
		name       string
		accounts   []account
		wantPasswd string
		wantGroup  string
	}{
		{
			name:       "the image's accounts",
			accounts:   accounts,
			wantPasswd: "root:x:0:0:root:/root:/sbin/nologin\nnonroot:x:65532:65532:nonroot:/home/nonroot:/sbin/nologin\nnobody:x:65534:65534:nobody:/nonexistent:/sbin/nologin\n",
			wantGroup:  "root:x:0:\nnonroot:x:65532:\nnobody:x:65534:\n",
		},
		{name: "none", accounts: nil, wantPasswd: "", wantGroup: ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if diff := cmp.Diff(tt.wantPasswd, string(passwdFile(tt.accounts))); diff != "" {
				t.Errorf("/etc/passwd (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tt.wantGroup, string(groupFile(tt.accounts))); diff != "" {
				t.Errorf("/etc/group (-want +got):\n%s", diff)
			}
		})
	}
}

func TestImageUserHasAnAccount(t *testing.T) {
	if !slices.ContainsFunc(accounts, func(a account) bool { return imageUser == strconv.Itoa(a.id) }) {
		t.Errorf("the image runs as uid %s, which /etc/passwd does not list", imageUser)
	}
}

func TestConfigFile(t *testing.T) {
	for _, arch := range []string{"amd64", "arm64"} {
		t.Run(arch, func(t *testing.T) {
			got := configFile(v1.Platform{OS: "linux", Architecture: arch}, testEpoch)
			want := &v1.ConfigFile{
				Architecture: arch,
				OS:           "linux",
				Created:      v1.Time{Time: testEpoch},
				Config: v1.Config{
					Entrypoint: []string{"/usr/local/bin/kube-apiserver"},
					User:       "0",
					Env: []string{
						"PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
						"SSL_CERT_FILE=/etc/ssl/certs/ca-certificates.crt",
					},
					WorkingDir: "/",
				},
				RootFS: v1.RootFS{Type: "layers"},
			}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("config (-want +got):\n%s", diff)
			}
		})
	}
}

func TestCACertificatesBundle(t *testing.T) {
	rest := caCertificates
	var count int
	for {
		var block *pem.Block
		block, rest = pem.Decode(rest)
		if block == nil {
			break
		}
		if block.Type != "CERTIFICATE" {
			t.Fatalf("build/image/ca-certificates.crt: block %d is %q, want only CERTIFICATE", count+1, block.Type)
		}
		cert, err := x509.ParseCertificate(block.Bytes)
		if err != nil {
			t.Fatalf("build/image/ca-certificates.crt: certificate %d: %v", count+1, err)
		}
		if !cert.IsCA {
			t.Errorf("build/image/ca-certificates.crt: %q is not a CA certificate", cert.Subject)
		}
		count++
	}
	if strings.TrimSpace(string(rest)) != "" {
		t.Errorf("build/image/ca-certificates.crt: %d bytes after the last certificate are not PEM", len(rest))
	}
	// Mozilla's set has held well over a hundred roots for years; far fewer means a broken refresh.
	if count < 100 {
		t.Errorf("build/image/ca-certificates.crt holds %d certificates, want at least 100: run hack/update-ca-certificates.sh", count)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(caCertificates) {
		t.Error("crypto/x509 finds no certificates in build/image/ca-certificates.crt")
	}
}
