package release

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/portcullis-k8s/portcullis/test/integration/framework"
)

// The OCI image spec's media types and annotations the release uses.
const (
	mediaTypeIndex    = "application/vnd.oci.image.index.v1+json"
	mediaTypeManifest = "application/vnd.oci.image.manifest.v1+json"
	mediaTypeConfig   = "application/vnd.oci.image.config.v1+json"
	mediaTypeLayer    = "application/vnd.oci.image.layer.v1.tar+gzip"
	annotationRefName = "org.opencontainers.image.ref.name"
)

// The image is read here with the standard library alone, not with the library that wrote
// it, so a mistake the two share cannot hide.

type descriptor struct {
	MediaType   string            `json:"mediaType"`
	Digest      string            `json:"digest"`
	Size        int64             `json:"size"`
	Platform    *platform         `json:"platform,omitempty"`
	Annotations map[string]string `json:"annotations,omitempty"`
}

type platform struct {
	OS           string `json:"os"`
	Architecture string `json:"architecture"`
	Variant      string `json:"variant,omitempty"`
}

func (p platform) String() string {
	if p.Variant != "" {
		return p.OS + "/" + p.Architecture + "/" + p.Variant
	}
	return p.OS + "/" + p.Architecture
}

type imageIndex struct {
	SchemaVersion int               `json:"schemaVersion"`
	MediaType     string            `json:"mediaType"`
	Manifests     []descriptor      `json:"manifests"`
	Annotations   map[string]string `json:"annotations,omitempty"`
}

type imageManifest struct {
	SchemaVersion int          `json:"schemaVersion"`
	MediaType     string       `json:"mediaType"`
	Config        descriptor   `json:"config"`
	Layers        []descriptor `json:"layers"`
}

type imageConfig struct {
	Architecture string    `json:"architecture"`
	OS           string    `json:"os"`
	Created      time.Time `json:"created"`
	Config       struct {
		Entrypoint []string `json:"Entrypoint"`
		Cmd        []string `json:"Cmd"`
		User       string   `json:"User"`
		Env        []string `json:"Env"`
		WorkingDir string   `json:"WorkingDir"`
	} `json:"config"`
	RootFS struct {
		Type    string   `json:"type"`
		DiffIDs []string `json:"diff_ids"`
	} `json:"rootfs"`
	History []struct {
		Created time.Time `json:"created"`
	} `json:"history"`
}

// ociArchive is the image tar's files by name.
type ociArchive struct {
	path  string
	files map[string][]byte
}

var (
	archiveOnce sync.Once
	archive     ociArchive
	archiveErr  error
)

// readArchive reads the release's image tar once for all the tests, checking every header on
// the way: only directories and regular files, owned by 0:0, dated SOURCE_DATE_EPOCH.
func readArchive(t *testing.T, r release) ociArchive {
	t.Helper()
	archiveOnce.Do(func() { archive, archiveErr = loadArchive(r.imageArchive(), r.epoch) })
	if archiveErr != nil {
		t.Fatal(archiveErr)
	}
	return archive
}

func loadArchive(path string, epoch time.Time) (ociArchive, error) {
	f, err := os.Open(path)
	if err != nil {
		return ociArchive{}, fmt.Errorf("the release's image: %w (run `make release`)", err)
	}
	defer f.Close()
	a := ociArchive{path: path, files: map[string][]byte{}}
	var names []string
	tr := tar.NewReader(f)
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return ociArchive{}, fmt.Errorf("%s: %w", path, err)
		}
		names = append(names, h.Name)
		if err := checkHeader(h, epoch); err != nil {
			return ociArchive{}, fmt.Errorf("%s: %w", path, err)
		}
		if h.Typeflag == tar.TypeReg {
			if a.files[h.Name], err = io.ReadAll(tr); err != nil {
				return ociArchive{}, fmt.Errorf("%s: %s: %w", path, h.Name, err)
			}
		}
	}
	if !slices.IsSorted(names) {
		return ociArchive{}, fmt.Errorf("%s: entries are not in lexical order: %q", path, names)
	}
	return a, nil
}

// checkHeader requires what makes a tar reproducible: only directories and regular files,
// numeric owners without names, and every time SOURCE_DATE_EPOCH.
func checkHeader(h *tar.Header, epoch time.Time) error {
	if h.Typeflag != tar.TypeDir && h.Typeflag != tar.TypeReg {
		return fmt.Errorf("%s: type %q; only directories and regular files are expected", h.Name, h.Typeflag)
	}
	if !h.ModTime.Equal(epoch) {
		return fmt.Errorf("%s: modified %v, want SOURCE_DATE_EPOCH %v", h.Name, h.ModTime.UTC(), epoch)
	}
	if !h.AccessTime.IsZero() || !h.ChangeTime.IsZero() || len(h.PAXRecords) != 0 {
		return fmt.Errorf("%s: has access/change times or PAX records, which vary between builds", h.Name)
	}
	if h.Uname != "" || h.Gname != "" {
		return fmt.Errorf("%s: owner names %q:%q; want numeric owners only", h.Name, h.Uname, h.Gname)
	}
	return nil
}

// blob returns the blob desc points at, after checking its digest, size and media type.
func (a ociArchive) blob(t *testing.T, desc descriptor, mediaType string) []byte {
	t.Helper()
	if desc.MediaType != mediaType {
		t.Fatalf("%s: %s is a %q, want %q", a.path, desc.Digest, desc.MediaType, mediaType)
	}
	hexDigest, ok := strings.CutPrefix(desc.Digest, "sha256:")
	if !ok {
		t.Fatalf("%s: digest %q is not sha256", a.path, desc.Digest)
	}
	name := "blobs/sha256/" + hexDigest
	b, ok := a.files[name]
	if !ok {
		t.Fatalf("%s: %s is referenced but missing", a.path, name)
	}
	if got := sha256Hex(b); got != hexDigest {
		t.Fatalf("%s: %s holds content with sha256 %s", a.path, name, got)
	}
	if int64(len(b)) != desc.Size {
		t.Fatalf("%s: %s is %d bytes, its descriptor says %d", a.path, name, len(b), desc.Size)
	}
	return b
}

func decodeJSON(t *testing.T, what string, b []byte, v any) {
	t.Helper()
	dec := json.NewDecoder(bytes.NewReader(b))
	if err := dec.Decode(v); err != nil {
		t.Fatalf("%s: %v\n%s", what, err, b)
	}
}

// index returns the image index index.json points at, with its descriptor there.
func (a ociArchive) index(t *testing.T) (descriptor, imageIndex) {
	t.Helper()
	var layout struct {
		ImageLayoutVersion string `json:"imageLayoutVersion"`
	}
	decodeJSON(t, a.path+": oci-layout", a.files["oci-layout"], &layout)
	if layout.ImageLayoutVersion != "1.0.0" {
		t.Fatalf("%s: oci-layout says imageLayoutVersion %q, want 1.0.0", a.path, layout.ImageLayoutVersion)
	}
	var root imageIndex
	decodeJSON(t, a.path+": index.json", a.files["index.json"], &root)
	if root.SchemaVersion != 2 || len(root.Manifests) != 1 {
		t.Fatalf("%s: index.json has schemaVersion %d and %d descriptors, want 2 and 1 (the image index)", a.path, root.SchemaVersion, len(root.Manifests))
	}
	desc := root.Manifests[0]
	var idx imageIndex
	decodeJSON(t, a.path+": the image index", a.blob(t, desc, mediaTypeIndex), &idx)
	return desc, idx
}

// platformImage is one platform's manifest and config.
type platformImage struct {
	platform string
	digest   string
	manifest imageManifest
	config   imageConfig
}

func (a ociArchive) images(t *testing.T) []platformImage {
	t.Helper()
	_, idx := a.index(t)
	var images []platformImage
	for _, desc := range idx.Manifests {
		if desc.Platform == nil {
			t.Fatalf("%s: the image index lists %s without a platform", a.path, desc.Digest)
		}
		img := platformImage{platform: desc.Platform.String(), digest: desc.Digest}
		decodeJSON(t, a.path+": "+img.platform+" manifest", a.blob(t, desc, mediaTypeManifest), &img.manifest)
		decodeJSON(t, a.path+": "+img.platform+" config", a.blob(t, img.manifest.Config, mediaTypeConfig), &img.config)
		images = append(images, img)
	}
	return images
}

// TestKubeadmListsTheImage: named after its ref.name annotation (as importers such as
// `ctr images import --base-name` name it), the image is the one `kubeadm config images list
// --kubernetes-version <VERSION> --image-repository <repository>` lists, so kubeadm's image
// checks and pulls find it.
func TestKubeadmListsTheImage(t *testing.T) {
	r := loadRelease(t)
	a := readArchive(t, r)
	desc, _ := a.index(t)
	loaded := imageRepository + "/kube-apiserver:" + desc.Annotations[annotationRefName]
	if want := kubeadmAPIServerImage(t, r.version, imageRepository); loaded != want {
		t.Errorf("%s loads as %s; kubeadm config images list --kubernetes-version %s --image-repository %s names %s",
			a.path, loaded, r.version, imageRepository, want)
	}
}

func TestImageIndexPlatforms(t *testing.T) {
	r := loadRelease(t)
	a := readArchive(t, r)
	desc, idx := a.index(t)
	if got := desc.Annotations[annotationRefName]; got != r.tag {
		t.Errorf("%s: index.json names the image %q (%s), want the tag %q", a.path, got, annotationRefName, r.tag)
	}
	var got []string
	for _, m := range idx.Manifests {
		if m.Platform == nil {
			t.Fatalf("%s: the image index lists %s without a platform", a.path, m.Digest)
		}
		got = append(got, m.Platform.String())
	}
	if !slices.Equal(got, releasePlatforms()) {
		t.Errorf("%s: the image index holds platforms %q, want %q", a.path, got, releasePlatforms())
	}

	// Where the image comes from and under which licence, as registries and scanners read it.
	head, err := exec.Command("git", "-C", framework.RepoRoot(t), "rev-parse", "HEAD").Output()
	if err != nil {
		t.Fatalf("git rev-parse HEAD: %v", err)
	}
	for key, want := range map[string]string{
		"org.opencontainers.image.version":  r.version,
		"org.opencontainers.image.source":   "https://github.com/portcullis-k8s/portcullis",
		"org.opencontainers.image.revision": strings.TrimSpace(string(head)),
		"org.opencontainers.image.licenses": "Apache-2.0",
	} {
		if got := idx.Annotations[key]; got != want {
			t.Errorf("%s: the image index's %s is %q, want %q", a.path, key, got, want)
		}
	}
}

func TestImageConfig(t *testing.T) {
	r := loadRelease(t)
	a := readArchive(t, r)
	for _, img := range a.images(t) {
		t.Run(img.platform, func(t *testing.T) {
			cfg := img.config
			if got := cfg.OS + "/" + cfg.Architecture; got != img.platform {
				t.Errorf("the config says %s", got)
			}
			if !slices.Equal(cfg.Config.Entrypoint, []string{"/usr/local/bin/kube-apiserver"}) || len(cfg.Config.Cmd) != 0 {
				t.Errorf("entrypoint %q, cmd %q; want [/usr/local/bin/kube-apiserver] and none", cfg.Config.Entrypoint, cfg.Config.Cmd)
			}
			// Upstream's kube-apiserver image runs as root (distroless/static, no USER), which
			// kubeadm's root-owned 0600 keys need; see build/image/rootfs.go.
			if cfg.Config.User != "0" {
				t.Errorf("user %q, want \"0\" as upstream's image", cfg.Config.User)
			}
			// kubeadm's pod runs command "kube-apiserver", found through the image's PATH.
			if !slices.Contains(cfg.Config.Env, "PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin") {
				t.Errorf("env %q has no PATH holding /usr/local/bin", cfg.Config.Env)
			}
			if !cfg.Created.Equal(r.epoch) {
				t.Errorf("created %v, want SOURCE_DATE_EPOCH %v", cfg.Created, r.epoch)
			}
			for i, h := range cfg.History {
				if !h.Created.Equal(r.epoch) {
					t.Errorf("history[%d] created %v, want SOURCE_DATE_EPOCH %v", i, h.Created, r.epoch)
				}
			}
			if cfg.RootFS.Type != "layers" || len(cfg.RootFS.DiffIDs) != len(img.manifest.Layers) || len(cfg.History) != len(img.manifest.Layers) {
				t.Fatalf("rootfs %q with %s and %s for %s", cfg.RootFS.Type, plural(len(cfg.RootFS.DiffIDs), "diff ID"), plural(len(cfg.History), "history entry"), plural(len(img.manifest.Layers), "layer"))
			}
			for i, layer := range img.manifest.Layers {
				if got := "sha256:" + sha256Hex(gunzip(t, a.blob(t, layer, mediaTypeLayer))); got != cfg.RootFS.DiffIDs[i] {
					t.Errorf("layer %d decompresses to %s, the config's diff ID is %s", i, got, cfg.RootFS.DiffIDs[i])
				}
			}
		})
	}
}

// layerFile is a file or directory of the image's filesystem.
type layerFile struct {
	header *tar.Header
	data   []byte
}

// filesystem applies img's layers in order; the release's layers add files and never delete.
func (a ociArchive) filesystem(t *testing.T, img platformImage, epoch time.Time) map[string]layerFile {
	t.Helper()
	files := map[string]layerFile{}
	for i, layer := range img.manifest.Layers {
		tr := tar.NewReader(bytes.NewReader(gunzip(t, a.blob(t, layer, mediaTypeLayer))))
		var names []string
		for {
			h, err := tr.Next()
			if errors.Is(err, io.EOF) {
				break
			}
			if err != nil {
				t.Fatalf("%s layer %d: %v", img.platform, i, err)
			}
			if err := checkHeader(h, epoch); err != nil {
				t.Fatalf("%s layer %d: %v", img.platform, i, err)
			}
			if strings.Contains(h.Name, ".wh.") {
				t.Fatalf("%s layer %d: whiteout %s; the release's layers only add files", img.platform, i, h.Name)
			}
			data, err := io.ReadAll(tr)
			if err != nil {
				t.Fatalf("%s layer %d: %s: %v", img.platform, i, h.Name, err)
			}
			names = append(names, h.Name)
			files["/"+strings.TrimSuffix(h.Name, "/")] = layerFile{header: h, data: data}
		}
		if !slices.IsSorted(names) {
			t.Errorf("%s layer %d: entries are not in lexical order: %q", img.platform, i, names)
		}
	}
	return files
}

func gunzip(t *testing.T, b []byte) []byte {
	t.Helper()
	zr, err := gzip.NewReader(bytes.NewReader(b))
	if err != nil {
		t.Fatalf("layer: %v", err)
	}
	out, err := io.ReadAll(zr)
	if err != nil {
		t.Fatalf("layer: %v", err)
	}
	return out
}

func TestImageFilesystem(t *testing.T) {
	r := loadRelease(t)
	a := readArchive(t, r)
	wantCerts, err := os.ReadFile(repoFile(t, "build/image/ca-certificates.crt"))
	if err != nil {
		t.Fatal(err)
	}
	for _, img := range a.images(t) {
		t.Run(img.platform, func(t *testing.T) {
			files := a.filesystem(t, img, r.epoch)
			file := func(path string) layerFile {
				t.Helper()
				f, ok := files[path]
				if !ok {
					t.Fatalf("the image has no %s", path)
				}
				return f
			}
			checkOwnerMode := func(path string, uid int, mode int64) {
				t.Helper()
				h := file(path).header
				if h.Uid != uid || h.Gid != uid || h.Mode != mode {
					t.Errorf("%s: owner %d:%d mode %#o, want %d:%d mode %#o", path, h.Uid, h.Gid, h.Mode, uid, uid, mode)
				}
			}

			binary := file("/usr/local/bin/kube-apiserver")
			checkOwnerMode("/usr/local/bin/kube-apiserver", 0, 0o755)
			sumName := img.platform + "/kube-apiserver"
			if got, want := sha256Hex(binary.data), r.sums[sumName]; got != want {
				t.Errorf("/usr/local/bin/kube-apiserver has sha256 %s, SHA256SUMS says %s for %s", got, want, sumName)
			}

			passwd := string(file("/etc/passwd").data)
			group := string(file("/etc/group").data)
			for _, want := range []string{"root:x:0:0:", "nonroot:x:65532:65532:"} {
				if !hasLinePrefix(passwd, want) {
					t.Errorf("/etc/passwd has no line starting %q:\n%s", want, passwd)
				}
			}
			for _, want := range []string{"root:x:0:", "nonroot:x:65532:"} {
				if !hasLinePrefix(group, want) {
					t.Errorf("/etc/group has no line starting %q:\n%s", want, group)
				}
			}
			if !passwdHasUID(passwd, img.config.Config.User) {
				t.Errorf("the image's user %q has no entry in /etc/passwd:\n%s", img.config.Config.User, passwd)
			}
			checkOwnerMode("/etc/passwd", 0, 0o644)
			checkOwnerMode("/etc/group", 0, 0o644)

			if !bytes.Equal(file("/etc/ssl/certs/ca-certificates.crt").data, wantCerts) {
				t.Error("/etc/ssl/certs/ca-certificates.crt differs from build/image/ca-certificates.crt")
			}
			checkOwnerMode("/etc/ssl/certs/ca-certificates.crt", 0, 0o644)
			checkOwnerMode("/tmp", 0, 0o1777)
			checkOwnerMode("/home/nonroot", 65532, 0o700)

			// Apache-2.0 (section 4) asks a redistribution to carry the licence and the notices.
			for _, name := range []string{"LICENSE", "NOTICE"} {
				path := "/usr/share/doc/portcullis/" + name
				want, err := os.ReadFile(repoFile(t, name))
				if err != nil {
					t.Fatal(err)
				}
				if !bytes.Equal(file(path).data, want) {
					t.Errorf("%s differs from the repository's %s", path, name)
				}
				checkOwnerMode(path, 0, 0o644)
			}

			// The linked modules' licence texts: the release's third-party-licenses.tar, file
			// for file.
			licenses := readThirdPartyLicenses(t, r)
			for name, data := range licenses {
				path := "/usr/share/doc/portcullis/third-party/" + name
				if !bytes.Equal(file(path).data, data) {
					t.Errorf("%s differs from %s's %s", path, thirdPartyLicenses, name)
				}
				checkOwnerMode(path, 0, 0o644)
			}

			var unexpected []string
			for path, f := range files {
				name, thirdParty := strings.CutPrefix(path, "/usr/share/doc/portcullis/third-party/")
				if _, listed := licenses[name]; thirdParty && listed {
					continue
				}
				if f.header.Typeflag == tar.TypeReg && !slices.Contains([]string{"/usr/local/bin/kube-apiserver", "/etc/passwd", "/etc/group", "/etc/ssl/certs/ca-certificates.crt", "/usr/share/doc/portcullis/LICENSE", "/usr/share/doc/portcullis/NOTICE"}, path) {
					unexpected = append(unexpected, path)
				}
			}
			if len(unexpected) != 0 {
				t.Errorf("the image holds files nobody asked for: %q", unexpected)
			}
		})
	}
}

func hasLinePrefix(text, prefix string) bool {
	for line := range strings.Lines(text) {
		if strings.HasPrefix(line, prefix) {
			return true
		}
	}
	return false
}

// passwdHasUID reports whether an /etc/passwd line has uid as its third field.
func passwdHasUID(passwd, uid string) bool {
	for line := range strings.Lines(passwd) {
		if fields := strings.Split(strings.TrimSpace(line), ":"); len(fields) == 7 && fields[2] == uid {
			return true
		}
	}
	return false
}
