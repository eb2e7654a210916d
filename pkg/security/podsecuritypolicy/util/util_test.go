package util

import (
	"testing"

	api "k8s.io/kubernetes/pkg/apis/core"

	"github.com/portcullis-k8s/portcullis/pkg/apis/policy"
)

func TestHasPathPrefix(t *testing.T) {
	tests := []struct {
		path, prefix string
		want         bool
	}{
		{"/foo", "/foo", true},
		{"/foo/", "/foo", true},
		{"/foo/bar", "/foo", true},
		{"/foo/bar", "/foo/", true},
		{"/foobar", "/foo", false},
		{"/fo", "/foo", false},
		{"/anything", "/", true},
		{"/", "/", true},
		{"/foo/../etc/passwd", "/foo", false},
		{"/foo/./bar//baz", "/foo/bar", true},
		{"/etc", "/foo", false},
	}
	for _, tc := range tests {
		if got := HasPathPrefix(tc.path, tc.prefix); got != tc.want {
			t.Errorf("HasPathPrefix(%q, %q) = %v, want %v", tc.path, tc.prefix, got, tc.want)
		}
	}
}

func TestAllowsHostVolumePath(t *testing.T) {
	psp := func(paths ...policy.AllowedHostPath) *policy.PodSecurityPolicy {
		return &policy.PodSecurityPolicy{Spec: policy.PodSecurityPolicySpec{AllowedHostPaths: paths}}
	}
	tests := []struct {
		name              string
		psp               *policy.PodSecurityPolicy
		path              string
		allowed, readOnly bool
	}{
		{"nil policy", nil, "/x", false, false},
		{"no list allows all", psp(), "/x", true, false},
		{"not listed", psp(policy.AllowedHostPath{PathPrefix: "/var/log"}), "/etc", false, false},
		{"writable", psp(policy.AllowedHostPath{PathPrefix: "/var/log"}), "/var/log/pods", true, false},
		{"read-only", psp(policy.AllowedHostPath{PathPrefix: "/var/log", ReadOnly: true}), "/var/log", true, true},
		{"a writable match wins", psp(policy.AllowedHostPath{PathPrefix: "/var", ReadOnly: true}, policy.AllowedHostPath{PathPrefix: "/var/log"}), "/var/log/x", true, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			allowed, ro := AllowsHostVolumePath(tc.psp, tc.path)
			if allowed != tc.allowed || ro != tc.readOnly {
				t.Fatalf("got (%v, %v), want (%v, %v)", allowed, ro, tc.allowed, tc.readOnly)
			}
		})
	}
}

func TestGetVolumeFSType(t *testing.T) {
	tests := []struct {
		source api.VolumeSource
		want   policy.FSType
	}{
		{api.VolumeSource{Image: &api.ImageVolumeSource{Reference: "x"}}, policy.Image},
		{api.VolumeSource{Ephemeral: &api.EphemeralVolumeSource{}}, policy.Ephemeral},
		{api.VolumeSource{Projected: &api.ProjectedVolumeSource{}}, policy.Projected},
		{api.VolumeSource{CSI: &api.CSIVolumeSource{}}, policy.CSI},
		{api.VolumeSource{HostPath: &api.HostPathVolumeSource{}}, policy.HostPath},
		{api.VolumeSource{PersistentVolumeClaim: &api.PersistentVolumeClaimVolumeSource{}}, policy.PersistentVolumeClaim},
	}
	for _, tc := range tests {
		got, err := GetVolumeFSType(&api.Volume{Name: "v", VolumeSource: tc.source})
		if err != nil || got != tc.want {
			t.Errorf("got (%q, %v), want %q", got, err, tc.want)
		}
	}
	if _, err := GetVolumeFSType(&api.Volume{Name: "v"}); err == nil {
		t.Error("empty source: want error")
	}
}

func TestFormatRanges(t *testing.T) {
	if got := FormatRanges([]policy.IDRange{{Min: 1, Max: 65535}, {Min: 7, Max: 7}}); got != "[1-65535, 7]" {
		t.Fatal(got)
	}
}

func TestLookupAnnotation(t *testing.T) {
	m := map[string]string{"p/name": "v"}
	if v, ok := LookupAnnotation(m, "p/", "name"); !ok || v != "v" {
		t.Fatal(v, ok)
	}
	if _, ok := LookupAnnotation(m, "p/", "other"); ok {
		t.Fatal("found other")
	}
	if n := testing.AllocsPerRun(100, func() { LookupAnnotation(m, "p/", "name") }); n != 0 {
		t.Fatalf("%v allocations", n)
	}
}
