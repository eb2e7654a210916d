// Package util holds the small pieces of PodSecurityPolicy logic shared by the provider and
// its strategies: volume source to FSType mapping, host path prefix matching and ID ranges.
package util

import (
	"fmt"
	"path"
	"strconv"
	"strings"

	api "k8s.io/kubernetes/pkg/apis/core"

	"github.com/portcullis-k8s/portcullis/pkg/apis/policy"
)

// AllFSTypes lists every FSType a 1.37 pod volume can map to, in the order of the core
// VolumeSource fields. Volume types removed from Kubernetes since 1.24 cannot occur in a 1.37
// pod, so they are absent here even though policies may still name them.
func AllFSTypes() []policy.FSType {
	return []policy.FSType{
		policy.HostPath, policy.EmptyDir, policy.GCEPersistentDisk, policy.AWSElasticBlockStore,
		policy.GitRepo, policy.Secret, policy.NFS, policy.ISCSI, policy.Glusterfs,
		policy.PersistentVolumeClaim, policy.RBD, policy.FlexVolume, policy.Cinder, policy.CephFS,
		policy.Flocker, policy.DownwardAPI, policy.FC, policy.AzureFile, policy.ConfigMap,
		policy.VsphereVolume, policy.Quobyte, policy.AzureDisk, policy.PhotonPersistentDisk,
		policy.Projected, policy.PortworxVolume, policy.ScaleIO, policy.StorageOS, policy.CSI,
		policy.Ephemeral, policy.Image,
	}
}

// GetVolumeFSType returns the FSType a volume is governed by. It takes a pointer because
// api.Volume is large and this runs for every volume of every admitted pod.
func GetVolumeFSType(v *api.Volume) (policy.FSType, error) {
	s := &v.VolumeSource
	switch {
	case s.HostPath != nil:
		return policy.HostPath, nil
	case s.EmptyDir != nil:
		return policy.EmptyDir, nil
	case s.GCEPersistentDisk != nil:
		return policy.GCEPersistentDisk, nil
	case s.AWSElasticBlockStore != nil:
		return policy.AWSElasticBlockStore, nil
	case s.GitRepo != nil:
		return policy.GitRepo, nil
	case s.Secret != nil:
		return policy.Secret, nil
	case s.NFS != nil:
		return policy.NFS, nil
	case s.ISCSI != nil:
		return policy.ISCSI, nil
	case s.Glusterfs != nil:
		return policy.Glusterfs, nil
	case s.PersistentVolumeClaim != nil:
		return policy.PersistentVolumeClaim, nil
	case s.RBD != nil:
		return policy.RBD, nil
	case s.FlexVolume != nil:
		return policy.FlexVolume, nil
	case s.Cinder != nil:
		return policy.Cinder, nil
	case s.CephFS != nil:
		return policy.CephFS, nil
	case s.Flocker != nil:
		return policy.Flocker, nil
	case s.DownwardAPI != nil:
		return policy.DownwardAPI, nil
	case s.FC != nil:
		return policy.FC, nil
	case s.AzureFile != nil:
		return policy.AzureFile, nil
	case s.ConfigMap != nil:
		return policy.ConfigMap, nil
	case s.VsphereVolume != nil:
		return policy.VsphereVolume, nil
	case s.Quobyte != nil:
		return policy.Quobyte, nil
	case s.AzureDisk != nil:
		return policy.AzureDisk, nil
	case s.PhotonPersistentDisk != nil:
		return policy.PhotonPersistentDisk, nil
	case s.Projected != nil:
		return policy.Projected, nil
	case s.PortworxVolume != nil:
		return policy.PortworxVolume, nil
	case s.ScaleIO != nil:
		return policy.ScaleIO, nil
	case s.StorageOS != nil:
		return policy.StorageOS, nil
	case s.CSI != nil:
		return policy.CSI, nil
	case s.Ephemeral != nil:
		return policy.Ephemeral, nil
	case s.Image != nil:
		return policy.Image, nil
	}
	// A volume source this code does not know (a newer Kubernetes) must be denied rather than
	// waved through: the policy cannot have meant to allow what it could not name.
	return "", fmt.Errorf("unknown volume type for volume %q", v.Name)
}

// PSPAllowsAllVolumes reports whether the policy lists the "*" wildcard.
func PSPAllowsAllVolumes(psp *policy.PodSecurityPolicy) bool {
	return PSPAllowsFSType(psp, policy.All)
}

// PSPAllowsFSType reports whether the policy allows fsType, directly or through "*".
func PSPAllowsFSType(psp *policy.PodSecurityPolicy, fsType policy.FSType) bool {
	if psp == nil {
		return false
	}
	for _, v := range psp.Spec.Volumes {
		if v == fsType || v == policy.All {
			return true
		}
	}
	return false
}

// AllowsHostVolumePath reports whether hostPath may be used under the policy and, if so,
// whether every mount of it must be read-only. An empty allowedHostPaths allows every path.
// When several prefixes match, a writable one wins: the policy allowed the write somewhere.
func AllowsHostVolumePath(psp *policy.PodSecurityPolicy, hostPath string) (allowed, mustBeReadOnly bool) {
	if psp == nil {
		return false, false
	}
	if len(psp.Spec.AllowedHostPaths) == 0 {
		return true, false
	}
	for _, ap := range psp.Spec.AllowedHostPaths {
		if !HasPathPrefix(hostPath, ap.PathPrefix) {
			continue
		}
		if !ap.ReadOnly {
			return true, false
		}
		allowed, mustBeReadOnly = true, true
	}
	return allowed, mustBeReadOnly
}

// HasPathPrefix reports whether p equals prefix or lies beneath it, comparing whole path
// segments after cleaning both: "/foo" matches "/foo", "/foo/" and "/foo/bar" but not
// "/foobar", and "/foo/../etc" is judged as "/etc". path.Clean allocates only when it has
// something to clean, so the common case costs nothing.
func HasPathPrefix(p, prefix string) bool {
	p = path.Clean(p)
	prefix = path.Clean(prefix)
	if !strings.HasPrefix(p, prefix) {
		return false
	}
	if len(p) == len(prefix) {
		return true
	}
	// After Clean only "/" ends with a separator.
	return prefix[len(prefix)-1] == '/' || p[len(prefix)] == '/'
}

// FallsInRange reports whether id lies in rng, both ends included.
func FallsInRange(id int64, rng policy.IDRange) bool {
	return id >= rng.Min && id <= rng.Max
}

// InRanges reports whether id lies in any of ranges.
func InRanges(id int64, ranges []policy.IDRange) bool {
	for _, r := range ranges {
		if FallsInRange(id, r) {
			return true
		}
	}
	return false
}

// FormatRanges renders ranges for error messages as "[1-65535, 70000]"; operators read
// these, so it avoids Go's struct syntax ("[{1 65535}]") that 1.24 printed.
func FormatRanges(ranges []policy.IDRange) string {
	var b strings.Builder
	b.WriteByte('[')
	for i, r := range ranges {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString(strconv.FormatInt(r.Min, 10))
		if r.Max != r.Min {
			b.WriteByte('-')
			b.WriteString(strconv.FormatInt(r.Max, 10))
		}
	}
	b.WriteByte(']')
	return b.String()
}

// FormatHostPortRanges renders host port ranges as 1.24's refusal did: "[80,8000-8080]".
func FormatHostPortRanges(ranges []policy.HostPortRange) string {
	var b strings.Builder
	b.WriteByte('[')
	for i, r := range ranges {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(strconv.Itoa(int(r.Min)))
		if r.Max != r.Min {
			b.WriteByte('-')
			b.WriteString(strconv.Itoa(int(r.Max)))
		}
	}
	b.WriteByte(']')
	return b.String()
}

// CopyRanges returns a private copy so strategies never alias a policy object that an
// informer cache shares with every other request.
func CopyRanges(ranges []policy.IDRange) []policy.IDRange {
	if ranges == nil {
		return nil
	}
	return append([]policy.IDRange(nil), ranges...)
}

// LookupAnnotation returns m[prefix+name] without allocating the key on the common path:
// per-container annotation keys are looked up for every container of every admitted pod.
func LookupAnnotation(m map[string]string, prefix, name string) (string, bool) {
	if len(m) == 0 {
		return "", false
	}
	var buf [128]byte
	key := append(append(buf[:0], prefix...), name...)
	v, ok := m[string(key)]
	return v, ok
}

// IsOnlyServiceAccountTokenSources reports whether a projected volume holds nothing but what
// the ServiceAccount admission plugin injects for a pod's API credentials: the token at path
// "token" for the API server's own audience, the kube-root-ca.crt ConfigMap and the pod's
// namespace through the downward API. 1.24 treats such a volume as a secret volume, so that
// policies written before bound tokens (allowing "secret" but not "projected") keep admitting
// ordinary pods.
func IsOnlyServiceAccountTokenSources(v *api.ProjectedVolumeSource) bool {
	for i := range v.Sources {
		s := &v.Sources[i]
		if s.ServiceAccountToken == nil && s.ConfigMap == nil && s.DownwardAPI == nil {
			return false
		}
		// Each set source is judged (pod validation later refuses a projection that sets two).
		if t := s.ServiceAccountToken; t != nil && (t.Path != "token" || t.Audience != "") {
			return false
		}
		if s.ConfigMap != nil && s.ConfigMap.Name != "kube-root-ca.crt" {
			return false
		}
		if s.DownwardAPI != nil {
			for _, item := range s.DownwardAPI.Items {
				if item.Path != "namespace" || item.FieldRef == nil ||
					item.FieldRef.APIVersion != "v1" || item.FieldRef.FieldPath != "metadata.namespace" {
					return false
				}
			}
		}
	}
	return true
}
