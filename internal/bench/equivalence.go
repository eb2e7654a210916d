package bench

import (
	"context"
	"errors"
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

// equivalenceCase is a request and whether SecurityContextDeny refuses it. Table 2 compares
// three ways of enforcing one policy; before any is measured, each must give every case the
// plugin's verdict.
type equivalenceCase struct {
	name    string
	refused bool
	// pod is created (dry run); when ephemeral is set, it is instead added as an ephemeral
	// container to the probe target through the ephemeralcontainers subresource (dry run).
	pod       *corev1.Pod
	ephemeral *corev1.EphemeralContainer
}

// probeTargetName is the stored pod that ephemeral-container cases update.
const probeTargetName = "probe-target"

func equivalenceCases() []equivalenceCase {
	uid := int64(1000)
	group := int64(2000)
	withPod := func(mutate func(*corev1.Pod)) *corev1.Pod {
		pod := benchPod("probe")
		mutate(pod)
		return pod
	}
	ephemeral := func(sc *corev1.SecurityContext) *corev1.EphemeralContainer {
		return &corev1.EphemeralContainer{EphemeralContainerCommon: corev1.EphemeralContainerCommon{
			Name: "debug", Image: "registry.k8s.io/pause:3.10", SecurityContext: sc,
			TerminationMessagePolicy: corev1.TerminationMessageReadFile, ImagePullPolicy: corev1.PullIfNotPresent,
		}}
	}
	return []equivalenceCase{
		{name: "the load's pod", pod: benchPod("probe")},
		{name: "pod runAsUser", refused: true, pod: withPod(func(p *corev1.Pod) { p.Spec.SecurityContext.RunAsUser = &uid })},
		{name: "pod fsGroup", refused: true, pod: withPod(func(p *corev1.Pod) { p.Spec.SecurityContext.FSGroup = &group })},
		{name: "pod supplementalGroups", refused: true, pod: withPod(func(p *corev1.Pod) { p.Spec.SecurityContext.SupplementalGroups = []int64{group} })},
		{name: "pod seLinuxOptions", refused: true, pod: withPod(func(p *corev1.Pod) {
			p.Spec.SecurityContext.SELinuxOptions = &corev1.SELinuxOptions{Level: "s0:c1,c2"}
		})},
		{name: "init container runAsUser", refused: true, pod: withPod(func(p *corev1.Pod) { p.Spec.InitContainers[0].SecurityContext.RunAsUser = &uid })},
		{name: "second container seLinuxOptions", refused: true, pod: withPod(func(p *corev1.Pod) {
			p.Spec.Containers[1].SecurityContext.SELinuxOptions = &corev1.SELinuxOptions{Level: "s0:c1,c2"}
		})},
		{name: "container runAsGroup, which is allowed", pod: withPod(func(p *corev1.Pod) { p.Spec.Containers[0].SecurityContext.RunAsGroup = &group })},
		{name: "ephemeral container", ephemeral: ephemeral(nil)},
		{name: "ephemeral container runAsUser", refused: true, ephemeral: ephemeral(&corev1.SecurityContext{RunAsUser: &uid})},
	}
}

// createProbeTarget stores the pod the ephemeral-container cases update.
func createProbeTarget(ctx context.Context, client kubernetes.Interface, namespace string) error {
	target := benchPod(probeTargetName)
	target.Labels = nil // not one of the load's pods: it stays between runs
	_, err := client.CoreV1().Pods(namespace).Create(ctx, target, metav1.CreateOptions{})
	return err
}

// checkEquivalence sends every case to the server and fails unless each gets the
// plugin's verdict. refusedBy tells a refusal by the policy under test from any other error.
func checkEquivalence(ctx context.Context, client kubernetes.Interface, namespace, way string, refusedBy func(error) bool) error {
	var errs []error
	for _, c := range equivalenceCases() {
		err := sendCase(ctx, client, namespace, c)
		switch {
		case err == nil && c.refused:
			errs = append(errs, fmt.Errorf("%s admitted %s, which SecurityContextDeny refuses", way, c.name))
		case err != nil && !c.refused:
			errs = append(errs, fmt.Errorf("%s refused %s, which SecurityContextDeny admits: %w", way, c.name, err))
		case err != nil && !refusedBy(err):
			errs = append(errs, fmt.Errorf("%s: %s failed otherwise than by the policy: %w", way, c.name, err))
		}
	}
	return errors.Join(errs...)
}

func sendCase(ctx context.Context, client kubernetes.Interface, namespace string, c equivalenceCase) error {
	pods := client.CoreV1().Pods(namespace)
	if c.ephemeral == nil {
		return dryRunCreate(ctx, client, namespace, c.pod)
	}
	target, err := pods.Get(ctx, probeTargetName, metav1.GetOptions{})
	if err != nil {
		return fmt.Errorf("reading the probe target: %w", err)
	}
	target.Spec.EphemeralContainers = append(target.Spec.EphemeralContainers, *c.ephemeral)
	_, err = pods.UpdateEphemeralContainers(ctx, probeTargetName, target, metav1.UpdateOptions{DryRun: []string{metav1.DryRunAll}})
	return err
}

// refusedByMarker recognizes the refusals of the harness's policy and webhook.
func refusedByMarker(err error) bool { return strings.Contains(err.Error(), policyMarker) }
