//go:build kube1.35

package validating

// Kubernetes 1.35 has no static webhook manifests: upstream's part reads kubeConfigFile only,
// and validation refuses staticManifestsDir
// (pkg/apis/admission/validation/staticmanifests_upto_1_35.go).
