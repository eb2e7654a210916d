package apiserver

import (
	"context"
	"encoding/json"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/yaml"

	pspexamples "github.com/portcullis-k8s/portcullis/build/deploy/podsecuritypolicy"
	"github.com/portcullis-k8s/portcullis/internal/controlplane"
	"github.com/portcullis-k8s/portcullis/test/integration/framework"
)

// TestPodSecurityPolicyTrialBesidePodSecurity runs the shipped example policies and grants
// with the plugin in its trial mode (Warn and Audit), beside PodSecurity enforcing baseline
// and restricted namespaces, with a real kube-controller-manager creating a Deployment's and
// a DaemonSet's pods:
//   - every pod PodSecurity admits is admitted by the examples unchanged and without a
//     would-deny warning (in trial mode a refusal would be that warning, and the defaults are
//     those of Deny mode, so this is what Deny would do too);
//   - a pod no policy admits is admitted unchanged, with one warning naming the reason in
//     1.24's words, the audit annotation, and the would-deny counter up by exactly one.
func TestPodSecurityPolicyTrialBesidePodSecurity(t *testing.T) {
	bins := framework.FindBinaries(t)
	etcd := framework.StartEtcd(t, bins.Etcd)
	admissionConfig := portcullisConfig(t, "enforcementModes:\n- name: PodSecurityPolicy\n  modes: [Warn, Audit]")
	auditLog := filepath.Join(t.TempDir(), "audit.log")
	server := framework.StartAPIServer(t, bins.APIServer, etcd, "--etcd-prefix=/psp-trial", "--allow-privileged=true",
		"--enable-admission-plugins=PodSecurityPolicy", "--admission-control-config-file="+admissionConfig,
		"--audit-policy-file="+auditPolicy(t), "--audit-log-path="+auditLog)
	framework.StartControllerManager(t, bins.ControllerManager, server)
	ctx := context.Background()
	admin := server.Client
	applyPodSecurityPolicyExamples(t, dynamic.NewForConfigOrDie(server.Config))

	warnings := &framework.WarningRecorder{}
	config := rest.CopyConfig(server.Config)
	config.WarningHandler = warnings
	client := kubernetes.NewForConfigOrDie(config)

	labelled := func(level string) string {
		ns := namespace(t, admin)
		patch := []byte(`{"metadata":{"labels":{"pod-security.kubernetes.io/enforce":"` + level + `"}}}`)
		if _, err := admin.CoreV1().Namespaces().Patch(ctx, ns, "application/merge-patch+json", patch, metav1.PatchOptions{}); err != nil {
			t.Fatal(err)
		}
		return ns
	}
	restrictedSpec := func() corev1.PodSpec {
		return podWith(func(p *corev1.Pod) {
			p.Spec.SecurityContext = &corev1.PodSecurityContext{RunAsNonRoot: ptr(true), RunAsUser: ptr(int64(65532)),
				SeccompProfile: &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault}}
			p.Spec.Containers[0].SecurityContext = &corev1.SecurityContext{AllowPrivilegeEscalation: ptr(false),
				Capabilities: &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}}}
		}).Spec
	}

	t.Run("a plain pod in a baseline namespace is admitted unchanged", func(t *testing.T) {
		ns := labelled("baseline")
		warnings.Take()
		pod := podWith(nil)
		created, err := client.CoreV1().Pods(ns).Create(ctx, pod, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		checkAdmittedUnchanged(t, pod.Spec, created, "baseline", warnings.Take())
	})

	t.Run("a Deployment's pod in a restricted namespace is admitted unchanged", func(t *testing.T) {
		ns := labelled("restricted")
		labels := map[string]string{"app": "web"}
		deployment := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: "web"}, Spec: appsv1.DeploymentSpec{
			Replicas: ptr(int32(1)), Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels}, Spec: restrictedSpec()},
		}}
		if _, err := admin.AppsV1().Deployments(ns).Create(ctx, deployment, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		pod := firstPod(t, admin, ns, "app=web")
		checkAdmittedUnchanged(t, deployment.Spec.Template.Spec, pod, "baseline", nil)
	})

	t.Run("a DaemonSet's privileged pod in kube-system gets the privileged policy", func(t *testing.T) {
		labels := map[string]string{"app": "node-agent"}
		spec := podWith(func(p *corev1.Pod) {
			p.Spec.HostNetwork, p.Spec.HostPID = true, true
			p.Spec.Containers[0].SecurityContext = &corev1.SecurityContext{Privileged: ptr(true)}
			p.Spec.Volumes = []corev1.Volume{{Name: "root", VolumeSource: corev1.VolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: "/"}}}}
		}).Spec
		daemonSet := &appsv1.DaemonSet{ObjectMeta: metav1.ObjectMeta{Name: "node-agent"}, Spec: appsv1.DaemonSetSpec{
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels}, Spec: spec},
		}}
		if _, err := admin.AppsV1().DaemonSets(metav1.NamespaceSystem).Create(ctx, daemonSet, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		// The daemonset controller makes a pod per node; with no node, make the one it would
		// make, as the controller's service account, with kube-system's default service
		// account (kube-controller-manager may not have made it yet).
		if _, err := admin.CoreV1().ServiceAccounts(metav1.NamespaceSystem).Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "default"}}, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
			t.Fatal(err)
		}
		controller := impersonate(t, server, "system:serviceaccount:kube-system:daemon-set-controller")
		pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{GenerateName: "node-agent-", Labels: labels}, Spec: *spec.DeepCopy()}
		created, err := controller.CoreV1().Pods(metav1.NamespaceSystem).Create(ctx, pod, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		checkAdmittedUnchanged(t, spec, created, "privileged", nil)
	})

	t.Run("a pod no policy admits is admitted unchanged, recorded once", func(t *testing.T) {
		// A developer: may create pods in the namespace and, as every authenticated user,
		// use baseline (cluster admins may use every policy, privileged included).
		ns := namespace(t, admin)
		if _, err := admin.CoreV1().ServiceAccounts(ns).Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "developer"}}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		bind(t, admin, ns, "developer:edit", rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "ClusterRole", Name: "edit"}, "developer", mayCreatePods(ns))
		developerConfig := rest.CopyConfig(config)
		developerConfig.Impersonate = rest.ImpersonationConfig{UserName: "system:serviceaccount:" + ns + ":developer"}
		developer := kubernetes.NewForConfigOrDie(developerConfig)
		series := `portcullis_admission_enforcement_would_deny_total{mode="Warn+Audit",plugin="PodSecurityPolicy"}`
		before := sampleValue(t, admin, series)
		warnings.Take()
		pod := podWith(func(p *corev1.Pod) { p.Spec.HostNetwork = true })
		created, err := developer.CoreV1().Pods(ns).Create(ctx, pod, metav1.CreateOptions{})
		if err != nil {
			t.Fatalf("refused in trial mode: %v", err)
		}
		if _, ok := created.Annotations["kubernetes.io/psp"]; ok {
			t.Errorf("kubernetes.io/psp set on a pod no policy admits: %v", created.Annotations)
		}
		if !apiequality.Semantic.DeepEqual(podSecurityContext(created.Spec), podSecurityContext(pod.Spec)) ||
			!apiequality.Semantic.DeepEqual(created.Spec.Containers[0].SecurityContext, pod.Spec.Containers[0].SecurityContext) {
			t.Errorf("the pod was changed: %+v %+v", created.Spec.SecurityContext, created.Spec.Containers[0].SecurityContext)
		}
		var ours []string
		for _, w := range warnings.Take() {
			if strings.HasPrefix(w, "PodSecurityPolicy would deny") {
				ours = append(ours, w)
			}
		}
		if len(ours) != 1 || !strings.Contains(ours[0], "PodSecurityPolicy: unable to validate pod: [spec.hostNetwork: Invalid value: true: Host network is not allowed to be used]") {
			t.Errorf("warnings %q, want one naming the reason in 1.24's words", ours)
		}
		if after := sampleValue(t, admin, series); after != before+1 {
			t.Errorf("%s went from %v to %v, want one more", series, before, after)
		}
		framework.WaitForFileContaining(t, auditLog, "podsecuritypolicy.admission.portcullis.io/would-deny")
	})

	t.Run("preflight --podsecuritypolicy reports what enforcement would refuse", func(t *testing.T) {
		checkPreflightReport(t, bins.APIServer, server)
	})
}

// checkPreflightReport: kube-apiserver preflight --podsecuritypolicy, run against the live
// server, judges the templates and pods the trial above created as the plugin did.
func checkPreflightReport(t *testing.T, binary string, server *framework.APIServer) {
	t.Helper()
	ctx := context.Background()
	// A Deployment whose pods no policy admits: its template is reported.
	ns := namespace(t, server.Client)
	labels := map[string]string{"app": "host-pid"}
	spec := podWith(func(p *corev1.Pod) { p.Spec.HostPID = true }).Spec
	if _, err := server.Client.AppsV1().Deployments(ns).Create(ctx, &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: "host-pid"}, Spec: appsv1.DeploymentSpec{
		Selector: &metav1.LabelSelector{MatchLabels: labels}, Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels}, Spec: spec},
	}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	kubeconfig := filepath.Join(t.TempDir(), "admin.kubeconfig")
	if err := controlplane.WriteKubeconfig(kubeconfig, controlplane.URL(server.Port), server.PKI.CA, server.PKI.Admin); err != nil {
		t.Fatal(err)
	}
	out, code := run(t, binary, "preflight", "--podsecuritypolicy", "--kubeconfig", kubeconfig, "-o", "json")
	if code != 0 {
		t.Fatalf("preflight --podsecuritypolicy exited %d (refusals are warnings):\n%s", code, out)
	}
	var report struct {
		Warnings          []string
		PodSecurityPolicy struct {
			Workloads []struct {
				Kind, Namespace, Name, Policy, Refusal, Requester string
				Defaults                                          []string
			}
		}
	}
	if err := json.Unmarshal([]byte(out), &report); err != nil {
		t.Fatalf("%v:\n%s", err, out)
	}
	find := func(kind, namespace, name string) (policy, refusal, requester string, defaults []string) {
		t.Helper()
		for _, w := range report.PodSecurityPolicy.Workloads {
			if w.Kind == kind && w.Namespace == namespace && strings.HasPrefix(w.Name, name) {
				return w.Policy, w.Refusal, w.Requester, w.Defaults
			}
		}
		t.Fatalf("%s %s/%s is not in the report:\n%s", kind, namespace, name, out)
		return
	}
	if policy, refusal, requester, _ := find("Deployment", ns, "host-pid"); policy != "" ||
		!strings.Contains(refusal, "PodSecurityPolicy: unable to admit pod: [spec.hostPID: Invalid value: true: Host PID is not allowed to be used]") ||
		requester != "system:serviceaccount:kube-system:replicaset-controller" {
		t.Errorf("the host-pid Deployment: policy %q, refusal %q, requester %q; want refused naming hostPID, created by the replicaset controller", policy, refusal, requester)
	}
	if policy, refusal, _, defaults := find("DaemonSet", metav1.NamespaceSystem, "node-agent"); policy != "privileged" || len(defaults) != 0 {
		t.Errorf("the node-agent DaemonSet: policy %q (refusal %q), defaults %q; want privileged, none", policy, refusal, defaults)
	}
	if policy, _, _, defaults := find("Pod", metav1.NamespaceSystem, "node-agent-"); policy != "privileged" || len(defaults) != 0 {
		t.Errorf("the node-agent pod: policy %q, defaults %q; want privileged, none", policy, defaults)
	}
	if !slices.ContainsFunc(report.Warnings, func(w string) bool { return strings.Contains(w, "would be refused once PodSecurityPolicy enforces") }) {
		t.Errorf("no warning counts the refusals: %q", report.Warnings)
	}
}

// checkAdmittedUnchanged: the stored pod has the security settings of the spec it was made
// from, the policy named, and no would-deny warning of ours.
func checkAdmittedUnchanged(t *testing.T, spec corev1.PodSpec, pod *corev1.Pod, policy string, warnings []string) {
	t.Helper()
	if got := pod.Annotations["kubernetes.io/psp"]; got != policy {
		t.Errorf("kubernetes.io/psp = %q, want %q", got, policy)
	}
	if !apiequality.Semantic.DeepEqual(podSecurityContext(pod.Spec), podSecurityContext(spec)) {
		t.Errorf("pod securityContext changed: %+v, was %+v", pod.Spec.SecurityContext, spec.SecurityContext)
	}
	for i := range spec.Containers {
		if !apiequality.Semantic.DeepEqual(pod.Spec.Containers[i].SecurityContext, spec.Containers[i].SecurityContext) {
			t.Errorf("container %d securityContext changed: %+v, was %+v", i, pod.Spec.Containers[i].SecurityContext, spec.Containers[i].SecurityContext)
		}
	}
	for _, w := range warnings {
		if strings.Contains(w, "would deny") {
			t.Errorf("warning: %s", w)
		}
	}
}

// podSecurityContext is the pod's security context, empty rather than nil: the v1 defaults
// make an absent one empty.
func podSecurityContext(spec corev1.PodSpec) *corev1.PodSecurityContext {
	if spec.SecurityContext == nil {
		return &corev1.PodSecurityContext{}
	}
	return spec.SecurityContext
}

// firstPod waits for a pod matching selector in ns, as a controller creates it.
func firstPod(t *testing.T, client kubernetes.Interface, ns, selector string) *corev1.Pod {
	t.Helper()
	var pod *corev1.Pod
	err := wait.PollUntilContextTimeout(context.Background(), 200*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		pods, err := client.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: selector})
		if err != nil || len(pods.Items) == 0 {
			return false, nil
		}
		pod = &pods.Items[0]
		return true, nil
	})
	if err != nil {
		events, _ := client.CoreV1().Events(ns).List(context.Background(), metav1.ListOptions{FieldSelector: "reason=FailedCreate"})
		var messages []string
		for _, e := range events.Items {
			messages = append(messages, e.Message)
		}
		t.Fatalf("no pod %s in %s: %v; FailedCreate events: %q", selector, ns, err, messages)
	}
	return pod
}

// sampleValue reads one sample from /metrics; a series not exposed yet counts 0.
func sampleValue(t *testing.T, client kubernetes.Interface, series string) float64 {
	t.Helper()
	body, err := client.CoreV1().RESTClient().Get().AbsPath("/metrics").DoRaw(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(body), "\n") {
		if value, ok := strings.CutPrefix(line, series+" "); ok {
			v, err := strconv.ParseFloat(strings.TrimSpace(value), 64)
			if err != nil {
				t.Fatalf("%s: %v", line, err)
			}
			return v
		}
	}
	return 0
}

// applyPodSecurityPolicyExamples creates build/deploy/podsecuritypolicy's policies and grants,
// as an operator following the guide does.
func applyPodSecurityPolicyExamples(t *testing.T, client dynamic.Interface) {
	t.Helper()
	docs, err := pspexamples.Documents()
	if err != nil {
		t.Fatal(err)
	}
	for _, doc := range docs {
		obj := &unstructured.Unstructured{}
		if err := yaml.Unmarshal(doc, &obj.Object); err != nil {
			t.Fatal(err)
		}
		gvk := obj.GroupVersionKind()
		resource := schema.GroupVersionResource{Group: gvk.Group, Version: gvk.Version, Resource: strings.ToLower(gvk.Kind) + "s"}
		if gvk.Kind == "PodSecurityPolicy" {
			resource.Resource = "podsecuritypolicies"
		}
		if _, err := client.Resource(resource).Namespace(obj.GetNamespace()).Create(context.Background(), obj, metav1.CreateOptions{}); err != nil {
			t.Fatalf("creating %s %s: %v", gvk.Kind, obj.GetName(), err)
		}
	}
}
