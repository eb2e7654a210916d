package podsecuritypolicy

import (
	"reflect"
	"strings"
	"testing"

	api "k8s.io/kubernetes/pkg/apis/core"

	"github.com/portcullis-k8s/portcullis/pkg/apis/policy"
	"github.com/portcullis-k8s/portcullis/pkg/kubecompat"
)

func ptr[T any](v T) *T { return &v }

// permissive is a policy that allows everything; cases tighten one thing at a time.
func permissive() *policy.PodSecurityPolicy {
	return &policy.PodSecurityPolicy{Spec: policy.PodSecurityPolicySpec{
		Privileged:               true,
		AllowPrivilegeEscalation: true,
		AllowedCapabilities:      []api.Capability{"*"},
		Volumes:                  []policy.FSType{policy.All},
		HostNetwork:              true,
		HostPID:                  true,
		HostIPC:                  true,
		HostPorts:                []policy.HostPortRange{{Min: 0, Max: 65535}},
		RunAsUser:                policy.RunAsUserStrategyOptions{Rule: policy.RunAsUserStrategyRunAsAny},
		SELinux:                  policy.SELinuxStrategyOptions{Rule: policy.SELinuxStrategyRunAsAny},
		SupplementalGroups:       policy.SupplementalGroupsStrategyOptions{Rule: policy.SupplementalGroupsStrategyRunAsAny},
		FSGroup:                  policy.FSGroupStrategyOptions{Rule: policy.FSGroupStrategyRunAsAny},
		AllowedUnsafeSysctls:     []string{"*"},
		AllowedProcMountTypes:    []api.ProcMountType{api.DefaultProcMount, api.UnmaskedProcMount},
	}}
}

// podWithAllKinds has one init, one regular and one ephemeral container.
func podWithAllKinds() *api.Pod {
	p := &api.Pod{}
	p.Name, p.Namespace = "p", "ns"
	p.Spec.InitContainers = []api.Container{{Name: "init"}}
	p.Spec.Containers = []api.Container{{Name: "app"}}
	p.Spec.EphemeralContainers = []api.EphemeralContainer{{EphemeralContainerCommon: api.EphemeralContainerCommon{Name: "debug"}}}
	return p
}

func newProvider(t testing.TB, psp *policy.PodSecurityPolicy) Provider {
	t.Helper()
	p, err := NewSimpleProvider(psp, "ns", NewSimpleStrategyFactory())
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func errorStrings(p Provider, pod *api.Pod) []string {
	var out []string
	for _, e := range p.ValidatePod(pod) {
		out = append(out, e.Error())
	}
	return out
}

func TestNewSimpleProvider(t *testing.T) {
	if _, err := NewSimpleProvider(nil, "", NewSimpleStrategyFactory()); err == nil {
		t.Error("nil policy: want error")
	}
	if _, err := NewSimpleProvider(permissive(), "", nil); err == nil {
		t.Error("nil factory: want error")
	}
	bad := permissive()
	bad.Spec.RunAsUser.Rule = "Bogus"
	bad.Spec.FSGroup = policy.FSGroupStrategyOptions{Rule: policy.FSGroupStrategyMustRunAs}
	_, err := NewSimpleProvider(bad, "", NewSimpleStrategyFactory())
	if err == nil || !strings.Contains(err.Error(), "RunAsUser") || !strings.Contains(err.Error(), "FSGroup") {
		t.Errorf("want both problems reported, got %v", err)
	}
	p := permissive()
	p.Name = "named"
	if got := newProvider(t, p).GetPSPName(); got != "named" {
		t.Errorf("GetPSPName = %q", got)
	}
}

// TestValidateEveryContainerKind checks each container-level rule against init, regular
// and ephemeral containers alike, with their own paths.
func TestValidateEveryContainerKind(t *testing.T) {
	tests := []struct {
		name    string
		tighten func(*policy.PodSecurityPolicy)
		set     func(*api.Container)
		want    string // for the container at PATH
	}{
		{"privileged", func(p *policy.PodSecurityPolicy) { p.Spec.Privileged = false },
			func(c *api.Container) { c.SecurityContext = &api.SecurityContext{Privileged: ptr(true)} },
			"PATH.securityContext.privileged: Invalid value: true: Privileged containers are not allowed"},
		{"privilege escalation unset", func(p *policy.PodSecurityPolicy) { p.Spec.AllowPrivilegeEscalation = false },
			func(c *api.Container) {},
			"PATH.securityContext.allowPrivilegeEscalation: Invalid value: null: Allowing privilege escalation for containers is not allowed"},
		{"privilege escalation true", func(p *policy.PodSecurityPolicy) { p.Spec.AllowPrivilegeEscalation = false },
			func(c *api.Container) { c.SecurityContext = &api.SecurityContext{AllowPrivilegeEscalation: ptr(true)} },
			"PATH.securityContext.allowPrivilegeEscalation: Invalid value: true: Allowing privilege escalation for containers is not allowed"},
		{"capabilities", func(p *policy.PodSecurityPolicy) { p.Spec.AllowedCapabilities = nil },
			func(c *api.Container) {
				c.SecurityContext = &api.SecurityContext{Capabilities: &api.Capabilities{Add: []api.Capability{"SYS_ADMIN"}}}
			},
			`PATH.securityContext.capabilities.add: Invalid value: "SYS_ADMIN": capability may not be added`},
		{"procMount", func(p *policy.PodSecurityPolicy) { p.Spec.AllowedProcMountTypes = nil },
			func(c *api.Container) {
				c.SecurityContext = &api.SecurityContext{ProcMount: ptr(api.UnmaskedProcMount)}
			},
			`PATH.securityContext.procMount: Invalid value: "Unmasked": ProcMountType is not allowed`},
		{"readOnlyRootFilesystem false", func(p *policy.PodSecurityPolicy) { p.Spec.ReadOnlyRootFilesystem = true },
			func(c *api.Container) { c.SecurityContext = &api.SecurityContext{ReadOnlyRootFilesystem: ptr(false)} },
			"PATH.securityContext.readOnlyRootFilesystem: Invalid value: false: ReadOnlyRootFilesystem must be set to true"},
		{"runAsUser", func(p *policy.PodSecurityPolicy) {
			p.Spec.RunAsUser = policy.RunAsUserStrategyOptions{Rule: policy.RunAsUserStrategyMustRunAsNonRoot}
		},
			func(c *api.Container) { c.SecurityContext = &api.SecurityContext{RunAsUser: ptr(int64(0))} },
			"PATH.securityContext.runAsUser: Invalid value: 0: running with the root UID is forbidden"},
		{"runAsGroup", func(p *policy.PodSecurityPolicy) {
			p.Spec.RunAsGroup = &policy.RunAsGroupStrategyOptions{Rule: policy.RunAsGroupStrategyMayRunAs, Ranges: []policy.IDRange{{Min: 1, Max: 10}}}
		},
			func(c *api.Container) { c.SecurityContext = &api.SecurityContext{RunAsGroup: ptr(int64(0))} },
			"PATH.securityContext.runAsGroup: Invalid value: 0: group 0 must be in the ranges: [1-10]"},
		{"seLinux", func(p *policy.PodSecurityPolicy) {
			p.Spec.SELinux = policy.SELinuxStrategyOptions{Rule: policy.SELinuxStrategyMustRunAs, SELinuxOptions: &api.SELinuxOptions{Level: "s0"}}
		},
			func(c *api.Container) {
				c.SecurityContext = &api.SecurityContext{SELinuxOptions: &api.SELinuxOptions{Level: "s1"}}
			},
			`PATH.securityContext.seLinuxOptions.level: Invalid value: "s1": must be s0`},
	}
	kinds := []struct {
		path string
		get  func(*api.Pod) *api.Container
	}{
		{"spec.initContainers[0]", func(p *api.Pod) *api.Container { return &p.Spec.InitContainers[0] }},
		{"spec.containers[0]", func(p *api.Pod) *api.Container { return &p.Spec.Containers[0] }},
		{"spec.ephemeralContainers[0]", func(p *api.Pod) *api.Container {
			return (*api.Container)(&p.Spec.EphemeralContainers[0].EphemeralContainerCommon)
		}},
	}
	for _, tc := range tests {
		for _, k := range kinds {
			t.Run(tc.name+"/"+k.path, func(t *testing.T) {
				psp := permissive()
				tc.tighten(psp)
				pod := podWithAllKinds()
				// The other containers are made compliant so only k's error shows.
				for _, other := range kinds {
					if other.path != k.path {
						other.get(pod).SecurityContext = &api.SecurityContext{AllowPrivilegeEscalation: ptr(false), ReadOnlyRootFilesystem: ptr(true), RunAsNonRoot: ptr(true)}
					}
				}
				tc.set(k.get(pod))
				pod.Spec.SecurityContext = &api.PodSecurityContext{SELinuxOptions: &api.SELinuxOptions{Level: "s0"}}
				want := []string{strings.ReplaceAll(tc.want, "PATH", k.path)}
				if got := errorStrings(newProvider(t, psp), pod); !reflect.DeepEqual(got, want) {
					t.Fatalf("got %q\nwant %q", got, want)
				}
			})
		}
	}
}

func TestValidatePodLevel(t *testing.T) {
	tests := []struct {
		name    string
		tighten func(*policy.PodSecurityPolicy)
		set     func(*api.Pod)
		want    []string
	}{
		{"permissive allows a wild pod", func(*policy.PodSecurityPolicy) {}, func(p *api.Pod) {
			kubecompat.SetPodHostNamespaces(&p.Spec, kubecompat.HostNamespaces{Network: true, PID: true, IPC: true})
			p.Spec.Containers[0].SecurityContext = &api.SecurityContext{Privileged: ptr(true)}
			p.Spec.Volumes = []api.Volume{{Name: "h", VolumeSource: api.VolumeSource{HostPath: &api.HostPathVolumeSource{Path: "/"}}}}
		}, nil},
		{"host namespaces", func(p *policy.PodSecurityPolicy) {
			p.Spec.HostNetwork, p.Spec.HostPID, p.Spec.HostIPC = false, false, false
		},
			func(p *api.Pod) {
				kubecompat.SetPodHostNamespaces(&p.Spec, kubecompat.HostNamespaces{Network: true, PID: true, IPC: true})
			},
			[]string{
				"spec.hostNetwork: Invalid value: true: Host network is not allowed to be used",
				"spec.hostPID: Invalid value: true: Host PID is not allowed to be used",
				"spec.hostIPC: Invalid value: true: Host IPC is not allowed to be used",
			}},
		{"host ports", func(p *policy.PodSecurityPolicy) {
			p.Spec.HostPorts = []policy.HostPortRange{{Min: 8000, Max: 8080}, {Min: 9000, Max: 9000}}
		},
			func(p *api.Pod) {
				p.Spec.Containers[0].Ports = []api.ContainerPort{{ContainerPort: 80}, {HostPort: 8080}, {HostPort: 80}}
				p.Spec.InitContainers[0].Ports = []api.ContainerPort{{HostPort: 9001}}
			},
			[]string{
				"spec.initContainers[0].ports[0].hostPort: Invalid value: 9001: Host port 9001 is not allowed to be used. Allowed ports: [8000-8080,9000]",
				"spec.containers[0].ports[2].hostPort: Invalid value: 80: Host port 80 is not allowed to be used. Allowed ports: [8000-8080,9000]",
			}},
		{"volume types", func(p *policy.PodSecurityPolicy) {
			p.Spec.Volumes = []policy.FSType{policy.ConfigMap, policy.Ephemeral}
		},
			func(p *api.Pod) {
				p.Spec.Volumes = []api.Volume{
					{Name: "cm", VolumeSource: api.VolumeSource{ConfigMap: &api.ConfigMapVolumeSource{}}},
					{Name: "eph", VolumeSource: api.VolumeSource{Ephemeral: &api.EphemeralVolumeSource{}}},
					{Name: "img", VolumeSource: api.VolumeSource{Image: &api.ImageVolumeSource{Reference: "r"}}},
					{Name: "odd"},
				}
			},
			[]string{
				`spec.volumes[2]: Invalid value: "image": image volumes are not allowed to be used`,
				`spec.volumes[3]: Invalid value: "": unknown volume type for volume "odd"`,
			}},
		{"image volumes allowed by name", func(p *policy.PodSecurityPolicy) { p.Spec.Volumes = []policy.FSType{policy.Image} },
			func(p *api.Pod) {
				p.Spec.Volumes = []api.Volume{{Name: "img", VolumeSource: api.VolumeSource{Image: &api.ImageVolumeSource{Reference: "r"}}}}
			}, nil},
		{"host path prefixes and read-only mounts in every kind", func(p *policy.PodSecurityPolicy) {
			p.Spec.AllowedHostPaths = []policy.AllowedHostPath{{PathPrefix: "/var/log", ReadOnly: true}, {PathPrefix: "/tmp"}}
		}, func(p *api.Pod) {
			p.Spec.Volumes = []api.Volume{
				{Name: "logs", VolumeSource: api.VolumeSource{HostPath: &api.HostPathVolumeSource{Path: "/var/log/pods"}}},
				{Name: "etc", VolumeSource: api.VolumeSource{HostPath: &api.HostPathVolumeSource{Path: "/var/logs"}}},
				{Name: "tmp", VolumeSource: api.VolumeSource{HostPath: &api.HostPathVolumeSource{Path: "/tmp/x"}}},
			}
			p.Spec.InitContainers[0].VolumeMounts = []api.VolumeMount{{Name: "logs", ReadOnly: true}}
			p.Spec.Containers[0].VolumeMounts = []api.VolumeMount{{Name: "tmp"}, {Name: "logs"}}
			p.Spec.EphemeralContainers[0].VolumeMounts = []api.VolumeMount{{Name: "logs"}}
		}, []string{
			"spec.containers[0].volumeMounts[1].readOnly: Invalid value: false: must be read-only",
			"spec.ephemeralContainers[0].volumeMounts[0].readOnly: Invalid value: false: must be read-only",
			`spec.volumes[1].hostPath.pathPrefix: Invalid value: "/var/logs": is not allowed to be used; allowed host paths: [/var/log (read-only) /tmp]`,
		}},
		{"flex and CSI drivers", func(p *policy.PodSecurityPolicy) {
			p.Spec.AllowedFlexVolumes = []policy.AllowedFlexVolume{{Driver: "ok/flex"}}
			p.Spec.AllowedCSIDrivers = []policy.AllowedCSIDriver{{Name: "ok.csi"}}
		}, func(p *api.Pod) {
			p.Spec.Volumes = []api.Volume{
				{Name: "f1", VolumeSource: api.VolumeSource{FlexVolume: &api.FlexVolumeSource{Driver: "ok/flex"}}},
				{Name: "f2", VolumeSource: api.VolumeSource{FlexVolume: &api.FlexVolumeSource{Driver: "bad/flex"}}},
				{Name: "c1", VolumeSource: api.VolumeSource{CSI: &api.CSIVolumeSource{Driver: "ok.csi"}}},
				{Name: "c2", VolumeSource: api.VolumeSource{CSI: &api.CSIVolumeSource{Driver: "bad.csi"}}},
			}
		}, []string{
			`spec.volumes[1].flexVolume.driver: Invalid value: "bad/flex": Flexvolume driver is not allowed to be used`,
			`spec.volumes[3].csi.driver: Invalid value: "bad.csi": Inline CSI driver is not allowed to be used`,
		}},
		{"runtime class", func(p *policy.PodSecurityPolicy) {
			p.Spec.RuntimeClass = &policy.RuntimeClassStrategyOptions{AllowedRuntimeClassNames: []string{"gvisor"}}
		}, func(p *api.Pod) { p.Spec.RuntimeClassName = ptr("kata") },
			[]string{`spec.runtimeClassName: Invalid value: "kata": RuntimeClass is not allowed; allowed: [gvisor]`}},
		{"runtime class wildcard", func(p *policy.PodSecurityPolicy) {
			p.Spec.RuntimeClass = &policy.RuntimeClassStrategyOptions{AllowedRuntimeClassNames: []string{"*"}}
		}, func(p *api.Pod) { p.Spec.RuntimeClassName = ptr("kata") }, nil},
		{"groups", func(p *policy.PodSecurityPolicy) {
			p.Spec.FSGroup = policy.FSGroupStrategyOptions{Rule: policy.FSGroupStrategyMustRunAs, Ranges: []policy.IDRange{{Min: 1, Max: 10}}}
			p.Spec.SupplementalGroups = policy.SupplementalGroupsStrategyOptions{Rule: policy.SupplementalGroupsStrategyMayRunAs, Ranges: []policy.IDRange{{Min: 1, Max: 10}}}
		}, func(p *api.Pod) {
			p.Spec.SecurityContext = &api.PodSecurityContext{SupplementalGroups: []int64{5, 11}}
		}, []string{
			"spec.securityContext.fsGroup: Invalid value: null: unable to validate empty groups against required ranges",
			"spec.securityContext.supplementalGroups[1]: Invalid value: 11: group 11 must be in the ranges: [1-10]",
		}},
		{"sysctls", func(p *policy.PodSecurityPolicy) { p.Spec.AllowedUnsafeSysctls = nil },
			func(p *api.Pod) {
				p.Spec.SecurityContext = &api.PodSecurityContext{Sysctls: []api.Sysctl{{Name: "net.ipv4.tcp_syncookies"}, {Name: "kernel.sem"}}}
			},
			[]string{`spec.securityContext.sysctls[1]: Forbidden: unsafe sysctl "kernel.sem" is not allowed`}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			psp := permissive()
			tc.tighten(psp)
			pod := podWithAllKinds()
			tc.set(pod)
			if got := errorStrings(newProvider(t, psp), pod); !reflect.DeepEqual(got, tc.want) {
				t.Fatalf("got %q\nwant %q", got, tc.want)
			}
		})
	}
}

// strictPolicy sets a default for everything a policy can default.
func strictPolicy() *policy.PodSecurityPolicy {
	psp := permissive()
	psp.Annotations = map[string]string{
		policy.SeccompAllowedProfilesAnnotationKey:  "runtime/default",
		policy.SeccompDefaultProfileAnnotationKey:   "runtime/default",
		policy.AppArmorAllowedProfilesAnnotationKey: "runtime/default",
		policy.AppArmorDefaultProfileAnnotationKey:  "runtime/default",
	}
	psp.Spec.Privileged = false
	psp.Spec.AllowPrivilegeEscalation = false
	psp.Spec.DefaultAddCapabilities = []api.Capability{"NET_BIND_SERVICE"}
	psp.Spec.RequiredDropCapabilities = []api.Capability{"ALL"}
	psp.Spec.AllowedCapabilities = nil
	psp.Spec.ReadOnlyRootFilesystem = true
	psp.Spec.RunAsUser = policy.RunAsUserStrategyOptions{Rule: policy.RunAsUserStrategyMustRunAs, Ranges: []policy.IDRange{{Min: 1000, Max: 2000}}}
	psp.Spec.RunAsGroup = &policy.RunAsGroupStrategyOptions{Rule: policy.RunAsGroupStrategyMustRunAs, Ranges: []policy.IDRange{{Min: 3000, Max: 4000}}}
	psp.Spec.SELinux = policy.SELinuxStrategyOptions{Rule: policy.SELinuxStrategyMustRunAs, SELinuxOptions: &api.SELinuxOptions{Level: "s0:c1,c2"}}
	psp.Spec.SupplementalGroups = policy.SupplementalGroupsStrategyOptions{Rule: policy.SupplementalGroupsStrategyMustRunAs, Ranges: []policy.IDRange{{Min: 5000, Max: 6000}}}
	psp.Spec.FSGroup = policy.FSGroupStrategyOptions{Rule: policy.FSGroupStrategyMustRunAs, Ranges: []policy.IDRange{{Min: 7000, Max: 8000}}}
	psp.Spec.RuntimeClass = &policy.RuntimeClassStrategyOptions{AllowedRuntimeClassNames: []string{"gvisor"}, DefaultRuntimeClassName: ptr("gvisor")}
	return psp
}

func TestMutatePodDefaultsEveryContainerKind(t *testing.T) {
	psp := strictPolicy()
	pristine := psp.DeepCopy()
	provider := newProvider(t, psp)
	pod := podWithAllKinds()
	if err := provider.MutatePod(pod); err != nil {
		t.Fatal(err)
	}
	if errs := provider.ValidatePod(pod); len(errs) > 0 {
		t.Fatalf("defaulted pod does not validate: %v", errs)
	}

	wantPod := &api.PodSecurityContext{
		SupplementalGroups: []int64{5000},
		FSGroup:            ptr(int64(7000)),
		SELinuxOptions:     &api.SELinuxOptions{Level: "s0:c1,c2"},
		SeccompProfile:     &api.SeccompProfile{Type: api.SeccompProfileTypeRuntimeDefault},
		AppArmorProfile:    &api.AppArmorProfile{Type: api.AppArmorProfileTypeRuntimeDefault},
	}
	if !reflect.DeepEqual(pod.Spec.SecurityContext, wantPod) {
		t.Errorf("pod securityContext = %+v\nwant %+v", pod.Spec.SecurityContext, wantPod)
	}
	if pod.Spec.RuntimeClassName == nil || *pod.Spec.RuntimeClassName != "gvisor" {
		t.Errorf("runtimeClassName = %v", pod.Spec.RuntimeClassName)
	}
	wantContainer := &api.SecurityContext{
		RunAsUser:                ptr(int64(1000)),
		RunAsGroup:               ptr(int64(3000)),
		Capabilities:             &api.Capabilities{Add: []api.Capability{"NET_BIND_SERVICE"}, Drop: []api.Capability{"ALL"}},
		ReadOnlyRootFilesystem:   ptr(true),
		AllowPrivilegeEscalation: ptr(false),
	}
	for _, c := range []*api.Container{&pod.Spec.InitContainers[0], &pod.Spec.Containers[0],
		(*api.Container)(&pod.Spec.EphemeralContainers[0].EphemeralContainerCommon)} {
		if !reflect.DeepEqual(c.SecurityContext, wantContainer) {
			t.Errorf("%s securityContext = %+v\nwant %+v", c.Name, c.SecurityContext, wantContainer)
		}
	}

	// Scribbling over everything the pod now points to must leave the policy untouched.
	*pod.Spec.RuntimeClassName = "x"
	pod.Spec.SecurityContext.SELinuxOptions.Level = "x"
	*pod.Spec.Containers[0].SecurityContext.AllowPrivilegeEscalation = true
	pod.Spec.Containers[0].SecurityContext.Capabilities.Add[0] = "x"
	pod.Spec.Containers[0].SecurityContext.Capabilities.Drop[0] = "x"
	if !reflect.DeepEqual(psp, pristine) {
		t.Fatal("MutatePod handed out pointers into the policy")
	}
}

func TestMutatePodKeepsWhatIsSet(t *testing.T) {
	provider := newProvider(t, strictPolicy())
	pod := podWithAllKinds()
	pod.Spec.SecurityContext = &api.PodSecurityContext{RunAsUser: ptr(int64(1500)), RunAsGroup: ptr(int64(3500)), FSGroup: ptr(int64(7500))}
	pod.Spec.RuntimeClassName = ptr("other")
	pod.Spec.Containers[0].SecurityContext = &api.SecurityContext{AllowPrivilegeEscalation: ptr(true), ReadOnlyRootFilesystem: ptr(false)}
	if err := provider.MutatePod(pod); err != nil {
		t.Fatal(err)
	}
	c := pod.Spec.Containers[0].SecurityContext
	// Inherited from the pod: not copied down to the container.
	if c.RunAsUser != nil || c.RunAsGroup != nil {
		t.Errorf("runAsUser/runAsGroup defaulted over the pod's: %v %v", c.RunAsUser, c.RunAsGroup)
	}
	if *pod.Spec.SecurityContext.FSGroup != 7500 || *pod.Spec.RuntimeClassName != "other" || !*c.AllowPrivilegeEscalation || *c.ReadOnlyRootFilesystem {
		t.Error("MutatePod overwrote a value the pod set")
	}
	want := []string{
		`spec.runtimeClassName: Invalid value: "other": RuntimeClass is not allowed; allowed: [gvisor]`,
		"spec.containers[0].securityContext.readOnlyRootFilesystem: Invalid value: false: ReadOnlyRootFilesystem must be set to true",
		"spec.containers[0].securityContext.allowPrivilegeEscalation: Invalid value: true: Allowing privilege escalation for containers is not allowed",
	}
	if got := errorStrings(provider, pod); !reflect.DeepEqual(got, want) {
		t.Fatalf("got %q\nwant %q", got, want)
	}
}

func TestMutatePodDefaultAllowPrivilegeEscalation(t *testing.T) {
	tests := []struct {
		name         string
		allow        bool
		defaultAllow *bool
		want         *bool
	}{
		{"allowed, no default", true, nil, nil},
		{"allowed, default false", true, ptr(false), ptr(false)},
		{"allowed, default true", true, ptr(true), ptr(true)},
		{"forbidden, no default", false, nil, ptr(false)},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			psp := permissive()
			psp.Spec.AllowPrivilegeEscalation = tc.allow
			psp.Spec.DefaultAllowPrivilegeEscalation = tc.defaultAllow
			pod := podWithAllKinds()
			if err := newProvider(t, psp).MutatePod(pod); err != nil {
				t.Fatal(err)
			}
			var got *bool
			if sc := pod.Spec.Containers[0].SecurityContext; sc != nil {
				got = sc.AllowPrivilegeEscalation
			}
			if !reflect.DeepEqual(got, tc.want) {
				t.Fatalf("got %v, want %v", got, tc.want)
			}
			if tc.defaultAllow != nil && got == tc.defaultAllow {
				t.Fatal("default aliases the policy")
			}
		})
	}
}

func TestMutatePodNonRoot(t *testing.T) {
	psp := permissive()
	psp.Spec.RunAsUser.Rule = policy.RunAsUserStrategyMustRunAsNonRoot
	p := newProvider(t, psp)
	pod := podWithAllKinds()
	pod.Spec.Containers[0].SecurityContext = &api.SecurityContext{RunAsUser: ptr(int64(10))}
	if err := p.MutatePod(pod); err != nil {
		t.Fatal(err)
	}
	if sc := pod.Spec.InitContainers[0].SecurityContext; sc == nil || sc.RunAsNonRoot == nil || !*sc.RunAsNonRoot {
		t.Error("runAsNonRoot not defaulted")
	}
	if pod.Spec.Containers[0].SecurityContext.RunAsNonRoot != nil {
		t.Error("runAsNonRoot set although the container names a uid")
	}
	if errs := p.ValidatePod(pod); len(errs) > 0 {
		t.Fatal(errs)
	}
}
