//go:build kube1.35

package validation

// staticManifestsSince is the Kubernetes minor that brought static webhook manifests
// (staticManifestsDir): later than this build's.
const staticManifestsSince = "1.36"
