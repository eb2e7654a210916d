package main

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

// Annotations of the OCI image spec.
const (
	annotationRefName  = "org.opencontainers.image.ref.name"
	annotationVersion  = "org.opencontainers.image.version"
	annotationCreated  = "org.opencontainers.image.created"
	annotationSource   = "org.opencontainers.image.source"
	annotationRevision = "org.opencontainers.image.revision"
	annotationLicenses = "org.opencontainers.image.licenses"
)

// imageLicenses is the SPDX expression of the image's licence: Portcullis's and the
// Kubernetes code it builds on are Apache-2.0; the other modules' licences are in the
// release's SBOM and the NOTICE file.
const imageLicenses = "Apache-2.0"

// writeImageArchive builds the image index for opts.binaries and writes it to opts.output
// as an OCI image layout in a tar, replacing the file only once it is complete.
func writeImageArchive(opts options) error {
	index, err := buildIndex(opts)
	if err != nil {
		return err
	}

	layoutDir, err := os.MkdirTemp("", "portcullis-oci-layout-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(layoutDir)
	lp, err := layout.Write(layoutDir, empty.Index)
	if err != nil {
		return fmt.Errorf("writing the OCI layout in %s: %w", layoutDir, err)
	}
	if err := lp.AppendIndex(index, layout.WithAnnotations(map[string]string{annotationRefName: opts.tag})); err != nil {
		return fmt.Errorf("writing the image index into the OCI layout in %s: %w", layoutDir, err)
	}

	if err := os.MkdirAll(filepath.Dir(opts.output), 0o755); err != nil {
		return err
	}
	tmp, err := os.CreateTemp(filepath.Dir(opts.output), filepath.Base(opts.output)+".tmp-")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	if err := writeArchive(tmp, os.DirFS(layoutDir), opts.epoch); err != nil {
		tmp.Close()
		return fmt.Errorf("writing %s: %w", opts.output, err)
	}
	if err := tmp.Chmod(0o644); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), opts.output)
}

// buildIndex makes one image per binary and lists them, with their platforms, in an OCI
// image index.
func buildIndex(opts options) (v1.ImageIndex, error) {
	license, err := os.ReadFile(opts.license)
	if err != nil {
		return nil, err
	}
	notice, err := os.ReadFile(opts.notice)
	if err != nil {
		return nil, err
	}
	thirdParty, err := thirdPartyEntries(opts.thirdParty)
	if err != nil {
		return nil, fmt.Errorf("-third-party-licenses %s: %w", opts.thirdParty, err)
	}
	base, err := gzipLayer(append(baseEntries(license, notice), thirdParty...), opts.epoch)
	if err != nil {
		return nil, fmt.Errorf("base layer: %w", err)
	}
	var index v1.ImageIndex = mutate.IndexMediaType(empty.Index, types.OCIImageIndex)
	for _, b := range opts.binaries {
		if err := checkStaticELF(b.path, b.platform.Architecture); err != nil {
			return nil, err
		}
		binary, err := os.ReadFile(b.path)
		if err != nil {
			return nil, err
		}
		top, err := gzipLayer(binaryEntries(binary), opts.epoch)
		if err != nil {
			return nil, fmt.Errorf("%s layer: %w", b.name(), err)
		}
		img, err := buildImage(b.platform, opts.epoch, base, top)
		if err != nil {
			return nil, fmt.Errorf("%s image: %w", b.name(), err)
		}
		platform := b.platform
		index = mutate.AppendManifests(index, mutate.IndexAddendum{
			Add:        img,
			Descriptor: v1.Descriptor{Platform: &platform},
		})
	}
	annotated, ok := mutate.Annotations(index, map[string]string{
		annotationVersion:  opts.version,
		annotationCreated:  opts.epoch.Format(time.RFC3339),
		annotationSource:   opts.source,
		annotationRevision: opts.revision,
		annotationLicenses: imageLicenses,
	}).(v1.ImageIndex)
	if !ok {
		return nil, fmt.Errorf("annotating the image index: go-containerregistry returned no image index")
	}
	return annotated, nil
}

// buildImage stacks the shared base layer and a platform's binary layer under its config.
func buildImage(platform v1.Platform, created time.Time, base, binary v1.Layer) (v1.Image, error) {
	img := mutate.MediaType(empty.Image, types.OCIManifestSchema1)
	img = mutate.ConfigMediaType(img, types.OCIConfigJSON)
	img, err := mutate.ConfigFile(img, configFile(platform, created))
	if err != nil {
		return nil, err
	}
	history := func(what string) v1.History {
		return v1.History{Created: v1.Time{Time: created}, CreatedBy: "portcullis build/image: " + what, Comment: "built without a container runtime"}
	}
	return mutate.Append(img,
		mutate.Addendum{Layer: base, History: history("accounts, CA certificates, /tmp"), MediaType: types.OCILayer},
		mutate.Addendum{Layer: binary, History: history(binaryPath), MediaType: types.OCILayer},
	)
}

// gzipLayer makes a gzip-compressed OCI layer of entries. The compression is done here, once,
// so go-containerregistry only hashes and copies the bytes.
func gzipLayer(entries []entry, modTime time.Time) (v1.Layer, error) {
	raw, err := layerTar(entries, modTime)
	if err != nil {
		return nil, err
	}
	compressed, err := gzipBytes(raw)
	if err != nil {
		return nil, err
	}
	return tarball.LayerFromOpener(func() (io.ReadCloser, error) {
		return io.NopCloser(bytes.NewReader(compressed)), nil
	}, tarball.WithMediaType(types.OCILayer))
}
