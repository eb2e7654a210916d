package main

import (
	"crypto/x509"
	"encoding/pem"
	"fmt"
	"os"
	"path/filepath"
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

// TestThirdPartyEntries: the modules' licence tree goes under the documentation directory,
// every file at its path, readable by all whatever its mode (go-licenses writes 0444), in
// lexical order; an empty tree or one holding other than regular files is refused.
func TestThirdPartyEntries(t *testing.T) {
	dir := t.TempDir()
	for path, text := range map[string]string{"k8s.io/apiserver/LICENSE": "Apache-2.0\n", "github.com/a/b/LICENSE": "MIT\n"} {
		path = filepath.Join(dir, path)
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(text), 0o444); err != nil {
			t.Fatal(err)
		}
	}
	entries, err := thirdPartyEntries(dir)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, e := range entries {
		got = append(got, fmt.Sprintf("%s %o %q", e.name, e.mode, e.data))
	}
	want := []string{
		`usr/share/doc/portcullis/third-party/github.com/a/b/LICENSE 644 "MIT\n"`,
		`usr/share/doc/portcullis/third-party/k8s.io/apiserver/LICENSE 644 "Apache-2.0\n"`,
	}
	if !slices.Equal(got, want) {
		t.Errorf("entries %q, want %q", got, want)
	}
	if entries, err := thirdPartyEntries(""); err != nil || entries != nil {
		t.Errorf("no directory: %v, %v; want none", entries, err)
	}
	if _, err := thirdPartyEntries(t.TempDir()); err == nil {
		t.Error("an empty directory: no error")
	}
	if err := os.Symlink("/etc/passwd", filepath.Join(dir, "link")); err != nil {
		t.Fatal(err)
	}
	if _, err := thirdPartyEntries(dir); err == nil || !strings.Contains(err.Error(), "not a regular file") {
		t.Errorf("a symlink in the tree: %v", err)
	}
}
