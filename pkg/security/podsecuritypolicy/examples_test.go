package podsecuritypolicy

import (
	"reflect"
	"testing"

	api "k8s.io/kubernetes/pkg/apis/core"

	"github.com/portcullis-k8s/portcullis/pkg/apis/policy"
)

// The example policies of the 1.24 documentation
// (https://kubernetes.io/docs/concepts/security/pod-security-policy/).

func privilegedExample() *policy.PodSecurityPolicy {
	return &policy.PodSecurityPolicy{Spec: policy.PodSecurityPolicySpec{
		Privileged:               true,
		AllowPrivilegeEscalation: true,
		AllowedCapabilities:      []api.Capability{"*"},
		Volumes:                  []policy.FSType{policy.All},
		HostNetwork:              true,
		HostPorts:                []policy.HostPortRange{{Min: 0, Max: 65535}},
		HostIPC:                  true,
		HostPID:                  true,
		RunAsUser:                policy.RunAsUserStrategyOptions{Rule: policy.RunAsUserStrategyRunAsAny},
		SELinux:                  policy.SELinuxStrategyOptions{Rule: policy.SELinuxStrategyRunAsAny},
		SupplementalGroups:       policy.SupplementalGroupsStrategyOptions{Rule: policy.SupplementalGroupsStrategyRunAsAny},
		FSGroup:                  policy.FSGroupStrategyOptions{Rule: policy.FSGroupStrategyRunAsAny},
	}}
}

func privilegedExampleWithSeccomp() *policy.PodSecurityPolicy {
	p := privilegedExample()
	p.Annotations = map[string]string{policy.SeccompAllowedProfilesAnnotationKey: "*"}
	return p
}

func baselineExample() *policy.PodSecurityPolicy {
	p := &policy.PodSecurityPolicy{Spec: policy.PodSecurityPolicySpec{
		AllowPrivilegeEscalation: true,
		// The moby default capability set, minus NET_RAW.
		AllowedCapabilities: []api.Capability{"CHOWN", "DAC_OVERRIDE", "FSETID", "FOWNER", "MKNOD", "SETGID", "SETUID",
			"SETFCAP", "SETPCAP", "NET_BIND_SERVICE", "SYS_CHROOT", "KILL", "AUDIT_WRITE"},
		// Every volume type except hostPath.
		Volumes: []policy.FSType{policy.ConfigMap, policy.EmptyDir, policy.Projected, policy.Secret, policy.DownwardAPI,
			policy.CSI, policy.PersistentVolumeClaim, policy.Ephemeral, policy.AWSElasticBlockStore, policy.AzureDisk,
			policy.AzureFile, policy.CephFS, policy.Cinder, policy.FC, policy.FlexVolume, policy.Flocker,
			policy.GCEPersistentDisk, policy.GitRepo, policy.Glusterfs, policy.ISCSI, policy.NFS,
			policy.PhotonPersistentDisk, policy.PortworxVolume, policy.Quobyte, policy.RBD, policy.ScaleIO,
			policy.StorageOS, policy.VsphereVolume},
		RunAsUser:          policy.RunAsUserStrategyOptions{Rule: policy.RunAsUserStrategyRunAsAny},
		SELinux:            policy.SELinuxStrategyOptions{Rule: policy.SELinuxStrategyRunAsAny},
		SupplementalGroups: policy.SupplementalGroupsStrategyOptions{Rule: policy.SupplementalGroupsStrategyRunAsAny},
		FSGroup:            policy.FSGroupStrategyOptions{Rule: policy.FSGroupStrategyRunAsAny},
	}}
	p.Annotations = map[string]string{
		policy.AppArmorAllowedProfilesAnnotationKey: "runtime/default",
		policy.AppArmorDefaultProfileAnnotationKey:  "runtime/default",
		policy.SeccompAllowedProfilesAnnotationKey:  "*",
	}
	return p
}

func restrictedExample() *policy.PodSecurityPolicy {
	p := &policy.PodSecurityPolicy{Spec: policy.PodSecurityPolicySpec{
		Privileged:               false,
		AllowPrivilegeEscalation: false,
		RequiredDropCapabilities: []api.Capability{"ALL"},
		Volumes: []policy.FSType{policy.ConfigMap, policy.EmptyDir, policy.Projected, policy.Secret,
			policy.DownwardAPI, policy.CSI, policy.PersistentVolumeClaim, policy.Ephemeral},
		RunAsUser: policy.RunAsUserStrategyOptions{Rule: policy.RunAsUserStrategyMustRunAsNonRoot},
		SELinux:   policy.SELinuxStrategyOptions{Rule: policy.SELinuxStrategyRunAsAny},
		SupplementalGroups: policy.SupplementalGroupsStrategyOptions{Rule: policy.SupplementalGroupsStrategyMustRunAs,
			Ranges: []policy.IDRange{{Min: 1, Max: 65535}}},
		FSGroup: policy.FSGroupStrategyOptions{Rule: policy.FSGroupStrategyMustRunAs,
			Ranges: []policy.IDRange{{Min: 1, Max: 65535}}},
		ReadOnlyRootFilesystem: false,
	}}
	p.Annotations = map[string]string{
		policy.SeccompAllowedProfilesAnnotationKey: "docker/default,runtime/default",
		policy.SeccompDefaultProfileAnnotationKey:  "runtime/default",
	}
	return p
}

// typicalPod is what a Deployment usually creates: one app container, a config map, a
// projected service account token, an emptyDir.
func typicalPod() *api.Pod {
	p := &api.Pod{}
	p.Name, p.Namespace = "web-7d4b9c-abcde", "default"
	p.Annotations = map[string]string{"kubectl.kubernetes.io/restartedAt": "2026-01-01T00:00:00Z"}
	p.Spec.Volumes = []api.Volume{
		{Name: "config", VolumeSource: api.VolumeSource{ConfigMap: &api.ConfigMapVolumeSource{}}},
		{Name: "cache", VolumeSource: api.VolumeSource{EmptyDir: &api.EmptyDirVolumeSource{}}},
		{Name: "kube-api-access", VolumeSource: api.VolumeSource{Projected: &api.ProjectedVolumeSource{}}},
	}
	p.Spec.Containers = []api.Container{{
		Name:  "web",
		Image: "registry.example/web:1.2.3",
		Ports: []api.ContainerPort{{ContainerPort: 8080}},
		VolumeMounts: []api.VolumeMount{
			{Name: "config", MountPath: "/etc/web", ReadOnly: true},
			{Name: "cache", MountPath: "/cache"},
			{Name: "kube-api-access", MountPath: "/var/run/secrets/kubernetes.io/serviceaccount", ReadOnly: true},
		},
	}}
	return p
}

func TestExamplePolicies(t *testing.T) {
	hostPathPod := func() *api.Pod {
		p := typicalPod()
		p.Spec.Volumes = append(p.Spec.Volumes, api.Volume{Name: "host", VolumeSource: api.VolumeSource{HostPath: &api.HostPathVolumeSource{Path: "/var/run/docker.sock"}}})
		return p
	}
	privilegedPod := func() *api.Pod {
		p := typicalPod()
		p.Spec.HostNetwork = true
		p.Spec.Containers[0].SecurityContext = &api.SecurityContext{Privileged: ptr(true)}
		return p
	}
	rootPod := func() *api.Pod {
		p := typicalPod()
		p.Spec.SecurityContext = &api.PodSecurityContext{RunAsUser: ptr(int64(0))}
		return p
	}
	netRawPod := func() *api.Pod {
		p := typicalPod()
		p.Spec.Containers[0].SecurityContext = &api.SecurityContext{Capabilities: &api.Capabilities{Add: []api.Capability{"NET_RAW"}}}
		return p
	}
	tests := []struct {
		name string
		psp  *policy.PodSecurityPolicy
		pod  *api.Pod
		want []string
	}{
		{"privileged admits typical", privilegedExample(), typicalPod(), nil},
		{"privileged admits privileged", privilegedExample(), privilegedPod(), nil},
		{"privileged admits host paths", privilegedExample(), hostPathPod(), nil},
		{"baseline admits typical", baselineExample(), typicalPod(), nil},
		{"baseline admits root", baselineExample(), rootPod(), nil},
		{"baseline rejects privileged", baselineExample(), privilegedPod(), []string{
			"spec.hostNetwork: Invalid value: true: Host network is not allowed to be used",
			"spec.containers[0].securityContext.privileged: Invalid value: true: Privileged containers are not allowed",
		}},
		{"baseline rejects host paths", baselineExample(), hostPathPod(), []string{
			`spec.volumes[3]: Invalid value: "hostPath": hostPath volumes are not allowed to be used`,
		}},
		{"baseline rejects NET_RAW", baselineExample(), netRawPod(), []string{
			`spec.containers[0].securityContext.capabilities.add[0]: Invalid value: "NET_RAW": capability may not be added`,
		}},
		{"restricted admits typical", restrictedExample(), typicalPod(), nil},
		{"restricted rejects root", restrictedExample(), rootPod(), []string{
			"spec.containers[0].securityContext.runAsUser: Invalid value: 0: running with the root UID is forbidden",
		}},
		{"restricted rejects host paths", restrictedExample(), hostPathPod(), []string{
			`spec.volumes[3]: Invalid value: "hostPath": hostPath volumes are not allowed to be used`,
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p := newProvider(t, tc.psp)
			if err := p.MutatePod(tc.pod); err != nil {
				t.Fatal(err)
			}
			if got := errorStrings(p, tc.pod); !reflect.DeepEqual(got, tc.want) {
				t.Fatalf("got %q\nwant %q", got, tc.want)
			}
		})
	}
}

func TestRestrictedExampleDefaults(t *testing.T) {
	pod := typicalPod()
	if err := newProvider(t, restrictedExample()).MutatePod(pod); err != nil {
		t.Fatal(err)
	}
	wantPod := &api.PodSecurityContext{
		SupplementalGroups: []int64{1},
		FSGroup:            ptr(int64(1)),
		SeccompProfile:     &api.SeccompProfile{Type: api.SeccompProfileTypeRuntimeDefault},
	}
	if !reflect.DeepEqual(pod.Spec.SecurityContext, wantPod) {
		t.Errorf("pod securityContext = %+v", pod.Spec.SecurityContext)
	}
	wantContainer := &api.SecurityContext{
		RunAsNonRoot:             ptr(true),
		Capabilities:             &api.Capabilities{Drop: []api.Capability{"ALL"}},
		AllowPrivilegeEscalation: ptr(false),
	}
	if got := pod.Spec.Containers[0].SecurityContext; !reflect.DeepEqual(got, wantContainer) {
		t.Errorf("container securityContext = %+v", got)
	}
	if len(pod.Annotations) != 1 {
		t.Errorf("MutatePod added annotations: %v", pod.Annotations)
	}
}

// A pod that sets a profile is rejected by a policy without seccomp annotations (1.24's
// "seccomp may not be set"), but admitted by the privileged example's "*".
func TestSeccompFieldAgainstExamples(t *testing.T) {
	pod := typicalPod()
	pod.Spec.SecurityContext = &api.PodSecurityContext{SeccompProfile: &api.SeccompProfile{Type: api.SeccompProfileTypeUnconfined}}
	want := []string{"spec.securityContext.seccompProfile: Forbidden: seccomp may not be set"}
	if got := errorStrings(newProvider(t, privilegedExample()), pod); !reflect.DeepEqual(got, want) {
		t.Errorf("got %q", got)
	}
	if got := errorStrings(newProvider(t, privilegedExampleWithSeccomp()), pod); got != nil {
		t.Errorf("got %q", got)
	}
	want = []string{"spec.securityContext.seccompProfile: Forbidden: unconfined is not an allowed seccomp profile. Valid values are docker/default,runtime/default"}
	restricted := newProvider(t, restrictedExample())
	if err := restricted.MutatePod(pod); err != nil {
		t.Fatal(err)
	}
	if got := errorStrings(restricted, pod); !reflect.DeepEqual(got, want) {
		t.Errorf("got %q", got)
	}
}
