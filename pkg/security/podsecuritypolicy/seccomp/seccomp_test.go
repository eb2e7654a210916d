package seccomp

import (
	"reflect"
	"testing"

	"k8s.io/apimachinery/pkg/util/validation/field"
	api "k8s.io/kubernetes/pkg/apis/core"

	"github.com/portcullis-k8s/portcullis/pkg/apis/policy"
)

func str(s string) *string { return &s }

func annotations(allowed, def string) map[string]string {
	m := map[string]string{}
	if allowed != "-" {
		m[policy.SeccompAllowedProfilesAnnotationKey] = allowed
	}
	if def != "" {
		m[policy.SeccompDefaultProfileAnnotationKey] = def
	}
	return m
}

var (
	runtimeDefault = &api.SeccompProfile{Type: api.SeccompProfileTypeRuntimeDefault}
	unconfined     = &api.SeccompProfile{Type: api.SeccompProfileTypeUnconfined}
)

func localhost(p string) *api.SeccompProfile {
	return &api.SeccompProfile{Type: api.SeccompProfileTypeLocalhost, LocalhostProfile: str(p)}
}

func pod(podField *api.SeccompProfile, ann map[string]string) *api.Pod {
	p := &api.Pod{}
	p.Annotations = ann
	if podField != nil {
		p.Spec.SecurityContext = &api.PodSecurityContext{SeccompProfile: podField}
	}
	return p
}

func TestNewStrategyRejectsBadDefault(t *testing.T) {
	if _, err := NewStrategy(annotations("*", "nonsense")); err == nil {
		t.Fatal("want error")
	}
}

func TestGenerate(t *testing.T) {
	windows := pod(nil, nil)
	windows.Spec.OS = &api.PodOS{Name: api.Windows}
	tests := []struct {
		name    string
		allowed string
		def     string
		pod     *api.Pod
		want    *api.SeccompProfile
	}{
		{"no default", "*", "", pod(nil, nil), nil},
		{"default applied", "runtime/default", "runtime/default", pod(nil, nil), runtimeDefault},
		{"docker/default is runtime default", "*", "docker/default", pod(nil, nil), runtimeDefault},
		{"localhost default", "*", "localhost/prof.json", pod(nil, nil), localhost("prof.json")},
		{"field kept", "*", "runtime/default", pod(unconfined, nil), nil},
		{"annotation synced into the field", "*", "runtime/default",
			pod(nil, map[string]string{api.SeccompPodAnnotationKey: "localhost/a"}), localhost("a")},
		{"bad annotation left alone", "*", "runtime/default",
			pod(nil, map[string]string{api.SeccompPodAnnotationKey: "bogus"}), nil},
		{"windows pods get none", "*", "runtime/default", windows, nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s, err := NewStrategy(annotations(tc.allowed, tc.def))
			if err != nil {
				t.Fatal(err)
			}
			got, err := s.Generate(tc.pod)
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, tc.want) {
				t.Fatalf("got %+v, want %+v", got, tc.want)
			}
		})
	}
}

func TestValidatePod(t *testing.T) {
	tests := []struct {
		name    string
		allowed string
		pod     *api.Pod
		want    []string
	}{
		{"unrestricted policy, nothing set", "-", pod(nil, nil), nil},
		{"no allowed list forbids setting", "-", pod(runtimeDefault, nil),
			[]string{"spec.securityContext.seccompProfile: Forbidden: seccomp may not be set"}},
		{"no allowed list forbids the annotation", "-", pod(nil, map[string]string{api.SeccompPodAnnotationKey: "runtime/default"}),
			[]string{"metadata.annotations[seccomp.security.alpha.kubernetes.io/pod]: Forbidden: seccomp may not be set"}},
		{"* allows anything", "*", pod(unconfined, nil), nil},
		{"* allows nothing set", "*", pod(nil, nil), nil},
		{"allowed list requires a profile", "runtime/default", pod(nil, nil),
			[]string{"spec.securityContext.seccompProfile: Forbidden: seccomp profile must be set. Valid values are runtime/default"}},
		{"runtime default field", "runtime/default", pod(runtimeDefault, nil), nil},
		{"docker/default allows the runtime default field", "docker/default", pod(runtimeDefault, nil), nil},
		{"unconfined not allowed", "docker/default,runtime/default", pod(unconfined, nil),
			[]string{"spec.securityContext.seccompProfile: Forbidden: unconfined is not an allowed seccomp profile. Valid values are docker/default,runtime/default"}},
		{"localhost allowed", "localhost/a.json", pod(localhost("a.json"), nil), nil},
		{"other localhost not allowed", "localhost/a.json", pod(localhost("b.json"), nil),
			[]string{"spec.securityContext.seccompProfile: Forbidden: localhost/b.json is not an allowed seccomp profile. Valid values are localhost/a.json"}},
		{"annotation only", "runtime/default", pod(nil, map[string]string{api.SeccompPodAnnotationKey: "unconfined"}),
			[]string{"metadata.annotations[seccomp.security.alpha.kubernetes.io/pod]: Forbidden: unconfined is not an allowed seccomp profile. Valid values are runtime/default"}},
		{"field and annotation agree", "runtime/default", pod(runtimeDefault, map[string]string{api.SeccompPodAnnotationKey: "docker/default"}), nil},
		{"field and annotation disagree", "*", pod(runtimeDefault, map[string]string{api.SeccompPodAnnotationKey: "unconfined"}),
			[]string{`spec.securityContext.seccompProfile: Forbidden: seccomp profile runtime/default in the field does not match "unconfined" in the legacy annotation`}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s, _ := NewStrategy(annotations(tc.allowed, ""))
			var got []string
			for _, e := range s.ValidatePod(tc.pod) {
				got = append(got, e.Error())
			}
			if !reflect.DeepEqual(got, tc.want) {
				t.Fatalf("got %q\nwant %q", got, tc.want)
			}
		})
	}
}

func TestValidateContainer(t *testing.T) {
	scPath := field.NewPath("spec", "ephemeralContainers").Index(0).Child("securityContext")
	tests := []struct {
		name      string
		allowed   string
		container *api.SeccompProfile
		ann       map[string]string
		want      []string
	}{
		{"inherits the pod's", "runtime/default", nil, nil, nil},
		{"own field allowed", "runtime/default", runtimeDefault, nil, nil},
		{"own field not allowed", "runtime/default", unconfined, nil,
			[]string{"spec.ephemeralContainers[0].securityContext.seccompProfile: Forbidden: unconfined is not an allowed seccomp profile. Valid values are runtime/default"}},
		{"container annotation", "runtime/default", nil, map[string]string{api.SeccompContainerAnnotationKeyPrefix + "c": "unconfined"},
			[]string{"metadata.annotations[container.seccomp.security.alpha.kubernetes.io/c]: Forbidden: unconfined is not an allowed seccomp profile. Valid values are runtime/default"}},
		{"another container's annotation is ignored", "runtime/default", nil, map[string]string{api.SeccompContainerAnnotationKeyPrefix + "other": "unconfined"}, nil},
		{"container field and annotation disagree", "*", localhost("x"), map[string]string{api.SeccompContainerAnnotationKeyPrefix + "c": "localhost/y"},
			[]string{`spec.ephemeralContainers[0].securityContext.seccompProfile: Forbidden: seccomp profile localhost/x in the field does not match "localhost/y" in the legacy annotation`}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s, _ := NewStrategy(annotations(tc.allowed, ""))
			c := &api.Container{Name: "c"}
			if tc.container != nil {
				c.SecurityContext = &api.SecurityContext{SeccompProfile: tc.container}
			}
			var got []string
			for _, e := range s.ValidateContainer(pod(runtimeDefault, tc.ann), c, scPath) {
				got = append(got, e.Error())
			}
			if !reflect.DeepEqual(got, tc.want) {
				t.Fatalf("got %q\nwant %q", got, tc.want)
			}
		})
	}
}
