//go:build !kube1.35

package validation

// staticManifestsSince is empty: this build's Kubernetes serves static webhook manifests.
const staticManifestsSince = ""
