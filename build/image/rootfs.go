package main

import (
	_ "embed"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
)

// The image's filesystem and runtime settings follow upstream's kube-apiserver image:
// registry.k8s.io/kube-apiserver is built FROM go-runner, which is FROM
// gcr.io/distroless/static-debian12 with no USER of its own, so it runs as root (uid 0). Its
// /etc/passwd is distroless's: root, nonroot (65532) and nobody (65534), so that an operator
// who sets runAsUser: 65532 — or kubeadm's RootlessControlPlane, which sets its own uid —
// gets a named user. Running as root by default is what makes this image a drop-in for
// kubeadm's static pod, whose keys under /etc/kubernetes/pki are root's and mode 0600.
const (
	binaryPath = "/usr/local/bin/kube-apiserver"
	imageUser  = "0"
	caBundle   = "/etc/ssl/certs/ca-certificates.crt"
)

// imageEnv is distroless's: a PATH holding /usr/local/bin, so a pod's command
// "kube-apiserver" (kubeadm's) resolves, and SSL_CERT_FILE for the CA bundle.
var imageEnv = []string{
	"PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
	"SSL_CERT_FILE=" + caBundle,
}

// caCertificates is Mozilla's CA set as Debian packages it, snapshotted into the repository
// by hack/update-ca-certificates.sh so the image does not depend on the build machine (whose
// own bundle may hold local additions).
//
//go:embed ca-certificates.crt
var caCertificates []byte

// account is a user with a group of the same name and id.
type account struct {
	name string
	id   int
	home string
}

var accounts = []account{
	{name: "root", id: 0, home: "/root"},
	{name: "nonroot", id: 65532, home: "/home/nonroot"},
	{name: "nobody", id: 65534, home: "/nonexistent"},
}

// passwdFile renders /etc/passwd; no account has a usable shell.
func passwdFile(accounts []account) []byte {
	var b strings.Builder
	for _, a := range accounts {
		fmt.Fprintf(&b, "%s:x:%d:%d:%s:%s:/sbin/nologin\n", a.name, a.id, a.id, a.name, a.home)
	}
	return []byte(b.String())
}

// groupFile renders /etc/group.
func groupFile(accounts []account) []byte {
	var b strings.Builder
	for _, a := range accounts {
		fmt.Fprintf(&b, "%s:x:%d:\n", a.name, a.id)
	}
	return []byte(b.String())
}

// docDirectory holds the licence and notice the image redistributes Apache-2.0 code under.
const docDirectory = "usr/share/doc/portcullis"

// baseEntries is the layer every platform shares: accounts, CA certificates, home
// directories and a world-writable /tmp (Go's os.TempDir), as in distroless, and the
// release's LICENSE and NOTICE.
func baseEntries(license, notice []byte) []entry {
	return []entry{
		{name: docDirectory + "/LICENSE", mode: 0o644, data: license},
		{name: docDirectory + "/NOTICE", mode: 0o644, data: notice},
		{name: "etc/passwd", mode: 0o644, data: passwdFile(accounts)},
		{name: "etc/group", mode: 0o644, data: groupFile(accounts)},
		{name: strings.TrimPrefix(caBundle, "/"), mode: 0o644, data: caCertificates},
		{name: "root", dir: true, mode: 0o700},
		{name: "home/nonroot", dir: true, mode: 0o700, uid: 65532, gid: 65532},
		{name: "tmp", dir: true, mode: 0o1777},
	}
}

// thirdPartyDirectory holds the licence texts of the modules the binary links.
const thirdPartyDirectory = docDirectory + "/third-party"

// thirdPartyEntries are the files of dir ("" for none), each under thirdPartyDirectory at
// its path in dir, readable by all: the licences (and, for reciprocal ones, the sources) of
// the modules the binary links, as go-licenses save lays them out.
func thirdPartyEntries(dir string) ([]entry, error) {
	if dir == "" {
		return nil, nil
	}
	var entries []entry
	err := fs.WalkDir(os.DirFS(dir), ".", func(path string, d fs.DirEntry, err error) error {
		switch {
		case err != nil:
			return err
		case d.IsDir():
			return nil
		case !d.Type().IsRegular():
			return fmt.Errorf("%s: not a regular file", path)
		}
		data, err := os.ReadFile(filepath.Join(dir, path))
		if err != nil {
			return err
		}
		entries = append(entries, entry{name: thirdPartyDirectory + "/" + path, mode: 0o644, data: data})
		return nil
	})
	if err == nil && len(entries) == 0 {
		err = errors.New("no licence file in it")
	}
	return entries, err
}

// binaryEntries is a platform's own layer: the binary alone.
func binaryEntries(binary []byte) []entry {
	return []entry{{name: strings.TrimPrefix(binaryPath, "/"), mode: 0o755, data: binary}}
}

// configFile is a platform's image configuration; the layers' diff IDs and history are
// added as the layers are appended.
func configFile(platform v1.Platform, created time.Time) *v1.ConfigFile {
	return &v1.ConfigFile{
		Architecture: platform.Architecture,
		OS:           platform.OS,
		Created:      v1.Time{Time: created},
		Config: v1.Config{
			Entrypoint: []string{binaryPath},
			User:       imageUser,
			Env:        imageEnv,
			WorkingDir: "/",
		},
		RootFS: v1.RootFS{Type: "layers"},
	}
}
