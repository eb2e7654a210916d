package install

import (
	"math/rand"
	"reflect"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	upstreampolicyinstall "k8s.io/kubernetes/pkg/apis/policy/install"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/randfill"

	policyv1beta1 "github.com/portcullis-k8s/api/policy/v1beta1"
	"github.com/portcullis-k8s/portcullis/pkg/apis/policy"
)

// newScheme returns a scheme with upstream's policy group and then ours, in the order the
// server installs them.
func newScheme(t *testing.T) *runtime.Scheme {
	t.Helper()
	scheme := runtime.NewScheme()
	upstreampolicyinstall.Install(scheme)
	Install(scheme)
	return scheme
}

func TestInstallKeepsPolicyV1Preferred(t *testing.T) {
	scheme := newScheme(t)

	versions := scheme.PrioritizedVersionsForGroup(policy.GroupName)
	if len(versions) == 0 || versions[0] != (schema.GroupVersion{Group: "policy", Version: "v1"}) {
		t.Fatalf("PrioritizedVersionsForGroup(policy) = %v, want policy/v1 first", versions)
	}

	for _, gvk := range []schema.GroupVersionKind{
		policyv1beta1.SchemeGroupVersion.WithKind("PodSecurityPolicy"),
		policyv1beta1.SchemeGroupVersion.WithKind("PodSecurityPolicyList"),
		policy.SchemeGroupVersion.WithKind("PodSecurityPolicy"),
		policy.SchemeGroupVersion.WithKind("PodSecurityPolicyList"),
		// Upstream's kinds are still there.
		{Group: "policy", Version: "v1", Kind: "PodDisruptionBudget"},
		{Group: "policy", Version: "v1beta1", Kind: "PodDisruptionBudget"},
		{Group: "policy", Version: runtime.APIVersionInternal, Kind: "PodDisruptionBudget"},
	} {
		if !scheme.Recognizes(gvk) {
			t.Errorf("scheme does not recognize %v", gvk)
		}
	}
	// PodSecurityPolicy exists only in v1beta1.
	if gvk := (schema.GroupVersionKind{Group: "policy", Version: "v1", Kind: "PodSecurityPolicy"}); scheme.Recognizes(gvk) {
		t.Errorf("scheme recognizes %v", gvk)
	}
}

func TestInstallLeavesPriorityAsUpstreamSetIt(t *testing.T) {
	upstreamOnly := runtime.NewScheme()
	upstreampolicyinstall.Install(upstreamOnly)
	want := upstreamOnly.PrioritizedVersionsForGroup(policy.GroupName)

	if got := newScheme(t).PrioritizedVersionsForGroup(policy.GroupName); !reflect.DeepEqual(got, want) {
		t.Fatalf("PrioritizedVersionsForGroup(policy) = %v with ours installed, want upstream's %v", got, want)
	}
}

// TestDecodeDefaultsAndRoundTrips decodes policy/v1beta1 JSON to the internal version (with
// defaults, as the server does), encodes it back to v1beta1 and compares.
func TestDecodeDefaultsAndRoundTrips(t *testing.T) {
	scheme := newScheme(t)
	codecs := serializer.NewCodecFactory(scheme)
	decoder := codecs.UniversalDecoder(policy.SchemeGroupVersion)
	info, ok := runtime.SerializerInfoForMediaType(codecs.SupportedMediaTypes(), runtime.ContentTypeJSON)
	if !ok {
		t.Fatal("no JSON serializer")
	}
	encoder := codecs.EncoderForVersion(info.Serializer, policyv1beta1.SchemeGroupVersion)

	typeMeta := metav1.TypeMeta{APIVersion: "policy/v1beta1", Kind: "PodSecurityPolicy"}
	tests := []struct {
		name         string
		json         string
		wantInternal policy.PodSecurityPolicySpec
		want         policyv1beta1.PodSecurityPolicySpec
	}{
		{
			name: "allowPrivilegeEscalation unset defaults to true",
			json: `{"apiVersion":"policy/v1beta1","kind":"PodSecurityPolicy","metadata":{"name":"p"},
				"spec":{"seLinux":{"rule":"RunAsAny"},"runAsUser":{"rule":"RunAsAny"},
				"supplementalGroups":{"rule":"RunAsAny"},"fsGroup":{"rule":"RunAsAny"}}}`,
			wantInternal: policy.PodSecurityPolicySpec{
				SELinux:                  policy.SELinuxStrategyOptions{Rule: policy.SELinuxStrategyRunAsAny},
				RunAsUser:                policy.RunAsUserStrategyOptions{Rule: policy.RunAsUserStrategyRunAsAny},
				SupplementalGroups:       policy.SupplementalGroupsStrategyOptions{Rule: policy.SupplementalGroupsStrategyRunAsAny},
				FSGroup:                  policy.FSGroupStrategyOptions{Rule: policy.FSGroupStrategyRunAsAny},
				AllowPrivilegeEscalation: true,
			},
			want: policyv1beta1.PodSecurityPolicySpec{
				SELinux:                  policyv1beta1.SELinuxStrategyOptions{Rule: policyv1beta1.SELinuxStrategyRunAsAny},
				RunAsUser:                policyv1beta1.RunAsUserStrategyOptions{Rule: policyv1beta1.RunAsUserStrategyRunAsAny},
				SupplementalGroups:       policyv1beta1.SupplementalGroupsStrategyOptions{Rule: policyv1beta1.SupplementalGroupsStrategyRunAsAny},
				FSGroup:                  policyv1beta1.FSGroupStrategyOptions{Rule: policyv1beta1.FSGroupStrategyRunAsAny},
				AllowPrivilegeEscalation: ptr.To(true),
			},
		},
		{
			name: "allowPrivilegeEscalation false is kept",
			json: `{"apiVersion":"policy/v1beta1","kind":"PodSecurityPolicy","metadata":{"name":"p"},
				"spec":{"allowPrivilegeEscalation":false,"defaultAllowPrivilegeEscalation":false,
				"seLinux":{"rule":"RunAsAny"},"runAsUser":{"rule":"MustRunAsNonRoot"},
				"supplementalGroups":{"rule":"RunAsAny"},"fsGroup":{"rule":"RunAsAny"}}}`,
			wantInternal: policy.PodSecurityPolicySpec{
				SELinux:                         policy.SELinuxStrategyOptions{Rule: policy.SELinuxStrategyRunAsAny},
				RunAsUser:                       policy.RunAsUserStrategyOptions{Rule: policy.RunAsUserStrategyMustRunAsNonRoot},
				SupplementalGroups:              policy.SupplementalGroupsStrategyOptions{Rule: policy.SupplementalGroupsStrategyRunAsAny},
				FSGroup:                         policy.FSGroupStrategyOptions{Rule: policy.FSGroupStrategyRunAsAny},
				DefaultAllowPrivilegeEscalation: ptr.To(false),
				AllowPrivilegeEscalation:        false,
			},
			want: policyv1beta1.PodSecurityPolicySpec{
				SELinux:                         policyv1beta1.SELinuxStrategyOptions{Rule: policyv1beta1.SELinuxStrategyRunAsAny},
				RunAsUser:                       policyv1beta1.RunAsUserStrategyOptions{Rule: policyv1beta1.RunAsUserStrategyMustRunAsNonRoot},
				SupplementalGroups:              policyv1beta1.SupplementalGroupsStrategyOptions{Rule: policyv1beta1.SupplementalGroupsStrategyRunAsAny},
				FSGroup:                         policyv1beta1.FSGroupStrategyOptions{Rule: policyv1beta1.FSGroupStrategyRunAsAny},
				DefaultAllowPrivilegeEscalation: ptr.To(false),
				AllowPrivilegeEscalation:        ptr.To(false),
			},
		},
		{
			name: "every field",
			json: `{"apiVersion":"policy/v1beta1","kind":"PodSecurityPolicy","metadata":{"name":"p"},
				"spec":{"privileged":true,"defaultAddCapabilities":["NET_ADMIN"],"requiredDropCapabilities":["ALL"],
				"allowedCapabilities":["SYS_TIME"],"volumes":["configMap","image","csi","ephemeral"],
				"hostNetwork":true,"hostPorts":[{"min":80,"max":443}],"hostPID":true,"hostIPC":true,
				"seLinux":{"rule":"MustRunAs","seLinuxOptions":{"user":"u","role":"r","type":"t","level":"s0"}},
				"runAsUser":{"rule":"MustRunAs","ranges":[{"min":1000,"max":2000}]},
				"runAsGroup":{"rule":"MayRunAs","ranges":[{"min":10,"max":20}]},
				"supplementalGroups":{"rule":"MustRunAs","ranges":[{"min":1,"max":65535}]},
				"fsGroup":{"rule":"MayRunAs","ranges":[{"min":2,"max":3}]},
				"readOnlyRootFilesystem":true,"defaultAllowPrivilegeEscalation":true,"allowPrivilegeEscalation":true,
				"allowedHostPaths":[{"pathPrefix":"/var/log","readOnly":true}],
				"allowedFlexVolumes":[{"driver":"example/lvm"}],"allowedCSIDrivers":[{"name":"csi.example.com"}],
				"allowedUnsafeSysctls":["kernel.msg*"],"forbiddenSysctls":["kernel.shm_rmid_forced"],
				"allowedProcMountTypes":["Default","Unmasked"],
				"runtimeClass":{"allowedRuntimeClassNames":["gvisor","kata"],"defaultRuntimeClassName":"gvisor"}}}`,
			wantInternal: policy.PodSecurityPolicySpec{
				Privileged:               true,
				DefaultAddCapabilities:   []coreCapability{"NET_ADMIN"},
				RequiredDropCapabilities: []coreCapability{"ALL"},
				AllowedCapabilities:      []coreCapability{"SYS_TIME"},
				Volumes:                  []policy.FSType{policy.ConfigMap, policy.Image, policy.CSI, policy.Ephemeral},
				HostNetwork:              true,
				HostPorts:                []policy.HostPortRange{{Min: 80, Max: 443}},
				HostPID:                  true,
				HostIPC:                  true,
				SELinux: policy.SELinuxStrategyOptions{
					Rule:           policy.SELinuxStrategyMustRunAs,
					SELinuxOptions: &coreSELinuxOptions{User: "u", Role: "r", Type: "t", Level: "s0"},
				},
				RunAsUser:                       policy.RunAsUserStrategyOptions{Rule: policy.RunAsUserStrategyMustRunAs, Ranges: []policy.IDRange{{Min: 1000, Max: 2000}}},
				RunAsGroup:                      &policy.RunAsGroupStrategyOptions{Rule: policy.RunAsGroupStrategyMayRunAs, Ranges: []policy.IDRange{{Min: 10, Max: 20}}},
				SupplementalGroups:              policy.SupplementalGroupsStrategyOptions{Rule: policy.SupplementalGroupsStrategyMustRunAs, Ranges: []policy.IDRange{{Min: 1, Max: 65535}}},
				FSGroup:                         policy.FSGroupStrategyOptions{Rule: policy.FSGroupStrategyMayRunAs, Ranges: []policy.IDRange{{Min: 2, Max: 3}}},
				ReadOnlyRootFilesystem:          true,
				DefaultAllowPrivilegeEscalation: ptr.To(true),
				AllowPrivilegeEscalation:        true,
				AllowedHostPaths:                []policy.AllowedHostPath{{PathPrefix: "/var/log", ReadOnly: true}},
				AllowedFlexVolumes:              []policy.AllowedFlexVolume{{Driver: "example/lvm"}},
				AllowedCSIDrivers:               []policy.AllowedCSIDriver{{Name: "csi.example.com"}},
				AllowedUnsafeSysctls:            []string{"kernel.msg*"},
				ForbiddenSysctls:                []string{"kernel.shm_rmid_forced"},
				AllowedProcMountTypes:           []coreProcMountType{"Default", "Unmasked"},
				RuntimeClass: &policy.RuntimeClassStrategyOptions{
					AllowedRuntimeClassNames: []string{"gvisor", "kata"},
					DefaultRuntimeClassName:  ptr.To("gvisor"),
				},
			},
			want: policyv1beta1.PodSecurityPolicySpec{
				Privileged:               true,
				DefaultAddCapabilities:   []corev1.Capability{"NET_ADMIN"},
				RequiredDropCapabilities: []corev1.Capability{"ALL"},
				AllowedCapabilities:      []corev1.Capability{"SYS_TIME"},
				Volumes:                  []policyv1beta1.FSType{policyv1beta1.ConfigMap, policyv1beta1.Image, policyv1beta1.CSI, policyv1beta1.Ephemeral},
				HostNetwork:              true,
				HostPorts:                []policyv1beta1.HostPortRange{{Min: 80, Max: 443}},
				HostPID:                  true,
				HostIPC:                  true,
				SELinux: policyv1beta1.SELinuxStrategyOptions{
					Rule:           policyv1beta1.SELinuxStrategyMustRunAs,
					SELinuxOptions: &corev1.SELinuxOptions{User: "u", Role: "r", Type: "t", Level: "s0"},
				},
				RunAsUser:                       policyv1beta1.RunAsUserStrategyOptions{Rule: policyv1beta1.RunAsUserStrategyMustRunAs, Ranges: []policyv1beta1.IDRange{{Min: 1000, Max: 2000}}},
				RunAsGroup:                      &policyv1beta1.RunAsGroupStrategyOptions{Rule: policyv1beta1.RunAsGroupStrategyMayRunAs, Ranges: []policyv1beta1.IDRange{{Min: 10, Max: 20}}},
				SupplementalGroups:              policyv1beta1.SupplementalGroupsStrategyOptions{Rule: policyv1beta1.SupplementalGroupsStrategyMustRunAs, Ranges: []policyv1beta1.IDRange{{Min: 1, Max: 65535}}},
				FSGroup:                         policyv1beta1.FSGroupStrategyOptions{Rule: policyv1beta1.FSGroupStrategyMayRunAs, Ranges: []policyv1beta1.IDRange{{Min: 2, Max: 3}}},
				ReadOnlyRootFilesystem:          true,
				DefaultAllowPrivilegeEscalation: ptr.To(true),
				AllowPrivilegeEscalation:        ptr.To(true),
				AllowedHostPaths:                []policyv1beta1.AllowedHostPath{{PathPrefix: "/var/log", ReadOnly: true}},
				AllowedFlexVolumes:              []policyv1beta1.AllowedFlexVolume{{Driver: "example/lvm"}},
				AllowedCSIDrivers:               []policyv1beta1.AllowedCSIDriver{{Name: "csi.example.com"}},
				AllowedUnsafeSysctls:            []string{"kernel.msg*"},
				ForbiddenSysctls:                []string{"kernel.shm_rmid_forced"},
				AllowedProcMountTypes:           []corev1.ProcMountType{corev1.DefaultProcMount, corev1.UnmaskedProcMount},
				RuntimeClass: &policyv1beta1.RuntimeClassStrategyOptions{
					AllowedRuntimeClassNames: []string{"gvisor", "kata"},
					DefaultRuntimeClassName:  ptr.To("gvisor"),
				},
			},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			obj, gvk, err := decoder.Decode([]byte(tc.json), nil, nil)
			if err != nil {
				t.Fatalf("decode: %v", err)
			}
			if want := policyv1beta1.SchemeGroupVersion.WithKind("PodSecurityPolicy"); *gvk != want {
				t.Errorf("decoded kind %v, want %v", *gvk, want)
			}
			internal, ok := obj.(*policy.PodSecurityPolicy)
			if !ok {
				t.Fatalf("decoded %T, want *policy.PodSecurityPolicy", obj)
			}
			if diff := cmp.Diff(tc.wantInternal, internal.Spec); diff != "" {
				t.Errorf("internal spec (-want +got):\n%s", diff)
			}

			data, err := runtime.Encode(encoder, internal)
			if err != nil {
				t.Fatalf("encode: %v", err)
			}
			back := &policyv1beta1.PodSecurityPolicy{}
			if _, _, err := codecs.UniversalDeserializer().Decode(data, nil, back); err != nil {
				t.Fatalf("decode v1beta1 %s: %v", data, err)
			}
			if back.TypeMeta != typeMeta {
				t.Errorf("encoded TypeMeta = %+v, want %+v", back.TypeMeta, typeMeta)
			}
			if diff := cmp.Diff(tc.want, back.Spec); diff != "" {
				t.Errorf("v1beta1 spec after round trip (-want +got):\n%s", diff)
			}
		})
	}
}

// TestFuzzRoundTrip fills v1beta1 objects at random, defaults them, converts them to the
// internal version and back, and expects what it started with.
func TestFuzzRoundTrip(t *testing.T) {
	scheme := newScheme(t)
	filler := randfill.NewWithSeed(rand.Int63()).NilChance(0.3).NumElements(0, 3).Funcs(
		// TypeMeta is the codec's business, not conversion's.
		func(tm *metav1.TypeMeta, _ randfill.Continue) {},
	)
	for i := 0; i < 500; i++ {
		in := &policyv1beta1.PodSecurityPolicy{}
		filler.Fill(in)
		scheme.Default(in)
		if in.Spec.AllowPrivilegeEscalation == nil {
			t.Fatalf("defaulting left allowPrivilegeEscalation nil")
		}
		internal := &policy.PodSecurityPolicy{}
		if err := scheme.Convert(in, internal, nil); err != nil {
			t.Fatalf("to internal: %v", err)
		}
		out := &policyv1beta1.PodSecurityPolicy{}
		if err := scheme.Convert(internal, out, nil); err != nil {
			t.Fatalf("to v1beta1: %v", err)
		}
		if !apiequality.Semantic.DeepEqual(in, out) {
			t.Fatalf("round trip changed the object (-in +out):\n%s", cmp.Diff(in, out))
		}

		list := &policyv1beta1.PodSecurityPolicyList{Items: []policyv1beta1.PodSecurityPolicy{*in}}
		internalList := &policy.PodSecurityPolicyList{}
		if err := scheme.Convert(list, internalList, nil); err != nil {
			t.Fatalf("list to internal: %v", err)
		}
		outList := &policyv1beta1.PodSecurityPolicyList{}
		if err := scheme.Convert(internalList, outList, nil); err != nil {
			t.Fatalf("list to v1beta1: %v", err)
		}
		if !apiequality.Semantic.DeepEqual(list, outList) {
			t.Fatalf("list round trip changed the object (-in +out):\n%s", cmp.Diff(list, outList))
		}
	}
}
