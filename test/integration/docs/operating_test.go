package docs_test

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/portcullis-k8s/portcullis/test/docs"
)

// releaseDir lays out what an operator has of a release: linux/amd64/kube-apiserver (our
// binary) and SHA256SUMS as build/release.sh writes it (over every artifact, most of which
// this node does not have). The guide's first block puts ./kube-apiserver beside them
// (operatorDir).
func releaseDir(t *testing.T, tl tools) string {
	t.Helper()
	dir := t.TempDir()
	binary := filepath.Join(dir, "linux", "amd64", "kube-apiserver")
	if err := os.MkdirAll(filepath.Dir(binary), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(tl.bins.APIServer, binary); err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(docs.ReadFile(t, tl.bins.APIServer))
	other := sha256.Sum256([]byte("an artifact this node does not have"))
	var sums strings.Builder
	for _, artifact := range []string{"linux/amd64/kube-apiserver", "linux/amd64/kube-apiserver.cdx.json", "linux/arm64/kube-apiserver", "linux/arm64/kube-apiserver.cdx.json", "kube-apiserver-" + version(t) + ".oci.tar"} {
		s := hex.EncodeToString(other[:])
		if artifact == "linux/amd64/kube-apiserver" {
			s = hex.EncodeToString(sum[:])
		}
		fmt.Fprintf(&sums, "%s  %s\n", s, artifact)
	}
	writeFile(t, filepath.Join(dir, "SHA256SUMS"), sums.String())
	return dir
}

// TestOperatingCheckBinary runs docs/operating.md's "Check the binary first".
func TestOperatingCheckBinary(t *testing.T) {
	tl := findTools(t)
	dir := releaseDir(t, tl)
	out, _ := docs.Run(t, docs.Block(t, docs.Operating, docs.KeyCheckBinary), docs.Options{Path: []string{tl.dir}, Dir: dir})
	for _, want := range []string{"linux/amd64/kube-apiserver: OK", "Kubernetes " + version(t)} {
		if !strings.Contains(out, want) {
			t.Errorf("the check printed no %q:\n%s", want, out)
		}
	}
	if !bytes.Equal(docs.ReadFile(t, filepath.Join(dir, "kube-apiserver")), docs.ReadFile(t, tl.bins.APIServer)) {
		t.Error("./kube-apiserver, which the guide runs from here on, is not the checked binary")
	}
}

// operatorDir is a release's directory after the guide's first block (TestOperatingCheckBinary
// runs it): ./kube-apiserver in it.
func operatorDir(t *testing.T, tl tools) string {
	t.Helper()
	dir := releaseDir(t, tl)
	docs.Run(t, docs.Block(t, docs.Operating, docs.KeyCheckBinary), docs.Options{Path: []string{tl.dir}, Dir: dir})
	return dir
}

// TestOperatingSystemdInstall runs 2b's step 1 twice, with a directory standing in for
// /usr/local/lib/portcullis: the binary lands in its release's directory, executable.
func TestOperatingSystemdInstall(t *testing.T) {
	tl := findTools(t)
	dir := releaseDir(t, tl)
	lib := t.TempDir()
	opts := docs.Options{Mounts: map[string]string{"/usr/local/lib/portcullis": lib}, Path: []string{tl.dir}, Dir: dir}
	block := docs.Block(t, docs.Operating, docs.KeySystemdInstall)
	for range 2 {
		docs.Run(t, block, opts)
	}
	installed := filepath.Join(lib, version(t), "kube-apiserver")
	info, err := os.Lstat(installed)
	if err != nil {
		t.Fatalf("the binary is not in its release's directory: %v", err)
	}
	if info.Mode() != 0o755 {
		t.Errorf("%s has mode %v, want -rwxr-xr-x", installed, info.Mode())
	}
	if !bytes.Equal(docs.ReadFile(t, installed), docs.ReadFile(t, tl.bins.APIServer)) {
		t.Errorf("%s is not the release's binary", installed)
	}
}

// TestOperatingSystemd runs 2b's steps 1, 2 and 4 on a systemd node running stock: the
// certificates kubeadm's layout puts in /etc/kubernetes/pki (the kit's environment file names
// them there; made by the real kubeadm), a running unit and environment file, then the kit's
// unit and environment file written over them (step 3, the operator's copy, done here), and
// the preflight of the new unit against the backup, which must pass.
func TestOperatingSystemd(t *testing.T) {
	n := newSystemdNode(t)
	etc, root, units, opts, unit, env := n.etc, n.root, n.units, n.opts, n.unit, n.env

	// The node as it runs: the kit's unit, stock's binary and stock's plugins.
	runningEnv := setEnv(t, env, "KUBE_APISERVER_BINARY", "/usr/local/bin/kube-apiserver")
	runningEnv = setEnv(t, runningEnv, "ENABLE_ADMISSION_PLUGINS", "NodeRestriction")
	// A flag of the node's own, which the kit's environment file does not have.
	const ownFlag = "--service-node-port-range=20000-22767"
	runningEnv = setEnv(t, runningEnv, "KUBE_APISERVER_EXTRA_ARGS", ownFlag)
	writeFile(t, filepath.Join(units, "kube-apiserver.service"), unit)
	writeFile(t, filepath.Join(etc, "kube-apiserver.env"), runningEnv)

	docs.Run(t, docs.Block(t, docs.Operating, docs.KeySystemdInstall), opts)
	// A drop-in of the node's own, which the backup keeps.
	writeFile(t, filepath.Join(units, "kube-apiserver.service.d", "10-limits.conf"), "[Service]\nLimitNOFILE=1048576\n")
	// A copy that fails (the environment file elsewhere) marks nothing taken: the block run
	// again, once the path is right, takes the backup whole.
	backup := docs.Block(t, docs.Operating, docs.KeySystemdBackup)
	envPath := filepath.Join(etc, "kube-apiserver.env")
	if err := os.Rename(envPath, envPath+".elsewhere"); err != nil {
		t.Fatal(err)
	}
	if _, _, err := docs.Exec(t, backup, opts); err == nil {
		t.Error("step 2 with the environment file missing succeeded")
	}
	if _, err := os.Stat(filepath.Join(root, "portcullis-backup", "taken")); err == nil {
		t.Error("step 2 with the environment file missing marked the backup taken")
	}
	if err := os.Rename(envPath+".elsewhere", envPath); err != nil {
		t.Fatal(err)
	}
	docs.Run(t, backup, opts)
	if got := string(docs.ReadFile(t, filepath.Join(root, "portcullis-backup", "kube-apiserver.service.d", "10-limits.conf"))); !strings.Contains(got, "LimitNOFILE=1048576") {
		t.Errorf("the backup did not keep the unit's drop-in: %q", got)
	}
	if got := string(docs.ReadFile(t, filepath.Join(root, "portcullis-backup", "kube-apiserver.env"))); got != runningEnv {
		t.Errorf("the backup of the environment file is not the running one")
	}
	writeFile(t, filepath.Join(etc, "kube-apiserver.env"), env)
	if err := os.Chmod(filepath.Join(etc, "kube-apiserver.env"), 0o600); err != nil {
		t.Fatal(err)
	}
	// Step 2 again, after step 3: the backup stays the running unit's.
	docs.Run(t, backup, opts)
	if got := string(docs.ReadFile(t, filepath.Join(root, "portcullis-backup", "kube-apiserver.env"))); got != runningEnv {
		t.Errorf("step 2 run again after step 3 replaced the backup with the new environment file")
	}
	// The kit's files as shipped drop the node's own flag: step 4 refuses them, naming it.
	stdout, stderr, err := docs.Exec(t, docs.Block(t, docs.Operating, docs.KeySystemdPreflight), opts)
	if err == nil || !strings.Contains(stdout, "--service-node-port-range=20000-22767, which the running unit") {
		t.Errorf("preflight of a new unit that drops %s: error %v\n%s\n%s", ownFlag, err, stdout, stderr)
	}
	// The way back when it fails: the backup over the new files.
	docs.Run(t, docs.Block(t, docs.Operating, docs.KeySystemdRestore), opts)
	if got := string(docs.ReadFile(t, filepath.Join(etc, "kube-apiserver.env"))); got != runningEnv {
		t.Error("putting the backup back did not restore the running environment file")
	}
	// Carried over into KUBE_APISERVER_EXTRA_ARGS, as step 3 says: it passes.
	writeFile(t, filepath.Join(etc, "kube-apiserver.env"), setEnv(t, env, "KUBE_APISERVER_EXTRA_ARGS", ownFlag))
	out, _ := docs.Run(t, docs.Block(t, docs.Operating, docs.KeySystemdPreflight), opts)
	if !strings.Contains(out, "No problems found") {
		t.Errorf("preflight of the new unit:\n%s", out)
	}

	// After a rollback the backup is moved away, and the next swap's step 2 backs up the unit
	// that runs then.
	docs.Run(t, docs.Block(t, docs.Operating, docs.KeySystemdBackupAway), opts)
	if moved, _ := filepath.Glob(filepath.Join(root, "portcullis-backup.*", "kube-apiserver.env")); len(moved) != 1 {
		t.Errorf("the backup moved away: %q, want one", moved)
	}
	now := string(docs.ReadFile(t, filepath.Join(etc, "kube-apiserver.env")))
	docs.Run(t, backup, opts)
	if got := string(docs.ReadFile(t, filepath.Join(root, "portcullis-backup", "kube-apiserver.env"))); got != now {
		t.Error("step 2 after the backup was moved away did not back up the environment file that runs")
	}
}

// systemdNode is a systemd node's file system, standing in directories: the certificates
// kubeadm's layout puts in /etc/kubernetes/pki (the kit's environment file names them there;
// made by the real kubeadm), the kit's admission configuration, and a release's directory
// after the guide's first block; unit and env are the kit's unit and environment file.
type systemdNode struct {
	tl                               tools
	dir, etc, root, units, lib, kube string
	opts                             docs.Options
	unit, env                        string
}

func newSystemdNode(t *testing.T) *systemdNode {
	t.Helper()
	tl := findTools(t)
	n := &systemdNode{tl: tl, dir: operatorDir(t, tl), etc: t.TempDir(), root: t.TempDir(), units: t.TempDir(), lib: t.TempDir(), kube: t.TempDir()}
	n.opts = docs.Options{
		Mounts: map[string]string{"/etc/kubernetes": n.etc, "/root": n.root, "/etc/systemd/system": n.units,
			"/usr/local/lib/portcullis": n.lib, "/usr/local/lib/kubernetes": n.kube},
		Path:     []string{tl.dir},
		Dir:      n.dir,
		Hostname: nodeName,
	}
	repo := docs.RepoRoot(t)
	config := kubeadmConfiguration(t, "")
	docs.Run(t, "kubeadm init phase certs all --config "+config+"\n", n.opts)
	writeFile(t, filepath.Join(n.etc, "portcullis", "admission-config.yaml"), string(docs.ReadFile(t, filepath.Join(repo, docs.AdmissionConfig))))
	n.unit = string(docs.ReadFile(t, filepath.Join(repo, "build/deploy/systemd/kube-apiserver.service")))
	n.env = string(docs.ReadFile(t, filepath.Join(repo, "build/deploy/systemd/kube-apiserver.env")))
	return n
}

// TestOperatingSystemdRollback runs 4's systemd rollback on a node that runs this release
// after an upgrade: the kit's unit and environment file, our plugins enabled. An earlier
// rollback, before the upgrade, kept the file of the release of ours it ran then: this one
// keeps the file that runs now. Stock of the minor before the upgrade is still installed:
// preflight refuses it, naming both versions; the guide's blocks install stock of the version
// the node runs from its server archive, keep the running environment file and point the unit
// at stock, and with our plugin names taken out, preflight passes. Going back puts the kept
// file in place once preflight passes it, and refuses an earlier release's.
func TestOperatingSystemdRollback(t *testing.T) {
	n := newSystemdNode(t)
	docs.Run(t, docs.Block(t, docs.Operating, docs.KeySystemdInstall), n.opts)
	writeFile(t, filepath.Join(n.units, "kube-apiserver.service"), n.unit)
	envFile := filepath.Join(n.etc, "kube-apiserver.env")
	kept := filepath.Join(n.root, "portcullis-rollback", "kube-apiserver.env")
	writeEnv := func(env string) {
		t.Helper()
		writeFile(t, envFile, env)
		if err := os.Chmod(envFile, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	kube := kubernetesVersion(t)
	var minor int
	if _, err := fmt.Sscanf(kube, "v1.%d.", &minor); err != nil {
		t.Fatalf("%s: %v", kube, err)
	}
	before := fmt.Sprintf("v1.%d.0", minor-1)
	// The version's server archive, unpacked beside ./kube-apiserver.
	archived := filepath.Join(n.dir, "kubernetes", "server", "bin", "kube-apiserver")
	writeFile(t, archived, string(docs.ReadFile(t, n.tl.bins.StockAPIServer)))
	if err := os.Chmod(archived, 0o755); err != nil {
		t.Fatal(err)
	}
	install := docs.Block(t, docs.Operating, docs.KeySystemdRollbackInstall)

	// An environment file that names no binary (a unit of the operator's own): the block
	// stops before it changes anything.
	noBinary := strings.Replace(n.env, "\nKUBE_APISERVER_BINARY=", "\n#KUBE_APISERVER_BINARY=", 1)
	writeEnv(noBinary)
	if _, _, err := docs.Exec(t, install, n.opts); err == nil {
		t.Error("the rollback block with no KUBE_APISERVER_BINARY succeeded")
	}
	if got := string(docs.ReadFile(t, envFile)); got != noBinary {
		t.Error("the rollback block that failed changed the environment file")
	}
	if entries, err := os.ReadDir(n.kube); err != nil || len(entries) > 0 {
		t.Errorf("the rollback block that failed installed %v (%v)", entries, err)
	}

	// A rollback before the upgrade, from the release of ours of the minor before; then back
	// to it (the kept file put back), then the upgrade to this release.
	earlierOurs := "/usr/local/lib/portcullis/" + before + "+portcullis.1/kube-apiserver"
	writeFile(t, filepath.Join(n.lib, before+"+portcullis.1", "kube-apiserver"), "#!/bin/sh\necho 'Kubernetes "+before+"+portcullis.1'\n")
	if err := os.Chmod(filepath.Join(n.lib, before+"+portcullis.1", "kube-apiserver"), 0o755); err != nil {
		t.Fatal(err)
	}
	earlierEnv := setEnv(t, n.env, "KUBE_APISERVER_BINARY", earlierOurs)
	writeEnv(earlierEnv)
	docs.Run(t, install, n.opts)
	if got := string(docs.ReadFile(t, kept)); got != earlierEnv {
		t.Fatal("the earlier rollback did not keep the environment file it ran")
	}
	writeEnv(earlierEnv)
	writeEnv(n.env)

	// This rollback, run twice, as an operator may: the second run keeps the first copy.
	for range 2 {
		docs.Run(t, install, n.opts)
	}
	installed := filepath.Join(n.kube, kube, "kube-apiserver")
	if !bytes.Equal(docs.ReadFile(t, installed), docs.ReadFile(t, n.tl.bins.StockAPIServer)) {
		t.Errorf("%s is not stock's binary", installed)
	}
	if got := string(docs.ReadFile(t, kept)); got != n.env {
		t.Error("the kept environment file is not the one running this release (an earlier rollback's was kept)")
	}
	pointed := string(docs.ReadFile(t, envFile))
	if !strings.Contains(pointed, "\nKUBE_APISERVER_BINARY=/usr/local/lib/kubernetes/"+kube+"/kube-apiserver\n") {
		t.Fatalf("the environment file does not point at stock %s:\n%s", kube, pointed)
	}
	// The operator's edit: our plugin names out.
	pointed = setEnv(t, pointed, "ENABLE_ADMISSION_PLUGINS", "NodeRestriction")
	check := docs.Block(t, docs.Operating, docs.KeySystemdRollbackPreflight)

	// Stock left from before the upgrade: refused.
	older := filepath.Join(n.kube, before, "kube-apiserver")
	writeFile(t, older, "#!/bin/sh\necho 'Kubernetes "+before+"'\n")
	if err := os.Chmod(older, 0o755); err != nil {
		t.Fatal(err)
	}
	writeEnv(setEnv(t, pointed, "KUBE_APISERVER_BINARY", "/usr/local/lib/kubernetes/"+before+"/kube-apiserver"))
	stdout, stderr, err := docs.Exec(t, check, n.opts)
	var exit *exec.ExitError
	if want := "stock kube-apiserver " + before + ", not " + kube + ", the version the node runs"; !errors.As(err, &exit) || exit.ExitCode() != 1 || !strings.Contains(stdout, want) {
		t.Errorf("preflight --rollback of a unit running stock %s: error %v, want exit 1 saying %q\n%s\n%s", before, err, want, stdout, stderr)
	}
	// As the guide says: passes.
	writeEnv(pointed)
	out, _ := docs.Run(t, check, n.opts)
	if !strings.Contains(out, "No problems found") {
		t.Errorf("preflight --rollback of the unit pointed at stock %s:\n%s", kube, out)
	}

	// Going back: a kept file of the release before is refused, and nothing is put in place.
	back := docs.Block(t, docs.Operating, docs.KeySystemdGoingBack)
	writeFile(t, kept, earlierEnv)
	if stdout, stderr, err := docs.Exec(t, back, n.opts); !errors.As(err, &exit) || !strings.Contains(stdout, earlierOurs) {
		t.Errorf("going back to the release before the upgrade: error %v, want preflight refusing %s\n%s\n%s", err, earlierOurs, stdout, stderr)
	}
	if got := string(docs.ReadFile(t, envFile)); got != pointed {
		t.Error("going back with a refused file changed the environment file")
	}
	// The cluster upgraded while it ran stock (a later patch): this release is older, refused.
	later := "v1.%d.99"
	later = fmt.Sprintf(later, minor)
	writeFile(t, filepath.Join(n.kube, later, "kube-apiserver"), "#!/bin/sh\necho 'Kubernetes "+later+"'\n")
	if err := os.Chmod(filepath.Join(n.kube, later, "kube-apiserver"), 0o755); err != nil {
		t.Fatal(err)
	}
	upgraded := setEnv(t, pointed, "KUBE_APISERVER_BINARY", "/usr/local/lib/kubernetes/"+later+"/kube-apiserver")
	writeEnv(upgraded)
	writeFile(t, kept, n.env)
	if stdout, stderr, err := docs.Exec(t, back, n.opts); !errors.As(err, &exit) || !strings.Contains(stdout, "Kubernetes "+kube+", older than "+later) {
		t.Errorf("going back after an upgrade on stock: error %v, want preflight refusing this release as older than %s\n%s\n%s", err, later, stdout, stderr)
	}
	if got := string(docs.ReadFile(t, envFile)); got != upgraded {
		t.Error("going back with a refused file changed the environment file")
	}
	// The file this rollback kept, on the version the node runs: in place.
	writeEnv(pointed)
	docs.Run(t, back, n.opts)
	if got := string(docs.ReadFile(t, envFile)); got != n.env {
		t.Error("going back did not put the kept environment file in place")
	}
}

// setEnv sets name's value in an environment file.
func setEnv(t *testing.T, env, name, value string) string {
	t.Helper()
	lines := strings.Split(env, "\n")
	for i, line := range lines {
		if strings.HasPrefix(line, name+"=") {
			lines[i] = name + "=" + value
			return strings.Join(lines, "\n")
		}
	}
	t.Fatalf("the environment file sets no %s", name)
	return ""
}

// kubeadmConfiguration writes kubeadm's configuration of a node advertising advertiseAddress,
// at this release's Kubernetes version, with initExtra appended to its InitConfiguration
// (YAML at the document's top level), and returns its path.
func kubeadmConfiguration(t *testing.T, initExtra string) string {
	t.Helper()
	config := filepath.Join(t.TempDir(), "kubeadm.yaml")
	writeFile(t, config, `apiVersion: kubeadm.k8s.io/v1beta4
kind: InitConfiguration
localAPIEndpoint:
  advertiseAddress: `+advertiseAddress+`
nodeRegistration:
  name: `+nodeName+`
`+initExtra+`---
apiVersion: kubeadm.k8s.io/v1beta4
kind: ClusterConfiguration
kubernetesVersion: `+kubernetesVersion(t)+`
`)
	return config
}
