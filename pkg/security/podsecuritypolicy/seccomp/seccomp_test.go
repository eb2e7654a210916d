package seccomp

import (
	"reflect"
	"strings"
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

// The cases of 1.24's strategy_test.go (TestValidatePod, TestValidateContainer), with 1.24's
// profile names "foo" and "bar" written as the valid "localhost/foo" and "localhost/bar"
// (1.37 pod validation refuses any other; 1.24's case pairing the name "foo" with the field
// localhost/foo only tested that mismatch, and is left out). A pod and its containers are
// judged together: a profile set on the pod is reported once, at the pod, where 1.24 also
// repeated it for every container inheriting it.
func TestValidate124(t *testing.T) {
	const c = "container"
	foo, bar := "localhost/foo", "localhost/bar"
	podAnn := func(v string) map[string]string { return map[string]string{api.SeccompPodAnnotationKey: v} }
	containerAnn := func(v string) map[string]string {
		return map[string]string{api.SeccompContainerAnnotationKeyPrefix + c: v}
	}
	fooField := &api.SeccompProfile{Type: api.SeccompProfileTypeLocalhost, LocalhostProfile: str("foo")}
	barField := &api.SeccompProfile{Type: api.SeccompProfileTypeLocalhost, LocalhostProfile: str("bar")}
	withoutSeccomp := map[string]string{"foo": "bar"}
	allowSpecific := map[string]string{policy.SeccompAllowedProfilesAnnotationKey: foo}
	allowAny := map[string]string{policy.SeccompAllowedProfilesAnnotationKey: "*"}
	tests := []struct {
		name                     string
		psp, ann                 map[string]string
		podField, containerField *api.SeccompProfile
		want                     string // a part of the only error; empty: admitted
	}{
		// TestValidatePod.
		{name: "pod: no pod annotations, required profiles", psp: allowSpecific, want: "seccomp profile must be set. Valid values are localhost/foo"},
		{name: "pod: no pod annotations, no required profiles", psp: withoutSeccomp},
		{name: "pod: valid pod annotations, required profiles", psp: allowSpecific, ann: podAnn(foo)},
		{name: "pod: invalid pod annotations, required profiles", psp: allowSpecific, ann: podAnn(bar), want: "localhost/bar is not an allowed seccomp profile. Valid values are localhost/foo"},
		{name: "pod: pod annotations, no required profiles", psp: withoutSeccomp, ann: podAnn(foo), want: "seccomp may not be set"},
		{name: "pod: pod annotations, allow any", psp: allowAny, ann: podAnn(foo)},
		{name: "pod: no pod annotations, allow any", psp: allowAny},
		{name: "pod: valid pod annotations and field, required profiles", psp: allowSpecific, ann: podAnn(foo), podField: fooField},
		{name: "pod: valid pod field and no annotation, required profiles (localhost)", psp: allowSpecific, podField: fooField},
		{name: "pod: docker/default allows runtime/default", psp: map[string]string{policy.SeccompAllowedProfilesAnnotationKey: "docker/default"}, ann: podAnn("runtime/default")},
		{name: "pod: runtime/default allows docker/default", psp: map[string]string{policy.SeccompAllowedProfilesAnnotationKey: "runtime/default"}, ann: podAnn("docker/default")},
		// TestValidateContainer ("no pod annotations, required profiles" is the pod's case above).
		{name: "container: no pod annotations, no required profiles", psp: withoutSeccomp},
		{name: "container: valid container annotation, required profiles", psp: allowSpecific, ann: merge(podAnn(foo), containerAnn(foo))},
		{name: "container: invalid container annotation, required profiles", psp: allowSpecific, ann: merge(podAnn(foo), containerAnn(bar)), want: "localhost/bar is not an allowed seccomp profile. Valid values are localhost/foo"},
		{name: "container: container annotation, no required profiles", psp: withoutSeccomp, ann: containerAnn(foo), want: "seccomp may not be set"},
		{name: "container: container annotation, allow any", psp: allowAny, ann: containerAnn(foo)},
		{name: "container: inherits a valid pod annotation", psp: allowSpecific, ann: podAnn(foo)},
		{name: "container: inherits an invalid pod annotation", psp: allowSpecific, ann: podAnn(bar), want: "localhost/bar is not an allowed seccomp profile"},
		{name: "container: valid container field, required profiles", psp: allowSpecific, ann: podAnn(foo), containerField: fooField},
		{name: "container: invalid container field, required profiles", psp: allowSpecific, ann: podAnn(foo), containerField: barField, want: "localhost/bar is not an allowed seccomp profile. Valid values are localhost/foo"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s, err := NewStrategy(tc.psp)
			if err != nil {
				t.Fatal(err)
			}
			pod := &api.Pod{}
			pod.Annotations = tc.ann
			pod.Spec.SecurityContext = &api.PodSecurityContext{SeccompProfile: tc.podField}
			pod.Spec.Containers = []api.Container{{Name: c, SecurityContext: &api.SecurityContext{SeccompProfile: tc.containerField}}}
			errs := append(s.ValidatePod(pod), s.ValidateContainer(pod, &pod.Spec.Containers[0], field.NewPath("spec", "containers").Index(0).Child("securityContext"))...)
			switch {
			case tc.want == "" && len(errs) != 0:
				t.Errorf("unexpected errors: %v", errs)
			case tc.want != "" && (len(errs) != 1 || !strings.Contains(errs[0].Error(), tc.want)):
				t.Errorf("errors %v, want one containing %q", errs, tc.want)
			}
		})
	}
}

func merge(maps ...map[string]string) map[string]string {
	out := map[string]string{}
	for _, m := range maps {
		for k, v := range m {
			out[k] = v
		}
	}
	return out
}
