//go:build portcullis_unbounded_caches

package initialresources

// unboundedCaches: this build's caches keep whatever they are given (see accounting.go).
const unboundedCaches = true
