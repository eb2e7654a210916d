package validation

import (
	"encoding/json"
	"slices"
	"testing"

	apiequality "k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"
	core "k8s.io/kubernetes/pkg/apis/core"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/yaml"

	policyv1beta1 "github.com/portcullis-k8s/api/policy/v1beta1"
	deploypsp "github.com/portcullis-k8s/portcullis/build/deploy/podsecuritypolicy"
	"github.com/portcullis-k8s/portcullis/pkg/apis/policy"
	"github.com/portcullis-k8s/portcullis/pkg/apis/policy/install"
	psp "github.com/portcullis-k8s/portcullis/pkg/security/podsecuritypolicy"
)

var fuzzScheme = func() *runtime.Scheme {
	s := runtime.NewScheme()
	install.Install(s)
	return s
}()

// FuzzValidatePodSecurityPolicy decodes a policy/v1beta1 PodSecurityPolicy as the server
// does (defaulted, converted to the internal type) and validates it for CREATE and UPDATE.
// A policy validation accepts must also build a provider — the plugin would otherwise admit
// no pod with it — and survive the round trip through v1beta1 unchanged. Seeds are the
// shipped example policies and the tests' policies; crashers are kept under testdata/fuzz.
func FuzzValidatePodSecurityPolicy(f *testing.F) {
	for _, name := range []string{"privileged", "baseline", "restricted"} {
		data, err := deploypsp.Policy(name)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(data)
	}
	for _, mutate := range []func(*policy.PodSecurityPolicy){
		func(*policy.PodSecurityPolicy) {},
		func(p *policy.PodSecurityPolicy) {
			p.Spec.RunAsUser = policy.RunAsUserStrategyOptions{Rule: policy.RunAsUserStrategyMustRunAs, Ranges: []policy.IDRange{{Min: 1, Max: 1}}}
			p.Spec.RunAsGroup = &policy.RunAsGroupStrategyOptions{Rule: policy.RunAsGroupStrategyMayRunAs, Ranges: []policy.IDRange{{Min: 0, Max: 10}}}
			p.Spec.SupplementalGroups = policy.SupplementalGroupsStrategyOptions{Rule: policy.SupplementalGroupsStrategyMayRunAs, Ranges: []policy.IDRange{{Min: 1, Max: 65535}}}
			p.Spec.FSGroup = policy.FSGroupStrategyOptions{Rule: policy.FSGroupStrategyMustRunAs, Ranges: []policy.IDRange{{Min: 2, Max: 3}}}
			p.Spec.SELinux = policy.SELinuxStrategyOptions{Rule: policy.SELinuxStrategyMustRunAs, SELinuxOptions: &core.SELinuxOptions{Level: "s0"}}
		},
		func(p *policy.PodSecurityPolicy) {
			p.Annotations = map[string]string{
				policy.SeccompAllowedProfilesAnnotationKey:  "runtime/default,docker/default,unconfined,localhost/profiles/audit.json,*",
				policy.SeccompDefaultProfileAnnotationKey:   "runtime/default",
				policy.AppArmorAllowedProfilesAnnotationKey: "runtime/default,localhost/k8s-nginx",
				policy.AppArmorDefaultProfileAnnotationKey:  "runtime/default",
			}
			p.Spec.DefaultAddCapabilities = []core.Capability{"NET_BIND_SERVICE"}
			p.Spec.AllowedCapabilities = []core.Capability{"SYS_TIME"}
			p.Spec.RequiredDropCapabilities = []core.Capability{"NET_RAW"}
		},
		func(p *policy.PodSecurityPolicy) {
			p.Spec.AllowedHostPaths = []policy.AllowedHostPath{{PathPrefix: "/var/log", ReadOnly: true}, {PathPrefix: "/foo..bar"}}
			p.Spec.AllowedFlexVolumes = []policy.AllowedFlexVolume{{Driver: "example/lvm"}}
			p.Spec.AllowedCSIDrivers = []policy.AllowedCSIDriver{{Name: "csi.example.com"}}
			p.Spec.AllowedUnsafeSysctls = []string{"kernel.msg*", "net.ipv4.route.min_pmtu", "net/ipv4/tcp_syncookies"}
			p.Spec.ForbiddenSysctls = []string{"kernel.shm_rmid_forced", "net.core.*"}
			p.Spec.HostPorts = []policy.HostPortRange{{Min: 0, Max: 65535}, {Min: 80, Max: 80}}
			p.Spec.AllowedProcMountTypes = []core.ProcMountType{core.DefaultProcMount, core.UnmaskedProcMount}
		},
		func(p *policy.PodSecurityPolicy) {
			p.Spec.AllowPrivilegeEscalation = false
			p.Spec.DefaultAllowPrivilegeEscalation = ptr.To(false)
			p.Spec.RuntimeClass = &policy.RuntimeClassStrategyOptions{AllowedRuntimeClassNames: []string{"gvisor", "kata"}, DefaultRuntimeClassName: ptr.To("kata")}
		},
		func(p *policy.PodSecurityPolicy) {
			p.Annotations = map[string]string{policy.SeccompAllowedProfilesAnnotationKey: "*,localhost/../etc/passwd"}
			p.Spec.AllowedUnsafeSysctls = []string{"net.*"}
			p.Spec.ForbiddenSysctls = []string{"net.ipv4.*"}
			p.Spec.RuntimeClass = &policy.RuntimeClassStrategyOptions{AllowedRuntimeClassNames: []string{"*", "kata"}}
		},
	} {
		p := validPSP()
		mutate(p)
		var versioned policyv1beta1.PodSecurityPolicy
		if err := fuzzScheme.Convert(p, &versioned, nil); err != nil {
			f.Fatal(err)
		}
		data, err := json.Marshal(&versioned)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(data)
	}
	factory := psp.NewSimpleStrategyFactory()
	f.Fuzz(func(t *testing.T, data []byte) {
		var versioned policyv1beta1.PodSecurityPolicy
		if err := yaml.Unmarshal(data, &versioned); err != nil {
			return
		}
		fuzzScheme.Default(&versioned)
		internal := &policy.PodSecurityPolicy{}
		if err := fuzzScheme.Convert(&versioned, internal, nil); err != nil {
			return
		}
		pristine := internal.DeepCopy()
		errs := ValidatePodSecurityPolicy(internal)
		if !apiequality.Semantic.DeepEqual(pristine, internal) {
			t.Fatal("validation changed the policy")
		}
		// Upstream validates maps (annotations, labels) in map order, so the same errors
		// may come in another order: compare them as sets.
		if again := ValidatePodSecurityPolicy(internal); !slices.Equal(sortedErrors(again), sortedErrors(errs)) {
			t.Fatalf("not deterministic: %v, then %v", errs, again)
		}
		if len(errs) > 0 {
			return
		}
		// The registry sets the stored resourceVersion on an update.
		oldPSP, newPSP := internal.DeepCopy(), internal.DeepCopy()
		if newPSP.ResourceVersion == "" {
			oldPSP.ResourceVersion, newPSP.ResourceVersion = "1", "1"
		}
		if errs := ValidatePodSecurityPolicyUpdate(oldPSP, newPSP); len(errs) > 0 {
			t.Fatalf("a valid policy updated to itself is refused: %v", errs)
		}
		// As in 1.24, validation accepts a rule without the options it needs (MustRunAs or
		// MayRunAs without ranges, seLinux MustRunAs without seLinuxOptions), and the provider
		// refuses such a policy (the plugin then finds it unusable). Every other valid policy
		// must build a provider.
		_, err := psp.NewSimpleProvider(internal, "", factory)
		if err != nil && !ruleWithoutItsOptions(internal) {
			t.Fatalf("a valid policy builds no provider: %v", err)
		}
		var back policyv1beta1.PodSecurityPolicy
		if err := fuzzScheme.Convert(internal, &back, nil); err != nil {
			t.Fatalf("a valid policy does not convert back to v1beta1: %v", err)
		}
		roundTrip := &policy.PodSecurityPolicy{}
		if err := fuzzScheme.Convert(&back, roundTrip, nil); err != nil {
			t.Fatal(err)
		}
		if !apiequality.Semantic.DeepEqual(internal, roundTrip) {
			t.Fatalf("the round trip through v1beta1 changed the policy:\n%+v\n%+v", internal.Spec, roundTrip.Spec)
		}
	})
}

// sortedErrors returns the errors' messages, sorted.
func sortedErrors(errs field.ErrorList) []string {
	out := make([]string, len(errs))
	for i, err := range errs {
		out[i] = err.Error()
	}
	slices.Sort(out)
	return out
}

// ruleWithoutItsOptions says whether a policy has a rule without the options its provider
// needs, which 1.24's validation allowed: MustRunAs or MayRunAs without ranges (runAsUser
// MustRunAs, runAsGroup, fsGroup, supplementalGroups), seLinux MustRunAs without
// seLinuxOptions.
func ruleWithoutItsOptions(p *policy.PodSecurityPolicy) bool {
	s := p.Spec
	runAsGroup := s.RunAsGroup != nil && len(s.RunAsGroup.Ranges) == 0 &&
		(s.RunAsGroup.Rule == policy.RunAsGroupStrategyMustRunAs || s.RunAsGroup.Rule == policy.RunAsGroupStrategyMayRunAs)
	return runAsGroup ||
		(s.RunAsUser.Rule == policy.RunAsUserStrategyMustRunAs && len(s.RunAsUser.Ranges) == 0) ||
		((s.FSGroup.Rule == policy.FSGroupStrategyMustRunAs || s.FSGroup.Rule == policy.FSGroupStrategyMayRunAs) && len(s.FSGroup.Ranges) == 0) ||
		((s.SupplementalGroups.Rule == policy.SupplementalGroupsStrategyMustRunAs || s.SupplementalGroups.Rule == policy.SupplementalGroupsStrategyMayRunAs) && len(s.SupplementalGroups.Ranges) == 0) ||
		(s.SELinux.Rule == policy.SELinuxStrategyMustRunAs && s.SELinux.SELinuxOptions == nil)
}
