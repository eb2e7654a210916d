// Package releases names this distribution's releases: one line of releases per Kubernetes
// minor, oldest first. A plugin or a configuration field says which addition brought it (named
// by the release of the newest line that first carried it), so that preflight can tell an
// operator going back to an earlier release of their own minor what that release refuses (its
// decoding is strict), and a test can hold CHANGELOG.md to record each addition.
package releases

import "strings"

const (
	// V1371Portcullis1 is the first release.
	V1371Portcullis1 = "v1.37.1+portcullis.1"
	// V1372Portcullis1 added InitialResources, PersistentVolumeLabel, Initializers, the
	// webhooks' enforcement modes, the idempotency probe and the admission trace.
	V1372Portcullis1 = "v1.37.2+portcullis.1"
)

// All are the additions, oldest first: each named by the newest line's release that first
// carried it.
var All = []string{V1371Portcullis1, V1372Portcullis1}

// First is the first addition: what has been there since needs no going-back warning.
const First = V1371Portcullis1

// Release is one release of a minor's line: its version (that minor's VERSION when it was
// cut) and the newest addition it carries, with every one before it.
type Release struct {
	Version string
	Carries string
}

// lines are each supported minor's releases, oldest first; the last is the minor's VERSION (a
// test holds them together). hack/update-kube-version.sh renames a release that is still
// unreleased; a release cut is never renamed, and the next on its line is added below it.
var lines = map[string][]Release{
	"1.35": {{Version: "v1.35.8+portcullis.1", Carries: V1372Portcullis1}},
	"1.36": {{Version: "v1.36.5+portcullis.1", Carries: V1372Portcullis1}},
	"1.37": {{Version: V1371Portcullis1, Carries: V1371Portcullis1}, {Version: V1372Portcullis1, Carries: V1372Portcullis1}},
}

// Line returns minor's releases (1.N), oldest first; none for a minor this source does not
// build.
func Line(minor string) []Release {
	return append([]Release(nil), lines[minor]...)
}

// FirstOnLine returns the first release of minor's line that carries addition, and whether
// the line has an earlier release without it: going back to one of those refuses what the
// addition brought. The last release of every line (its VERSION) carries every addition.
func FirstOnLine(minor, addition string) (version string, earlier bool) {
	rank := map[string]int{}
	for i, a := range All {
		rank[a] = i
	}
	for i, r := range lines[minor] {
		if rank[r.Carries] >= rank[addition] {
			return r.Version, i > 0
		}
	}
	return "", false
}

// MinorOf returns the minor (1.N) of a Kubernetes or Portcullis version (v1.N.P[+...]).
func MinorOf(version string) string {
	parts := strings.SplitN(strings.TrimPrefix(version, "v"), ".", 3)
	if len(parts) < 3 {
		return ""
	}
	return parts[0] + "." + parts[1]
}
