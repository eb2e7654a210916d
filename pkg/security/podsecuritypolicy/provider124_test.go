package podsecuritypolicy

import (
	"fmt"
	"reflect"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/util/validation/field"
	api "k8s.io/kubernetes/pkg/apis/core"

	"github.com/portcullis-k8s/portcullis/pkg/apis/policy"
	"github.com/portcullis-k8s/portcullis/pkg/kubecompat"
	psputil "github.com/portcullis-k8s/portcullis/pkg/security/podsecuritypolicy/util"
)

// The cases of 1.24's provider_test.go, as table data against this provider: the same
// policies, pods and verdicts, and the same words in the errors, except where
// docs/plugins/podsecuritypolicy.md lists a difference (ranges print as "[1-3]", not Go's
// "[{1 3}]"; field paths are where a 1.37 user writes the field).

// defaultPSP124 is 1.24's defaultPSP: everything RunAsAny, nothing else allowed.
func defaultPSP124() *policy.PodSecurityPolicy {
	p := &policy.PodSecurityPolicy{Spec: policy.PodSecurityPolicySpec{
		RunAsUser:                policy.RunAsUserStrategyOptions{Rule: policy.RunAsUserStrategyRunAsAny},
		RunAsGroup:               &policy.RunAsGroupStrategyOptions{Rule: policy.RunAsGroupStrategyRunAsAny},
		SELinux:                  policy.SELinuxStrategyOptions{Rule: policy.SELinuxStrategyRunAsAny},
		FSGroup:                  policy.FSGroupStrategyOptions{Rule: policy.FSGroupStrategyRunAsAny},
		SupplementalGroups:       policy.SupplementalGroupsStrategyOptions{Rule: policy.SupplementalGroupsStrategyRunAsAny},
		AllowPrivilegeEscalation: true,
	}}
	p.Name, p.Annotations = "psp-sa", map[string]string{}
	return p
}

// defaultPod124 is 1.24's defaultPod: empty security contexts, privileged false.
func defaultPod124() *api.Pod {
	p := &api.Pod{}
	p.Annotations = map[string]string{}
	p.Spec.SecurityContext = &api.PodSecurityContext{}
	p.Spec.Containers = []api.Container{{Name: "test-c", SecurityContext: &api.SecurityContext{Privileged: ptr(false)}}}
	return p
}

// flexPod124 has one flex volume of driver.
func flexPod124(driver string) *api.Pod {
	return podWith124(func(p *api.Pod) {
		p.Spec.Volumes = []api.Volume{{Name: "flex-volume", VolumeSource: api.VolumeSource{FlexVolume: &api.FlexVolumeSource{Driver: driver}}}}
	})
}

// flexPolicy124 is 1.24's allowFlexVolumesPSP: flex drivers example/foo and example/bar (or
// any), flex volumes (or every volume type) allowed.
func flexPolicy124(allowAllFlex, allowAllVolumes bool) *policy.PodSecurityPolicy {
	return pspWith124(func(p *policy.PodSecurityPolicy) {
		if !allowAllFlex {
			p.Spec.AllowedFlexVolumes = []policy.AllowedFlexVolume{{Driver: "example/foo"}, {Driver: "example/bar"}}
		}
		p.Spec.Volumes = []policy.FSType{policy.FlexVolume}
		if allowAllVolumes {
			p.Spec.Volumes = []policy.FSType{policy.All}
		}
	})
}

// ephemeralVolumePod124 has one generic ephemeral volume.
func ephemeralVolumePod124() *api.Pod {
	return podWith124(func(p *api.Pod) {
		p.Spec.Volumes = []api.Volume{{Name: "generic ephemeral volume", VolumeSource: api.VolumeSource{Ephemeral: &api.EphemeralVolumeSource{
			VolumeClaimTemplate: &api.PersistentVolumeClaimTemplate{}}}}}
	})
}

func moveContainersToEphemeral(in *api.Pod) *api.Pod {
	out := in.DeepCopy()
	for _, c := range out.Spec.Containers {
		out.Spec.EphemeralContainers = append(out.Spec.EphemeralContainers, api.EphemeralContainer{EphemeralContainerCommon: api.EphemeralContainerCommon(c)})
	}
	out.Spec.Containers = nil
	return out
}

func podWith124(mutate func(*api.Pod)) *api.Pod {
	p := defaultPod124()
	mutate(p)
	return p
}

func pspWith124(mutate func(*policy.PodSecurityPolicy)) *policy.PodSecurityPolicy {
	p := defaultPSP124()
	mutate(p)
	return p
}

func TestValidateFailures124(t *testing.T) {
	supplementalMust := pspWith124(func(p *policy.PodSecurityPolicy) {
		p.Spec.SupplementalGroups = policy.SupplementalGroupsStrategyOptions{Rule: policy.SupplementalGroupsStrategyMustRunAs, Ranges: []policy.IDRange{{Min: 1, Max: 1}}}
	})
	supplementalMay := pspWith124(func(p *policy.PodSecurityPolicy) {
		p.Spec.SupplementalGroups = policy.SupplementalGroupsStrategyOptions{Rule: policy.SupplementalGroupsStrategyMayRunAs,
			Ranges: []policy.IDRange{{Min: 50, Max: 50}, {Min: 55, Max: 998}, {Min: 1000, Max: 1000}}}
	})
	fsGroupMust := pspWith124(func(p *policy.PodSecurityPolicy) {
		p.Spec.FSGroup = policy.FSGroupStrategyOptions{Rule: policy.FSGroupStrategyMustRunAs, Ranges: []policy.IDRange{{Min: 1, Max: 1}}}
	})
	fsGroupMay := pspWith124(func(p *policy.PodSecurityPolicy) {
		p.Spec.FSGroup = policy.FSGroupStrategyOptions{Rule: policy.FSGroupStrategyMayRunAs, Ranges: []policy.IDRange{{Min: 10, Max: 20}, {Min: 1000, Max: 1001}}}
	})
	seLinux := pspWith124(func(p *policy.PodSecurityPolicy) {
		p.Spec.SELinux = policy.SELinuxStrategyOptions{Rule: policy.SELinuxStrategyMustRunAs, SELinuxOptions: &api.SELinuxOptions{Level: "foo"}}
	})
	hostPathPod := func(path string, writable bool) *api.Pod {
		return podWith124(func(p *api.Pod) {
			p.Spec.Volumes = []api.Volume{{Name: "bad volume", VolumeSource: api.VolumeSource{HostPath: &api.HostPathVolumeSource{Path: path}}}}
			if writable {
				p.Spec.Containers[0].VolumeMounts = []api.VolumeMount{{Name: "bad volume"}}
			}
		})
	}
	sysctlPod := func(name, value string) *api.Pod {
		return podWith124(func(p *api.Pod) { p.Spec.SecurityContext.Sysctls = []api.Sysctl{{Name: name, Value: value}} })
	}
	flexPod := flexPod124("example/unknown")
	csiPod := podWith124(func(p *api.Pod) {
		p.Spec.Volumes = []api.Volume{{Name: "csi volume pod", VolumeSource: api.VolumeSource{CSI: &api.CSIVolumeSource{Driver: "csi.driver.foo"}}}}
	})
	csiPolicy := func(volumes []policy.FSType, driver string) *policy.PodSecurityPolicy {
		return pspWith124(func(p *policy.PodSecurityPolicy) {
			p.Spec.Volumes = volumes
			p.Spec.AllowedCSIDrivers = []policy.AllowedCSIDriver{{Name: driver}}
		})
	}
	ephemeralVolumePod := ephemeralVolumePod124()
	readOnlyRootFS := pspWith124(func(p *policy.PodSecurityPolicy) { p.Spec.ReadOnlyRootFilesystem = true })
	appArmor := pspWith124(func(p *policy.PodSecurityPolicy) {
		p.Annotations = map[string]string{policy.AppArmorAllowedProfilesAnnotationKey: "runtime/default"}
	})

	tests := []struct {
		name string
		pod  *api.Pod
		psp  *policy.PodSecurityPolicy
		want string
		// container: a container's case, run again with the containers made ephemeral.
		container bool
	}{
		// TestValidatePodFailures.
		{name: "failHostNetwork", pod: podWith124(func(p *api.Pod) { kubecompat.SetPodHostNamespaces(&p.Spec, kubecompat.HostNamespaces{Network: true}) }), psp: defaultPSP124(), want: "Host network is not allowed to be used"},
		{name: "failHostPID", pod: podWith124(func(p *api.Pod) { kubecompat.SetPodHostNamespaces(&p.Spec, kubecompat.HostNamespaces{PID: true}) }), psp: defaultPSP124(), want: "Host PID is not allowed to be used"},
		{name: "failHostIPC", pod: podWith124(func(p *api.Pod) { kubecompat.SetPodHostNamespaces(&p.Spec, kubecompat.HostNamespaces{IPC: true}) }), psp: defaultPSP124(), want: "Host IPC is not allowed to be used"},
		{name: "failSupplementalGroupOutOfMustRange", pod: podWith124(func(p *api.Pod) { p.Spec.SecurityContext.SupplementalGroups = []int64{999} }),
			psp: supplementalMust, want: "group 999 must be in the ranges: [1]"},
		{name: "failSupplementalGroupOutOfMayRange", pod: podWith124(func(p *api.Pod) { p.Spec.SecurityContext.SupplementalGroups = []int64{999} }),
			psp: supplementalMay, want: "group 999 must be in the ranges: [50, 55-998, 1000]"},
		{name: "failSupplementalGroupMustEmpty", pod: defaultPod124(), psp: supplementalMust, want: "unable to validate empty groups against required ranges"},
		{name: "failFSGroupOutOfMustRange", pod: podWith124(func(p *api.Pod) { p.Spec.SecurityContext.FSGroup = ptr(int64(999)) }),
			psp: fsGroupMust, want: "group 999 must be in the ranges: [1]"},
		{name: "failFSGroupOutOfMayRange", pod: podWith124(func(p *api.Pod) { p.Spec.SecurityContext.FSGroup = ptr(int64(999)) }),
			psp: fsGroupMay, want: "group 999 must be in the ranges: [10-20, 1000-1001]"},
		{name: "failFSGroupMustEmpty", pod: defaultPod124(), psp: fsGroupMust, want: "unable to validate empty groups against required ranges"},
		{name: "failNilSELinux", pod: defaultPod124(), psp: seLinux, want: "seLinuxOptions: Required"},
		{name: "failInvalidSELinux", pod: podWith124(func(p *api.Pod) { p.Spec.SecurityContext.SELinuxOptions = &api.SELinuxOptions{Level: "bar"} }),
			psp: seLinux, want: "seLinuxOptions.level: Invalid value"},
		{name: "failHostDirPSP", pod: hostPathPod("", false), psp: defaultPSP124(), want: "hostPath volumes are not allowed to be used"},
		{name: "failHostPathDirPSP", pod: hostPathPod("/fail", false),
			psp: pspWith124(func(p *policy.PodSecurityPolicy) {
				p.Spec.Volumes = []policy.FSType{policy.HostPath}
				p.Spec.AllowedHostPaths = []policy.AllowedHostPath{{PathPrefix: "/foo/bar"}}
			}), want: "is not allowed to be used"},
		{name: "failHostPathReadOnlyPSP", pod: hostPathPod("/foo", true),
			psp: pspWith124(func(p *policy.PodSecurityPolicy) {
				p.Spec.Volumes = []policy.FSType{policy.HostPath}
				p.Spec.AllowedHostPaths = []policy.AllowedHostPath{{PathPrefix: "/foo", ReadOnly: true}}
			}), want: "must be read-only"},
		{name: "failSafeSysctlKernelPod with failNoSafeSysctlAllowedPSP", pod: sysctlPod("kernel.shm_rmid_forced", "1"),
			psp: pspWith124(func(p *policy.PodSecurityPolicy) { p.Spec.ForbiddenSysctls = []string{"*"} }), want: `sysctl "kernel.shm_rmid_forced" is not allowed`},
		{name: "failSafeSysctlKernelPod with failSysctlDisallowedPSP", pod: sysctlPod("kernel.shm_rmid_forced", "1"),
			psp: pspWith124(func(p *policy.PodSecurityPolicy) { p.Spec.ForbiddenSysctls = []string{"kernel.shm_rmid_forced"} }), want: `sysctl "kernel.shm_rmid_forced" is not allowed`},
		{name: "failUnsafeSysctlPod with failAllUnsafeSysctlsPSP", pod: sysctlPod("kernel.sem", "32000"),
			psp: pspWith124(func(p *policy.PodSecurityPolicy) { p.Spec.AllowedUnsafeSysctls = []string{} }), want: `unsafe sysctl "kernel.sem" is not allowed`},
		{name: "failInvalidSeccomp", pod: podWith124(func(p *api.Pod) { p.Annotations[api.SeccompPodAnnotationKey] = "foo" }),
			psp: defaultPSP124(), want: "Forbidden: seccomp may not be set"},
		{name: "fail pod with disallowed flexVolume when flex volumes are allowed", pod: flexPod, psp: flexPolicy124(false, false), want: "Flexvolume driver is not allowed to be used"},
		{name: "fail pod with disallowed flexVolume when all volumes are allowed", pod: flexPod, psp: flexPolicy124(false, true), want: "Flexvolume driver is not allowed to be used"},
		{name: "CSI policy using disallowed CDI driver", pod: csiPod, psp: csiPolicy([]policy.FSType{policy.CSI}, "csi.driver.disallowed"), want: "Inline CSI driver is not allowed to be used"},
		{name: "Using inline CSI driver with no policy specified", pod: csiPod, psp: csiPolicy(nil, "csi.driver.foo"), want: "csi volumes are not allowed to be used"},
		{name: "policy.All using disallowed CDI driver", pod: csiPod, psp: csiPolicy([]policy.FSType{policy.All}, "csi.driver.disallowed"), want: "Inline CSI driver is not allowed to be used"},
		{name: "CSI inline volumes without proper policy set", pod: csiPod, psp: defaultPSP124(), want: "csi volumes are not allowed to be used"},
		{name: "generic ephemeral volumes without proper policy set", pod: ephemeralVolumePod, psp: defaultPSP124(), want: "ephemeral volumes are not allowed to be used"},
		{name: "generic ephemeral volumes with other volume type allowed", pod: ephemeralVolumePod,
			psp: pspWith124(func(p *policy.PodSecurityPolicy) { p.Spec.Volumes = []policy.FSType{policy.NFS} }), want: "ephemeral volumes are not allowed to be used"},

		// TestValidateContainerFailures.
		{name: "failUserPSP", container: true, pod: podWith124(func(p *api.Pod) { p.Spec.Containers[0].SecurityContext.RunAsUser = ptr(int64(1)) }),
			psp: pspWith124(func(p *policy.PodSecurityPolicy) {
				p.Spec.RunAsUser = policy.RunAsUserStrategyOptions{Rule: policy.RunAsUserStrategyMustRunAs, Ranges: []policy.IDRange{{Min: 999, Max: 999}}}
			}), want: "runAsUser: Invalid value"},
		{name: "failSELinuxPSP", container: true, pod: podWith124(func(p *api.Pod) {
			p.Spec.SecurityContext.SELinuxOptions = &api.SELinuxOptions{Level: "foo"}
			p.Spec.Containers[0].SecurityContext.SELinuxOptions = &api.SELinuxOptions{Level: "bar"}
		}), psp: seLinux, want: "seLinuxOptions.level: Invalid value"},
		{name: "failNilAppArmor", container: true, pod: defaultPod124(), psp: appArmor, want: "AppArmor profile must be set"},
		{name: "failInvalidAppArmor", container: true, pod: podWith124(func(p *api.Pod) {
			p.Annotations[api.DeprecatedAppArmorAnnotationKeyPrefix+"test-c"] = "localhost/foo"
		}), psp: appArmor, want: `localhost/foo is not an allowed profile. Allowed values: "runtime/default"`},
		{name: "failPrivPSP", container: true, pod: podWith124(func(p *api.Pod) { p.Spec.Containers[0].SecurityContext.Privileged = ptr(true) }),
			psp: defaultPSP124(), want: "Privileged containers are not allowed"},
		{name: "failProcMountPSP", container: true, pod: podWith124(func(p *api.Pod) { p.Spec.Containers[0].SecurityContext.ProcMount = ptr(api.UnmaskedProcMount) }),
			psp: defaultPSP124(), want: "ProcMountType is not allowed"},
		{name: "failCapsPSP", container: true, pod: podWith124(func(p *api.Pod) {
			p.Spec.Containers[0].SecurityContext.Capabilities = &api.Capabilities{Add: []api.Capability{"foo"}}
		}), psp: defaultPSP124(), want: "capability may not be added"},
		{name: "failHostPortPSP", container: true, pod: podWith124(func(p *api.Pod) { p.Spec.Containers[0].Ports = []api.ContainerPort{{HostPort: 1}} }),
			psp: defaultPSP124(), want: "Host port 1 is not allowed to be used. Allowed ports: []"},
		{name: "failReadOnlyRootFS - nil", container: true, pod: defaultPod124(), psp: readOnlyRootFS, want: "ReadOnlyRootFilesystem may not be nil and must be set to true"},
		{name: "failReadOnlyRootFS - false", container: true, pod: podWith124(func(p *api.Pod) {
			p.Spec.Containers[0].SecurityContext.ReadOnlyRootFilesystem = ptr(false)
		}), psp: readOnlyRootFS, want: "ReadOnlyRootFilesystem must be set to true"},
		{name: "failSeccompContainerAnnotation", container: true, pod: podWith124(func(p *api.Pod) {
			p.Annotations[api.SeccompContainerAnnotationKeyPrefix+"test-c"] = "foo"
		}), psp: defaultPSP124(), want: "Forbidden: seccomp may not be set"},
		{name: "failSeccompContainerPodAnnotation", container: true, pod: podWith124(func(p *api.Pod) {
			p.Annotations[api.SeccompPodAnnotationKey] = "foo"
		}), psp: defaultPSP124(), want: "Forbidden: seccomp may not be set"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p := newProvider(t, tc.psp)
			pods := []*api.Pod{tc.pod}
			if tc.container {
				// Ephemeral containers are judged as regular ones.
				pods = append(pods, moveContainersToEphemeral(tc.pod))
			}
			for _, pod := range pods {
				errs := errorStrings(p, pod)
				if !containsPart(errs, tc.want) {
					t.Errorf("errors %q, want one containing %q", errs, tc.want)
				}
			}
		})
	}
}

func containsPart(errs []string, part string) bool {
	for _, e := range errs {
		if strings.Contains(e, part) {
			return true
		}
	}
	return false
}

// 1.24's TestValidateProjectedVolume.
func TestValidateProjectedVolume124(t *testing.T) {
	tokenVolume := tokenVolume().Projected
	tests := []struct {
		desc      string
		allowed   []policy.FSType
		source    *api.ProjectedVolumeSource
		wantAllow bool
	}{
		{"deny if secret is not allowed", []policy.FSType{policy.EmptyDir}, tokenVolume, false},
		{"deny if the projected volume has volume source other than the ones in projected volume injected by service account token admission plugin",
			[]policy.FSType{policy.Secret}, &api.ProjectedVolumeSource{Sources: []api.VolumeProjection{{ConfigMap: &api.ConfigMapProjection{
				LocalObjectReference: api.LocalObjectReference{Name: "foo-ca.crt"}, Items: []api.KeyToPath{{Key: "ca.crt", Path: "ca.crt"}}}}}}, false},
		{"allow if secret is allowed and the projected volume sources equals to the ones injected by service account admission plugin",
			[]policy.FSType{policy.Secret}, tokenVolume, true},
	}
	for _, tc := range tests {
		t.Run(tc.desc, func(t *testing.T) {
			psp := defaultPSP124()
			psp.Spec.Volumes = tc.allowed
			pod := defaultPod124()
			pod.Spec.Volumes = []api.Volume{{VolumeSource: api.VolumeSource{Projected: tc.source}}}
			errs := errorStrings(newProvider(t, psp), pod)
			if tc.wantAllow && len(errs) != 0 {
				t.Errorf("refused: %q", errs)
			}
			if !tc.wantAllow && !containsPart(errs, "projected volumes are not allowed to be used") {
				t.Errorf("errors %q, want projected volumes refused", errs)
			}
		})
	}
}

// 1.24's TestAllowPrivilegeEscalation: every valid combination of the policy's
// allowPrivilegeEscalation and defaultAllowPrivilegeEscalation and the container's setting.
func TestAllowPrivilegeEscalation124(t *testing.T) {
	b := func(v bool) *bool { return &v }
	tests := []struct {
		pspAPE          bool
		pspDAPE, podAPE *bool
		wantErr         bool
		wantAPE         *bool
	}{
		{true, nil, nil, false, nil},
		{true, nil, b(false), false, b(false)},
		{true, nil, b(true), false, b(true)},
		{true, b(false), nil, false, b(false)},
		{true, b(false), b(false), false, b(false)},
		{true, b(false), b(true), false, b(true)},
		{true, b(true), nil, false, b(true)},
		{true, b(true), b(false), false, b(false)},
		{true, b(true), b(true), false, b(true)},
		{false, nil, nil, false, b(false)},
		{false, nil, b(false), false, b(false)},
		{false, nil, b(true), true, nil},
		{false, b(false), nil, false, b(false)},
		{false, b(false), b(false), false, b(false)},
		{false, b(false), b(true), true, nil},
	}
	show := func(v *bool) string {
		if v == nil {
			return "nil"
		}
		return fmt.Sprint(*v)
	}
	for _, tc := range tests {
		t.Run(fmt.Sprintf("pspAPE:%t_pspDAPE:%s_podAPE:%s", tc.pspAPE, show(tc.pspDAPE), show(tc.podAPE)), func(t *testing.T) {
			psp := defaultPSP124()
			psp.Spec.AllowPrivilegeEscalation, psp.Spec.DefaultAllowPrivilegeEscalation = tc.pspAPE, tc.pspDAPE
			p := newProvider(t, psp)
			pod := defaultPod124()
			pod.Spec.Containers[0].SecurityContext.AllowPrivilegeEscalation = tc.podAPE
			for _, pod := range []*api.Pod{pod, moveContainersToEphemeral(pod)} {
				if err := p.MutatePod(pod); err != nil {
					t.Fatal(err)
				}
				errs := errorStrings(p, pod)
				if tc.wantErr {
					if len(errs) == 0 {
						t.Error("admitted, want refused")
					}
					continue
				}
				if len(errs) != 0 {
					t.Errorf("refused: %q", errs)
				}
				var got *bool
				forEachContainer(&pod.Spec, func(_ containerKind, _ int, c *api.Container) { got = c.SecurityContext.AllowPrivilegeEscalation })
				if !reflect.DeepEqual(got, tc.wantAPE) {
					t.Errorf("allowPrivilegeEscalation %s, want %s", show(got), show(tc.wantAPE))
				}
			}
		})
	}
}

// 1.24's TestDefaultRuntimeClassName and TestAllowedRuntimeClassNames.
func TestRuntimeClass124(t *testing.T) {
	withStrategy := func(rc *policy.RuntimeClassStrategyOptions) *policy.PodSecurityPolicy {
		return pspWith124(func(p *policy.PodSecurityPolicy) { p.Spec.RuntimeClass = rc })
	}
	noRC := defaultPod124()
	preset := podWith124(func(p *api.Pod) { p.Spec.RuntimeClassName = ptr("tim") })
	good := podWith124(func(p *api.Pod) { p.Spec.RuntimeClassName = ptr("good") })
	bad := podWith124(func(p *api.Pod) { p.Spec.RuntimeClassName = ptr("bad") })
	strategies := map[string]*policy.RuntimeClassStrategyOptions{
		"nil-strategy":   nil,
		"empty-strategy": {},
		"no-default":     {AllowedRuntimeClassNames: []string{"foo", "bar"}},
		"defaulting":     {DefaultRuntimeClassName: ptr("foo")},
	}
	t.Run("defaults", func(t *testing.T) {
		for name, rc := range strategies {
			for _, pod := range []*api.Pod{noRC, preset} {
				want := pod.DeepCopy()
				if name == "defaulting" && pod.Spec.RuntimeClassName == nil {
					want.Spec.RuntimeClassName = ptr("foo")
				}
				got := pod.DeepCopy()
				if err := newProvider(t, withStrategy(rc)).MutatePod(got); err != nil {
					t.Fatal(err)
				}
				if !reflect.DeepEqual(got.Spec.RuntimeClassName, want.Spec.RuntimeClassName) {
					t.Errorf("%s: runtimeClassName %v, want %v", name, got.Spec.RuntimeClassName, want.Spec.RuntimeClassName)
				}
			}
		}
	})
	allowed := []struct {
		name           string
		rc             *policy.RuntimeClassStrategyOptions
		valid, invalid []*api.Pod
	}{
		{"nil-strategy", nil, []*api.Pod{noRC, good, bad}, nil},
		{"empty-strategy", &policy.RuntimeClassStrategyOptions{AllowedRuntimeClassNames: []string{}}, []*api.Pod{noRC}, []*api.Pod{good, bad}},
		{"allow-all-strategy", &policy.RuntimeClassStrategyOptions{AllowedRuntimeClassNames: []string{"*"}, DefaultRuntimeClassName: ptr("foo")}, []*api.Pod{noRC, good, bad}, nil},
		{"named-allowed", &policy.RuntimeClassStrategyOptions{AllowedRuntimeClassNames: []string{"good"}}, []*api.Pod{good}, []*api.Pod{bad}},
	}
	for _, tc := range allowed {
		t.Run("allowed/"+tc.name, func(t *testing.T) {
			p := newProvider(t, withStrategy(tc.rc))
			for _, pod := range tc.valid {
				if errs := p.ValidatePod(pod.DeepCopy()); len(errs) != 0 {
					t.Errorf("runtimeClassName %v refused: %v", pod.Spec.RuntimeClassName, errs)
				}
			}
			for _, pod := range tc.invalid {
				if errs := p.ValidatePod(pod.DeepCopy()); !containsPart(errorList(errs), "spec.runtimeClassName") {
					t.Errorf("runtimeClassName %v admitted: %v", *pod.Spec.RuntimeClassName, errs)
				}
			}
		})
	}
}

func errorList(errs field.ErrorList) []string {
	var out []string
	for _, e := range errs {
		out = append(out, e.Error())
	}
	return out
}

// 1.24's TestValidatePodSuccess and TestValidateContainerSuccess; the seccomp profile 1.24
// called "foo" is "localhost/foo" here (1.37 pod validation refuses any other spelling).
func TestValidateSuccess124(t *testing.T) {
	ranges15 := []policy.IDRange{{Min: 1, Max: 5}}
	seLinuxOptions := func() *api.SELinuxOptions {
		return &api.SELinuxOptions{User: "user", Role: "role", Type: "type", Level: "level"}
	}
	mounts := []api.VolumeMount{
		{Name: "writeable /foo/bar"}, {Name: "read only /foo/bar/baz", ReadOnly: true},
		{Name: "parent read only volume", ReadOnly: true}, {Name: "read only child volume", ReadOnly: true},
	}
	hostPathPod := podWith124(func(p *api.Pod) {
		p.Spec.InitContainers = []api.Container{{Name: "test-c", VolumeMounts: mounts}}
		p.Spec.Containers[0].VolumeMounts = mounts
		for name, path := range map[string]string{"writeable /foo/bar": "/foo/bar", "read only /foo/bar/baz": "/foo/bar/baz",
			"parent read only volume": "/foo/", "read only child volume": "/foo/readonly/child"} {
			p.Spec.Volumes = append(p.Spec.Volumes, api.Volume{Name: name, VolumeSource: api.VolumeSource{HostPath: &api.HostPathVolumeSource{Path: path}}})
		}
	})
	flexPod := flexPod124("example/bar")
	flexPolicy := flexPolicy124
	csiPod := podWith124(func(p *api.Pod) {
		for _, d := range []string{"foo", "bar", "baz"} {
			p.Spec.Volumes = append(p.Spec.Volumes, api.Volume{Name: "csi " + d, VolumeSource: api.VolumeSource{CSI: &api.CSIVolumeSource{Driver: d}}})
		}
	})
	csiPolicy := func(volumes ...policy.FSType) *policy.PodSecurityPolicy {
		return pspWith124(func(p *policy.PodSecurityPolicy) {
			p.Spec.Volumes = volumes
			p.Spec.AllowedCSIDrivers = []policy.AllowedCSIDriver{{Name: "foo"}, {Name: "bar"}, {Name: "baz"}}
		})
	}
	ephemeralPod := ephemeralVolumePod124()
	seccompPolicy := pspWith124(func(p *policy.PodSecurityPolicy) {
		p.Annotations = map[string]string{policy.SeccompAllowedProfilesAnnotationKey: "localhost/foo"}
	})
	tests := []struct {
		name      string
		pod       *api.Pod
		psp       *policy.PodSecurityPolicy
		container bool
	}{
		// TestValidatePodSuccess.
		{name: "pass hostNetwork validating PSP", pod: podWith124(func(p *api.Pod) { kubecompat.SetPodHostNamespaces(&p.Spec, kubecompat.HostNamespaces{Network: true}) }),
			psp: pspWith124(func(p *policy.PodSecurityPolicy) {
				p.Spec.HostNetwork = true
			})},
		{name: "pass hostPID validating PSP", pod: podWith124(func(p *api.Pod) { kubecompat.SetPodHostNamespaces(&p.Spec, kubecompat.HostNamespaces{PID: true}) }),
			psp: pspWith124(func(p *policy.PodSecurityPolicy) {
				p.Spec.HostPID = true
			})},
		{name: "pass hostIPC validating PSP", pod: podWith124(func(p *api.Pod) { kubecompat.SetPodHostNamespaces(&p.Spec, kubecompat.HostNamespaces{IPC: true}) }),
			psp: pspWith124(func(p *policy.PodSecurityPolicy) {
				p.Spec.HostIPC = true
			})},
		{name: "pass required supplemental group validating PSP", pod: podWith124(func(p *api.Pod) { p.Spec.SecurityContext.SupplementalGroups = []int64{3} }),
			psp: pspWith124(func(p *policy.PodSecurityPolicy) {
				p.Spec.SupplementalGroups = policy.SupplementalGroupsStrategyOptions{Rule: policy.SupplementalGroupsStrategyMustRunAs, Ranges: ranges15}
			})},
		{name: "pass optional supplemental group validation PSP", pod: podWith124(func(p *api.Pod) { p.Spec.SecurityContext.SupplementalGroups = []int64{3} }),
			psp: pspWith124(func(p *policy.PodSecurityPolicy) {
				p.Spec.SupplementalGroups = policy.SupplementalGroupsStrategyOptions{Rule: policy.SupplementalGroupsStrategyMayRunAs, Ranges: ranges15}
			})},
		{name: "pass optional supplemental group validation PSP - no pod group specified", pod: defaultPod124(),
			psp: pspWith124(func(p *policy.PodSecurityPolicy) {
				p.Spec.SupplementalGroups = policy.SupplementalGroupsStrategyOptions{Rule: policy.SupplementalGroupsStrategyMayRunAs, Ranges: ranges15}
			})},
		{name: "pass required fs group validating PSP", pod: podWith124(func(p *api.Pod) { p.Spec.SecurityContext.FSGroup = ptr(int64(3)) }),
			psp: pspWith124(func(p *policy.PodSecurityPolicy) {
				p.Spec.FSGroup = policy.FSGroupStrategyOptions{Rule: policy.FSGroupStrategyMustRunAs, Ranges: ranges15}
			})},
		{name: "pass optional fs group validating PSP", pod: podWith124(func(p *api.Pod) { p.Spec.SecurityContext.FSGroup = ptr(int64(3)) }),
			psp: pspWith124(func(p *policy.PodSecurityPolicy) {
				p.Spec.FSGroup = policy.FSGroupStrategyOptions{Rule: policy.FSGroupStrategyMayRunAs, Ranges: ranges15}
			})},
		{name: "pass optional fs group validating PSP - no pod group specified", pod: defaultPod124(),
			psp: pspWith124(func(p *policy.PodSecurityPolicy) {
				p.Spec.FSGroup = policy.FSGroupStrategyOptions{Rule: policy.FSGroupStrategyMayRunAs, Ranges: ranges15}
			})},
		{name: "pass selinux validating PSP", pod: podWith124(func(p *api.Pod) { p.Spec.SecurityContext.SELinuxOptions = seLinuxOptions() }),
			psp: pspWith124(func(p *policy.PodSecurityPolicy) {
				p.Spec.SELinux = policy.SELinuxStrategyOptions{Rule: policy.SELinuxStrategyMustRunAs, SELinuxOptions: seLinuxOptions()}
			})},
		{name: "pass sysctl specific profile with safe kernel sysctl", pod: podWith124(func(p *api.Pod) {
			p.Spec.SecurityContext.Sysctls = []api.Sysctl{{Name: "kernel.shm_rmid_forced", Value: "1"}}
		}), psp: pspWith124(func(p *policy.PodSecurityPolicy) {
			p.Spec.ForbiddenSysctls, p.Spec.AllowedUnsafeSysctls = []string{}, []string{"*"}
		})},
		{name: "pass sysctl specific profile with unsafe kernel sysctl", pod: podWith124(func(p *api.Pod) {
			p.Spec.SecurityContext.Sysctls = []api.Sysctl{{Name: "kernel.sem", Value: "32000"}}
		}), psp: pspWith124(func(p *policy.PodSecurityPolicy) {
			p.Spec.ForbiddenSysctls, p.Spec.AllowedUnsafeSysctls = []string{}, []string{"*"}
		})},
		{name: "pass hostDir allowed directory validating PSP", pod: hostPathPod, psp: pspWith124(func(p *policy.PodSecurityPolicy) {
			p.Spec.Volumes = []policy.FSType{policy.HostPath}
			p.Spec.AllowedHostPaths = []policy.AllowedHostPath{{PathPrefix: "/foo/bar/baz", ReadOnly: true}, {PathPrefix: "/foo", ReadOnly: true}, {PathPrefix: "/foo/bar"}}
		})},
		{name: "pass hostDir all volumes allowed validating PSP", pod: hostPathPod, psp: pspWith124(func(p *policy.PodSecurityPolicy) {
			p.Spec.Volumes = []policy.FSType{policy.All}
			p.Spec.AllowedHostPaths = []policy.AllowedHostPath{{PathPrefix: "/foo"}}
		})},
		{name: "pass seccomp validating PSP", pod: podWith124(func(p *api.Pod) { p.Annotations[api.SeccompPodAnnotationKey] = "localhost/foo" }), psp: seccompPolicy},
		{name: "flex volume driver in a allowlist (all volumes are allowed)", pod: flexPod, psp: flexPolicy(false, true)},
		{name: "flex volume driver with empty allowlist (all volumes are allowed)", pod: flexPod, psp: flexPolicy(true, true)},
		{name: "flex volume driver in a allowlist (only flex volumes are allowed)", pod: flexPod, psp: flexPolicy(false, false)},
		{name: "flex volume driver with empty allowlist (only flex volumes volumes are allowed)", pod: flexPod, psp: flexPolicy(true, false)},
		{name: "CSI policy with no CSI volumes used", pod: defaultPod124(), psp: csiPolicy(policy.CSI)},
		{name: "CSI policy with CSI inline volumes used", pod: csiPod, psp: csiPolicy(policy.CSI)},
		{name: "policy.All with CSI inline volumes used", pod: csiPod, psp: csiPolicy(policy.All)},
		{name: "generic ephemeral volume policy with generic ephemeral volume used", pod: ephemeralPod,
			psp: pspWith124(func(p *policy.PodSecurityPolicy) { p.Spec.Volumes = []policy.FSType{policy.Ephemeral} })},
		{name: "policy.All with generic ephemeral volume used", pod: ephemeralPod,
			psp: pspWith124(func(p *policy.PodSecurityPolicy) { p.Spec.Volumes = []policy.FSType{policy.All} })},

		// TestValidateContainerSuccess.
		{name: "pass user must run as PSP", container: true, pod: podWith124(func(p *api.Pod) { p.Spec.Containers[0].SecurityContext.RunAsUser = ptr(int64(999)) }),
			psp: pspWith124(func(p *policy.PodSecurityPolicy) {
				p.Spec.RunAsUser = policy.RunAsUserStrategyOptions{Rule: policy.RunAsUserStrategyMustRunAs, Ranges: []policy.IDRange{{Min: 999, Max: 999}}}
			})},
		{name: "pass seLinux must run as PSP", container: true, pod: podWith124(func(p *api.Pod) {
			p.Spec.SecurityContext.SELinuxOptions = &api.SELinuxOptions{Level: "foo"}
			p.Spec.Containers[0].SecurityContext.SELinuxOptions = &api.SELinuxOptions{Level: "foo"}
		}), psp: pspWith124(func(p *policy.PodSecurityPolicy) {
			p.Spec.SELinux = policy.SELinuxStrategyOptions{Rule: policy.SELinuxStrategyMustRunAs, SELinuxOptions: &api.SELinuxOptions{Level: "foo"}}
		})},
		{name: "pass AppArmor allowed profiles", container: true, pod: podWith124(func(p *api.Pod) {
			p.Annotations[api.DeprecatedAppArmorAnnotationKeyPrefix+"test-c"] = "runtime/default"
		}), psp: pspWith124(func(p *policy.PodSecurityPolicy) {
			p.Annotations = map[string]string{policy.AppArmorAllowedProfilesAnnotationKey: "runtime/default"}
		})},
		{name: "pass priv validating PSP", container: true, pod: podWith124(func(p *api.Pod) { p.Spec.Containers[0].SecurityContext.Privileged = ptr(true) }),
			psp: pspWith124(func(p *policy.PodSecurityPolicy) { p.Spec.Privileged = true })},
		{name: "pass allowed caps validating PSP", container: true, pod: podWith124(func(p *api.Pod) {
			p.Spec.Containers[0].SecurityContext.Capabilities = &api.Capabilities{Add: []api.Capability{"foo"}}
		}), psp: pspWith124(func(p *policy.PodSecurityPolicy) { p.Spec.AllowedCapabilities = []api.Capability{"foo"} })},
		{name: "pass required caps validating PSP", container: true, pod: podWith124(func(p *api.Pod) {
			p.Spec.Containers[0].SecurityContext.Capabilities = &api.Capabilities{Add: []api.Capability{"foo"}}
		}), psp: pspWith124(func(p *policy.PodSecurityPolicy) { p.Spec.DefaultAddCapabilities = []api.Capability{"foo"} })},
		{name: "pass hostDir validating PSP", container: true, pod: podWith124(func(p *api.Pod) {
			p.Spec.Volumes = []api.Volume{{Name: "bad volume", VolumeSource: api.VolumeSource{HostPath: &api.HostPathVolumeSource{}}}}
		}), psp: pspWith124(func(p *policy.PodSecurityPolicy) { p.Spec.Volumes = []policy.FSType{policy.HostPath} })},
		{name: "pass hostPort validating PSP", container: true, pod: podWith124(func(p *api.Pod) { p.Spec.Containers[0].Ports = []api.ContainerPort{{HostPort: 1}} }),
			psp: pspWith124(func(p *policy.PodSecurityPolicy) { p.Spec.HostPorts = []policy.HostPortRange{{Min: 1, Max: 1}} })},
		{name: "pass read only root fs - nil", container: true, pod: defaultPod124(), psp: defaultPSP124()},
		{name: "pass read only root fs - false", container: true, pod: podWith124(func(p *api.Pod) {
			p.Spec.Containers[0].SecurityContext.ReadOnlyRootFilesystem = ptr(false)
		}), psp: defaultPSP124()},
		{name: "pass read only root fs - true", container: true, pod: podWith124(func(p *api.Pod) {
			p.Spec.Containers[0].SecurityContext.ReadOnlyRootFilesystem = ptr(true)
		}), psp: defaultPSP124()},
		{name: "pass seccomp container annotation", container: true, pod: podWith124(func(p *api.Pod) {
			p.Annotations[api.SeccompPodAnnotationKey] = "localhost/foo"
			p.Annotations[api.SeccompContainerAnnotationKeyPrefix+"test-c"] = "localhost/foo"
		}), psp: seccompPolicy},
		{name: "pass seccomp inherit pod annotation", container: true, pod: podWith124(func(p *api.Pod) {
			p.Annotations[api.SeccompPodAnnotationKey] = "localhost/foo"
		}), psp: seccompPolicy},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p := newProvider(t, tc.psp)
			pods := []*api.Pod{tc.pod}
			if tc.container {
				pods = append(pods, moveContainersToEphemeral(tc.pod))
			}
			for _, pod := range pods {
				if errs := errorStrings(p, pod); len(errs) != 0 {
					t.Errorf("refused: %q", errs)
				}
			}
		})
	}
}

// 1.24's TestMutatePodNonmutating and TestMutateContainerNonmutating: a policy whose
// strategies are all permissive changes neither the pod nor itself.
func TestMutateNonmutating124(t *testing.T) {
	permissivePSP := func() *policy.PodSecurityPolicy {
		return pspWith124(func(p *policy.PodSecurityPolicy) {
			p.Annotations = map[string]string{policy.SeccompAllowedProfilesAnnotationKey: "*"}
		})
	}
	pods := map[string]func() *api.Pod{
		"pod with an empty security context": func() *api.Pod {
			return &api.Pod{Spec: api.PodSpec{SecurityContext: &api.PodSecurityContext{}}}
		},
		"containers without a security context": func() *api.Pod {
			return &api.Pod{Spec: api.PodSpec{Containers: []api.Container{{}},
				EphemeralContainers: []api.EphemeralContainer{{}}}}
		},
		"containers with runAsNonRoot false": func() *api.Pod {
			sc := func() *api.SecurityContext { return &api.SecurityContext{RunAsNonRoot: ptr(false)} }
			return &api.Pod{Spec: api.PodSpec{Containers: []api.Container{{SecurityContext: sc()}},
				EphemeralContainers: []api.EphemeralContainer{{EphemeralContainerCommon: api.EphemeralContainerCommon{SecurityContext: sc()}}}}}
		},
	}
	for name, newPod := range pods {
		t.Run(name, func(t *testing.T) {
			psp, pod := permissivePSP(), newPod()
			if err := newProvider(t, psp).MutatePod(pod); err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(pod, newPod()) {
				t.Errorf("the pod was changed: %+v", pod.Spec)
			}
			if !reflect.DeepEqual(psp, permissivePSP()) {
				t.Error("the policy was changed")
			}
		})
	}
}

// 1.24's TestGenerateContainerSecurityContextReadOnlyRootFS: the policy's readOnlyRootFilesystem
// defaults an unset value and never changes a set one.
func TestReadOnlyRootFilesystemDefault124(t *testing.T) {
	readOnly := pspWith124(func(p *policy.PodSecurityPolicy) { p.Spec.ReadOnlyRootFilesystem = true })
	pod := func(v *bool) *api.Pod {
		return podWith124(func(p *api.Pod) { p.Spec.Containers[0].SecurityContext.ReadOnlyRootFilesystem = v })
	}
	tests := []struct {
		name string
		psp  *policy.PodSecurityPolicy
		pod  *api.Pod
		want *bool
	}{
		{"false psp, nil sc", defaultPSP124(), pod(nil), nil},
		{"false psp, false sc", defaultPSP124(), pod(ptr(false)), ptr(false)},
		{"false psp, true sc", defaultPSP124(), pod(ptr(true)), ptr(true)},
		{"true psp, nil sc", readOnly, pod(nil), ptr(true)},
		{"true psp, false sc", readOnly, pod(ptr(false)), ptr(false)},
		{"true psp, true sc", readOnly, pod(ptr(true)), ptr(true)},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if err := newProvider(t, tc.psp).MutatePod(tc.pod); err != nil {
				t.Fatal(err)
			}
			if got := tc.pod.Spec.Containers[0].SecurityContext.ReadOnlyRootFilesystem; !reflect.DeepEqual(got, tc.want) {
				t.Errorf("readOnlyRootFilesystem %v, want %v", got, tc.want)
			}
		})
	}
}

// 1.24's TestValidateAllowedVolumes, over every volume source of the 1.37 pod API: a policy
// allowing no volume refuses it with one error naming its type; allowing the type, or "*",
// admits it.
func TestValidateAllowedVolumes124(t *testing.T) {
	sources := reflect.TypeOf(api.VolumeSource{})
	for i := range sources.NumField() {
		f := sources.Field(i)
		t.Run(f.Name, func(t *testing.T) {
			var source api.VolumeSource
			reflect.ValueOf(&source).Elem().Field(i).Set(reflect.New(f.Type.Elem()))
			volume := api.Volume{Name: "v", VolumeSource: source}
			fsType, err := psputil.GetVolumeFSType(&volume)
			if err != nil {
				t.Fatal(err)
			}
			pod := defaultPod124()
			pod.Spec.Volumes = []api.Volume{volume}
			if errs := errorStrings(newProvider(t, defaultPSP124()), pod); len(errs) != 1 || !strings.Contains(errs[0], fmt.Sprintf("%s volumes are not allowed to be used", fsType)) {
				t.Errorf("a policy allowing no volume: %q, want one error naming %s", errs, fsType)
			}
			for _, allowed := range []policy.FSType{fsType, policy.All} {
				psp := defaultPSP124()
				psp.Spec.Volumes = []policy.FSType{allowed}
				if errs := errorStrings(newProvider(t, psp), pod); len(errs) != 0 {
					t.Errorf("allowing %s: %q", allowed, errs)
				}
			}
		})
	}
}
