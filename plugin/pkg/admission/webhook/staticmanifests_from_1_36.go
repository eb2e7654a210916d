//go:build !kube1.35

package webhook

// staticManifestsSince is empty: this build's Kubernetes serves static webhook manifests.
const staticManifestsSince = ""
