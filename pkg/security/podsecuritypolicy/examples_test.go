package podsecuritypolicy

import (
	"reflect"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	api "k8s.io/kubernetes/pkg/apis/core"
	corev1conversion "k8s.io/kubernetes/pkg/apis/core/v1"
	psaapi "k8s.io/pod-security-admission/api"
	psapolicy "k8s.io/pod-security-admission/policy"

	deploypsp "github.com/portcullis-k8s/portcullis/build/deploy/podsecuritypolicy"
	"github.com/portcullis-k8s/portcullis/pkg/apis/policy"
	"github.com/portcullis-k8s/portcullis/pkg/kubecompat"
)

// shippedExample is build/deploy/podsecuritypolicy/<name>.yaml as the plugin reads it: the
// files themselves, not copies.
func shippedExample(t testing.TB, name string) *policy.PodSecurityPolicy {
	t.Helper()
	data, err := deploypsp.Policy(name)
	if err != nil {
		t.Fatal(err)
	}
	p, ok := decodePolicy(data)
	if !ok {
		t.Fatalf("%s.yaml does not decode as a policy/v1beta1 PodSecurityPolicy", name)
	}
	return p
}

// tokenVolume is the volume the ServiceAccount admission plugin injects into every pod.
func tokenVolume() api.Volume {
	return api.Volume{Name: "kube-api-access-x7k2p", VolumeSource: api.VolumeSource{Projected: &api.ProjectedVolumeSource{
		DefaultMode: ptr(int32(0o644)),
		Sources: []api.VolumeProjection{
			{ServiceAccountToken: kubecompat.ServiceAccountTokenProjection("token", 3607)},
			{ConfigMap: &api.ConfigMapProjection{LocalObjectReference: api.LocalObjectReference{Name: "kube-root-ca.crt"},
				Items: []api.KeyToPath{{Key: "ca.crt", Path: "ca.crt"}}}},
			{DownwardAPI: &api.DownwardAPIProjection{Items: []api.DownwardAPIVolumeFile{{Path: "namespace",
				FieldRef: &api.ObjectFieldSelector{APIVersion: "v1", FieldPath: "metadata.namespace"}}}}},
		},
	}}}
}

// typicalPod is what a Deployment usually creates: one app container, a config map, the
// service account token, an emptyDir.
func typicalPod() *api.Pod {
	p := &api.Pod{}
	p.Name, p.Namespace = "web-7d4b9c-abcde", "default"
	p.Annotations = map[string]string{"kubectl.kubernetes.io/restartedAt": "2026-01-01T00:00:00Z"}
	p.Spec.Volumes = []api.Volume{
		{Name: "config", VolumeSource: api.VolumeSource{ConfigMap: &api.ConfigMapVolumeSource{}}},
		{Name: "cache", VolumeSource: api.VolumeSource{EmptyDir: &api.EmptyDirVolumeSource{}}},
		tokenVolume(),
	}
	p.Spec.Containers = []api.Container{{
		Name:  "web",
		Image: "registry.example/web:1.2.3",
		Ports: []api.ContainerPort{{ContainerPort: 8080}},
		VolumeMounts: []api.VolumeMount{
			{Name: "config", MountPath: "/etc/web", ReadOnly: true},
			{Name: "cache", MountPath: "/cache"},
			{Name: "kube-api-access-x7k2p", MountPath: "/var/run/secrets/kubernetes.io/serviceaccount", ReadOnly: true},
		},
	}}
	return p
}

// restrictedPod is typicalPod as PodSecurity's restricted level wants it.
func restrictedPod() *api.Pod {
	p := typicalPod()
	p.Spec.SecurityContext = &api.PodSecurityContext{
		RunAsNonRoot:   ptr(true),
		SeccompProfile: &api.SeccompProfile{Type: api.SeccompProfileTypeRuntimeDefault},
	}
	p.Spec.Containers[0].SecurityContext = &api.SecurityContext{
		AllowPrivilegeEscalation: ptr(false),
		Capabilities:             &api.Capabilities{Drop: []api.Capability{"ALL"}},
	}
	return p
}

func with(p *api.Pod, mutate func(*api.Pod)) *api.Pod {
	mutate(p)
	return p
}

func TestShippedExamples(t *testing.T) {
	hostPathPod := with(typicalPod(), func(p *api.Pod) {
		p.Spec.Volumes = append(p.Spec.Volumes, api.Volume{Name: "host", VolumeSource: api.VolumeSource{HostPath: &api.HostPathVolumeSource{Path: "/var/run/docker.sock"}}})
	})
	privilegedPod := with(typicalPod(), func(p *api.Pod) {
		kubecompat.SetPodHostNamespaces(&p.Spec, kubecompat.HostNamespaces{Network: true})
		p.Spec.Containers[0].SecurityContext = &api.SecurityContext{Privileged: ptr(true)}
	})
	rootPod := with(typicalPod(), func(p *api.Pod) { p.Spec.SecurityContext = &api.PodSecurityContext{RunAsUser: ptr(int64(0))} })
	sysAdminPod := with(typicalPod(), func(p *api.Pod) {
		p.Spec.Containers[0].SecurityContext = &api.SecurityContext{Capabilities: &api.Capabilities{Add: []api.Capability{"SYS_ADMIN"}}}
	})
	tests := []struct {
		name, policy string
		pod          *api.Pod
		want         []string
	}{
		{"privileged admits typical", "privileged", typicalPod(), nil},
		{"privileged admits privileged", "privileged", privilegedPod, nil},
		{"privileged admits host paths", "privileged", hostPathPod, nil},
		{"baseline admits typical", "baseline", typicalPod(), nil},
		{"baseline admits root", "baseline", rootPod, nil},
		{"baseline refuses privileged", "baseline", privilegedPod, []string{
			"spec.hostNetwork: Invalid value: true: Host network is not allowed to be used",
			"spec.containers[0].securityContext.privileged: Invalid value: true: Privileged containers are not allowed",
		}},
		{"baseline refuses host paths", "baseline", hostPathPod, []string{
			`spec.volumes[3]: Invalid value: "hostPath": hostPath volumes are not allowed to be used`,
		}},
		{"baseline refuses SYS_ADMIN", "baseline", sysAdminPod, []string{
			`spec.containers[0].securityContext.capabilities.add: Invalid value: "SYS_ADMIN": capability may not be added`,
		}},
		{"restricted admits the restricted pod", "restricted", restrictedPod(), nil},
		{"restricted refuses root", "restricted", with(restrictedPod(), func(p *api.Pod) { p.Spec.SecurityContext.RunAsUser = ptr(int64(0)) }), []string{
			"spec.containers[0].securityContext.runAsUser: Invalid value: 0: running with the root UID is forbidden",
		}},
		{"restricted refuses no seccomp profile", "restricted", with(restrictedPod(), func(p *api.Pod) { p.Spec.SecurityContext.SeccompProfile = nil }), []string{
			"spec.securityContext.seccompProfile: Forbidden: seccomp profile must be set. Valid values are docker/default,runtime/default",
		}},
		{"restricted refuses host paths", "restricted", with(restrictedPod(), func(p *api.Pod) { p.Spec.Volumes = append(p.Spec.Volumes, hostPathPod.Spec.Volumes[3]) }), []string{
			`spec.volumes[3]: Invalid value: "hostPath": hostPath volumes are not allowed to be used`,
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p := newProvider(t, shippedExample(t, tc.policy))
			pod := tc.pod.DeepCopy()
			if err := p.MutatePod(pod); err != nil {
				t.Fatal(err)
			}
			if got := errorStrings(p, pod); !reflect.DeepEqual(got, tc.want) {
				t.Fatalf("got %q\nwant %q", got, tc.want)
			}
		})
	}
}

// TestShippedExamplesAdmitWhatPodSecurityAdmits: PodSecurity judges a pod after every mutating
// plugin, this one included, so a policy that changed a pod PodSecurity admits could turn it
// into one PodSecurity refuses (the documentation's baseline example set seccomp Unconfined).
// Every pod PodSecurity's own evaluator admits at a level is admitted unchanged by the shipped
// example of that level. The table states PodSecurity's verdict, so the test cannot pass by
// PodSecurity refusing everything.
func TestShippedExamplesAdmitWhatPodSecurityAdmits(t *testing.T) {
	evaluator, err := psapolicy.NewEvaluator(psapolicy.DefaultChecks(), nil)
	if err != nil {
		t.Fatal(err)
	}
	const (
		baseline   = psaapi.LevelBaseline
		restricted = psaapi.LevelRestricted // a pod admitted at restricted is at baseline too
	)
	localhost := "profiles/app.json"
	tests := []struct {
		name string
		pod  *api.Pod
		// admittedBy is the highest level PodSecurity admits the pod at ("" for none).
		admittedBy psaapi.Level
	}{
		{"a typical pod", typicalPod(), baseline},
		{"a root pod", with(typicalPod(), func(p *api.Pod) { p.Spec.SecurityContext = &api.PodSecurityContext{RunAsUser: ptr(int64(0))} }), baseline},
		{"seccomp RuntimeDefault", with(typicalPod(), func(p *api.Pod) {
			p.Spec.SecurityContext = &api.PodSecurityContext{SeccompProfile: &api.SeccompProfile{Type: api.SeccompProfileTypeRuntimeDefault}}
		}), baseline},
		{"seccomp Unconfined", with(typicalPod(), func(p *api.Pod) {
			p.Spec.SecurityContext = &api.PodSecurityContext{SeccompProfile: &api.SeccompProfile{Type: api.SeccompProfileTypeUnconfined}}
		}), ""},
		{"AppArmor RuntimeDefault", with(typicalPod(), func(p *api.Pod) {
			p.Spec.SecurityContext = &api.PodSecurityContext{AppArmorProfile: &api.AppArmorProfile{Type: api.AppArmorProfileTypeRuntimeDefault}}
		}), baseline},
		{"the baseline capabilities added", with(typicalPod(), func(p *api.Pod) {
			p.Spec.Containers[0].SecurityContext = &api.SecurityContext{Capabilities: &api.Capabilities{Add: []api.Capability{"CHOWN", "NET_BIND_SERVICE", "KILL"}}}
		}), baseline},
		{"a generic ephemeral volume and an image volume", with(typicalPod(), func(p *api.Pod) {
			p.Spec.Volumes = append(p.Spec.Volumes,
				api.Volume{Name: "scratch", VolumeSource: api.VolumeSource{Ephemeral: &api.EphemeralVolumeSource{}}},
				api.Volume{Name: "model", VolumeSource: api.VolumeSource{Image: &api.ImageVolumeSource{Reference: "registry.example/model:1"}}})
		}), baseline},
		{"sysctls PodSecurity calls safe", with(typicalPod(), func(p *api.Pod) {
			p.Spec.SecurityContext = &api.PodSecurityContext{Sysctls: []api.Sysctl{{Name: "net.ipv4.tcp_keepalive_time", Value: "600"}, {Name: "net.ipv4.ip_local_port_range", Value: "1024 65535"}}}
		}), baseline},
		{"the restricted pod", restrictedPod(), restricted},
		{"restricted, adding NET_BIND_SERVICE", with(restrictedPod(), func(p *api.Pod) {
			p.Spec.Containers[0].SecurityContext.Capabilities.Add = []api.Capability{"NET_BIND_SERVICE"}
		}), restricted},
		{"restricted, with fsGroup and supplemental groups", with(restrictedPod(), func(p *api.Pod) {
			p.Spec.SecurityContext.FSGroup = ptr(int64(2000))
			p.Spec.SecurityContext.SupplementalGroups = []int64{3000}
		}), restricted},
		{"restricted, with a user and AppArmor", with(restrictedPod(), func(p *api.Pod) {
			p.Spec.SecurityContext.RunAsUser = ptr(int64(1000))
			p.Spec.SecurityContext.AppArmorProfile = &api.AppArmorProfile{Type: api.AppArmorProfileTypeLocalhost, LocalhostProfile: &localhost}
		}), restricted},
		{"restricted, with image and ephemeral volumes", with(restrictedPod(), func(p *api.Pod) {
			p.Spec.Volumes = append(p.Spec.Volumes,
				api.Volume{Name: "scratch", VolumeSource: api.VolumeSource{Ephemeral: &api.EphemeralVolumeSource{}}},
				api.Volume{Name: "model", VolumeSource: api.VolumeSource{Image: &api.ImageVolumeSource{Reference: "registry.example/model:1"}}})
		}), restricted},
		{"a privileged pod", with(typicalPod(), func(p *api.Pod) { p.Spec.Containers[0].SecurityContext = &api.SecurityContext{Privileged: ptr(true)} }), ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			for _, level := range []psaapi.Level{baseline, restricted} {
				admitted := podSecurityAdmits(t, evaluator, level, tc.pod)
				wantAdmitted := tc.admittedBy == restricted || (tc.admittedBy == baseline && level == baseline)
				if admitted != wantAdmitted {
					t.Fatalf("PodSecurity %s admits the pod: %v, the table says %v", level, admitted, wantAdmitted)
				}
				if !admitted {
					continue
				}
				p := newProvider(t, shippedExample(t, string(level)))
				pod := tc.pod.DeepCopy()
				if err := p.MutatePod(pod); err != nil {
					t.Fatal(err)
				}
				if !apiequality.Semantic.DeepEqual(pod, tc.pod) {
					t.Errorf("the %s example changed a pod PodSecurity %s admits:\n%+v\nwas\n%+v", level, level, pod.Spec.SecurityContext, tc.pod.Spec.SecurityContext)
				}
				if errs := errorStrings(p, pod); errs != nil {
					t.Errorf("the %s example refuses a pod PodSecurity %s admits: %q", level, level, errs)
				}
			}
		})
	}
}

func podSecurityAdmits(t *testing.T, evaluator psapolicy.Evaluator, level psaapi.Level, pod *api.Pod) bool {
	t.Helper()
	var v1 corev1.Pod
	if err := corev1conversion.Convert_core_Pod_To_v1_Pod(pod, &v1, nil); err != nil {
		t.Fatal(err)
	}
	results := evaluator.EvaluatePod(psaapi.LevelVersion{Level: level, Version: psaapi.LatestVersion()}, &v1.ObjectMeta, &v1.Spec)
	return psapolicy.AggregateCheckResults(results).Allowed
}

// A pod that sets a profile is refused by a policy without seccomp annotations (1.24's
// "seccomp may not be set"), and judged by the restricted example's list.
func TestSeccompFieldAgainstExamples(t *testing.T) {
	pod := typicalPod()
	pod.Spec.SecurityContext = &api.PodSecurityContext{SeccompProfile: &api.SeccompProfile{Type: api.SeccompProfileTypeUnconfined}}
	want := []string{"spec.securityContext.seccompProfile: Forbidden: seccomp may not be set"}
	noSeccomp := shippedExample(t, "privileged")
	delete(noSeccomp.Annotations, policy.SeccompAllowedProfilesAnnotationKey)
	if got := errorStrings(newProvider(t, noSeccomp), pod); !reflect.DeepEqual(got, want) {
		t.Errorf("without seccomp annotations: got %q", got)
	}
	if got := errorStrings(newProvider(t, shippedExample(t, "privileged")), pod); got != nil {
		t.Errorf("privileged: got %q", got)
	}
	unconfined := restrictedPod()
	unconfined.Spec.SecurityContext.SeccompProfile = pod.Spec.SecurityContext.SeccompProfile
	want = []string{"spec.securityContext.seccompProfile: Forbidden: unconfined is not an allowed seccomp profile. Valid values are docker/default,runtime/default"}
	if got := errorStrings(newProvider(t, shippedExample(t, "restricted")), unconfined); !reflect.DeepEqual(got, want) {
		t.Errorf("restricted: got %q", got)
	}
}
