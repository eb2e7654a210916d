// Package releases names this distribution's releases, oldest first. A plugin or a
// configuration field says which release added it, so that preflight can tell an operator
// going back to an earlier release what that release refuses (its decoding is strict), and a
// test can hold CHANGELOG.md to record each addition.
package releases

const (
	// V1371Portcullis1 is the first release.
	V1371Portcullis1 = "v1.37.1+portcullis.1"
	// V1372Portcullis1 added InitialResources, PersistentVolumeLabel, Initializers, the
	// webhooks' enforcement modes, the idempotency probe and the admission trace.
	V1372Portcullis1 = "v1.37.2+portcullis.1"
)

// All are the releases, oldest first.
var All = []string{V1371Portcullis1, V1372Portcullis1}

// First is the first release: what has been there since needs no going-back warning.
const First = V1371Portcullis1
