//go:build !portcullis_unbounded_caches

package initialresources

// unboundedCaches lifts the caches' limits on what they keep. Only the build tag
// portcullis_unbounded_caches sets it: make soak builds a server with it to show that its
// proof of the limits fails without them (internal/soak/irflood.go).
const unboundedCaches = false
