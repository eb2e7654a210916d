package node

import (
	"debug/elf"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	imageutils "k8s.io/kubernetes/test/utils/image"

	"github.com/portcullis-k8s/portcullis/test/node/image"
)

// ConformanceDir is what make conformance builds for TestConformance, under DirEnv:
// upstream's e2e.test and ginkgo's CLI, nonewprivs, agnhost's serving certificate
// (localhost.crt, localhost.key), busybox (test/node/build-busybox.sh: the shell and tools of
// the images, as upstream's busybox image has them), and each run's reports.
func ConformanceDir(t *testing.T) string {
	t.Helper()
	dir := filepath.Join(os.Getenv(DirEnv), "conformance")
	for _, name := range []string{"e2e.test", "ginkgo", "nonewprivs", "localhost.crt", "localhost.key", "busybox"} {
		if _, err := os.Stat(filepath.Join(dir, name)); err != nil {
			t.Fatalf("%v: make conformance builds it", err)
		}
	}
	return dir
}

// curl is agnhost's curl in the specs' one use of it (the lifecycle hooks' exec handlers run
// `curl http://…`): its image has Alpine's curl, which is not built here.
const curl = `#!/bin/sh
if [ $# -ne 1 ]; then
	echo "curl: this image's curl (busybox wget) takes one URL, no options" >&2
	exit 2
fi
exec wget -q -O - "$1"
`

// The images' accounts: root and nobody, as busybox's and Alpine's images have them, and in
// agnhost's the user and group its Dockerfile adds.
const (
	passwd        = "root:x:0:0:root:/root:/bin/sh\nnobody:x:65534:65534:nobody:/home:/bin/false\n"
	group         = "root:x:0:\nnobody:x:65534:\n"
	agnhostPasswd = passwd + "user-defined-in-image:x:1000:1000::/home/user-defined-in-image:/bin/sh\n"
	agnhostGroup  = group + "user-defined-in-image:x:1000:\ngroup-defined-in-image:x:50000:user-defined-in-image\n"
)

// ImportConformanceImages imports, under the names upstream's e2e suite gives them
// (k8s.io/kubernetes/test/utils/image), the images its conformance specs run that are built
// here, each on busybox (busyboxFiles) and laid out as its upstream image where the specs
// depend on it: agnhost (both tags the suite names) with /agnhost, /agnhost-2, its serving
// certificate, /uploads, its user and group, and a one-URL curl; busybox; nonewprivs (its
// program setuid). The pause image is the node's own (kubeadm's).
func (n *Node) ImportConformanceImages(t *testing.T) {
	t.Helper()
	dir := ConformanceDir(t)
	busybox := filepath.Join(dir, "busybox")
	base := busyboxFiles(t, busybox, passwd, group)
	agnhost := append(busyboxFiles(t, busybox, agnhostPasswd, agnhostGroup),
		image.File{Path: "/agnhost", Source: filepath.Join(n.Bins.Dir, "agnhost"), Mode: 0o755},
		image.File{Path: "/agnhost-2", Link: "agnhost"},
		image.File{Path: "/localhost.crt", Source: filepath.Join(dir, "localhost.crt"), Mode: 0o644},
		image.File{Path: "/localhost.key", Source: filepath.Join(dir, "localhost.key"), Mode: 0o644},
		image.File{Path: "/uploads", Dir: true, Mode: 0o755},
		image.File{Path: "/usr/bin/curl", Content: []byte(curl), Mode: 0o755},
	)
	if pause := imageutils.GetPauseImageName(); pause != n.PauseImage {
		t.Fatalf("the e2e suite's pause image is %s, the node's (kubeadm's) %s", pause, n.PauseImage)
	}
	for _, img := range []image.Image{
		{Ref: imageutils.GetE2EImage(imageutils.Agnhost), Files: agnhost, Entrypoint: []string{"/agnhost"}, Cmd: []string{"pause"}},
		{Ref: imageutils.GetE2EImage(imageutils.AgnhostPrev), Files: agnhost, Entrypoint: []string{"/agnhost"}, Cmd: []string{"pause"}},
		{Ref: imageutils.GetE2EImage(imageutils.BusyBox), Files: base, Cmd: []string{"sh"}},
		{Ref: imageutils.GetE2EImage(imageutils.Nonewprivs), Files: append(slices.Clone(base),
			image.File{Path: "/usr/local/bin/nnp", Source: filepath.Join(dir, "nonewprivs"), Mode: 0o4755}), Cmd: []string{"nnp"}},
	} {
		n.importImage(t, img)
	}
}

// busyboxFiles are busybox at /bin/busybox, a link to it for each of its applets in /bin (as
// busybox's image has them: sh is its ash) and where busybox installs it (as Alpine's,
// agnhost's base, has them), and /etc/passwd and /etc/group.
func busyboxFiles(t *testing.T, busybox, passwd, group string) []image.File {
	t.Helper()
	f, err := elf.Open(busybox)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	for _, p := range f.Progs {
		if p.Type == elf.PT_INTERP {
			t.Fatalf("%s is linked dynamically: the images hold no libraries", busybox)
		}
	}
	out, err := exec.Command(busybox, "--list-full").Output()
	if err != nil {
		t.Fatalf("%s --list-full: %v", busybox, err)
	}
	files := []image.File{
		{Path: "/bin/busybox", Source: busybox, Mode: 0o755},
		{Path: "/etc/passwd", Content: []byte(passwd), Mode: 0o644},
		{Path: "/etc/group", Content: []byte(group), Mode: 0o644},
	}
	paths := map[string]bool{}
	for _, f := range files {
		paths[f.Path] = true
	}
	for _, applet := range strings.Fields(string(out)) {
		for _, path := range []string{"/bin/" + filepath.Base(applet), "/" + applet} {
			if !paths[path] {
				paths[path] = true
				files = append(files, image.File{Path: path, Link: "/bin/busybox"})
			}
		}
	}
	return files
}
