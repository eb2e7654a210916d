package node_test

import (
	"encoding/base64"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"

	"github.com/portcullis-k8s/portcullis/internal/pki"
	"github.com/portcullis-k8s/portcullis/test/docs"
	"github.com/portcullis-k8s/portcullis/test/node"
)

const (
	pspPage = "docs/plugins/podsecuritypolicy.md"
	// The pod annotations the plugins write: the policy that admitted a pod, and the
	// initializers still to act on it.
	pspAnnotation     = "kubernetes.io/psp"
	pendingAnnotation = "initializer.admission.portcullis.io/pending"
	// holdInitializer is the initializer of the test's InitializerConfiguration.
	holdInitializer = "hold.portcullis.example.com"
	// The agnhost webhook's names; it serves on the node's address (a host-network pod:
	// without kube-proxy no Service routes to a pod, docs/node.md).
	sidecarWebhook   = "sidecar.agnhost.portcullis.example.com"
	validatorWebhook = "pods.agnhost.portcullis.example.com"
	webhookPort      = "8443"
)

// TestKubeadmNodePlugins turns our plugins on, on a node swapped to ours as
// docs/operating.md's "2a. A kubeadm node" says, and runs them on the pods the controllers
// create: Initializers holding a pod until its initializer is done, PodSecurityPolicy
// admitting a Deployment's pods under the kit's policies and grants (the ReplicaSet
// controller's rights, not an admin's) and the control plane's mirror pods, a webhook served
// by a pod (upstream's agnhost) changing the Deployment's pods beside PodPreset and refusing a
// pod, called by upstream's dispatch and then by ours, and a plugin turned off again. Each
// plugin is turned on as docs/operating.md's "3. Enabling plugins of ours" says: its API
// served from the admission config file's Portcullis entry, its name added to the
// ClusterConfiguration's flags, rendered, preflighted and uploaded with the guide's blocks
// (PodSecurityPolicy straight to Deny, without its page's Warn+Audit trial).
func TestKubeadmNodePlugins(t *testing.T) {
	n, s := installAndSwap(t, node.Newest(t), false)
	n.Run(t, podPreset)
	agnhost := n.ImportAgnhost(t)

	// PodSecurityPolicy's API served, before the plugin (its page, step 1), and Initializers
	// on (which serves its own API).
	editPortcullisEntry(t, n, func(entry map[string]any) { entry["servedAPIs"] = []any{"policy/v1beta1"} })
	s.enable(t, n, "Initializers")

	// Initializers: a configuration holds every new pod until its initializer acts. The pod
	// is created, pending and gated (the scheduler leaves it alone); the configuration goes
	// (no other pod is held), the initializer's controller, with the rights its page grants,
	// removes it from the list, and the pod runs.
	n.Run(t, holdConfiguration)
	waitForAdmission(t, n, "the InitializerConfiguration applied", probePod(n, nil), func(p *corev1.Pod, err error) error {
		if err != nil || p.Annotations[pendingAnnotation] != holdInitializer {
			return fmt.Errorf("a new pod's %s: %v (%v)", pendingAnnotation, p.Annotations, err)
		}
		return nil
	})
	n.Run(t, "kubectl run held --image="+n.PauseImage+" --restart=Never --labels=app=held")
	held := getPod(t, n, "default", "held")
	if got := held.Annotations[pendingAnnotation]; got != holdInitializer {
		t.Errorf("the held pod's %s is %q, want %s", pendingAnnotation, got, holdInitializer)
	}
	if !slices.ContainsFunc(held.Spec.SchedulingGates, func(g corev1.PodSchedulingGate) bool { return g.Name == holdInitializer }) {
		t.Errorf("the held pod has no scheduling gate %s: %v", holdInitializer, held.Spec.SchedulingGates)
	}
	n.WaitFor(t, "the scheduler leaving the held pod alone", time.Minute, func() error {
		p := getPod(t, n, "default", "held")
		if p.Spec.NodeName != "" {
			t.Fatalf("the held pod was scheduled to %s while its initializer was pending", p.Spec.NodeName)
		}
		if !slices.ContainsFunc(p.Status.Conditions, func(c corev1.PodCondition) bool {
			return c.Type == corev1.PodScheduled && c.Status == corev1.ConditionFalse && c.Reason == corev1.PodReasonSchedulingGated
		}) {
			return fmt.Errorf("the held pod's conditions: %v", p.Status.Conditions)
		}
		return nil
	})
	n.Run(t, "kubectl delete initializerconfiguration hold")
	n.Run(t, initializerController)
	n.Run(t, "kubectl --as=system:serviceaccount:default:hold-initializer annotate --overwrite pod held "+pendingAnnotation+"=")
	waitForPods(t, n, "default", "app=held", func(p corev1.Pod) error {
		if len(p.Spec.SchedulingGates) != 0 || p.Annotations[pendingAnnotation] != "" || p.Labels["initializer.admission.portcullis.io/uninitialized"] != "" {
			return fmt.Errorf("the released pod keeps %v, %v, %v", p.Spec.SchedulingGates, p.Annotations, p.Labels)
		}
		return nil
	})

	// PodSecurityPolicy: the kit's policies and grants (its page, step 2), what the plugin
	// would do with the cluster's workloads (step 3), then the plugin on.
	n.RunBlock(t, pspPage, docs.KeyPSPApply)
	if out, _ := n.RunBlock(t, pspPage, docs.KeyPSPPreflight); !strings.Contains(out, " 0 refused\n") {
		t.Errorf("preflight --podsecuritypolicy would refuse some of the cluster's workloads:\n%s", out)
	}
	s.enable(t, n, "PodSecurityPolicy")
	// The restarted server's mirror pod came back (the nodes use privileged); the
	// Deployment's next pods are admitted under baseline, which every service account may
	// use, with the PodPreset's environment.
	if got := getPod(t, n, "kube-system", "kube-apiserver-"+node.Hostname).Annotations[pspAnnotation]; got != "privileged" {
		t.Errorf("kube-apiserver's mirror pod was admitted under %q, want privileged", got)
	}
	restartWeb(t, n, func(p corev1.Pod) error {
		if got := p.Annotations[pspAnnotation]; got != "baseline" {
			return fmt.Errorf("pod %s was admitted under %q, want baseline", p.Name, got)
		}
		return hasPreset(p, "web")
	})
	// A privileged Deployment: the ReplicaSet controller may use no policy that admits its
	// pods in default (an admin could: cluster-admin may use every policy).
	n.Run(t, workload("privileged", n.PauseImage, true))
	n.WaitFor(t, "the privileged Deployment's pods refused", 3*time.Minute, func() error {
		return replicaFailure(t, n, "app=privileged", "Privileged containers are not allowed")
	})

	// A webhook served by a pod: agnhost, in kube-system (privileged there, for its host
	// network), adding a sidecar to the Deployment's pods and refusing pods it is told to.
	deployWebhook(t, n, agnhost)
	checkWebhooks(t, n, false)

	// Our dispatch: the Portcullis entry asks for it, and the server is restarted as the kit's
	// admission-config.yaml says.
	editPortcullisEntry(t, n, func(entry map[string]any) {
		entry["webhookDispatch"] = map[string]any{
			"mutating":   map[string]any{"circuitBreaker": map[string]any{}},
			"validating": map[string]any{"circuitBreaker": map[string]any{}, "earlyExit": true},
		}
	})
	restartAPIServer(t, n, s)
	checkWebhooks(t, n, true)

	// A plugin turned off: PodSecurityPolicy out of the flags, and the pod it refused is
	// admitted, as by stock.
	if out := s.disable(t, n, "PodSecurityPolicy"); !strings.Contains(out, "drops Portcullis's PodSecurityPolicy") {
		t.Errorf("preflight of the render without PodSecurityPolicy does not name it:\n%s", out)
	}
	n.Run(t, "kubectl rollout restart deployment/privileged && kubectl rollout status deployment/privileged --timeout=3m")
	waitForPods(t, n, "default", "app=privileged", func(p corev1.Pod) error {
		if _, ok := p.Annotations[pspAnnotation]; ok {
			return fmt.Errorf("pod %s was admitted by PodSecurityPolicy after it was turned off", p.Name)
		}
		return nil
	})
	// Its policies stay served (servedAPIs) and in etcd.
	n.Run(t, "kubectl get podsecuritypolicy privileged baseline restricted")
}

// replicaFailure checks that a ReplicaSet of selector in default reports that it could not
// create pods, with message.
func replicaFailure(t *testing.T, n *node.Node, selector, message string) error {
	t.Helper()
	sets, err := n.Client(t).AppsV1().ReplicaSets("default").List(node.Context(t), metav1.ListOptions{LabelSelector: selector})
	if err != nil {
		return err
	}
	var conditions []appsv1.ReplicaSetCondition
	for _, rs := range sets.Items {
		for _, c := range rs.Status.Conditions {
			if c.Type == appsv1.ReplicaSetReplicaFailure && strings.Contains(c.Message, message) {
				return nil
			}
		}
		conditions = append(conditions, rs.Status.Conditions...)
	}
	return fmt.Errorf("no ReplicaSet %s reports %q: %v", selector, message, conditions)
}

const holdConfiguration = `kubectl apply -f - <<'EOF'
apiVersion: admissionregistration.k8s.io/v1alpha1
kind: InitializerConfiguration
metadata:
  name: hold
initializers:
- name: ` + holdInitializer + `
  rules:
  - apiGroups: [""]
    apiVersions: [v1]
    resources: [pods]
EOF
`

// initializerController is the hold initializer's controller's identity: a service account
// with docs/plugins/initializers.md's ClusterRole.
const initializerController = `kubectl create serviceaccount hold-initializer
kubectl apply -f - <<'EOF'
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata:
  name: hold-initializer
rules:
- apiGroups: [""]
  resources: [pods]
  verbs: [get, list, watch, update, patch, initialize]
EOF
kubectl create clusterrolebinding hold-initializer --clusterrole=hold-initializer --serviceaccount=default:hold-initializer
`

// enable reads the ClusterConfiguration again, adds names to its --enable-admission-plugins
// and puts the render in place, with docs/operating.md's blocks (steps 4 and 5 of "2a. A
// kubeadm node"); it returns the render's preflight.
func (s swapped) enable(t *testing.T, n *node.Node, names ...string) string {
	t.Helper()
	n.RunBlock(t, docs.Operating, docs.KeyKubeadmGetConfig)
	node.WriteFile(t, s.clusterFile, string(docs.AddPlugins(t, docs.ReadFile(t, s.clusterFile), names...)))
	return s.render(t, n)
}

// disable is enable taking names out.
func (s swapped) disable(t *testing.T, n *node.Node, names ...string) string {
	t.Helper()
	n.RunBlock(t, docs.Operating, docs.KeyKubeadmGetConfig)
	node.WriteFile(t, s.clusterFile, string(docs.RemovePlugins(t, docs.ReadFile(t, s.clusterFile), names)))
	return s.render(t, n)
}

// render renders the edited ClusterConfiguration, preflights it against the running
// manifest, uploads it and puts it in place, then waits for the kubelet to run it; it
// returns the preflight's report.
func (s swapped) render(t *testing.T, n *node.Node) string {
	t.Helper()
	out, _ := n.RunBlock(t, docs.Operating, docs.KeyKubeadmRender)
	if !strings.Contains(out, "No problems found") {
		t.Fatalf("preflight of the render:\n%s", out)
	}
	previous := apiServerContainer(t, n)
	n.RunBlock(t, docs.Operating, docs.KeyKubeadmUpload)
	waitForRestart(t, n, s, previous)
	flags := apiServerFlags(t, filepath.Join(n.Dir, "etc-kubernetes", "manifests", "kube-apiserver.yaml"))
	if uploaded := clusterConfiguration(t, n); !strings.Contains(uploaded, flags["enable-admission-plugins"]) {
		t.Errorf("the uploaded ClusterConfiguration does not enable %s:\n%s", flags["enable-admission-plugins"], uploaded)
	}
	return out
}

// restartAPIServer restarts the running server's container, as docs/operating.md's "3.
// Enabling plugins of ours" says to after an edit of the admission config file.
func restartAPIServer(t *testing.T, n *node.Node, s swapped) {
	t.Helper()
	previous := apiServerContainer(t, n)
	n.RunBlock(t, docs.Operating, docs.KeyKubeadmRestart)
	waitForRestart(t, n, s, previous)
}

// apiServerContainer is the container ID of the kube-apiserver mirror pod's status.
func apiServerContainer(t *testing.T, n *node.Node) string {
	t.Helper()
	pod := getPod(t, n, "kube-system", "kube-apiserver-"+node.Hostname)
	if len(pod.Status.ContainerStatuses) != 1 || pod.Status.ContainerStatuses[0].ContainerID == "" {
		t.Fatalf("the kube-apiserver mirror pod has no running container: %v", pod.Status.ContainerStatuses)
	}
	return pod.Status.ContainerStatuses[0].ContainerID
}

// waitForRestart waits until the kube-apiserver mirror pod runs a container other than
// previous, with the manifest's command, Ready, and the server is ours.
func waitForRestart(t *testing.T, n *node.Node, s swapped, previous string) {
	t.Helper()
	manifest := filepath.Join(n.Dir, "etc-kubernetes", "manifests", "kube-apiserver.yaml")
	var want corev1.Pod
	if err := yaml.Unmarshal(docs.ReadFile(t, manifest), &want); err != nil {
		t.Fatal(err)
	}
	n.WaitFor(t, "kube-apiserver restarted", 5*time.Minute, func() error {
		pod, err := n.Client(t).CoreV1().Pods("kube-system").Get(node.Context(t), "kube-apiserver-"+node.Hostname, metav1.GetOptions{})
		if err != nil {
			return err
		}
		if !slices.Equal(pod.Spec.Containers[0].Command, want.Spec.Containers[0].Command) {
			return fmt.Errorf("the mirror pod runs %v", pod.Spec.Containers[0].Command)
		}
		if len(pod.Status.ContainerStatuses) != 1 || pod.Status.ContainerStatuses[0].ContainerID == previous || !pod.Status.ContainerStatuses[0].Ready {
			return fmt.Errorf("the mirror pod's container: %v", pod.Status.ContainerStatuses)
		}
		return nil
	})
	waitForAPIServer(t, n, s.patchImage, s.ours)
}

// editPortcullisEntry edits the Portcullis entry's configuration in the node's admission
// config file (/etc/kubernetes/portcullis/admission-config.yaml), as an operator does.
func editPortcullisEntry(t *testing.T, n *node.Node, edit func(map[string]any)) {
	t.Helper()
	file := filepath.Join(n.Dir, "etc-kubernetes", "portcullis", "admission-config.yaml")
	var config map[string]any
	if err := yaml.Unmarshal(docs.ReadFile(t, file), &config); err != nil {
		t.Fatal(err)
	}
	plugins, _ := config["plugins"].([]any)
	i := slices.IndexFunc(plugins, func(p any) bool { return p.(map[string]any)["name"] == "Portcullis" })
	if i < 0 {
		t.Fatalf("%s has no Portcullis entry", file)
	}
	edit(plugins[i].(map[string]any)["configuration"].(map[string]any))
	out, err := yaml.Marshal(config)
	if err != nil {
		t.Fatal(err)
	}
	node.WriteFile(t, file, string(out))
}

// deployWebhook runs agnhost's webhook in kube-system on the node's network, with a serving
// certificate for the node's address, and registers two webhooks on it: a mutating one
// adding a sidecar to the web Deployment's pods, and a validating one refusing pods labelled
// webhook-e2e-test=webhook-disallow (upstream's e2e webhook specs' conventions).
func deployWebhook(t *testing.T, n *node.Node, agnhost string) {
	t.Helper()
	dir := filepath.Join(n.Dir, "webhook-pki")
	ca, err := pki.LoadOrCreateCA(dir, "webhook-ca")
	if err != nil {
		t.Fatal(err)
	}
	pair, err := ca.ServingCert(dir, "webhook", []net.IP{net.ParseIP(node.NodeAddress)}, nil)
	if err != nil {
		t.Fatal(err)
	}
	n.Run(t, fmt.Sprintf("kubectl -n kube-system create secret tls agnhost-webhook --cert=%s --key=%s", pair.CertFile, pair.KeyFile))
	n.Run(t, `kubectl apply -f - <<'EOF'
apiVersion: apps/v1
kind: Deployment
metadata:
  name: agnhost-webhook
  namespace: kube-system
spec:
  replicas: 1
  selector:
    matchLabels: {app: agnhost-webhook}
  template:
    metadata:
      labels: {app: agnhost-webhook}
    spec:
      hostNetwork: true
      containers:
      - name: webhook
        image: `+agnhost+`
        args: [webhook, --tls-cert-file=/certs/tls.crt, --tls-private-key-file=/certs/tls.key, --port=`+webhookPort+`, --sidecar-image=`+n.PauseImage+`]
        readinessProbe:
          httpGet: {scheme: HTTPS, path: /readyz, port: `+webhookPort+`}
        volumeMounts:
        - {name: certs, mountPath: /certs, readOnly: true}
      volumes:
      - name: certs
        secret: {secretName: agnhost-webhook}
EOF
`)
	waitForPods(t, n, "kube-system", "app=agnhost-webhook", func(p corev1.Pod) error {
		if got := p.Annotations[pspAnnotation]; got != "privileged" {
			return fmt.Errorf("the webhook's pod %s was admitted under %q, want privileged (kube-system's grant)", p.Name, got)
		}
		return nil
	})
	caPEM, err := os.ReadFile(ca.CertFile)
	if err != nil {
		t.Fatal(err)
	}
	url := "https://" + node.NodeAddress + ":" + webhookPort
	common := fmt.Sprintf(`  clientConfig:
    url: %%s
    caBundle: %s
  rules:
  - {apiGroups: [""], apiVersions: [v1], operations: [CREATE], resources: [pods]}
  namespaceSelector:
    matchLabels: {kubernetes.io/metadata.name: default}
  sideEffects: None
  admissionReviewVersions: [v1]
  failurePolicy: Fail
  timeoutSeconds: 5
`, base64.StdEncoding.EncodeToString(caPEM))
	n.Run(t, `kubectl apply -f - <<'EOF'
apiVersion: admissionregistration.k8s.io/v1
kind: MutatingWebhookConfiguration
metadata:
  name: agnhost-sidecar
webhooks:
- name: `+sidecarWebhook+`
  objectSelector:
    matchLabels: {app: web}
  reinvocationPolicy: IfNeeded
`+fmt.Sprintf(common, url+"/mutating-pods-sidecar")+`---
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingWebhookConfiguration
metadata:
  name: agnhost-pods
webhooks:
- name: `+validatorWebhook+`
`+fmt.Sprintf(common, url+"/pods")+`EOF
`)
}

// checkWebhooks checks the agnhost webhooks on the request path: the Deployment's next pods
// (the ReplicaSet controller's requests) get the sidecar beside the PodPreset's environment,
// under PodSecurityPolicy's baseline, and a pod the validating webhook refuses is refused with
// its message. ours says which dispatch calls them: our dispatch's metrics are served only
// when it does.
func checkWebhooks(t *testing.T, n *node.Node, ours bool) {
	t.Helper()
	waitForAdmission(t, n, "the mutating webhook called", probePod(n, map[string]string{"app": "web"}), func(p *corev1.Pod, err error) error {
		if err != nil || !slices.ContainsFunc(p.Spec.Containers, func(c corev1.Container) bool { return c.Name == "webhook-added-sidecar" }) {
			return fmt.Errorf("a new web pod's containers: %v (%v)", p.Spec.Containers, err)
		}
		return nil
	})
	waitForAdmission(t, n, "the validating webhook called", probePod(n, map[string]string{"webhook-e2e-test": "webhook-disallow"}), func(_ *corev1.Pod, err error) error {
		if err == nil || !strings.Contains(err.Error(), "the pod contains unwanted label") {
			return fmt.Errorf("a pod labelled webhook-e2e-test=webhook-disallow: %v", err)
		}
		return nil
	})
	restartWeb(t, n, func(p corev1.Pod) error {
		if !slices.ContainsFunc(p.Spec.Containers, func(c corev1.Container) bool { return c.Name == "webhook-added-sidecar" }) {
			return fmt.Errorf("pod %s has no sidecar from the webhook: %v", p.Name, p.Spec.Containers)
		}
		if got := p.Annotations[pspAnnotation]; got != "baseline" {
			return fmt.Errorf("pod %s was admitted under %q, want baseline", p.Name, got)
		}
		return hasPreset(p, "web")
	})
	refused := "kubectl run refused --image=" + n.PauseImage + " --restart=Never --labels=webhook-e2e-test=webhook-disallow"
	if _, stderr, err := n.Exec(t, refused); err == nil || !strings.Contains(stderr, "the pod contains unwanted label") || !strings.Contains(stderr, validatorWebhook) {
		t.Errorf("a pod the validating webhook refuses: err %v\n%s", err, stderr)
	}
	metrics, err := n.Client(t).CoreV1().RESTClient().Get().AbsPath("/metrics").DoRaw(node.Context(t))
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{sidecarWebhook, validatorWebhook} {
		series := `portcullis_admission_webhook_breaker_state{name="` + name + `"`
		if got := strings.Contains(string(metrics), series); got != ours {
			t.Errorf("our dispatch's %s... in /metrics: %v, want %v", series, got, ours)
		}
		if upstream := `apiserver_admission_webhook_admission_duration_seconds_count{name="` + name + `"`; !strings.Contains(string(metrics), upstream) {
			t.Errorf("/metrics has no %s...: the webhook was not called", upstream)
		}
	}
}

// probePod is a pod of the pause image in default, labelled labels, for a dry run.
func probePod(n *node.Node, labels map[string]string) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "probe", Namespace: "default", Labels: labels},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "probe", Image: n.PauseImage}}},
	}
}

// waitForAdmission waits until a server-side dry run of creating pod passes check: the
// configurations the plugins apply (InitializerConfigurations, webhook configurations) reach
// them through informers, a moment after they are written; a dry run stores nothing.
func waitForAdmission(t *testing.T, n *node.Node, what string, pod *corev1.Pod, check func(*corev1.Pod, error) error) {
	t.Helper()
	n.WaitFor(t, what, time.Minute, func() error {
		got, err := n.Client(t).CoreV1().Pods(pod.Namespace).Create(node.Context(t), pod, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
		if got == nil {
			got = &corev1.Pod{}
		}
		return check(got, err)
	})
}

// restartWeb restarts the web Deployment and waits for its new pods, each passing check.
func restartWeb(t *testing.T, n *node.Node, check func(corev1.Pod) error) {
	t.Helper()
	n.Run(t, "kubectl rollout restart deployment/web && kubectl rollout status deployment/web --timeout=3m")
	waitForPods(t, n, "default", "app=web", check)
}

// hasPreset checks that every container of p has the PodPreset's environment and p its
// annotation.
func hasPreset(p corev1.Pod, preset string) error {
	for _, c := range p.Spec.Containers {
		if !slices.ContainsFunc(c.Env, func(e corev1.EnvVar) bool { return e.Name == "PRESET" }) {
			return fmt.Errorf("pod %s's container %s has no PRESET from the PodPreset", p.Name, c.Name)
		}
	}
	if p.Annotations["podpreset.admission.kubernetes.io/podpreset-"+preset] == "" {
		return fmt.Errorf("pod %s has no podpreset annotation: %v", p.Name, p.Annotations)
	}
	return nil
}

func getPod(t *testing.T, n *node.Node, namespace, name string) *corev1.Pod {
	t.Helper()
	pod, err := n.Client(t).CoreV1().Pods(namespace).Get(node.Context(t), name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return pod
}
