package preflight

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"

	"github.com/spf13/pflag"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/kubernetes/cmd/kube-apiserver/app/options"
	"sigs.k8s.io/yaml"

	portcullisadmission "github.com/portcullis-k8s/portcullis/pkg/admission"
)

// kubeadmPatchFile matches the names kubeadm reads as patches of the kube-apiserver static
// pod: kubeadm's util/patches takes any name that starts with the target and ends in .json
// or .yaml (kube-apiserver_old.v1.37.1.yaml included); kubeadmJSONPatchFile those it reads as
// JSON patches (the target, a suffix without "." or "+", then "+json").
var (
	kubeadmPatchFile     = regexp.MustCompile(`^kube-apiserver.*\.(json|yaml)$`)
	kubeadmJSONPatchFile = regexp.MustCompile(`^kube-apiserver[^.+\n]*\+json`)
)

// imageTag is the tag kubeadm gives a version: every character outside [-\w.] becomes "_"
// (kubeadm's KubernetesVersionToImageTag), so v1.37.2+portcullis.1 is v1.37.2_portcullis.1.
func imageTag(version string) string {
	return regexp.MustCompile(`[^-\w.]`).ReplaceAllString(version, "_")
}

// portcullisTag is the marker of our release tags, between the Kubernetes version and ours.
const portcullisTag = "_portcullis."

// checkKubeadmPatches reports whether the kube-apiserver image the kubeadm patches in dir
// set is release ours's (this binary's version), for a kubeadm that renders Kubernetes
// targetVersion (kubeadm upgrade apply's version; ours's when empty): otherwise the API server
// ends up older or newer than the components kubeadm upgrades with it, or kubeadm finds its
// manifest unchanged and skips it.
func (r *PreflightReport) checkKubeadmPatches(dir, targetVersion, ours string) {
	if targetVersion == "" {
		targetVersion, _, _ = strings.Cut(ours, "+")
	}
	image, file, err := kubeadmPatchImage(dir)
	switch {
	case err != nil:
		r.problem("--kubeadm-patches %s: %v", dir, err)
		return
	case image == "":
		r.problem("--kubeadm-patches %s: no kube-apiserver patch sets the container's image, so kubeadm would run stock kube-apiserver %s, which refuses Portcullis's plugin names", dir, targetVersion)
		return
	}
	r.Notes = append(r.Notes, fmt.Sprintf("--kubeadm-patches %s: %s sets the kube-apiserver image %s", dir, file, image))
	r.checkImage(file, image, targetVersion, ours)
}

// checkImage reports whether image, which where (a patch or a manifest) sets for
// kube-apiserver, is release ours's running Kubernetes targetVersion (ours's when empty).
func (r *PreflightReport) checkImage(where, image, targetVersion, ours string) {
	kube, _, _ := strings.Cut(ours, "+")
	if targetVersion == "" {
		targetVersion = kube
	}
	if strings.HasPrefix(image, "localhost/") {
		r.Warnings = append(r.Warnings, fmt.Sprintf("%s: the image %s exists only where it was imported: once the kubelet's image garbage collection removes it, no node can pull it again; push it to a registry (docs/release.md)", where, image))
	}
	if targetVersion != kube {
		r.problem("--kubernetes-version %s: this is the preflight of %s, built on Kubernetes %s; an upgrade to %s needs the Portcullis release for %s: run its preflight", targetVersion, ours, kube, targetVersion, targetVersion)
	}
	name, tag, known := r.imageRelease(where, image, ours, true)
	if !known {
		return
	}
	kubernetes, _, isOurs := strings.Cut(tag, portcullisTag)
	switch {
	case name != "kube-apiserver" || !isOurs:
		r.problem("%s: the image %s is not a Portcullis release (tags look like %s)", where, image, imageTag(ours))
	case kubernetes != targetVersion:
		r.problem("%s: the image %s runs Kubernetes %s, but kubeadm renders %s: kube-apiserver would be %s the controller manager, scheduler and kubelets it upgrades (or kubeadm would find the manifest unchanged and skip it); set the tag to the Portcullis release for %s", where, image, kubernetes, targetVersion, olderOrNewer(kubernetes, targetVersion), targetVersion)
	case tag != imageTag(ours):
		r.problem("%s: the image %s is another Portcullis release than this preflight's, %s (tag %s): check with the preflight of the release the image runs", where, image, ours, imageTag(ours))
	}
}

// checkManifestImage reports a manifest whose image cannot run its command line: our plugin
// names on an image that is not a Portcullis release (kubeadm rendered without our patch:
// stock refuses the names and the pod never becomes ready), or a Portcullis image of another
// release or Kubernetes version than kubeadm renders (targetVersion; this release's when
// empty). A stock image with no plugin of ours is a rollback's manifest, which must run the
// version the cluster runs: targetVersion, else that of runningImage (--running-manifest's),
// else this release's.
func (r *PreflightReport) checkManifestImage(manifest, image, targetVersion, runningImage, ours string) {
	_, tag, known := r.imageRelease(manifest, image, ours, r.rollback || len(ourPluginNames(r.Args)) > 0)
	if !known {
		return
	}
	if r.rollback {
		if strings.Contains(tag, portcullisTag) {
			r.problem("%s: --rollback, but the image %s is a Portcullis release: render stock's (take Portcullis's patch out of the patches directory, docs/operating.md, 4)", manifest, image)
		}
		want, from := targetVersion, "--kubernetes-version"
		if want == "" && runningImage != "" {
			if want = imageKubernetesVersion(runningImage); want != "" {
				from = "the running manifest's image " + runningImage
			} else {
				r.Warnings = append(r.Warnings, fmt.Sprintf("the running manifest's image %s names no version by its tag: give --kubernetes-version, the version the cluster runs, to have the rollback's checked against it", runningImage))
			}
		}
		if want == "" {
			want, _, _ = strings.Cut(ours, "+")
			from = "this preflight's release, " + ours
		}
		if tag != "" && tag != imageTag(want) {
			r.problem("%s: the image %s is not stock's %s, the version the cluster runs (%s): a rollback must not change the version", manifest, image, want, from)
		}
	}
	if !strings.Contains(tag, portcullisTag) {
		if edits := ourPluginNames(r.Args); len(edits) > 0 {
			r.problem("%s: the image %s is not a Portcullis release, but the command line names Portcullis's plugins (%s): stock kube-apiserver refuses them and the pod never becomes ready; render with the patch that sets this release's image (patches.directory in kubeadm's configuration, docs/operating.md)", manifest, image, strings.Join(edits, "; "))
		}
		return
	}
	r.checkImage(manifest, image, targetVersion, ours)
}

// imageKubernetesVersion is the Kubernetes version an image's tag names, stock's (v1.37.2) or a
// Portcullis release's (v1.37.2_portcullis.1), or "" when it names none.
func imageKubernetesVersion(image string) string {
	_, tag, _ := splitImage(image)
	kube, _, _ := strings.Cut(tag, portcullisTag)
	if !kubernetesVersionPattern.MatchString(kube) {
		return ""
	}
	return kube
}

// splitImage splits an image reference into its repository's last path element, its tag and
// its digest (each "" when absent): r.example:5000/kube-apiserver:v1.37.2@sha256:… is
// kube-apiserver, v1.37.2 and sha256:…. A tag beside a digest is judged as a tag alone: the
// runtime pulls the digest, and the tag says which release its writer meant.
func splitImage(image string) (name, tag, digest string) {
	image, digest, _ = strings.Cut(image, "@")
	name, tag, _ = strings.Cut(image[strings.LastIndex(image, "/")+1:], ":")
	return name, tag, digest
}

// imageRelease returns the repository name and the tag that say which release image, which
// where sets, runs: its own tag, or, for an image pinned by a digest alone, the tag of the
// release the operator names for it (--image-release). known is false, with a problem or a
// warning reported, when neither says: a digest alone could be any release, stock's
// included, and judging it by nothing would let a stale release or stock's image with our
// plugin names pass. mustKnow says the image must be a release preflight can name (ours, for
// our plugin names or kubeadm's patches; stock's of the cluster's version, for a rollback):
// then a digest alone is a problem, otherwise a warning.
func (r *PreflightReport) imageRelease(where, image, ours string, mustKnow bool) (name, tag string, known bool) {
	name, tag, digest := splitImage(image)
	switch {
	case tag != "":
		return name, tag, true
	case digest == "":
		r.Warnings = append(r.Warnings, fmt.Sprintf("%s: the image %s is not named by a tag, so preflight cannot tell which release it is; it must be %s's (tag %s)", where, image, ours, imageTag(ours)))
		return name, "", false
	case r.digestRelease == "" && !mustKnow:
		r.Warnings = append(r.Warnings, fmt.Sprintf("%s: the image %s is pinned by a digest alone, so preflight cannot tell which release it runs; with no plugin of ours in the flags it may be stock's of any version: name the release with --image-release to have it checked", where, image))
		return name, "", false
	case r.digestRelease == "":
		r.problem("%s: the image %s is pinned by a digest alone, so preflight cannot tell which release it runs: name the release the digest stands for with --image-release (%s for this release's image, %s for stock's of the same Kubernetes), or pin the image by that release's tag beside the digest",
			where, image, ours, strings.SplitN(ours, "+", 2)[0])
		return name, "", false
	}
	r.Notes = append(r.Notes, fmt.Sprintf("%s: the image %s is judged as release %s (--image-release)", where, image, r.digestRelease))
	return name, imageTag(r.digestRelease), true
}

// olderOrNewer words how version a stands to b, for versions of the form v1.M.P.
func olderOrNewer(a, b string) string {
	parse := func(v string) []int {
		var out []int
		for _, part := range strings.Split(strings.TrimPrefix(v, "v"), ".") {
			n := 0
			for _, c := range part {
				if c < '0' || c > '9' {
					break
				}
				n = n*10 + int(c-'0')
			}
			out = append(out, n)
		}
		return out
	}
	if slices.Compare(parse(a), parse(b)) < 0 {
		return "older than"
	}
	return "newer than"
}

// kubeadmPatchImage returns the kube-apiserver image the patches in dir leave the static pod
// with — the last one set, in kubeadm's order (file names in lexical order, documents in file
// order) — and the file that sets it; "" when none does.
func kubeadmPatchImage(dir string) (image, file string, err error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return "", "", err
	}
	for _, e := range entries {
		if e.IsDir() || !kubeadmPatchFile.MatchString(e.Name()) {
			continue
		}
		path := filepath.Join(dir, e.Name())
		data, err := os.ReadFile(path)
		if err != nil {
			return "", "", err
		}
		jsonPatch := kubeadmJSONPatchFile.MatchString(e.Name())
		reader := utilyaml.NewYAMLReader(bufio.NewReader(bytes.NewReader(data)))
		for {
			doc, err := reader.Read()
			if errors.Is(err, io.EOF) {
				break
			}
			if err != nil {
				return "", "", fmt.Errorf("%s: %w", path, err)
			}
			if len(bytes.TrimSpace(doc)) == 0 {
				continue
			}
			set, err := patchDocumentImage(doc, jsonPatch)
			if err != nil {
				return "", "", fmt.Errorf("%s: %w", path, err)
			}
			if set != "" {
				image, file = set, path
			}
		}
	}
	return image, file, nil
}

// containerImagePath is a JSON patch path to a container's image.
var containerImagePath = regexp.MustCompile(`^/spec/containers/(\d+|-)/image$`)

// patchDocumentImage returns the kube-apiserver image one patch document sets, or "".
func patchDocumentImage(doc []byte, jsonPatch bool) (string, error) {
	if jsonPatch {
		var ops []struct {
			Op    string          `json:"op"`
			Path  string          `json:"path"`
			Value json.RawMessage `json:"value"`
		}
		if err := yaml.Unmarshal(doc, &ops); err != nil {
			return "", fmt.Errorf("not a JSON patch: %w", err)
		}
		image := ""
		for _, op := range ops {
			if (op.Op == "add" || op.Op == "replace") && containerImagePath.MatchString(op.Path) {
				if err := json.Unmarshal(op.Value, &image); err != nil {
					return "", fmt.Errorf("%s: the image is not a string", op.Path)
				}
			}
		}
		return image, nil
	}
	var pod struct {
		Spec struct {
			Containers []struct {
				Name  string `json:"name"`
				Image string `json:"image"`
			} `json:"containers"`
		} `json:"spec"`
	}
	if err := yaml.Unmarshal(doc, &pod); err != nil {
		return "", fmt.Errorf("not a patch of a Pod: %w", err)
	}
	for _, c := range pod.Spec.Containers {
		if c.Name == "kube-apiserver" {
			return c.Image, nil
		}
	}
	return "", nil
}

// checkAgainstRunning reports what the new command line changes in the one the node runs,
// beyond adding flags and adding our plugin names to --enable-admission-plugins: a manifest
// rendered from another configuration than the node's (kubeadm re-deriving
// --advertise-address from the default route on a multi-NIC node), or a flag of ours
// replacing the cluster's own (--admission-control-config-file).
func (r *PreflightReport) checkAgainstRunning(runningPath string, running []string) {
	r.compareFlags("manifest", runningPath, running, "render from the node's own configuration (docs/operating.md, 2a)")
}

// checkAgainstRunningUnit is checkAgainstRunning for a systemd unit: the kit's unit and
// environment file hold a fixed set of flags, and every other flag the running unit passes
// must be carried over (KUBE_APISERVER_EXTRA_ARGS), or it is silently lost.
func (r *PreflightReport) checkAgainstRunningUnit(runningPath string, running []string) {
	r.compareFlags("unit", runningPath, running, "carry it over from the running unit (KUBE_APISERVER_EXTRA_ARGS in the kit's environment file; docs/operating.md, 2b)")
}

// compareFlags reports what the checked command line changes in the one the running
// manifest or unit (kind) at runningPath passes; hint says how to carry a flag over.
func (r *PreflightReport) compareFlags(kind, runningPath string, running []string, hint string) {
	before, after := givenFlags(running), givenFlags(r.Args)
	if before == nil || after == nil {
		r.problem("--running-%s %s: its command line does not parse", kind, runningPath)
		return
	}
	for _, name := range slices.Sorted(maps.Keys(before)) {
		was, now := before[name], after[name]
		switch {
		case now == nil:
			r.problem("--%s=%s, which the running %s %s sets, is gone: %s", name, strings.Join(was, ","), kind, runningPath, hint)
		case slices.Equal(was, now):
		case name == "enable-admission-plugins":
			wasSet, nowSet := pluginList(was), pluginList(now)
			var dropped []string
			for _, p := range wasSet {
				switch {
				case slices.Contains(nowSet, p):
				// Taking a plugin of ours out of the flags turns it off, safely: a rollback,
				// or one plugin turned off (docs/operating.md, 3), which is named in a
				// warning (a render from a stale copy of the configuration drops one too).
				// The cluster's own are dropped only by a render from another
				// configuration than the node's.
				case portcullisadmission.IsOurs(p):
					dropped = append(dropped, p)
				default:
					r.problem("--enable-admission-plugins drops %s, which the running %s %s enables", p, kind, runningPath)
				}
			}
			switch {
			case len(dropped) == 0:
			case r.rollback:
				r.Notes = append(r.Notes, fmt.Sprintf("--enable-admission-plugins drops Portcullis's %s (a rollback)", strings.Join(dropped, ", ")))
			default:
				r.Warnings = append(r.Warnings, fmt.Sprintf("--enable-admission-plugins drops Portcullis's %s, which the running %s %s enables: the new %s turns it off (new requests are no longer refused or changed by it; what it set on stored objects stays). If that is not meant, the new %s was made from an old copy of the configuration (docs/operating.md, 3)", strings.Join(dropped, ", "), kind, runningPath, kind, kind))
			}
			var added []string
			for _, p := range nowSet {
				switch {
				case slices.Contains(wasSet, p):
				case portcullisadmission.IsOurs(p):
					added = append(added, p)
				default:
					r.problem("--enable-admission-plugins adds %s, which is not Portcullis's: the new %s was made from another configuration than the node's", p, kind)
				}
			}
			if len(added) > 0 {
				r.Notes = append(r.Notes, fmt.Sprintf("--enable-admission-plugins adds Portcullis's %s to the running %s's", strings.Join(added, ", "), kind))
			}
		case name == "admission-control-config-file":
			r.problem("--admission-control-config-file changes from %s (the running %s's) to %s: the server reads one file, so the cluster's own admission configuration would be dropped; copy Portcullis's entries into %s and keep that flag (docs/operating.md)", was[len(was)-1], kind, now[len(now)-1], was[len(was)-1])
		default:
			r.problem("--%s changes from %s (the running %s's) to %s: the new %s was made from another configuration than the node's; %s", name, strings.Join(was, ","), kind, strings.Join(now, ","), kind, hint)
		}
	}
	for _, name := range slices.Sorted(maps.Keys(after)) {
		switch {
		case before[name] != nil:
		case name == "enable-admission-plugins" || name == "admission-control-config-file":
			// Ours.
			r.Notes = append(r.Notes, fmt.Sprintf("adds --%s=%s to the running %s's flags", name, strings.Join(after[name], ","), kind))
		default:
			if atDefault, defaultValue := isDefault(name, after[name]); atDefault {
				// What the server does without the flag.
				r.Notes = append(r.Notes, fmt.Sprintf("adds --%s=%s to the running %s's flags", name, strings.Join(after[name], ","), kind))
			} else {
				r.problem("--%s=%s is added: the running %s %s does not pass it, and the server's default is %q, so the new %s changes what the server does; take it out, or add it to the running %s first if it is meant", name, strings.Join(after[name], ","), kind, runningPath, defaultValue, kind, kind)
			}
		}
	}
}

// isDefault reports whether giving flag name these values leaves it at the server's default,
// and that default as --help prints it.
func isDefault(name string, values []string) (bool, string) {
	f := serverFlagSet(options.NewServerRunOptions()).Lookup(name)
	if f == nil {
		return false, ""
	}
	before := f.Value.String()
	for _, v := range values {
		if err := f.Value.Set(v); err != nil {
			return false, f.DefValue
		}
	}
	return f.Value.String() == before, f.DefValue
}

// givenFlags returns the values each flag is given, by the flag's name as the server
// normalizes it; nil when args do not parse.
func givenFlags(args []string) map[string][]string {
	values := map[string][]string{}
	fs := serverFlagSet(options.NewServerRunOptions())
	if err := fs.ParseAll(args, func(f *pflag.Flag, value string) error {
		values[f.Name] = append(values[f.Name], value)
		return nil
	}); err != nil {
		return nil
	}
	return values
}

// pluginList is the plugins a repeated list flag names, in order, once each.
func pluginList(values []string) []string {
	var out []string
	for _, v := range values {
		for _, p := range strings.Split(v, ",") {
			if p = strings.TrimSpace(p); p != "" && !slices.Contains(out, p) {
				out = append(out, p)
			}
		}
	}
	return out
}
