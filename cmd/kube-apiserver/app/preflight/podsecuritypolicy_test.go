package preflight

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
)

// TestWithServiceAccountToken holds the preflight's new pods to the ServiceAccount admission
// plugin's rules for the token volume, which PodSecurityPolicy judges as a secret volume.
func TestWithServiceAccountToken(t *testing.T) {
	yes, no := new(bool), new(bool)
	*yes = true
	mount := corev1.VolumeMount{Name: "own", MountPath: serviceAccountTokenPath}
	tests := []struct {
		name        string
		pod         corev1.PodSpec
		saAutomount *bool
		want        bool
	}{
		{name: "neither says", want: true},
		{name: "the service account opts out", saAutomount: no, want: false},
		{name: "the service account opts in", saAutomount: yes, want: true},
		{name: "the pod opts out", pod: corev1.PodSpec{AutomountServiceAccountToken: no}, saAutomount: yes, want: false},
		{name: "the pod opts in over its service account", pod: corev1.PodSpec{AutomountServiceAccountToken: yes}, saAutomount: no, want: true},
		{name: "a token volume is there already", pod: corev1.PodSpec{Volumes: []corev1.Volume{{Name: "kube-api-access-abcde"}}}, want: false},
		{name: "every container mounts the token's path itself",
			pod: corev1.PodSpec{InitContainers: []corev1.Container{{VolumeMounts: []corev1.VolumeMount{mount}}}, Containers: []corev1.Container{{VolumeMounts: []corev1.VolumeMount{mount}}}}, want: false},
		{name: "one container does not",
			pod: corev1.PodSpec{InitContainers: []corev1.Container{{}}, Containers: []corev1.Container{{VolumeMounts: []corev1.VolumeMount{mount}}}}, want: true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if len(tc.pod.Containers) == 0 {
				tc.pod.Containers = []corev1.Container{{Name: "app"}}
			}
			pod := &corev1.Pod{Spec: *tc.pod.DeepCopy()}
			withServiceAccountToken(pod, tc.saAutomount)
			added := len(pod.Spec.Volumes) - len(tc.pod.Volumes)
			if tc.want && (added != 1 || pod.Spec.Volumes[len(pod.Spec.Volumes)-1].Projected == nil) {
				t.Errorf("volumes %+v, want the projected token volume added", pod.Spec.Volumes)
			}
			if !tc.want && added != 0 {
				t.Errorf("volumes %+v, want none added", pod.Spec.Volumes)
			}
		})
	}
}
