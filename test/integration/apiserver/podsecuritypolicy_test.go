package apiserver

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	pspexamples "github.com/portcullis-k8s/portcullis/build/deploy/podsecuritypolicy"
	"github.com/portcullis-k8s/portcullis/test/integration/framework"
)

var pspResource = schema.GroupVersionResource{Group: "policy", Version: "v1beta1", Resource: "podsecuritypolicies"}

// The walkthrough's policy of the Kubernetes 1.24 documentation's "Pod Security Policies"
// page (JSON there; the same object). Its privileged, baseline and restricted policies are
// the distribution's examples, in build/deploy/podsecuritypolicy.
const (
	examplePolicy = `
apiVersion: policy/v1beta1
kind: PodSecurityPolicy
metadata:
  name: example
spec:
  privileged: false  # Don't allow privileged pods!
  # The rest fills in some required fields.
  seLinux:
    rule: RunAsAny
  supplementalGroups:
    rule: RunAsAny
  runAsUser:
    rule: RunAsAny
  fsGroup:
    rule: RunAsAny
  volumes:
  - '*'
`
)

// TestPodSecurityPolicy runs the Kubernetes 1.24 documentation's PodSecurityPolicy
// walkthrough against our server with the plugin enabled, a real etcd and a real
// kube-controller-manager, and checks that policy/v1beta1 is served natively beside policy/v1.
func TestPodSecurityPolicy(t *testing.T) {
	bins := framework.FindBinaries(t)
	etcd := framework.StartEtcd(t, bins.Etcd)
	server := framework.StartAPIServer(t, bins.APIServer, etcd, "--etcd-prefix=/psp", "--enable-admission-plugins=PodSecurityPolicy")
	framework.StartControllerManager(t, bins.ControllerManager, server)
	ctx := context.Background()
	admin := server.Client
	dyn := dynamic.NewForConfigOrDie(server.Config)

	t.Run("the API", func(t *testing.T) {
		t.Run("discovery lists policy/v1beta1 podsecuritypolicies (psp) beside policy/v1", func(t *testing.T) {
			groups, err := admin.Discovery().ServerGroups()
			if err != nil {
				t.Fatal(err)
			}
			i := slices.IndexFunc(groups.Groups, func(g metav1.APIGroup) bool { return g.Name == "policy" })
			if i < 0 {
				t.Fatal("no policy group")
			}
			policy := groups.Groups[i]
			var versions []string
			for _, v := range policy.Versions {
				versions = append(versions, v.Version)
			}
			if !slices.Equal(versions, []string{"v1", "v1beta1"}) || policy.PreferredVersion.Version != "v1" {
				t.Errorf("policy versions %v (preferred %s), want [v1 v1beta1] preferring v1", versions, policy.PreferredVersion.Version)
			}
			resources, err := admin.Discovery().ServerResourcesForGroupVersion("policy/v1beta1")
			if err != nil {
				t.Fatal(err)
			}
			if len(resources.APIResources) != 1 {
				t.Fatalf("policy/v1beta1 serves %+v, want podsecuritypolicies only", resources.APIResources)
			}
			r := resources.APIResources[0]
			// SingularName is what kubectl create role --resource=podsecuritypolicy resolves.
			if r.Name != "podsecuritypolicies" || r.SingularName != "podsecuritypolicy" || r.Kind != "PodSecurityPolicy" || r.Namespaced || !slices.Equal(r.ShortNames, []string{"psp"}) {
				t.Errorf("podsecuritypolicies in discovery: %+v", r)
			}
			for _, verb := range []string{"create", "delete", "deletecollection", "get", "list", "patch", "update", "watch"} {
				if !slices.Contains(r.Verbs, verb) {
					t.Errorf("podsecuritypolicies lack the verb %s: %v", verb, r.Verbs)
				}
			}
			v1, err := admin.Discovery().ServerResourcesForGroupVersion("policy/v1")
			if err != nil {
				t.Fatal(err)
			}
			var names []string
			for _, r := range v1.APIResources {
				names = append(names, r.Name)
			}
			if !slices.Equal(names, []string{"poddisruptionbudgets", "poddisruptionbudgets/status"}) {
				t.Errorf("policy/v1 serves %v, want stock's", names)
			}
		})

		t.Run("the APIService v1beta1.policy is Available", func(t *testing.T) {
			apiservices := dyn.Resource(schema.GroupVersionResource{Group: "apiregistration.k8s.io", Version: "v1", Resource: "apiservices"})
			err := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
				svc, err := apiservices.Get(ctx, "v1beta1.policy", metav1.GetOptions{})
				return err == nil && conditionTrue(svc, "Available"), nil
			})
			if err != nil {
				t.Fatalf("APIService v1beta1.policy not Available within a minute: %v", err)
			}
		})

		t.Run("OpenAPI v3 describes policy/v1beta1 for kubectl explain", func(t *testing.T) {
			doc, err := admin.Discovery().RESTClient().Get().AbsPath("/openapi/v3/apis/policy/v1beta1").DoRaw(ctx)
			if err != nil {
				t.Fatal(err)
			}
			for _, want := range []string{"PodSecurityPolicySpec", `"kind":"PodSecurityPolicy"`, "allowPrivilegeEscalation", "runAsUser"} {
				if !strings.Contains(string(doc), want) {
					t.Errorf("the OpenAPI v3 document of policy/v1beta1 lacks %s", want)
				}
			}
			v2, err := admin.Discovery().RESTClient().Get().AbsPath("/openapi/v2").DoRaw(ctx)
			if err != nil || !strings.Contains(string(v2), "PodSecurityPolicySpec") {
				t.Errorf("the OpenAPI v2 document lacks PodSecurityPolicySpec (%v)", err)
			}
		})

		t.Run("policy/v1 PodDisruptionBudgets work unchanged", func(t *testing.T) {
			ns := namespace(t, admin)
			pdbs := admin.PolicyV1().PodDisruptionBudgets(ns)
			one := intstr.FromInt32(1)
			pdb, err := pdbs.Create(ctx, &policyv1.PodDisruptionBudget{
				ObjectMeta: metav1.ObjectMeta{Name: "web"},
				Spec:       policyv1.PodDisruptionBudgetSpec{MinAvailable: &one, Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}}},
			}, metav1.CreateOptions{})
			if err != nil {
				t.Fatal(err)
			}
			two := intstr.FromInt32(2)
			pdb.Spec.MinAvailable = &two
			if pdb, err = pdbs.Update(ctx, pdb, metav1.UpdateOptions{}); err != nil || pdb.Spec.MinAvailable.IntValue() != 2 {
				t.Fatalf("update: %v", err)
			}
			if _, err := pdbs.Get(ctx, "web", metav1.GetOptions{}); err != nil {
				t.Fatal(err)
			}
			if err := pdbs.Delete(ctx, "web", metav1.DeleteOptions{}); err != nil {
				t.Fatal(err)
			}
		})

		t.Run("the documentation's policies apply unchanged, server-side", func(t *testing.T) {
			for _, name := range []string{"privileged", "baseline", "restricted"} {
				obj := fromYAML(t, examplePolicyFile(t, name))
				if _, err := dyn.Resource(pspResource).Apply(ctx, obj.GetName(), obj, metav1.ApplyOptions{FieldManager: "kubectl"}); err != nil {
					t.Errorf("applying %s: %v", obj.GetName(), err)
				}
			}
			list, err := dyn.Resource(pspResource).List(ctx, metav1.ListOptions{})
			if err != nil || len(list.Items) != 3 {
				t.Fatalf("kubectl get psp: %v, %d items", err, len(list.Items))
			}
			restricted, err := dyn.Resource(pspResource).Get(ctx, "restricted", metav1.GetOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if escalation, _, _ := unstructured.NestedBool(restricted.Object, "spec", "allowPrivilegeEscalation"); escalation {
				t.Errorf("restricted reads back with allowPrivilegeEscalation true")
			}
		})

		t.Run("kubectl get psp prints 1.24's columns", func(t *testing.T) {
			table := &metav1.Table{}
			err := admin.Discovery().RESTClient().Get().AbsPath("/apis/policy/v1beta1/podsecuritypolicies").
				SetHeader("Accept", "application/json;as=Table;v=v1;g=meta.k8s.io").Do(ctx).Into(table)
			if err != nil {
				t.Fatal(err)
			}
			var columns []string
			for _, c := range table.ColumnDefinitions {
				columns = append(columns, c.Name)
			}
			// 1.24's printer: these names, no Age column, Priv printed as text.
			want := []string{"Name", "Priv", "Caps", "SELinux", "RunAsUser", "FsGroup", "SupGroup", "ReadOnlyRootFs", "Volumes"}
			if !slices.Equal(columns, want) || len(table.Rows) != 3 {
				t.Fatalf("kubectl get psp: columns %v and %d rows, want %v and 3", columns, len(table.Rows), want)
			}
			for _, row := range table.Rows {
				if len(row.Cells) != len(want) {
					t.Errorf("row %v: %d cells, want %d", row.Cells, len(row.Cells), len(want))
					continue
				}
				if priv, ok := row.Cells[1].(string); !ok || (priv != "true" && priv != "false") {
					t.Errorf("row %v: Priv %#v, want the text true or false", row.Cells, row.Cells[1])
				}
			}
		})

		t.Run("a watch sees a policy created", func(t *testing.T) {
			w, err := dyn.Resource(pspResource).Watch(ctx, metav1.ListOptions{FieldSelector: "metadata.name=watched"})
			if err != nil {
				t.Fatal(err)
			}
			defer w.Stop()
			watched := fromYAML(t, examplePolicy)
			watched.SetName("watched")
			if _, err := dyn.Resource(pspResource).Create(ctx, watched, metav1.CreateOptions{}); err != nil {
				t.Fatal(err)
			}
			select {
			case event := <-w.ResultChan():
				if event.Type != "ADDED" {
					t.Errorf("first event %s, want ADDED", event.Type)
				}
			case <-time.After(30 * time.Second):
				t.Fatal("no watch event within 30 s")
			}
			// DELETE answers with the deleted policy (1.24's ReturnDeletedObject), not a Status.
			body, err := admin.Discovery().RESTClient().Delete().AbsPath("/apis/policy/v1beta1/podsecuritypolicies/watched").DoRaw(ctx)
			if err != nil {
				t.Fatal(err)
			}
			deleted := &unstructured.Unstructured{}
			if err := deleted.UnmarshalJSON(body); err != nil {
				t.Fatalf("DELETE answered %s: %v", body, err)
			}
			if deleted.GetKind() != "PodSecurityPolicy" || deleted.GetName() != "watched" {
				t.Errorf("DELETE answered %s %q, want the deleted PodSecurityPolicy watched", deleted.GetKind(), deleted.GetName())
			}
		})

		t.Run("an invalid policy is refused naming the field", func(t *testing.T) {
			bad := fromYAML(t, strings.Replace(examplePolicy, "rule: RunAsAny\n  supplementalGroups", "rule: NotARule\n  supplementalGroups", 1))
			bad.SetName("bad")
			_, err := dyn.Resource(pspResource).Create(ctx, bad, metav1.CreateOptions{})
			if !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), "spec.seLinux.rule") {
				t.Errorf("want 422 naming spec.seLinux.rule, got %v", err)
			}
		})
	})

	// The walkthrough: https://v1-24.docs.kubernetes.io/docs/concepts/security/pod-security-policy/#example
	t.Run("the documentation's example", func(t *testing.T) {
		const ns = "psp-example"
		if _, err := admin.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		if _, err := admin.CoreV1().ServiceAccounts(ns).Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "fake-user"}}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		bind(t, admin, ns, "fake-editor", rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "ClusterRole", Name: "edit"}, "fake-user", mayCreatePods(ns))
		waitForServiceAccount(t, admin, ns, "default")
		user := impersonate(t, server, "system:serviceaccount:psp-example:fake-user")
		if _, err := dyn.Resource(pspResource).Create(ctx, fromYAML(t, examplePolicy), metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		pause := func(name string, privileged bool) *corev1.Pod {
			pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: corev1.PodSpec{
				Containers: []corev1.Container{{Name: "pause", Image: "registry.k8s.io/pause"}}}}
			if privileged {
				pod.Spec.Containers[0].SecurityContext = &corev1.SecurityContext{Privileged: ptr(true)}
			}
			return pod
		}

		t.Run("without a grant the pod is refused", func(t *testing.T) {
			_, err := user.CoreV1().Pods(ns).Create(ctx, pause("pause", false), metav1.CreateOptions{})
			wantForbidden(t, err, "PodSecurityPolicy: unable to admit pod: []")
		})
		t.Run("kubectl auth can-i use podsecuritypolicy/example says no", func(t *testing.T) {
			if canUse(t, user, ns, "example") {
				t.Error("the fake user may use the policy before any grant")
			}
		})
		role := &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Name: "psp:unprivileged"}, Rules: []rbacv1.PolicyRule{{
			APIGroups: []string{"policy"}, Resources: []string{"podsecuritypolicies"}, ResourceNames: []string{"example"}, Verbs: []string{"use"}}}}
		if _, err := admin.RbacV1().Roles(ns).Create(ctx, role, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		bind(t, admin, ns, "fake-user:psp:unprivileged", rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "Role", Name: "psp:unprivileged"}, "fake-user", mayUse(ns, "example"))
		t.Run("after the grant kubectl auth can-i says yes", func(t *testing.T) {
			if !canUse(t, user, ns, "example") {
				t.Error("the fake user may not use the policy after the grant")
			}
		})
		t.Run("the pod is admitted and annotated with the policy", func(t *testing.T) {
			pod, err := user.CoreV1().Pods(ns).Create(ctx, pause("pause", false), metav1.CreateOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if got := pod.Annotations["kubernetes.io/psp"]; got != "example" {
				t.Errorf("kubernetes.io/psp = %q, want example", got)
			}
		})
		t.Run("a privileged pod is refused naming the field", func(t *testing.T) {
			_, err := user.CoreV1().Pods(ns).Create(ctx, pause("privileged", true), metav1.CreateOptions{})
			wantForbidden(t, err, "PodSecurityPolicy: unable to admit pod: [spec.containers[0].securityContext.privileged: Invalid value: true: Privileged containers are not allowed]")
		})
		t.Run("a deployment's pods are refused until its service account is granted", func(t *testing.T) {
			replicas := int32(1)
			labels := map[string]string{"app": "pause"}
			deployment := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: "pause"}, Spec: appsv1.DeploymentSpec{
				Replicas: &replicas, Selector: &metav1.LabelSelector{MatchLabels: labels},
				Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels}, Spec: pause("", false).Spec},
			}}
			if _, err := user.AppsV1().Deployments(ns).Create(ctx, deployment, metav1.CreateOptions{}); err != nil {
				t.Fatal(err)
			}
			// The replicaset controller creates the pods as itself; neither it nor the pod's
			// service account may use a policy yet.
			err := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
				events, err := admin.CoreV1().Events(ns).List(ctx, metav1.ListOptions{FieldSelector: "reason=FailedCreate"})
				if err != nil {
					return false, nil
				}
				for _, e := range events.Items {
					if strings.Contains(e.Message, "PodSecurityPolicy: unable to admit pod") {
						return true, nil
					}
				}
				return false, nil
			})
			if err != nil {
				t.Fatalf("no FailedCreate event from the replicaset controller: %v", err)
			}
			if pods := deploymentPods(t, admin, ns); len(pods) != 0 {
				t.Fatalf("the deployment's pods were created without a grant: %v", pods)
			}
			bind(t, admin, ns, "default:psp:unprivileged", rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "Role", Name: "psp:unprivileged"}, "default", mayUse(ns, "example"))
			err = wait.PollUntilContextTimeout(ctx, 500*time.Millisecond, 2*time.Minute, true, func(context.Context) (bool, error) {
				return len(deploymentPods(t, admin, ns)) == 1, nil
			})
			if err != nil {
				t.Fatalf("the deployment's pod was not created once its service account was granted: %v", err)
			}
			if pod := deploymentPods(t, admin, ns)[0]; pod.Annotations["kubernetes.io/psp"] != "example" {
				t.Errorf("the deployment's pod has kubernetes.io/psp %q", pod.Annotations["kubernetes.io/psp"])
			}
		})
	})

	t.Run("the restricted policy's defaults are on the stored pod", func(t *testing.T) {
		ns := namespace(t, admin)
		role := &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Name: "psp:restricted"}, Rules: []rbacv1.PolicyRule{{
			APIGroups: []string{"policy"}, Resources: []string{"podsecuritypolicies"}, ResourceNames: []string{"restricted"}, Verbs: []string{"use"}}}}
		if _, err := admin.RbacV1().Roles(ns).Create(ctx, role, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		if _, err := admin.CoreV1().ServiceAccounts(ns).Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "app"}}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		bind(t, admin, ns, "app:edit", rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "ClusterRole", Name: "edit"}, "app", mayCreatePods(ns))
		bind(t, admin, ns, "app:psp:restricted", rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "Role", Name: "psp:restricted"}, "app", mayUse(ns, "restricted"))
		app := impersonate(t, server, fmt.Sprintf("system:serviceaccount:%s:app", ns))
		// The policy allows the runtime's default seccomp profile but sets none: a pod meant
		// for it names one, as 1.24 required.
		pod := podWith(func(p *corev1.Pod) {
			p.Name, p.Spec.ServiceAccountName = "restricted", "app"
			p.Spec.SecurityContext = &corev1.PodSecurityContext{SeccompProfile: &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault}}
		})
		created, err := app.CoreV1().Pods(ns).Create(ctx, pod, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		stored, err := admin.CoreV1().Pods(ns).Get(ctx, created.Name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if got := stored.Annotations["kubernetes.io/psp"]; got != "restricted" {
			t.Errorf("kubernetes.io/psp = %q, want restricted", got)
		}
		psc, sc := stored.Spec.SecurityContext, stored.Spec.Containers[0].SecurityContext
		switch {
		// MayRunAs: judged when set, never defaulted (so PodSecurity's restricted pods pass
		// unchanged).
		case psc == nil || psc.FSGroup != nil || psc.SupplementalGroups != nil:
			t.Errorf("fsGroup or supplementalGroups defaulted: %+v", psc)
		case sc == nil || sc.AllowPrivilegeEscalation == nil || *sc.AllowPrivilegeEscalation:
			t.Errorf("allowPrivilegeEscalation is not defaulted to false: %+v", sc)
		case sc.RunAsNonRoot == nil || !*sc.RunAsNonRoot:
			t.Errorf("runAsNonRoot is not set: %+v", sc)
		case sc.Capabilities == nil || !slices.Contains(sc.Capabilities.Drop, "ALL"):
			t.Errorf("capability ALL is not dropped: %+v", sc.Capabilities)
		}

		t.Run("behind a mutating webhook that labels pods, a controller's pod is admitted by the same policy", func(t *testing.T) {
			webhook := installLabeller(t, admin, "", "v1", "pods")
			webhook.waitCalled(t, func(ctx context.Context) error {
				_, err := admin.CoreV1().Pods(ns).Create(ctx, pod, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
				return err
			})
			controller := asPodCreator(t, server, admin, ns, "controller")
			bind(t, admin, ns, "controller:psp:restricted", rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "Role", Name: "psp:restricted"}, "controller", mayUse(ns, "restricted"))
			behind := pod.DeepCopy()
			behind.Name = "behind-webhook"
			created, err := controller.CoreV1().Pods(ns).Create(ctx, behind, metav1.CreateOptions{})
			if err != nil {
				t.Fatalf("create as a controller behind the webhook: %v", err)
			}
			sc := created.Spec.Containers[0].SecurityContext
			if created.Labels[labellerLabel] != "true" || created.Annotations["kubernetes.io/psp"] != "restricted" ||
				sc == nil || sc.RunAsNonRoot == nil || !*sc.RunAsNonRoot {
				t.Errorf("want the webhook's label, policy restricted and its defaults: labels %v, annotations %v, securityContext %+v", created.Labels, created.Annotations, sc)
			}
		})
	})
}

// examplePolicyFile returns one of the distribution's example policies.
func examplePolicyFile(t *testing.T, name string) string {
	t.Helper()
	doc, err := pspexamples.Policy(name)
	if err != nil {
		t.Fatal(err)
	}
	return string(doc)
}

// bind binds the role to the service account, and waits until the authorizer allows what
// the binding grants (probe).
func bind(t *testing.T, client kubernetes.Interface, ns, name string, role rbacv1.RoleRef, serviceAccount string, probe *authorizationv1.ResourceAttributes) {
	t.Helper()
	binding := &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: name}, RoleRef: role,
		Subjects: []rbacv1.Subject{{Kind: "ServiceAccount", Name: serviceAccount, Namespace: ns}}}
	if _, err := client.RbacV1().RoleBindings(ns).Create(context.Background(), binding, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	// The authorizer learns of bindings from an informer: wait until it has this one, as a
	// person would see with kubectl auth can-i, so each step depends on its grant alone.
	subject := fmt.Sprintf("system:serviceaccount:%s:%s", ns, serviceAccount)
	err := wait.PollUntilContextTimeout(context.Background(), 50*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		bindings, err := client.AuthorizationV1().SubjectAccessReviews().Create(ctx, &authorizationv1.SubjectAccessReview{Spec: authorizationv1.SubjectAccessReviewSpec{
			User: subject, ResourceAttributes: probe}}, metav1.CreateOptions{})
		return err == nil && bindings.Status.Allowed, nil
	})
	if err != nil {
		t.Fatalf("the authorizer never applied binding %s for %s: %v", name, subject, err)
	}
}

// mayCreatePods and mayUse are what bind waits for the authorizer to allow.
func mayCreatePods(ns string) *authorizationv1.ResourceAttributes {
	return &authorizationv1.ResourceAttributes{Namespace: ns, Verb: "create", Resource: "pods"}
}

func mayUse(ns, policy string) *authorizationv1.ResourceAttributes {
	return &authorizationv1.ResourceAttributes{Namespace: ns, Verb: "use", Group: "policy", Resource: "podsecuritypolicies", Name: policy}
}

// impersonate returns a client acting as the user, as kubectl --as does.
func impersonate(t *testing.T, server *framework.APIServer, user string) kubernetes.Interface {
	t.Helper()
	config := rest.CopyConfig(server.Config)
	config.Impersonate = rest.ImpersonationConfig{UserName: user}
	return kubernetes.NewForConfigOrDie(config)
}

// canUse asks, as kubectl auth can-i use podsecuritypolicy/NAME does.
func canUse(t *testing.T, client kubernetes.Interface, ns, policy string) bool {
	t.Helper()
	review, err := client.AuthorizationV1().SelfSubjectAccessReviews().Create(context.Background(), &authorizationv1.SelfSubjectAccessReview{
		Spec: authorizationv1.SelfSubjectAccessReviewSpec{ResourceAttributes: &authorizationv1.ResourceAttributes{
			Namespace: ns, Verb: "use", Group: "policy", Resource: "podsecuritypolicies", Name: policy}},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return review.Status.Allowed
}

func waitForServiceAccount(t *testing.T, client kubernetes.Interface, ns, name string) {
	t.Helper()
	err := wait.PollUntilContextTimeout(context.Background(), 100*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		_, err := client.CoreV1().ServiceAccounts(ns).Get(ctx, name, metav1.GetOptions{})
		return err == nil, nil
	})
	if err != nil {
		t.Fatalf("kube-controller-manager did not create service account %s/%s: %v", ns, name, err)
	}
}

func deploymentPods(t *testing.T, client kubernetes.Interface, ns string) []corev1.Pod {
	t.Helper()
	pods, err := client.CoreV1().Pods(ns).List(context.Background(), metav1.ListOptions{LabelSelector: "app=pause"})
	if err != nil {
		t.Fatal(err)
	}
	return pods.Items
}
