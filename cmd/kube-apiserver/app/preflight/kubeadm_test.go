package preflight

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

func TestKubeadmPatchImage(t *testing.T) {
	tests := []struct {
		name      string
		files     map[string]string
		wantImage string
		wantFile  string
		wantErr   string
	}{
		{name: "strategic merge, as shipped", files: map[string]string{
			"kube-apiserver.yaml": "spec:\n  containers:\n  - name: kube-apiserver\n    image: r.example/portcullis/kube-apiserver:v1.37.2_portcullis.1\n",
		}, wantImage: "r.example/portcullis/kube-apiserver:v1.37.2_portcullis.1", wantFile: "kube-apiserver.yaml"},
		{name: "a JSON patch", files: map[string]string{
			"kube-apiserver0+json.yaml": "- op: replace\n  path: /spec/containers/0/image\n  value: r.example/kube-apiserver:v1.37.2_portcullis.1\n",
		}, wantImage: "r.example/kube-apiserver:v1.37.2_portcullis.1", wantFile: "kube-apiserver0+json.yaml"},
		{name: "the last file in lexical order wins, other targets ignored", files: map[string]string{
			"kube-apiserver1.yaml":           "spec:\n  containers:\n  - name: kube-apiserver\n    image: a/kube-apiserver:v1.37.1_portcullis.1\n",
			"kube-apiserver2+strategic.yaml": "spec:\n  containers:\n  - name: kube-apiserver\n    image: a/kube-apiserver:v1.37.2_portcullis.1\n",
			"kube-scheduler.yaml":            "spec:\n  containers:\n  - name: kube-apiserver\n    image: b/kube-apiserver:v9\n",
			"kube-apiserver.txt":             "spec:\n  containers:\n  - name: kube-apiserver\n    image: c/kube-apiserver:v9\n",
		}, wantImage: "a/kube-apiserver:v1.37.2_portcullis.1", wantFile: "kube-apiserver2+strategic.yaml"},
		// kubeadm takes any name that starts with the target and ends in .yaml or .json: an
		// old patch kept under another name still applies, and last.
		{name: "a kept old patch under another name", files: map[string]string{
			"kube-apiserver.yaml":             "spec:\n  containers:\n  - name: kube-apiserver\n    image: a/kube-apiserver:v1.37.2_portcullis.1\n",
			"kube-apiserver_old.v1.37.1.yaml": "spec:\n  containers:\n  - name: kube-apiserver\n    image: a/kube-apiserver:v1.37.1_portcullis.1\n",
		}, wantImage: "a/kube-apiserver:v1.37.1_portcullis.1", wantFile: "kube-apiserver_old.v1.37.1.yaml"},
		{name: "documents in order", files: map[string]string{
			"kube-apiserver.yaml": "spec:\n  containers:\n  - name: kube-apiserver\n    image: a/kube-apiserver:one\n---\nmetadata:\n  labels: {x: y}\n---\nspec:\n  containers:\n  - name: kube-apiserver\n    image: a/kube-apiserver:two\n",
		}, wantImage: "a/kube-apiserver:two", wantFile: "kube-apiserver.yaml"},
		{name: "no image set", files: map[string]string{"kube-apiserver.yaml": "metadata:\n  annotations: {a: b}\n"}},
		{name: "not a patch", files: map[string]string{"kube-apiserver+json.json": "{\"op\": 1}"}, wantErr: "not a JSON patch"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			for name, content := range tc.files {
				writeFile(t, dir, name, content)
			}
			image, file, err := kubeadmPatchImage(dir)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("want an error saying %q, got %v", tc.wantErr, err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			wantFile := ""
			if tc.wantFile != "" {
				wantFile = filepath.Join(dir, tc.wantFile)
			}
			if image != tc.wantImage || file != wantFile {
				t.Errorf("got %q from %q, want %q from %q", image, file, tc.wantImage, wantFile)
			}
		})
	}
	if _, _, err := kubeadmPatchImage(filepath.Join(t.TempDir(), "missing")); err == nil {
		t.Error("a missing directory: no error")
	}
}

func TestCheckKubeadmPatches(t *testing.T) {
	// A release's version, as build/version.sh stamps it (tests run unstamped).
	const ours, kube = "v1.37.2+portcullis.1", "v1.37.2"
	tag := imageTag(ours)
	tests := []struct {
		name, image, target string
		// release is --image-release.
		release      string
		wantProblems []string
		wantWarning  string
	}{
		{name: "this release, this version", image: "r.example/portcullis/kube-apiserver:" + tag},
		{name: "this release, the default version", image: "r.example/portcullis/kube-apiserver:" + tag, target: kube},
		{name: "an upgrade with the old patch", image: "r.example/portcullis/kube-apiserver:" + tag, target: "v1.99.0",
			wantProblems: []string{"runs Kubernetes " + kube + ", but kubeadm renders v1.99.0: kube-apiserver would be older than", "this is the preflight of " + ours}},
		{name: "stock's image", image: "registry.k8s.io/kube-apiserver:" + kube, wantProblems: []string{"is not a Portcullis release"}},
		{name: "another Portcullis release of the same Kubernetes", image: "r.example/kube-apiserver:" + kube + "_portcullis.99", wantProblems: []string{"is another Portcullis release than this preflight's"}},
		{name: "an older Kubernetes", image: "r.example/kube-apiserver:v1.0.0_portcullis.1", wantProblems: []string{"runs Kubernetes v1.0.0, but kubeadm renders " + kube + ": kube-apiserver would be older than"}},
		{name: "localhost", image: "localhost/portcullis/kube-apiserver:" + tag, wantWarning: "no node can pull it again"},
		{name: "no tag", image: "r.example/kube-apiserver", wantWarning: "not named by a tag"},
		// A digest alone names no release: the operator names it, or preflight refuses.
		{name: "a digest", image: "r.example/kube-apiserver@sha256:0123",
			wantProblems: []string{"is pinned by a digest alone, so preflight cannot tell which release it runs: name the release the digest stands for with --image-release (" + ours + " for this release's image, " + kube + " for stock's of the same Kubernetes), or pin the image by that release's tag beside the digest"}},
		{name: "a digest named as this release", image: "r.example/kube-apiserver@sha256:0123", release: ours},
		{name: "a digest named as an older release", image: "r.example/kube-apiserver@sha256:0123", release: "v1.37.1+portcullis.1",
			wantProblems: []string{"runs Kubernetes v1.37.1, but kubeadm renders " + kube}},
		{name: "a digest named as stock's", image: "r.example/kube-apiserver@sha256:0123", release: kube, wantProblems: []string{"is not a Portcullis release"}},
		// A tag beside a digest: the tag is judged.
		{name: "this release by tag and digest", image: "r.example:5000/portcullis/kube-apiserver:" + tag + "@sha256:0123"},
		{name: "an older release by tag and digest", image: "r.example/kube-apiserver:v1.37.1_portcullis.1@sha256:0123",
			wantProblems: []string{"runs Kubernetes v1.37.1, but kubeadm renders " + kube}},
		{name: "stock's image by tag and digest", image: "registry.k8s.io/kube-apiserver:" + kube + "@sha256:0123", wantProblems: []string{"is not a Portcullis release"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			writeFile(t, dir, "kube-apiserver.yaml", "spec:\n  containers:\n  - name: kube-apiserver\n    image: "+tc.image+"\n")
			r := &PreflightReport{digestRelease: tc.release}
			r.checkKubeadmPatches(dir, tc.target, ours)
			for _, want := range tc.wantProblems {
				if !slices.ContainsFunc(r.Problems, func(p string) bool { return strings.Contains(p, want) }) {
					t.Errorf("no problem says %q; problems: %q", want, r.Problems)
				}
			}
			if len(tc.wantProblems) == 0 && len(r.Problems) > 0 {
				t.Errorf("want no problem, got %q", r.Problems)
			}
			if tc.wantWarning != "" && !slices.ContainsFunc(r.Warnings, func(w string) bool { return strings.Contains(w, tc.wantWarning) }) {
				t.Errorf("no warning says %q; warnings: %q", tc.wantWarning, r.Warnings)
			}
		})
	}
	empty := t.TempDir()
	r := &PreflightReport{}
	r.checkKubeadmPatches(empty, "", ours)
	if len(r.Problems) != 1 || !strings.Contains(r.Problems[0], "no kube-apiserver patch sets the container's image") {
		t.Errorf("an empty patches directory: %q", r.Problems)
	}
	if err := os.WriteFile(filepath.Join(empty, "kube-apiserver.yaml"), []byte("{{{"), 0o600); err != nil {
		t.Fatal(err)
	}
	r = &PreflightReport{}
	r.checkKubeadmPatches(empty, "", ours)
	if len(r.Problems) != 1 || !strings.Contains(r.Problems[0], "--kubeadm-patches") {
		t.Errorf("a malformed patch: %q", r.Problems)
	}
}

func TestCheckAgainstRunning(t *testing.T) {
	running := []string{"--advertise-address=10.0.0.5", "--enable-admission-plugins=NodeRestriction", "--admission-control-config-file=/etc/kubernetes/cluster/admission.yaml", "--secure-port=6443", "--v=2"}
	tests := []struct {
		name         string
		running      []string // the running manifest's, when not running
		rendered     []string
		rollback     bool
		wantProblems []string
		wantNote     string
		wantWarning  string
	}{
		{name: "a rollback drops our plugins",
			rendered: []string{"--advertise-address=10.0.0.5", "--enable-admission-plugins=NodeRestriction", "--admission-control-config-file=/etc/kubernetes/cluster/admission.yaml", "--secure-port=6443", "--v=2"},
			rollback: true},
		{name: "unchanged", rendered: running},
		{name: "one of our plugins turned off",
			running:     []string{"--advertise-address=10.0.0.5", "--enable-admission-plugins=NodeRestriction,PodPreset,PodSecurityPolicy"},
			rendered:    []string{"--advertise-address=10.0.0.5", "--enable-admission-plugins=NodeRestriction,PodPreset"},
			wantWarning: "--enable-admission-plugins drops Portcullis's PodSecurityPolicy, which the running manifest m.yaml enables: the new manifest turns it off"},
		{name: "our plugins added, a flag added at its default",
			rendered: []string{"--advertise-address=10.0.0.5", "--enable-admission-plugins=NodeRestriction,SecurityContextDeny,PodPreset", "--admission-control-config-file=/etc/kubernetes/cluster/admission.yaml", "--secure-port=6443", "--v=2", "--profiling=true"},
			wantNote: "--enable-admission-plugins adds Portcullis's SecurityContextDeny, PodPreset"},
		// The kit's systemd unit passes flags a hand-written one may not: each changes what the
		// server does.
		{name: "flags added with other values than the defaults",
			rendered:     []string{"--advertise-address=10.0.0.5", "--enable-admission-plugins=NodeRestriction", "--admission-control-config-file=/etc/kubernetes/cluster/admission.yaml", "--secure-port=6443", "--v=2", "--allow-privileged=true", "--enable-bootstrap-token-auth=true"},
			wantProblems: []string{`--allow-privileged=true is added: the running manifest m.yaml does not pass it, and the server's default is "false"`, "--enable-bootstrap-token-auth=true is added"}},
		{name: "the address re-derived from the default route",
			rendered:     []string{"--advertise-address=192.168.1.5", "--enable-admission-plugins=NodeRestriction", "--admission-control-config-file=/etc/kubernetes/cluster/admission.yaml", "--secure-port=6443", "--v=2"},
			wantProblems: []string{"--advertise-address changes from 10.0.0.5 (the running manifest's) to 192.168.1.5"}},
		{name: "our admission config file in place of the cluster's",
			rendered:     []string{"--advertise-address=10.0.0.5", "--enable-admission-plugins=NodeRestriction", "--admission-control-config-file=/etc/kubernetes/cluster/admission.yaml", "--admission-control-config-file=/etc/kubernetes/portcullis/admission-config.yaml", "--secure-port=6443", "--v=2"},
			wantProblems: []string{"--admission-control-config-file changes from /etc/kubernetes/cluster/admission.yaml (the running manifest's) to /etc/kubernetes/portcullis/admission-config.yaml"}},
		{name: "a flag dropped, a plugin dropped, an upstream plugin added",
			rendered:     []string{"--advertise-address=10.0.0.5", "--enable-admission-plugins=AlwaysPullImages", "--admission-control-config-file=/etc/kubernetes/cluster/admission.yaml", "--secure-port=6443"},
			wantProblems: []string{"--v=2, which the running manifest m.yaml sets, is gone", "drops NodeRestriction", "adds AlwaysPullImages, which is not Portcullis's"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := &PreflightReport{Args: tc.rendered, rollback: tc.rollback}
			was := running
			if tc.running != nil {
				was = tc.running
			}
			r.checkAgainstRunning("m.yaml", was)
			for _, want := range tc.wantProblems {
				if !slices.ContainsFunc(r.Problems, func(p string) bool { return strings.Contains(p, want) }) {
					t.Errorf("no problem says %q; problems: %q", want, r.Problems)
				}
			}
			if len(tc.wantProblems) != len(r.Problems) {
				t.Errorf("want %d problems, got %q", len(tc.wantProblems), r.Problems)
			}
			if tc.wantNote != "" && !slices.ContainsFunc(r.Notes, func(n string) bool { return strings.Contains(n, tc.wantNote) }) {
				t.Errorf("no note says %q; notes: %q", tc.wantNote, r.Notes)
			}
			if tc.wantWarning != "" && !slices.ContainsFunc(r.Warnings, func(w string) bool { return strings.Contains(w, tc.wantWarning) }) {
				t.Errorf("no warning says %q; warnings: %q", tc.wantWarning, r.Warnings)
			}
		})
	}
}

func TestCheckManifestImage(t *testing.T) {
	// A release's version, as build/version.sh stamps it (tests run unstamped).
	const ours, kube = "v1.37.2+portcullis.1", "v1.37.2"
	ourImage := "r.example/portcullis/kube-apiserver:" + imageTag(ours)
	withOurs := []string{"--enable-admission-plugins=NodeRestriction,SecurityContextDeny"}
	stockFlags := []string{"--enable-admission-plugins=NodeRestriction"}
	tests := []struct {
		name, image, target string
		// running is --running-manifest's image.
		running  string
		args     []string
		rollback bool
		// release is --image-release.
		release     string
		wantProblem string
	}{
		{name: "this release's image with our plugins", image: ourImage, args: withOurs},
		{name: "this release's image without them", image: ourImage, args: stockFlags},
		// kubeadm rendered without our patch: what the refused `--patches` beside `--config`
		// led operators to.
		{name: "stock's image with our plugins", image: "registry.k8s.io/kube-apiserver:" + kube, args: withOurs,
			wantProblem: "is not a Portcullis release, but the command line names Portcullis's plugins (remove SecurityContextDeny from --enable-admission-plugins)"},
		{name: "stock's image with our plugin disabled", image: "registry.k8s.io/kube-apiserver:" + kube, args: []string{"--disable-admission-plugins=PodPreset"},
			wantProblem: "remove PodPreset from --disable-admission-plugins"},
		// A rollback's manifest.
		{name: "stock's image without our plugins", image: "registry.k8s.io/kube-apiserver:" + kube, args: stockFlags},
		{name: "this release's image, another target", image: ourImage, args: withOurs, target: "v1.38.0",
			wantProblem: "runs Kubernetes " + kube + ", but kubeadm renders v1.38.0"},
		{name: "another Portcullis release", image: "r.example/kube-apiserver:v1.37.1_portcullis.1", args: stockFlags,
			wantProblem: "runs Kubernetes v1.37.1, but kubeadm renders " + kube},
		// Pinned by digest alone: refused unless the operator names the release, in a
		// rollback too (stock's image by digest with our plugin names crash-loops; a stale
		// Portcullis digest is skipped by kubeadm as "manifests are equal").
		{name: "pinned by digest", image: "r.example/portcullis/kube-apiserver@sha256:0123", args: withOurs,
			wantProblem: "is pinned by a digest alone, so preflight cannot tell which release it runs"},
		{name: "a rollback pinned by digest", image: "registry.k8s.io/kube-apiserver@sha256:0123", args: stockFlags, rollback: true,
			wantProblem: "is pinned by a digest alone"},
		// Without our plugin names and not a rollback, the image may be stock's of any version:
		// a warning (the README's first preflight, of a stock node).
		{name: "stock's manifest pinned by digest", image: "registry.k8s.io/kube-apiserver@sha256:0123", args: stockFlags},
		{name: "pinned by digest, named as this release", image: "r.example/portcullis/kube-apiserver@sha256:0123", args: withOurs, release: ours},
		{name: "stock's by digest with our plugins, named as stock's", image: "registry.k8s.io/kube-apiserver@sha256:0123", args: withOurs, release: kube,
			wantProblem: "is not a Portcullis release, but the command line names Portcullis's plugins"},
		{name: "a stale Portcullis release by digest, named", image: "r.example/kube-apiserver@sha256:0123", args: withOurs, release: "v1.37.1+portcullis.1",
			wantProblem: "runs Kubernetes v1.37.1, but kubeadm renders " + kube},
		{name: "a rollback to stock's image by digest, named", image: "registry.k8s.io/kube-apiserver@sha256:0123", args: stockFlags, rollback: true, target: kube, release: kube},
		{name: "a rollback by digest named as our release", image: "r.example/kube-apiserver@sha256:0123", args: stockFlags, rollback: true, release: ours,
			wantProblem: "is a Portcullis release"},
		// A tag beside the digest is judged, in both directions.
		{name: "stock's image by tag and digest with our plugins", image: "registry.k8s.io/kube-apiserver:" + kube + "@sha256:0123", args: withOurs,
			wantProblem: "is not a Portcullis release, but the command line names Portcullis's plugins"},
		{name: "a stale Portcullis release by tag and digest", image: "r.example/kube-apiserver:v1.37.1_portcullis.1@sha256:0123", args: withOurs,
			wantProblem: "runs Kubernetes v1.37.1, but kubeadm renders " + kube},
		{name: "a rollback that keeps our image, by tag and digest", image: ourImage + "@sha256:0123", args: stockFlags, rollback: true,
			wantProblem: "is a Portcullis release"},
		{name: "a rollback to stock's image by tag and digest", image: "registry.k8s.io/kube-apiserver:" + kube + "@sha256:0123", args: stockFlags, rollback: true, target: kube},
		{name: "a rollback to stock's image", image: "registry.k8s.io/kube-apiserver:" + kube, args: stockFlags, rollback: true},
		{name: "a rollback that keeps our image", image: ourImage, args: stockFlags, rollback: true,
			wantProblem: "--rollback, but the image " + ourImage + " is a Portcullis release"},
		{name: "a rollback to another version", image: "registry.k8s.io/kube-apiserver:v1.37.1", args: stockFlags, rollback: true, target: kube,
			wantProblem: "is not stock's " + kube + ", the version the cluster runs"},
		// Without --kubernetes-version, the version the running manifest's image runs: after
		// an upgrade, a render (or a backup) of the version before is refused.
		{name: "a rollback to the version before an upgrade, against the running manifest", image: "registry.k8s.io/kube-apiserver:v1.36.4", args: stockFlags, rollback: true,
			running: "r.example/kube-apiserver:v1.37.2_portcullis.1", wantProblem: "is not stock's " + kube + ", the version the cluster runs (the running manifest's image r.example/kube-apiserver:v1.37.2_portcullis.1)"},
		{name: "a rollback to the running manifest's version", image: "registry.k8s.io/kube-apiserver:" + kube, args: stockFlags, rollback: true,
			running: "r.example/kube-apiserver:v1.37.2_portcullis.1@sha256:0123"},
		{name: "a rollback of a node of another patch, against the running manifest", image: "registry.k8s.io/kube-apiserver:v1.37.1", args: stockFlags, rollback: true,
			running: "r.example/kube-apiserver:v1.37.1_portcullis.2"},
		// Nothing says the cluster's version: this release's.
		{name: "a rollback to another version, nothing naming the cluster's", image: "registry.k8s.io/kube-apiserver:v1.36.4", args: stockFlags, rollback: true,
			wantProblem: "is not stock's " + kube + ", the version the cluster runs (this preflight's release, " + ours + ")"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := &PreflightReport{Args: tc.args, rollback: tc.rollback, digestRelease: tc.release}
			r.checkManifestImage("m.yaml", tc.image, tc.target, tc.running, ours)
			if tc.wantProblem == "" {
				if len(r.Problems) > 0 {
					t.Errorf("want no problem, got %q", r.Problems)
				}
				return
			}
			if !slices.ContainsFunc(r.Problems, func(p string) bool { return strings.Contains(p, "m.yaml") && strings.Contains(p, tc.wantProblem) }) {
				t.Errorf("no problem names m.yaml and says %q; problems: %q", tc.wantProblem, r.Problems)
			}
		})
	}
}
