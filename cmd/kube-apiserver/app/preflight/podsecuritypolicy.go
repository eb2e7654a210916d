package preflight

import (
	"context"
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"
	"sync"

	authorizationv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apiserver/pkg/authentication/serviceaccount"
	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/apiserver/pkg/authorization/authorizer"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
	api "k8s.io/kubernetes/pkg/apis/core"
	corev1conversion "k8s.io/kubernetes/pkg/apis/core/v1"

	policyv1beta1 "github.com/portcullis-k8s/api/policy/v1beta1"
	"github.com/portcullis-k8s/portcullis/plugin/pkg/admission/podsecuritypolicy"
)

// PodSecurityPolicyReport is what --podsecuritypolicy found: every pod template and pod of
// the cluster, judged as the PodSecurityPolicy plugin would judge it once enabled.
type PodSecurityPolicyReport struct {
	// Summary says what was read, through which kubeconfig.
	Summary string `json:"summary"`
	// UnusablePolicies are the policies that admit nothing, with the reason.
	UnusablePolicies map[string]string `json:"unusablePolicies,omitempty"`
	// Workloads are the verdicts, templates first, in the order listed.
	Workloads []PodSecurityPolicyWorkload `json:"workloads"`
}

// PodSecurityPolicyWorkload is one pod template or pod and its verdict.
type PodSecurityPolicyWorkload struct {
	// Kind is Deployment, ReplicaSet, StatefulSet, DaemonSet, Job, CronJob (a template: its
	// new pods are judged as creates) or Pod (an existing pod: its next update is judged).
	Kind      string `json:"kind"`
	Namespace string `json:"namespace"`
	Name      string `json:"name"`
	// ServiceAccount is the pod's service account; Requester the user judged beside it: the
	// controller that creates a template's pods, or for an existing pod any authenticated
	// user (who created a bare pod is recorded nowhere the report can read).
	ServiceAccount string `json:"serviceAccount"`
	Requester      string `json:"requester,omitempty"`
	podsecuritypolicy.Verdict
}

// Refused counts the workloads no policy admits.
func (r *PodSecurityPolicyReport) Refused() int {
	n := 0
	for _, w := range r.Workloads {
		if w.Policy == "" {
			n++
		}
	}
	return n
}

// controllerOf names, by template kind, the controller whose service account creates the
// pods (a Deployment's through its ReplicaSets, a CronJob's through its Jobs) and the kind
// whose template is judged instead when it owns the object.
var controllerOf = map[string]struct{ serviceAccount, ownedVia string }{
	"Deployment":  {"replicaset-controller", ""},
	"ReplicaSet":  {"replicaset-controller", "Deployment"},
	"StatefulSet": {"statefulset-controller", ""},
	"DaemonSet":   {"daemon-set-controller", ""},
	"Job":         {"job-controller", "CronJob"},
	"CronJob":     {"job-controller", ""},
}

// template is a pod template found in the cluster.
type template struct {
	kind      string
	meta      metav1.ObjectMeta
	template  corev1.PodTemplateSpec
	ownerKind string
}

// podSecurityPolicyFindings reads, through kubeconfig, the cluster's PodSecurityPolicies,
// pod templates and pods, and judges each. It only lists and asks SubjectAccessReviews
// (who may use which policy): it writes nothing.
func podSecurityPolicyFindings(ctx context.Context, kubeconfig string) (*PodSecurityPolicyReport, error) {
	restConfig, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		return nil, fmt.Errorf("--kubeconfig %s: %w", kubeconfig, err)
	}
	client, err := kubernetes.NewForConfig(restConfig)
	if err != nil {
		return nil, fmt.Errorf("--kubeconfig %s: %w", kubeconfig, err)
	}
	dyn, err := dynamic.NewForConfig(restConfig)
	if err != nil {
		return nil, fmt.Errorf("--kubeconfig %s: %w", kubeconfig, err)
	}
	policies, err := dyn.Resource(policyv1beta1.SchemeGroupVersion.WithResource("podsecuritypolicies")).List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, fmt.Errorf("listing PodSecurityPolicies through %s (is policy/v1beta1 served? list it in the Portcullis entry's servedAPIs): %w", kubeconfig, err)
	}
	templates, err := listTemplates(ctx, client)
	if err != nil {
		return nil, fmt.Errorf("through %s: %w", kubeconfig, err)
	}
	pods, err := client.CoreV1().Pods(metav1.NamespaceAll).List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, fmt.Errorf("listing pods through %s: %w", kubeconfig, err)
	}
	serviceAccounts, err := client.CoreV1().ServiceAccounts(metav1.NamespaceAll).List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, fmt.Errorf("listing service accounts through %s: %w", kubeconfig, err)
	}
	automount := map[string]*bool{} // namespace/name → the service account's automountServiceAccountToken
	for _, sa := range serviceAccounts.Items {
		automount[sa.Namespace+"/"+sa.Name] = sa.AutomountServiceAccountToken
	}
	access := &accessReviewAuthorizer{client: client}
	evaluator := podsecuritypolicy.NewEvaluator(policies.Items, authorizer.AuthorizerFunc(access.Authorize))
	report := &PodSecurityPolicyReport{UnusablePolicies: evaluator.Unusable()}
	for _, t := range templates {
		if t.ownerKind != "" && controllerOf[t.kind].ownedVia == t.ownerKind {
			continue // judged through its owner's template
		}
		pod := &corev1.Pod{ObjectMeta: *t.template.ObjectMeta.DeepCopy(), Spec: *t.template.Spec.DeepCopy()}
		pod.Namespace, pod.Name = t.meta.Namespace, t.meta.Name
		report.add(ctx, evaluator, t.kind, pod, authenticated(serviceaccount.UserInfo(metav1.NamespaceSystem, controllerOf[t.kind].serviceAccount, "")), automount)
	}
	// Whoever updates an existing pod is authenticated, and may have more grants than that.
	anyUser := &user.DefaultInfo{Name: "any authenticated user", Groups: []string{user.AllAuthenticated}}
	for i := range pods.Items {
		report.add(ctx, evaluator, "Pod", &pods.Items[i], anyUser, nil)
	}
	report.Summary = fmt.Sprintf("%d PodSecurityPolicies, %d pod templates and %d pods read through %s", len(policies.Items), len(templates), len(pods.Items), kubeconfig)
	return report, nil
}

// authenticated adds the group the server's authentication gives every request's user.
func authenticated(u user.Info) user.Info {
	return &user.DefaultInfo{Name: u.GetName(), UID: u.GetUID(), Groups: append(slices.Clone(u.GetGroups()), user.AllAuthenticated)}
}

// add judges one pod: a new pod from a template when automount (namespace/name → a service
// account's automountServiceAccountToken) is set, or else an existing pod's update.
func (r *PodSecurityPolicyReport) add(ctx context.Context, evaluator *podsecuritypolicy.Evaluator, kind string, v1 *corev1.Pod, requester user.Info, automount map[string]*bool) {
	v1 = v1.DeepCopy()
	create := automount != nil
	if v1.Spec.ServiceAccountName == "" {
		v1.Spec.ServiceAccountName = "default"
	}
	if create {
		// What the server does to a new pod before PodSecurityPolicy sees it: the v1 defaults
		// and the ServiceAccount plugin's service account and token volume.
		corev1conversion.SetObjectDefaults_Pod(v1)
		withServiceAccountToken(v1, automount[v1.Namespace+"/"+v1.Spec.ServiceAccountName])
	}
	pod := &api.Pod{}
	w := PodSecurityPolicyWorkload{Kind: kind, Namespace: v1.Namespace, Name: v1.Name, ServiceAccount: v1.Spec.ServiceAccountName}
	if requester != nil {
		w.Requester = requester.GetName()
	}
	if err := corev1conversion.Convert_v1_Pod_To_core_Pod(v1, pod, nil); err != nil {
		w.Refusal = fmt.Sprintf("cannot be read: %v", err)
	} else {
		w.Verdict = evaluator.Evaluate(ctx, pod, requester, create)
	}
	r.Workloads = append(r.Workloads, w)
}

// serviceAccountTokenPath is where the ServiceAccount admission plugin mounts the token.
const serviceAccountTokenPath = "/var/run/secrets/kubernetes.io/serviceaccount"

// withServiceAccountToken adds the token volume the ServiceAccount admission plugin adds to a
// new pod, by its rules: the pod's automountServiceAccountToken decides, else the service
// account's (saAutomount), else it mounts; no volume when the pod has a kube-api-access-
// volume already, or every container mounts something at the token's path itself.
func withServiceAccountToken(pod *corev1.Pod, saAutomount *bool) {
	automount := true
	switch {
	case pod.Spec.AutomountServiceAccountToken != nil:
		automount = *pod.Spec.AutomountServiceAccountToken
	case saAutomount != nil:
		automount = *saAutomount
	}
	if !automount {
		return
	}
	for _, v := range pod.Spec.Volumes {
		if strings.HasPrefix(v.Name, "kube-api-access-") {
			return
		}
	}
	mountsToken := func(c corev1.Container) bool {
		return slices.ContainsFunc(c.VolumeMounts, func(m corev1.VolumeMount) bool { return m.MountPath == serviceAccountTokenPath })
	}
	if slices.IndexFunc(pod.Spec.InitContainers, func(c corev1.Container) bool { return !mountsToken(c) }) < 0 &&
		slices.IndexFunc(pod.Spec.Containers, func(c corev1.Container) bool { return !mountsToken(c) }) < 0 {
		return
	}
	expiration, mode := int64(3607), int32(0o644)
	name := "kube-api-access-preflight"
	pod.Spec.Volumes = append(pod.Spec.Volumes, corev1.Volume{Name: name, VolumeSource: corev1.VolumeSource{Projected: &corev1.ProjectedVolumeSource{
		DefaultMode: &mode,
		Sources: []corev1.VolumeProjection{
			{ServiceAccountToken: &corev1.ServiceAccountTokenProjection{Path: "token", ExpirationSeconds: &expiration}},
			{ConfigMap: &corev1.ConfigMapProjection{LocalObjectReference: corev1.LocalObjectReference{Name: "kube-root-ca.crt"},
				Items: []corev1.KeyToPath{{Key: "ca.crt", Path: "ca.crt"}}}},
			{DownwardAPI: &corev1.DownwardAPIProjection{Items: []corev1.DownwardAPIVolumeFile{{Path: "namespace",
				FieldRef: &corev1.ObjectFieldSelector{APIVersion: "v1", FieldPath: "metadata.namespace"}}}}},
		},
	}}})
}

// listTemplates lists every pod template of the workload kinds, with the kind of its
// controlling owner.
func listTemplates(ctx context.Context, client kubernetes.Interface) ([]template, error) {
	var out []template
	owner := func(m metav1.ObjectMeta) string {
		if ref := metav1.GetControllerOf(&m); ref != nil {
			return ref.Kind
		}
		return ""
	}
	deployments, err := client.AppsV1().Deployments(metav1.NamespaceAll).List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, fmt.Errorf("listing Deployments: %w", err)
	}
	for _, o := range deployments.Items {
		out = append(out, template{"Deployment", o.ObjectMeta, o.Spec.Template, owner(o.ObjectMeta)})
	}
	replicaSets, err := client.AppsV1().ReplicaSets(metav1.NamespaceAll).List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, fmt.Errorf("listing ReplicaSets: %w", err)
	}
	for _, o := range replicaSets.Items {
		out = append(out, template{"ReplicaSet", o.ObjectMeta, o.Spec.Template, owner(o.ObjectMeta)})
	}
	statefulSets, err := client.AppsV1().StatefulSets(metav1.NamespaceAll).List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, fmt.Errorf("listing StatefulSets: %w", err)
	}
	for _, o := range statefulSets.Items {
		out = append(out, template{"StatefulSet", o.ObjectMeta, o.Spec.Template, owner(o.ObjectMeta)})
	}
	daemonSets, err := client.AppsV1().DaemonSets(metav1.NamespaceAll).List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, fmt.Errorf("listing DaemonSets: %w", err)
	}
	for _, o := range daemonSets.Items {
		out = append(out, template{"DaemonSet", o.ObjectMeta, o.Spec.Template, owner(o.ObjectMeta)})
	}
	jobs, err := client.BatchV1().Jobs(metav1.NamespaceAll).List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, fmt.Errorf("listing Jobs: %w", err)
	}
	for _, o := range jobs.Items {
		out = append(out, template{"Job", o.ObjectMeta, o.Spec.Template, owner(o.ObjectMeta)})
	}
	cronJobs, err := client.BatchV1().CronJobs(metav1.NamespaceAll).List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, fmt.Errorf("listing CronJobs: %w", err)
	}
	for _, o := range cronJobs.Items {
		out = append(out, template{"CronJob", o.ObjectMeta, o.Spec.JobTemplate.Spec.Template, owner(o.ObjectMeta)})
	}
	return out, nil
}

// accessReviewAuthorizer answers the plugin's "may use" questions with SubjectAccessReviews
// against the cluster, as its authorizer would; answers are remembered for the run.
type accessReviewAuthorizer struct {
	client kubernetes.Interface
	mu     sync.Mutex
	seen   map[string]authorizer.Decision
}

func (a *accessReviewAuthorizer) Authorize(ctx context.Context, attrs authorizer.Attributes) (authorizer.Decision, string, error) {
	u := attrs.GetUser()
	if u == nil || u.GetName() == "" {
		return authorizer.DecisionNoOpinion, "", nil
	}
	groups := slices.Clone(u.GetGroups())
	key := strings.Join([]string{u.GetName(), strings.Join(groups, ","), attrs.GetNamespace(), attrs.GetAPIGroup(), attrs.GetName()}, "\x00")
	a.mu.Lock()
	decision, ok := a.seen[key]
	a.mu.Unlock()
	if ok {
		return decision, "", nil
	}
	review, err := a.client.AuthorizationV1().SubjectAccessReviews().Create(ctx, &authorizationv1.SubjectAccessReview{Spec: authorizationv1.SubjectAccessReviewSpec{
		User: u.GetName(), Groups: groups, UID: u.GetUID(),
		ResourceAttributes: &authorizationv1.ResourceAttributes{
			Namespace: attrs.GetNamespace(), Verb: attrs.GetVerb(), Group: attrs.GetAPIGroup(), Version: attrs.GetAPIVersion(),
			Resource: attrs.GetResource(), Name: attrs.GetName(),
		},
	}}, metav1.CreateOptions{})
	if err != nil {
		return authorizer.DecisionNoOpinion, "", err
	}
	decision = authorizer.DecisionNoOpinion
	if review.Status.Allowed {
		decision = authorizer.DecisionAllow
	}
	a.mu.Lock()
	if a.seen == nil {
		a.seen = map[string]authorizer.Decision{}
	}
	a.seen[key] = decision
	a.mu.Unlock()
	return decision, "", nil
}

// printPodSecurityPolicyReport prints what would be refused, and how many would be admitted
// by which policy and with defaults.
func printPodSecurityPolicyReport(w io.Writer, r *PodSecurityPolicyReport) {
	fmt.Fprintf(w, "PodSecurityPolicy, once enabled (%s):\n", r.Summary)
	for _, name := range slices.Sorted(maps.Keys(r.UnusablePolicies)) {
		fmt.Fprintf(w, "  policy %s admits nothing: %s\n", name, r.UnusablePolicies[name])
	}
	admitted := map[string]int{}
	for _, wl := range r.Workloads {
		if wl.Policy != "" {
			admitted[wl.Policy]++
			if len(wl.Defaults) > 0 {
				fmt.Fprintf(w, "  %s %s/%s: admitted by %s, with its defaults: %s\n", wl.Kind, wl.Namespace, wl.Name, wl.Policy, strings.Join(wl.Defaults, "; "))
			}
			continue
		}
		fmt.Fprintf(w, "  %s %s/%s (service account %s): refused: %s\n", wl.Kind, wl.Namespace, wl.Name, wl.ServiceAccount, wl.Refusal)
	}
	for _, name := range slices.Sorted(maps.Keys(admitted)) {
		fmt.Fprintf(w, "  %d admitted by %s\n", admitted[name], name)
	}
	fmt.Fprintf(w, "  %d refused\n", r.Refused())
}
