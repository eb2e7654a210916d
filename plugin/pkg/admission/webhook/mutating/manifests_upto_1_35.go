//go:build kube1.35

package mutating

// Kubernetes 1.35 has no static webhook manifests: upstream's part reads kubeConfigFile only,
// and LoadConfiguration refuses staticManifestsDir.
