package initialresources

import (
	"github.com/distribution/reference"
	"k8s.io/apimachinery/pkg/util/sets"
)

// image is a container image reference and the spellings its usage history may be recorded
// under. 1.10 split the reference at ":" (strings.Split(image, ":")[0]), which cut
// "registry:5000/app:1" at the port and kept a digest as part of the "tag"; this parses it
// as the runtime does, so "nginx", "nginx:latest" and "docker.io/library/nginx:latest" are
// one image, and its repository is docker.io/library/nginx whatever the tag or digest.
type image struct {
	// key is the normalized reference (docker.io/library/nginx:latest).
	key string
	// exact are the spellings of this very image: as given to parseImage (the caches give
	// the normalized reference), normalized and familiar (nginx:latest), the bare name for
	// :latest, and for a reference with both tag and digest, each alone.
	exact []string
	// repository are the spellings of its repository, any tag or digest: normalized
	// (docker.io/library/nginx) and familiar (nginx).
	repository []string
}

// normalizeImage is the normalized reference of a pod's image ("nginx" is
// docker.io/library/nginx:latest), the caches' key; false when it is not a reference a
// runtime could pull (no estimate then).
func normalizeImage(written string) (string, bool) {
	if len(written) > maxImageLength {
		return "", false // not parsed: no reference is this long
	}
	named, err := reference.ParseNormalizedNamed(written)
	if err != nil {
		return "", false
	}
	return reference.TagNameOnly(named).String(), true
}

// parseImage reads a pod's image reference; false when it is not one (no estimate then).
func parseImage(written string) (image, bool) {
	named, err := reference.ParseNormalizedNamed(written)
	if err != nil {
		return image{}, false
	}
	full := reference.TagNameOnly(named) // the :latest a runtime pulls for a bare name
	exact := sets.New(written, full.String(), reference.FamiliarString(full))
	// A bare name is its :latest, and so is :latest its bare name (a runtime may record
	// either spelling).
	if tagged, ok := full.(reference.Tagged); reference.IsNameOnly(named) || (ok && tagged.Tag() == "latest" && !isDigested(full)) {
		bare := reference.TrimNamed(full)
		exact.Insert(bare.String(), reference.FamiliarString(bare))
	}
	tagged, hasTag := named.(reference.Tagged)
	digested, hasDigest := named.(reference.Digested)
	if hasTag && hasDigest {
		if ref, err := reference.WithTag(reference.TrimNamed(named), tagged.Tag()); err == nil {
			exact.Insert(ref.String(), reference.FamiliarString(ref))
		}
		if ref, err := reference.WithDigest(reference.TrimNamed(named), digested.Digest()); err == nil {
			exact.Insert(ref.String(), reference.FamiliarString(ref))
		}
	}
	return image{
		key:        full.String(),
		exact:      sets.List(exact),
		repository: sets.List(sets.New(named.Name(), reference.FamiliarName(named))),
	}, true
}

func isDigested(ref reference.Named) bool {
	_, ok := ref.(reference.Digested)
	return ok
}
