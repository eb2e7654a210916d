package validation

import (
	"fmt"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
	core "k8s.io/kubernetes/pkg/apis/core"
	"k8s.io/utils/ptr"

	"github.com/portcullis-k8s/portcullis/pkg/apis/policy"
)

func validPSP() *policy.PodSecurityPolicy {
	return &policy.PodSecurityPolicy{
		ObjectMeta: metav1.ObjectMeta{Name: "restricted", ResourceVersion: "1"},
		Spec: policy.PodSecurityPolicySpec{
			SELinux:                  policy.SELinuxStrategyOptions{Rule: policy.SELinuxStrategyRunAsAny},
			RunAsUser:                policy.RunAsUserStrategyOptions{Rule: policy.RunAsUserStrategyRunAsAny},
			SupplementalGroups:       policy.SupplementalGroupsStrategyOptions{Rule: policy.SupplementalGroupsStrategyRunAsAny},
			FSGroup:                  policy.FSGroupStrategyOptions{Rule: policy.FSGroupStrategyRunAsAny},
			AllowPrivilegeEscalation: true,
		},
	}
}

func TestValidatePodSecurityPolicyAccepts(t *testing.T) {
	tests := map[string]func(*policy.PodSecurityPolicy){
		"minimal": func(*policy.PodSecurityPolicy) {},
		"every volume kind, removed ones and image included": func(p *policy.PodSecurityPolicy) {
			p.Spec.Volumes = append(p.Spec.Volumes, policy.All)
			for v := range allFSTypes {
				p.Spec.Volumes = append(p.Spec.Volumes, v)
			}
		},
		"image volume": func(p *policy.PodSecurityPolicy) { p.Spec.Volumes = []policy.FSType{policy.Image} },
		"MustRunAs strategies with ranges": func(p *policy.PodSecurityPolicy) {
			p.Spec.RunAsUser = policy.RunAsUserStrategyOptions{Rule: policy.RunAsUserStrategyMustRunAs, Ranges: []policy.IDRange{{Min: 1, Max: 1}}}
			p.Spec.RunAsGroup = &policy.RunAsGroupStrategyOptions{Rule: policy.RunAsGroupStrategyMayRunAs, Ranges: []policy.IDRange{{Min: 0, Max: 10}}}
			p.Spec.SupplementalGroups = policy.SupplementalGroupsStrategyOptions{Rule: policy.SupplementalGroupsStrategyMayRunAs, Ranges: []policy.IDRange{{Min: 1, Max: 65535}}}
			p.Spec.FSGroup = policy.FSGroupStrategyOptions{Rule: policy.FSGroupStrategyMustRunAs, Ranges: []policy.IDRange{{Min: 2, Max: 3}}}
			p.Spec.SELinux = policy.SELinuxStrategyOptions{Rule: policy.SELinuxStrategyMustRunAs, SELinuxOptions: &core.SELinuxOptions{Level: "s0"}}
		},
		"MustRunAsNonRoot": func(p *policy.PodSecurityPolicy) {
			p.Spec.RunAsUser.Rule = policy.RunAsUserStrategyMustRunAsNonRoot
		},
		"runAsGroup RunAsAny without ranges": func(p *policy.PodSecurityPolicy) {
			p.Spec.RunAsGroup = &policy.RunAsGroupStrategyOptions{Rule: policy.RunAsGroupStrategyRunAsAny}
		},
		"profile annotations": func(p *policy.PodSecurityPolicy) {
			p.Annotations = map[string]string{
				policy.SeccompAllowedProfilesAnnotationKey:  "runtime/default,docker/default,unconfined,localhost/profiles/audit.json,*",
				policy.SeccompDefaultProfileAnnotationKey:   "runtime/default",
				policy.AppArmorAllowedProfilesAnnotationKey: "runtime/default,localhost/k8s-nginx",
				policy.AppArmorDefaultProfileAnnotationKey:  "runtime/default",
			}
		},
		"capabilities": func(p *policy.PodSecurityPolicy) {
			p.Spec.DefaultAddCapabilities = []core.Capability{"NET_BIND_SERVICE"}
			p.Spec.AllowedCapabilities = []core.Capability{"SYS_TIME"}
			p.Spec.RequiredDropCapabilities = []core.Capability{"NET_RAW"}
		},
		"all capabilities allowed": func(p *policy.PodSecurityPolicy) {
			p.Spec.AllowedCapabilities = []core.Capability{policy.AllowAllCapabilities}
		},
		"host paths, flex and CSI drivers": func(p *policy.PodSecurityPolicy) {
			p.Spec.AllowedHostPaths = []policy.AllowedHostPath{{PathPrefix: "/var/log", ReadOnly: true}, {PathPrefix: "/foo..bar"}}
			p.Spec.AllowedFlexVolumes = []policy.AllowedFlexVolume{{Driver: "example/lvm"}}
			p.Spec.AllowedCSIDrivers = []policy.AllowedCSIDriver{{Name: "csi.example.com"}}
		},
		"sysctls": func(p *policy.PodSecurityPolicy) {
			p.Spec.AllowedUnsafeSysctls = []string{"kernel.msg*", "net.ipv4.route.min_pmtu", "net/ipv4/tcp_syncookies"}
			p.Spec.ForbiddenSysctls = []string{"kernel.shm_rmid_forced", "net.core.*"}
		},
		"all sysctls forbidden": func(p *policy.PodSecurityPolicy) { p.Spec.ForbiddenSysctls = []string{"*"} },
		"host ports": func(p *policy.PodSecurityPolicy) {
			p.Spec.HostPorts = []policy.HostPortRange{{Min: 0, Max: 65535}, {Min: 80, Max: 80}}
		},
		// 1.24 did not check host port ranges (its own test fixture has max 65536); exported
		// policies must import. Such a range just admits the ports it covers.
		"host ports out of range and inverted, as 1.24 accepted": func(p *policy.PodSecurityPolicy) {
			p.Spec.HostPorts = []policy.HostPortRange{{Min: 1, Max: 65536}, {Min: 90, Max: 80}, {Min: -1, Max: 0}}
		},
		"apparmor allowed names empty": func(p *policy.PodSecurityPolicy) {
			p.Annotations = map[string]string{policy.AppArmorAllowedProfilesAnnotationKey: ""}
		},
		"procMount types": func(p *policy.PodSecurityPolicy) {
			p.Spec.AllowedProcMountTypes = []core.ProcMountType{core.DefaultProcMount, core.UnmaskedProcMount}
		},
		"privilege escalation defaults false while allowed": func(p *policy.PodSecurityPolicy) {
			p.Spec.DefaultAllowPrivilegeEscalation = ptr.To(false)
		},
		"privilege escalation forbidden, default false": func(p *policy.PodSecurityPolicy) {
			p.Spec.AllowPrivilegeEscalation = false
			p.Spec.DefaultAllowPrivilegeEscalation = ptr.To(false)
		},
		"runtime class default allowed": func(p *policy.PodSecurityPolicy) {
			p.Spec.RuntimeClass = &policy.RuntimeClassStrategyOptions{AllowedRuntimeClassNames: []string{"gvisor", "kata"}, DefaultRuntimeClassName: ptr.To("kata")}
		},
		"runtime class default allowed by wildcard": func(p *policy.PodSecurityPolicy) {
			p.Spec.RuntimeClass = &policy.RuntimeClassStrategyOptions{AllowedRuntimeClassNames: []string{"*"}, DefaultRuntimeClassName: ptr.To("kata")}
		},
		"runtime class none allowed": func(p *policy.PodSecurityPolicy) {
			p.Spec.RuntimeClass = &policy.RuntimeClassStrategyOptions{AllowedRuntimeClassNames: []string{}}
		},
	}
	for name, mutate := range tests {
		t.Run(name, func(t *testing.T) {
			psp := validPSP()
			mutate(psp)
			if errs := ValidatePodSecurityPolicy(psp); len(errs) != 0 {
				t.Errorf("ValidatePodSecurityPolicy: unexpected errors: %v", errs)
			}
			if errs := ValidatePodSecurityPolicyUpdate(validPSP(), psp); len(errs) != 0 {
				t.Errorf("ValidatePodSecurityPolicyUpdate: unexpected errors: %v", errs)
			}
		})
	}
}

// wantErr is one expected error: its type, field path and, optionally, a part of its detail.
type wantErr struct {
	typ    field.ErrorType
	field  string
	detail string
}

func TestValidatePodSecurityPolicyRejects(t *testing.T) {
	tests := []struct {
		name   string
		mutate func(*policy.PodSecurityPolicy)
		want   []wantErr
	}{
		{"missing name", func(p *policy.PodSecurityPolicy) { p.Name = "" },
			[]wantErr{{field.ErrorTypeRequired, "metadata.name", ""}}},
		{"invalid name", func(p *policy.PodSecurityPolicy) { p.Name = "Not_A_Name" },
			[]wantErr{{field.ErrorTypeInvalid, "metadata.name", ""}}},
		{"namespaced", func(p *policy.PodSecurityPolicy) { p.Namespace = "default" },
			[]wantErr{{field.ErrorTypeForbidden, "metadata.namespace", ""}}},
		{"bad apparmor default", func(p *policy.PodSecurityPolicy) {
			p.Annotations = map[string]string{policy.AppArmorDefaultProfileAnnotationKey: "not-a-profile"}
		}, []wantErr{{field.ErrorTypeInvalid, "metadata.annotations[apparmor.security.beta.kubernetes.io/defaultProfileName]", "invalid AppArmor profile name"}}},
		{"bad apparmor allowed", func(p *policy.PodSecurityPolicy) {
			p.Annotations = map[string]string{policy.AppArmorAllowedProfilesAnnotationKey: "runtime/default,bad"}
		}, []wantErr{{field.ErrorTypeInvalid, "metadata.annotations[apparmor.security.beta.kubernetes.io/allowedProfileNames]", ""}}},
		{"bad seccomp default", func(p *policy.PodSecurityPolicy) {
			p.Annotations = map[string]string{policy.SeccompDefaultProfileAnnotationKey: "bogus"}
		}, []wantErr{{field.ErrorTypeInvalid, "metadata.annotations[seccomp.security.alpha.kubernetes.io/defaultProfileName]", "seccomp profile"}}},
		{"seccomp localhost escaping", func(p *policy.PodSecurityPolicy) {
			p.Annotations = map[string]string{policy.SeccompAllowedProfilesAnnotationKey: "*,localhost/../etc/passwd"}
		}, []wantErr{{field.ErrorTypeInvalid, "metadata.annotations[seccomp.security.alpha.kubernetes.io/allowedProfileNames]", ".."}}},
		{"empty runAsUser rule", func(p *policy.PodSecurityPolicy) { p.Spec.RunAsUser.Rule = "" },
			[]wantErr{{field.ErrorTypeNotSupported, "spec.runAsUser.rule", ""}}},
		{"negative and inverted runAsUser range", func(p *policy.PodSecurityPolicy) {
			p.Spec.RunAsUser = policy.RunAsUserStrategyOptions{Rule: policy.RunAsUserStrategyMustRunAs, Ranges: []policy.IDRange{{Min: -1, Max: -2}}}
		}, []wantErr{
			{field.ErrorTypeInvalid, "spec.runAsUser.ranges[0].min", "negative"},
			{field.ErrorTypeInvalid, "spec.runAsUser.ranges[0].max", "negative"},
			{field.ErrorTypeInvalid, "spec.runAsUser.ranges[0]", "greater than max"},
		}},
		{"bad runAsGroup rule", func(p *policy.PodSecurityPolicy) {
			p.Spec.RunAsGroup = &policy.RunAsGroupStrategyOptions{Rule: "MustRunAsNonRoot"}
		}, []wantErr{{field.ErrorTypeNotSupported, "spec.runAsGroup.rule", ""}}},
		{"runAsGroup MustRunAs without ranges", func(p *policy.PodSecurityPolicy) {
			p.Spec.RunAsGroup = &policy.RunAsGroupStrategyOptions{Rule: policy.RunAsGroupStrategyMustRunAs}
		}, []wantErr{{field.ErrorTypeInvalid, "spec.runAsGroup.ranges", "at least one range"}}},
		{"runAsGroup RunAsAny with ranges", func(p *policy.PodSecurityPolicy) {
			p.Spec.RunAsGroup = &policy.RunAsGroupStrategyOptions{Rule: policy.RunAsGroupStrategyRunAsAny, Ranges: []policy.IDRange{{Min: 1, Max: 2}}}
		}, []wantErr{{field.ErrorTypeInvalid, "spec.runAsGroup.ranges", "must be empty"}}},
		{"runAsGroup inverted range", func(p *policy.PodSecurityPolicy) {
			p.Spec.RunAsGroup = &policy.RunAsGroupStrategyOptions{Rule: policy.RunAsGroupStrategyMayRunAs, Ranges: []policy.IDRange{{Min: 5, Max: 4}}}
		}, []wantErr{{field.ErrorTypeInvalid, "spec.runAsGroup.ranges[0]", "greater than max"}}},
		{"bad seLinux rule", func(p *policy.PodSecurityPolicy) { p.Spec.SELinux.Rule = "MustRunAsNonRoot" },
			[]wantErr{{field.ErrorTypeNotSupported, "spec.seLinux.rule", ""}}},
		{"empty supplementalGroups rule", func(p *policy.PodSecurityPolicy) { p.Spec.SupplementalGroups.Rule = "" },
			[]wantErr{{field.ErrorTypeNotSupported, "spec.supplementalGroups.rule", ""}}},
		{"supplementalGroups negative", func(p *policy.PodSecurityPolicy) {
			p.Spec.SupplementalGroups.Ranges = []policy.IDRange{{Min: -1, Max: 1}}
		}, []wantErr{{field.ErrorTypeInvalid, "spec.supplementalGroups.ranges[0].min", ""}}},
		{"bad fsGroup rule", func(p *policy.PodSecurityPolicy) { p.Spec.FSGroup.Rule = "Sometimes" },
			[]wantErr{{field.ErrorTypeNotSupported, "spec.fsGroup.rule", ""}}},
		{"fsGroup inverted", func(p *policy.PodSecurityPolicy) {
			p.Spec.FSGroup.Ranges = []policy.IDRange{{Min: 1, Max: 2}, {Min: 3, Max: 2}}
		}, []wantErr{{field.ErrorTypeInvalid, "spec.fsGroup.ranges[1]", ""}}},
		{"unknown volume", func(p *policy.PodSecurityPolicy) {
			p.Spec.Volumes = []policy.FSType{policy.Secret, "hostpath"}
		}, []wantErr{{field.ErrorTypeNotSupported, "spec.volumes[1]", ""}}},
		{"wildcard with required drops", func(p *policy.PodSecurityPolicy) {
			p.Spec.AllowedCapabilities = []core.Capability{"*"}
			p.Spec.RequiredDropCapabilities = []core.Capability{"NET_RAW"}
		}, []wantErr{{field.ErrorTypeInvalid, "spec.requiredDropCapabilities", "wildcard"}}},
		{"default add also dropped", func(p *policy.PodSecurityPolicy) {
			p.Spec.DefaultAddCapabilities = []core.Capability{"CHOWN", "NET_RAW"}
			p.Spec.RequiredDropCapabilities = []core.Capability{"NET_RAW"}
		}, []wantErr{{field.ErrorTypeInvalid, "spec.defaultAddCapabilities[1]", "defaultAddCapabilities and requiredDropCapabilities"}}},
		{"allowed also dropped", func(p *policy.PodSecurityPolicy) {
			p.Spec.AllowedCapabilities = []core.Capability{"SYS_ADMIN"}
			p.Spec.RequiredDropCapabilities = []core.Capability{"SYS_ADMIN"}
		}, []wantErr{{field.ErrorTypeInvalid, "spec.allowedCapabilities[0]", "allowedCapabilities and requiredDropCapabilities"}}},
		{"default escalation without allowing it", func(p *policy.PodSecurityPolicy) {
			p.Spec.AllowPrivilegeEscalation = false
			p.Spec.DefaultAllowPrivilegeEscalation = ptr.To(true)
		}, []wantErr{{field.ErrorTypeInvalid, "spec.defaultAllowPrivilegeEscalation", "allowPrivilegeEscalation is false"}}},
		{"bad procMount", func(p *policy.PodSecurityPolicy) {
			p.Spec.AllowedProcMountTypes = []core.ProcMountType{core.DefaultProcMount, "Masked"}
		}, []wantErr{{field.ErrorTypeNotSupported, "spec.allowedProcMountTypes[1]", ""}}},
		{"empty host path stops checking", func(p *policy.PodSecurityPolicy) {
			p.Spec.AllowedHostPaths = []policy.AllowedHostPath{{PathPrefix: ""}, {PathPrefix: "/../x"}}
		}, []wantErr{{field.ErrorTypeRequired, "spec.allowedHostPaths[0].pathPrefix", ""}}},
		{"host path with ..", func(p *policy.PodSecurityPolicy) {
			p.Spec.AllowedHostPaths = []policy.AllowedHostPath{{PathPrefix: "/var"}, {PathPrefix: "/var/../etc"}}
		}, []wantErr{{field.ErrorTypeInvalid, "spec.allowedHostPaths[1].pathPrefix", "'..'"}}},
		{"flex volume without driver", func(p *policy.PodSecurityPolicy) {
			p.Spec.AllowedFlexVolumes = []policy.AllowedFlexVolume{{Driver: "a"}, {}}
		}, []wantErr{{field.ErrorTypeRequired, "spec.allowedFlexVolumes[1].driver", ""}}},
		{"CSI driver without name", func(p *policy.PodSecurityPolicy) {
			p.Spec.AllowedCSIDrivers = []policy.AllowedCSIDriver{{}}
		}, []wantErr{{field.ErrorTypeRequired, "spec.allowedCSIDrivers[0].name", ""}}},
		{"empty and malformed sysctls", func(p *policy.PodSecurityPolicy) {
			p.Spec.AllowedUnsafeSysctls = []string{"", "Kernel.Foo", "a*b"}
		}, []wantErr{
			{field.ErrorTypeInvalid, "spec.allowedUnsafeSysctls[0]", "empty"},
			{field.ErrorTypeInvalid, "spec.allowedUnsafeSysctls[1]", "match regex"},
			{field.ErrorTypeInvalid, "spec.allowedUnsafeSysctls[2]", "match regex"},
		}},
		{"too long sysctl", func(p *policy.PodSecurityPolicy) {
			p.Spec.ForbiddenSysctls = []string{strings.Repeat("a", 254)}
		}, []wantErr{{field.ErrorTypeInvalid, "spec.forbiddenSysctls[0]", "at most 253"}}},
		{"wildcard sysctl with others", func(p *policy.PodSecurityPolicy) {
			p.Spec.ForbiddenSysctls = []string{"*", "kernel.shm_rmid_forced"}
		}, []wantErr{{field.ErrorTypeForbidden, "spec.forbiddenSysctls.items", ""}}},
		{"sysctl allowed and forbidden", func(p *policy.PodSecurityPolicy) {
			p.Spec.AllowedUnsafeSysctls = []string{"kernel.msgmax"}
			p.Spec.ForbiddenSysctls = []string{"kernel.msgmax"}
		}, []wantErr{{field.ErrorTypeInvalid, "spec.allowedUnsafeSysctls[0]", "overlaps with kernel.msgmax"}}},
		{"allowed sysctl inside forbidden pattern", func(p *policy.PodSecurityPolicy) {
			p.Spec.AllowedUnsafeSysctls = []string{"net.core.somaxconn"}
			p.Spec.ForbiddenSysctls = []string{"net.*"}
		}, []wantErr{{field.ErrorTypeInvalid, "spec.allowedUnsafeSysctls[0]", "overlaps with net.*"}}},
		{"forbidden sysctl inside allowed pattern", func(p *policy.PodSecurityPolicy) {
			p.Spec.AllowedUnsafeSysctls = []string{"kernel.*"}
			p.Spec.ForbiddenSysctls = []string{"kernel.msgmax"}
		}, []wantErr{{field.ErrorTypeInvalid, "spec.forbiddenSysctls[0]", "overlaps with kernel.*"}}},
		{"allowed pattern inside forbidden pattern", func(p *policy.PodSecurityPolicy) {
			p.Spec.AllowedUnsafeSysctls = []string{"net.ipv4.*"}
			p.Spec.ForbiddenSysctls = []string{"net.*"}
		}, []wantErr{{field.ErrorTypeInvalid, "spec.allowedUnsafeSysctls[0]", "overlaps with net.*"}}},
		{"forbidden pattern inside allowed pattern", func(p *policy.PodSecurityPolicy) {
			p.Spec.AllowedUnsafeSysctls = []string{"net.*"}
			p.Spec.ForbiddenSysctls = []string{"net.ipv4.*"}
		}, []wantErr{{field.ErrorTypeInvalid, "spec.forbiddenSysctls[0]", "overlaps with net.*"}}},
		{"seccomp default localhost without a name", func(p *policy.PodSecurityPolicy) {
			p.Annotations = map[string]string{policy.SeccompDefaultProfileAnnotationKey: "localhost/", policy.SeccompAllowedProfilesAnnotationKey: "*"}
		}, []wantErr{{field.ErrorTypeInvalid, "metadata.annotations[seccomp.security.alpha.kubernetes.io/defaultProfileName]", "needs a name"}}},
		{"apparmor default localhost without a name", func(p *policy.PodSecurityPolicy) {
			p.Annotations = map[string]string{policy.AppArmorDefaultProfileAnnotationKey: "localhost/"}
		}, []wantErr{{field.ErrorTypeInvalid, "metadata.annotations[apparmor.security.beta.kubernetes.io/defaultProfileName]", "needs a name"}}},
		{"runtime class default not allowed", func(p *policy.PodSecurityPolicy) {
			p.Spec.RuntimeClass = &policy.RuntimeClassStrategyOptions{AllowedRuntimeClassNames: []string{"gvisor"}, DefaultRuntimeClassName: ptr.To("kata")}
		}, []wantErr{{field.ErrorTypeRequired, "spec.runtimeClass.allowedRuntimeClassNames", `default "kata" must be allowed`}}},
		{"runtime class invalid and duplicate names", func(p *policy.PodSecurityPolicy) {
			p.Spec.RuntimeClass = &policy.RuntimeClassStrategyOptions{AllowedRuntimeClassNames: []string{"Bad_Name", "kata", "kata"}}
		}, []wantErr{
			{field.ErrorTypeInvalid, "spec.runtimeClass.allowedRuntimeClassNames[0]", ""},
			{field.ErrorTypeDuplicate, "spec.runtimeClass.allowedRuntimeClassNames[2]", ""},
		}},
		{"runtime class wildcard with others", func(p *policy.PodSecurityPolicy) {
			p.Spec.RuntimeClass = &policy.RuntimeClassStrategyOptions{AllowedRuntimeClassNames: []string{"*", "kata"}}
		}, []wantErr{{field.ErrorTypeInvalid, "spec.runtimeClass.allowedRuntimeClassNames", "'*'"}}},
		{"runtime class invalid default", func(p *policy.PodSecurityPolicy) {
			p.Spec.RuntimeClass = &policy.RuntimeClassStrategyOptions{AllowedRuntimeClassNames: []string{"*"}, DefaultRuntimeClassName: ptr.To("Bad_Name")}
		}, []wantErr{{field.ErrorTypeInvalid, "spec.runtimeClass.defaultRuntimeClassName", ""}}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			psp := validPSP()
			tc.mutate(psp)
			checkErrors(t, "create", ValidatePodSecurityPolicy(psp), tc.want)
			if psp.Name == validPSP().Name && psp.Namespace == "" {
				checkErrors(t, "update", ValidatePodSecurityPolicyUpdate(validPSP(), psp), tc.want)
			}
		})
	}
}

func TestValidatePodSecurityPolicyUpdateMetadata(t *testing.T) {
	oldPSP := validPSP()
	newPSP := validPSP()
	newPSP.Name = "renamed"
	checkErrors(t, "update", ValidatePodSecurityPolicyUpdate(oldPSP, newPSP),
		[]wantErr{{field.ErrorTypeInvalid, "metadata.name", "immutable"}})
}

func checkErrors(t *testing.T, op string, errs field.ErrorList, want []wantErr) {
	t.Helper()
	if len(errs) != len(want) {
		t.Fatalf("%s: got %d errors, want %d:\n%s", op, len(errs), len(want), formatErrors(errs))
	}
	for i, w := range want {
		got := errs[i]
		if got.Type != w.typ || got.Field != w.field || !strings.Contains(got.Detail, w.detail) {
			t.Errorf("%s: error %d = %s %q %q, want %s %q containing %q", op, i, got.Type, got.Field, got.Detail, w.typ, w.field, w.detail)
		}
	}
}

func formatErrors(errs field.ErrorList) string {
	var b strings.Builder
	for _, e := range errs {
		fmt.Fprintf(&b, "  %s\n", e.Error())
	}
	return b.String()
}
