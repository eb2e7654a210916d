package apiserver

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	appsv1 "k8s.io/api/apps/v1"
	authenticationv1 "k8s.io/api/authentication/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	autoscalingv1 "k8s.io/api/autoscaling/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/retry"

	"github.com/portcullis-k8s/portcullis/plugin/pkg/admission/initializers"
	"github.com/portcullis-k8s/portcullis/test/integration/framework"
)

// A second configuration, named after the documentation's example-config, so its pod
// initializer comes second; and one for ConfigMaps, a resource without a spec.
const sidecarInitializerConfiguration = `
apiVersion: admissionregistration.k8s.io/v1alpha1
kind: InitializerConfiguration
metadata:
  name: sidecar-config
initializers:
  - name: sidecar.example.com
    rules:
      - apiGroups: [""]
        apiVersions: [v1]
        resources: [pods]
  - name: configlabel.example.com
    rules:
      - apiGroups: [""]
        apiVersions: ["*"]
        resources: [configmaps]
`

// TestInitializers runs the plugin with the Kubernetes 1.13 documentation's configuration
// through the real server, etcd and kube-controller-manager: a Deployment's pods are created
// gated and annotated in configuration order, and initializer controllers written with
// client-go release them one at a time.
func TestInitializers(t *testing.T) {
	bins := framework.FindBinaries(t)
	etcd := framework.StartEtcd(t, bins.Etcd)
	server := framework.StartAPIServer(t, bins.APIServer, etcd, "--etcd-prefix=/initializers", "--enable-admission-plugins=Initializers")
	framework.StartControllerManager(t, bins.ControllerManager, server)
	ctx := context.Background()
	admin := server.Client
	dyn := dynamic.NewForConfigOrDie(server.Config)
	configs := dyn.Resource(initializerConfigurationResource)
	for _, doc := range []string{exampleInitializerConfiguration, sidecarInitializerConfiguration} {
		obj := fromYAML(t, doc)
		if _, err := configs.Apply(ctx, obj.GetName(), obj, metav1.ApplyOptions{FieldManager: "kubectl"}); err != nil {
			t.Fatalf("applying %s: %v", obj.GetName(), err)
		}
	}
	ns := namespace(t, admin)
	both := "podimage.example.com,sidecar.example.com"
	// The plugin reads the configurations from an informer: wait until a dry-run create
	// shows both.
	err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		probe, err := admin.CoreV1().Pods(ns).Create(ctx, podWith(nil), metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
		return err == nil && probe.Annotations[initializers.PendingAnnotation] == both, nil
	})
	if err != nil {
		t.Fatalf("the configurations never applied to a pod: %v", err)
	}

	t.Run("a Deployment's pods are created gated and annotated, in configuration order; released by the last initializer only", func(t *testing.T) {
		replicas := int32(2)
		labels := map[string]string{"app": "initialized"}
		_, err := admin.AppsV1().Deployments(ns).Create(ctx, &appsv1.Deployment{
			ObjectMeta: metav1.ObjectMeta{Name: "web"},
			Spec: appsv1.DeploymentSpec{
				Replicas: &replicas,
				Selector: &metav1.LabelSelector{MatchLabels: labels},
				Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels}, Spec: podWith(nil).Spec},
			},
		}, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		selector := metav1.ListOptions{LabelSelector: "app=initialized"}
		pods := waitForPods(t, admin, ns, selector, func(pods []corev1.Pod) bool { return len(pods) == 2 })
		for _, p := range pods {
			if got := p.Annotations[initializers.PendingAnnotation]; got != both || p.Labels[initializers.UninitializedLabel] != "true" {
				t.Errorf("pod %s: pending %q, label %q; want %q and true", p.Name, got, p.Labels[initializers.UninitializedLabel], both)
			}
			if got := gateNames(&p); !slices.Equal(got, []string{"podimage.example.com", "sidecar.example.com"}) {
				t.Errorf("pod %s: gates %v", p.Name, got)
			}
		}

		// The first initializer acts on the head of each pod's list: the pods stay gated by
		// the second.
		stop := runInitializer(t, admin, ns, "podimage.example.com")
		waitForPods(t, admin, ns, selector, func(pods []corev1.Pod) bool {
			return len(pods) == 2 && !slices.ContainsFunc(pods, func(p corev1.Pod) bool {
				return p.Annotations[initializers.PendingAnnotation] != "sidecar.example.com"
			})
		})
		stop()
		list, err := admin.CoreV1().Pods(ns).List(ctx, selector)
		if err != nil {
			t.Fatal(err)
		}
		for _, p := range list.Items {
			if got := gateNames(&p); !slices.Equal(got, []string{"sidecar.example.com"}) || p.Labels[initializers.UninitializedLabel] != "true" {
				t.Errorf("pod %s after the first initializer: gates %v, labels %v; want the second's gate, still uninitialized", p.Name, got, p.Labels)
			}
			if p.Spec.Containers[0].Image != "registry.k8s.io/pause:3.10-initialized" {
				t.Errorf("pod %s: the first initializer's change is lost: image %s", p.Name, p.Spec.Containers[0].Image)
			}
		}

		defer runInitializer(t, admin, ns, "sidecar.example.com")()
		waitForPods(t, admin, ns, selector, func(pods []corev1.Pod) bool {
			return len(pods) == 2 && !slices.ContainsFunc(pods, func(p corev1.Pod) bool {
				_, pending := p.Annotations[initializers.PendingAnnotation]
				_, labelled := p.Labels[initializers.UninitializedLabel]
				return pending || labelled || len(p.Spec.SchedulingGates) > 0
			})
		})
	})

	developer := "system:serviceaccount:" + ns + ":developer"
	bind(t, admin, ns, "pod-editor", rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "ClusterRole", Name: "edit"}, "developer", mayCreatePods(ns))
	asDeveloper := impersonate(t, server, developer)

	t.Run("without initialize: naming initializers, bypassing or removing them is refused; a plain create is initialized", func(t *testing.T) {
		for name, value := range map[string]string{"own": "own.example.com", "bypass": ""} {
			pod := podWith(func(p *corev1.Pod) {
				p.Name = name
				p.Annotations = map[string]string{initializers.PendingAnnotation: value}
			})
			if _, err := asDeveloper.CoreV1().Pods(ns).Create(ctx, pod, metav1.CreateOptions{}); !apierrors.IsForbidden(err) || !strings.Contains(err.Error(), "create with initializers denied") {
				t.Errorf("%s: want 403 create with initializers denied, got %v", name, err)
			}
		}
		created, err := asDeveloper.CoreV1().Pods(ns).Create(ctx, podWith(func(p *corev1.Pod) { p.Name = "plain" }), metav1.CreateOptions{})
		if err != nil {
			t.Fatalf("a plain create: %v", err)
		}
		if got := created.Annotations[initializers.PendingAnnotation]; got != both {
			t.Fatalf("a plain create: pending %q, want %q", got, both)
		}
		created.Annotations[initializers.PendingAnnotation] = "sidecar.example.com"
		if _, err := asDeveloper.CoreV1().Pods(ns).Update(ctx, created, metav1.UpdateOptions{}); !apierrors.IsForbidden(err) || !strings.Contains(err.Error(), "update to the initialization of a resource denied") {
			t.Errorf("removing an initializer without initialize: want 403 update to the initialization of a resource denied, got %v", err)
		}
		// Nothing of the list changed: an ordinary update goes through.
		fresh, err := admin.CoreV1().Pods(ns).Get(ctx, "plain", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		fresh.Labels = map[string]string{"tier": "web"}
		updated, err := asDeveloper.CoreV1().Pods(ns).Update(ctx, fresh, metav1.UpdateOptions{})
		if err != nil {
			t.Fatalf("an update leaving the list: %v", err)
		}
		if updated.Labels[initializers.UninitializedLabel] != "true" {
			t.Errorf("an update leaving the list: labels %v, want the plugin's label kept", updated.Labels)
		}
	})

	t.Run("the bypass: an empty list, by a user with initialize", func(t *testing.T) {
		pod := podWith(func(p *corev1.Pod) {
			p.Name = "bypass"
			p.Annotations = map[string]string{initializers.PendingAnnotation: ""}
		})
		created, err := admin.CoreV1().Pods(ns).Create(ctx, pod, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if _, pending := created.Annotations[initializers.PendingAnnotation]; pending || len(created.Spec.SchedulingGates) != 0 || created.Labels[initializers.UninitializedLabel] != "" {
			t.Errorf("bypassed pod: annotations %v, labels %v, gates %v", created.Annotations, created.Labels, created.Spec.SchedulingGates)
		}
	})

	t.Run("a label selector lists initialized objects only, or the pending ones", func(t *testing.T) {
		initialized, err := admin.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: "!" + initializers.UninitializedLabel})
		if err != nil {
			t.Fatal(err)
		}
		pending, err := admin.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: initializers.UninitializedLabel})
		if err != nil {
			t.Fatal(err)
		}
		if names := podNames(initialized.Items); !slices.Contains(names, "bypass") || slices.Contains(names, "plain") {
			t.Errorf("initialized pods %v: want bypass, not plain", names)
		}
		if names := podNames(pending.Items); !slices.Equal(names, []string{"plain"}) {
			t.Errorf("pending pods %v, want [plain]", names)
		}
	})

	t.Run("a failure result deletes the object", func(t *testing.T) {
		pod, err := admin.CoreV1().Pods(ns).Get(ctx, "plain", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		pod.Annotations[initializers.ResultAnnotation] = `{"message":"image not allowed by podimage.example.com","reason":"Forbidden","code":403}`
		_, err = admin.CoreV1().Pods(ns).Update(ctx, pod, metav1.UpdateOptions{})
		if !apierrors.IsForbidden(err) || !strings.Contains(err.Error(), "image not allowed") {
			t.Errorf("want the initializer's 403, got %v", err)
		}
		err = wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
			_, err := admin.CoreV1().Pods(ns).Get(ctx, "plain", metav1.GetOptions{})
			return apierrors.IsNotFound(err), nil
		})
		if err != nil {
			t.Errorf("the failed pod is not deleted: %v", err)
		}
	})

	// The documentation's initializer role without delete: initialize, update, no more.
	initializerRole := rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "Role", Name: "initializer-without-delete"}
	if _, err := admin.RbacV1().Roles(ns).Create(ctx, &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Name: initializerRole.Name},
		Rules: []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"pods"}, Verbs: []string{"get", "list", "watch", "update", "patch", "initialize"}}}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	bind(t, admin, ns, "initializer", initializerRole, "initializer", &authorizationv1.ResourceAttributes{Namespace: ns, Verb: "initialize", Resource: "pods"})
	asInitializer := impersonate(t, server, "system:serviceaccount:"+ns+":initializer")

	t.Run("a result needs delete, and is refused on an initialized object: nothing is deleted", func(t *testing.T) {
		pending, err := admin.CoreV1().Pods(ns).Create(ctx, podWith(func(p *corev1.Pod) { p.Name = "kept" }), metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		pending.Annotations[initializers.ResultAnnotation] = "boom"
		if _, err := asInitializer.CoreV1().Pods(ns).Update(ctx, pending, metav1.UpdateOptions{}); !apierrors.IsForbidden(err) || !strings.Contains(err.Error(), "a failure result deletes the object") {
			t.Errorf("a result without delete: want 403 naming the deletion, got %v", err)
		}
		initialized, err := admin.CoreV1().Pods(ns).Get(ctx, "bypass", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		initialized.Annotations = map[string]string{initializers.ResultAnnotation: "boom"}
		if _, err := admin.CoreV1().Pods(ns).Update(ctx, initialized, metav1.UpdateOptions{}); !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), "immutable once initialization has completed") {
			t.Errorf("a result on an initialized pod: want 422, got %v", err)
		}
		// The deletion would follow the refused request: a pod still there after a later
		// request of the same client has been answered was not deleted.
		for _, name := range []string{"kept", "bypass"} {
			if _, err := admin.CoreV1().Pods(ns).Get(ctx, name, metav1.GetOptions{}); err != nil {
				t.Errorf("pod %s: %v", name, err)
			}
		}
	})

	t.Run("an initializer configuration whose name cannot be a scheduling gate is refused", func(t *testing.T) {
		obj := fromYAML(t, strings.ReplaceAll(exampleInitializerConfiguration, "podimage.example.com", strings.Repeat("x", 60)+".example.com"))
		obj.SetName("too-long")
		_, err := configs.Create(ctx, obj, metav1.CreateOptions{})
		if !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), "scheduling gate") {
			t.Errorf("want 422 saying the name is a scheduling gate's, got %v", err)
		}
	})

	// The webhook is removed when its subtest ends; the Deployment configuration stays.
	t.Run("behind a mutating webhook that labels pods, a user holding only create pods gets a pending pod", func(t *testing.T) {
		webhook := installLabeller(t, admin, "", "v1", "pods")
		webhook.waitCalled(t, func(ctx context.Context) error {
			_, err := admin.CoreV1().Pods(ns).Create(ctx, podWith(nil), metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
			return err
		})
		asController := asPodCreator(t, server, admin, ns, "replicaset-controller")
		created, err := asController.CoreV1().Pods(ns).Create(ctx, podWith(func(p *corev1.Pod) { p.Name = "behind-webhook" }), metav1.CreateOptions{})
		if err != nil {
			t.Fatalf("create as a controller behind the webhook: %v", err)
		}
		if created.Labels[labellerLabel] != "true" {
			t.Errorf("the webhook's label is missing: %v", created.Labels)
		}
		if got := created.Annotations[initializers.PendingAnnotation]; got != both || created.Labels[initializers.UninitializedLabel] != "true" {
			t.Errorf("pending %q, labels %v; want %q and the plugin's label", got, created.Labels, both)
		}
		if got := gateNames(created); !slices.Equal(got, []string{"podimage.example.com", "sidecar.example.com"}) {
			t.Errorf("gates %v", got)
		}
	})

	t.Run("a pending Deployment's ReplicaSet is created once the Deployment is initialized", func(t *testing.T) {
		config := fromYAML(t, strings.NewReplacer("example-config", "deployment-config", "podimage.example.com", "rollout.example.com",
			`- ""`, "- apps", "- pods", "- deployments").Replace(exampleInitializerConfiguration))
		if _, err := configs.Create(ctx, config, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		replicas := int32(1)
		labels := map[string]string{"app": "held"}
		deployment := &appsv1.Deployment{
			ObjectMeta: metav1.ObjectMeta{Name: "held"},
			Spec: appsv1.DeploymentSpec{
				Replicas: &replicas, Selector: &metav1.LabelSelector{MatchLabels: labels},
				Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels}, Spec: podWith(nil).Spec},
			},
		}
		err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
			probe, err := admin.AppsV1().Deployments(ns).Create(ctx, deployment, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
			return err == nil && probe.Annotations[initializers.PendingAnnotation] == "rollout.example.com", nil
		})
		if err != nil {
			t.Fatalf("the configuration never applied to a Deployment: %v", err)
		}
		if _, err := admin.AppsV1().Deployments(ns).Create(ctx, deployment, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		// The Deployment controller copies the annotation to the ReplicaSet it creates; the
		// create is refused, and the Deployment's condition says why.
		var message string
		err = wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
			d, err := admin.AppsV1().Deployments(ns).Get(ctx, "held", metav1.GetOptions{})
			if err != nil {
				return false, nil
			}
			for _, c := range d.Status.Conditions {
				if c.Reason == "ReplicaSetCreateError" {
					message = c.Message
					return true, nil
				}
			}
			return false, nil
		})
		if err != nil || !strings.Contains(message, "creates it once its owner Deployment held is initialized") {
			t.Fatalf("the Deployment's condition: %q (%v), want the refusal naming the pending owner", message, err)
		}
		if sets, err := admin.AppsV1().ReplicaSets(ns).List(ctx, metav1.ListOptions{LabelSelector: "app=held"}); err != nil || len(sets.Items) != 0 {
			t.Fatalf("ReplicaSets of the pending Deployment: %v (%v)", sets, err)
		}
		err = retry.RetryOnConflict(retry.DefaultRetry, func() error {
			d, err := admin.AppsV1().Deployments(ns).Get(ctx, "held", metav1.GetOptions{})
			if err != nil {
				return err
			}
			delete(d.Annotations, initializers.PendingAnnotation)
			_, err = admin.AppsV1().Deployments(ns).Update(ctx, d, metav1.UpdateOptions{})
			return err
		})
		if err != nil {
			t.Fatalf("initializing the Deployment: %v", err)
		}
		waitForPods(t, admin, ns, metav1.ListOptions{LabelSelector: "app=held"}, func(pods []corev1.Pod) bool { return len(pods) == 1 })
	})

	t.Run("an object without a spec is annotated and labelled", func(t *testing.T) {
		cm, err := admin.CoreV1().ConfigMaps(ns).Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "settings"}}, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if cm.Annotations[initializers.PendingAnnotation] != "configlabel.example.com" || cm.Labels[initializers.UninitializedLabel] != "true" {
			t.Fatalf("configmap: annotations %v, labels %v", cm.Annotations, cm.Labels)
		}
		delete(cm.Annotations, initializers.PendingAnnotation)
		cm, err = admin.CoreV1().ConfigMaps(ns).Update(ctx, cm, metav1.UpdateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if _, labelled := cm.Labels[initializers.UninitializedLabel]; labelled {
			t.Errorf("initialized configmap keeps the label: %v", cm.Labels)
		}
	})

	t.Run("a stale copy gets the API's 409 Conflict, which clients' retry loops expect", func(t *testing.T) {
		cm, err := admin.CoreV1().ConfigMaps(ns).Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "stale"}}, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		stale := cm.DeepCopy()
		// The initializer removes itself; then a client writes its older copy back, as
		// kubectl replace -f of a file saved before would.
		delete(cm.Annotations, initializers.PendingAnnotation)
		if _, err := admin.CoreV1().ConfigMaps(ns).Update(ctx, cm, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
		stale.Data = map[string]string{"edited": "yes"}
		_, err = admin.CoreV1().ConfigMaps(ns).Update(ctx, stale, metav1.UpdateOptions{})
		if !apierrors.IsConflict(err) || !strings.Contains(err.Error(), "the object has been modified") {
			t.Fatalf("writing a stale copy: %v; want 409 Conflict, as without the plugin", err)
		}
	})

	t.Run("a list written while the plugin was off, with a name the rules refuse, does not block removing the others", func(t *testing.T) {
		off := framework.StartAPIServer(t, bins.APIServer, etcd, "--etcd-prefix=/initializers")
		tooLong := strings.Repeat("a", 64) + ".example.com"
		cm, err := off.Client.CoreV1().ConfigMaps(ns).Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "written-while-off",
			Annotations: map[string]string{initializers.PendingAnnotation: tooLong + ",configlabel.example.com"},
			Labels:      map[string]string{initializers.UninitializedLabel: "true"}}}, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		for _, next := range []string{tooLong, ""} {
			cm.Annotations[initializers.PendingAnnotation] = next
			if cm, err = admin.CoreV1().ConfigMaps(ns).Update(ctx, cm, metav1.UpdateOptions{}); err != nil {
				t.Fatalf("removing down to %q: %v", next, err)
			}
		}
		if _, labelled := cm.Labels[initializers.UninitializedLabel]; labelled {
			t.Errorf("initialized configmap keeps the label: %v", cm.Labels)
		}
	})

	t.Run("a subresource that keeps the caller's metadata (namespaces/finalize) cannot change the list", func(t *testing.T) {
		config := fromYAML(t, namespaceInitializerConfiguration)
		if _, err := configs.Apply(ctx, config.GetName(), config, metav1.ApplyOptions{FieldManager: "kubectl"}); err != nil {
			t.Fatal(err)
		}
		pendingNamespace := func(ctx context.Context) (bool, error) {
			probe, err := admin.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "probe"}}, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
			return err == nil && probe.Annotations[initializers.PendingAnnotation] == "nsinit.example.com", nil
		}
		if err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, time.Minute, true, pendingNamespace); err != nil {
			t.Fatalf("the namespace configuration never applied: %v", err)
		}
		defer func() {
			if err := configs.Delete(ctx, config.GetName(), metav1.DeleteOptions{}); err != nil {
				t.Error(err)
			}
			if err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
				pending, err := pendingNamespace(ctx)
				return !pending, err
			}); err != nil {
				t.Errorf("the namespace configuration stayed in force: %v", err)
			}
		}()
		created, err := admin.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "pending-"}}, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		// The developer may finalize namespaces, not initialize them.
		if _, err := admin.RbacV1().ClusterRoles().Create(ctx, &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: "namespace-finalizer"},
			Rules: []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"namespaces/finalize"}, Verbs: []string{"update"}}}}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		if _, err := admin.RbacV1().ClusterRoleBindings().Create(ctx, &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "namespace-finalizer"},
			RoleRef:  rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "ClusterRole", Name: "namespace-finalizer"},
			Subjects: []rbacv1.Subject{{Kind: "ServiceAccount", Name: "developer", Namespace: ns}}}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		if err := wait.PollUntilContextTimeout(ctx, 50*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
			review, err := admin.AuthorizationV1().SubjectAccessReviews().Create(ctx, &authorizationv1.SubjectAccessReview{Spec: authorizationv1.SubjectAccessReviewSpec{
				User: developer, ResourceAttributes: &authorizationv1.ResourceAttributes{Verb: "update", Resource: "namespaces", Subresource: "finalize", Name: created.Name}}}, metav1.CreateOptions{})
			return err == nil && review.Status.Allowed, nil
		}); err != nil {
			t.Fatalf("the authorizer never allowed the developer to finalize: %v", err)
		}
		bypass, err := admin.CoreV1().Namespaces().Get(ctx, created.Name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		delete(bypass.Annotations, initializers.PendingAnnotation)
		_, err = asDeveloper.CoreV1().Namespaces().Finalize(ctx, bypass, metav1.UpdateOptions{})
		if !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), "not its finalize subresource") {
			t.Fatalf("removing the list through namespaces/finalize: %v; want 422, the list changes through the object only", err)
		}
		got, err := admin.CoreV1().Namespaces().Get(ctx, created.Name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if got.Annotations[initializers.PendingAnnotation] != "nsinit.example.com" {
			t.Errorf("after the refused finalize the namespace's annotations are %v", got.Annotations)
		}
	})

	t.Run("a failure result's deletion is the requester's: a policy on DELETE judges them, not the server", func(t *testing.T) {
		// A policy that keeps service accounts from deleting pods, and one that keeps the
		// server's own identity from it: the first must hold against a result, the second
		// must not matter.
		denyDeletesBy(t, admin, ns, "no-sa-pod-deletes", "service accounts may not delete pods", `!request.userInfo.username.startsWith('system:serviceaccount:')`)
		denyDeletesBy(t, admin, ns, "no-apiserver-pod-deletes", "the API server may not delete pods", `request.userInfo.username != 'system:apiserver'`)
		if _, err := admin.RbacV1().Roles(ns).Create(ctx, &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Name: "initializer-with-delete"},
			Rules: []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"pods"}, Verbs: []string{"get", "update", "patch", "delete", "initialize"}}}}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		if _, err := admin.CoreV1().ServiceAccounts(ns).Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "deleter"}}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		bind(t, admin, ns, "deleter", rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "Role", Name: "initializer-with-delete"}, "deleter",
			&authorizationv1.ResourceAttributes{Namespace: ns, Verb: "delete", Resource: "pods"})
		// The service account's own token: its user carries the token's extra (credential
		// id) and UID, which the deletion must carry too.
		token, err := admin.CoreV1().ServiceAccounts(ns).CreateToken(ctx, "deleter", &authenticationv1.TokenRequest{}, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		config := rest.AnonymousClientConfig(server.Config)
		config.BearerToken = token.Status.Token
		asDeleter := kubernetes.NewForConfigOrDie(config)

		q, err := admin.CoreV1().Pods(ns).Create(ctx, podWith(func(p *corev1.Pod) { p.Name = "q" }), metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		// The policies are read from an informer: wait until a delete shows the first.
		var last error
		if err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
			last = asDeleter.CoreV1().Pods(ns).Delete(ctx, "q", metav1.DeleteOptions{DryRun: []string{metav1.DryRunAll}})
			return apierrors.IsForbidden(last) && strings.Contains(last.Error(), "service accounts may not delete pods"), nil
		}); err != nil {
			t.Fatalf("the policy never refused the service account's delete (last answer: %v): %v", last, err)
		}
		q.Annotations[initializers.ResultAnnotation] = "x"
		_, err = asDeleter.CoreV1().Pods(ns).Update(ctx, q, metav1.UpdateOptions{})
		if !apierrors.IsForbidden(err) || !strings.Contains(err.Error(), "a failure result deletes the object") || !strings.Contains(err.Error(), "service accounts may not delete pods") {
			t.Fatalf("the service account's result: %v; want 403 naming the deletion and the policy", err)
		}
		// The deletion would follow the request: q there, still pending, after a later
		// request has been answered, was not deleted.
		got, err := admin.CoreV1().Pods(ns).Get(ctx, "q", metav1.GetOptions{})
		if err != nil || got.Annotations[initializers.PendingAnnotation] != both {
			t.Fatalf("q after the refused result: %v, %v", err, got.GetAnnotations())
		}

		// The cluster administrator's result deletes q: the policy that keeps the server
		// from deleting pods does not judge the administrator's deletion.
		if err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
			config := rest.CopyConfig(server.Config)
			config.Impersonate = rest.ImpersonationConfig{UserName: "system:apiserver", Groups: []string{"system:masters"}}
			last = kubernetes.NewForConfigOrDie(config).CoreV1().Pods(ns).Delete(ctx, "q", metav1.DeleteOptions{DryRun: []string{metav1.DryRunAll}})
			return apierrors.IsForbidden(last) && strings.Contains(last.Error(), "the API server may not delete pods"), nil
		}); err != nil {
			t.Fatalf("the policy never refused the server's delete (last answer: %v): %v", last, err)
		}
		got.Annotations[initializers.ResultAnnotation] = "x"
		if _, err := admin.CoreV1().Pods(ns).Update(ctx, got, metav1.UpdateOptions{}); !apierrors.IsInternalError(err) || !strings.Contains(err.Error(), "x") {
			t.Fatalf("the administrator's result: %v; want the result's 500", err)
		}
		if err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
			_, err := admin.CoreV1().Pods(ns).Get(ctx, "q", metav1.GetOptions{})
			return apierrors.IsNotFound(err), nil
		}); err != nil {
			t.Errorf("q is not deleted after the administrator's result: %v", err)
		}
	})

	t.Run("rules match an object created through another served version, unless matchPolicy is Exact", func(t *testing.T) {
		config := fromYAML(t, hpaInitializerConfiguration)
		if _, err := configs.Apply(ctx, config.GetName(), config, metav1.ApplyOptions{FieldManager: "kubectl"}); err != nil {
			t.Fatal(err)
		}
		defer func() {
			if err := configs.Delete(ctx, config.GetName(), metav1.DeleteOptions{}); err != nil {
				t.Error(err)
			}
		}()
		stored, err := configs.Get(ctx, config.GetName(), metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		initializersOf, _, _ := unstructured.NestedSlice(stored.Object, "initializers")
		if policy := initializersOf[0].(map[string]any)["matchPolicy"]; policy != "Equivalent" {
			t.Errorf("the stored matchPolicy is %v, want the default Equivalent", policy)
		}
		hpa := &autoscalingv1.HorizontalPodAutoscaler{ObjectMeta: metav1.ObjectMeta{Name: "web"},
			Spec: autoscalingv1.HorizontalPodAutoscalerSpec{MaxReplicas: 2, ScaleTargetRef: autoscalingv1.CrossVersionObjectReference{APIVersion: "apps/v1", Kind: "Deployment", Name: "web"}}}
		// Through autoscaling/v1, for a rule naming autoscaling/v2.
		pendingThroughV1 := func(want string) func(ctx context.Context) (bool, error) {
			return func(ctx context.Context) (bool, error) {
				created, err := admin.AutoscalingV1().HorizontalPodAutoscalers(ns).Create(ctx, hpa, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
				return err == nil && created.Annotations[initializers.PendingAnnotation] == want, nil
			}
		}
		if err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, time.Minute, true, pendingThroughV1("hpa.example.com")); err != nil {
			t.Fatalf("an autoscaling/v1 create is never held by the autoscaling/v2 rule: %v", err)
		}
		if err := unstructured.SetNestedField(initializersOf[0].(map[string]any), "Exact", "matchPolicy"); err != nil {
			t.Fatal(err)
		}
		if err := unstructured.SetNestedSlice(stored.Object, initializersOf, "initializers"); err != nil {
			t.Fatal(err)
		}
		if _, err := configs.Update(ctx, stored, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
		if err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, time.Minute, true, pendingThroughV1("")); err != nil {
			t.Fatalf("with matchPolicy Exact, an autoscaling/v1 create is still held: %v", err)
		}
		created, err := admin.AutoscalingV2().HorizontalPodAutoscalers(ns).Create(ctx, &autoscalingv2.HorizontalPodAutoscaler{ObjectMeta: hpa.ObjectMeta,
			Spec: autoscalingv2.HorizontalPodAutoscalerSpec{MaxReplicas: 2, ScaleTargetRef: autoscalingv2.CrossVersionObjectReference{APIVersion: "apps/v1", Kind: "Deployment", Name: "web"}}},
			metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
		if err != nil || created.Annotations[initializers.PendingAnnotation] != "hpa.example.com" {
			t.Errorf("an autoscaling/v2 create with matchPolicy Exact: %v, %v", err, created.GetAnnotations())
		}
	})
}

// hpaInitializerConfiguration holds HorizontalPodAutoscalers created through autoscaling/v2,
// and, with the default matchPolicy, through autoscaling/v1.
const hpaInitializerConfiguration = `
apiVersion: admissionregistration.k8s.io/v1alpha1
kind: InitializerConfiguration
metadata:
  name: hpa-config
initializers:
  - name: hpa.example.com
    rules:
      - apiGroups: [autoscaling]
        apiVersions: [v2]
        resources: [horizontalpodautoscalers]
`

// denyDeletesBy makes a ValidatingAdmissionPolicy, bound in ns, that refuses a pod's deletion
// (403) with message unless the requester passes allowed (a CEL expression).
func denyDeletesBy(t *testing.T, admin kubernetes.Interface, ns, name, message, allowed string) {
	t.Helper()
	ctx := context.Background()
	if _, err := admin.AdmissionregistrationV1().ValidatingAdmissionPolicies().Create(ctx, &admissionregistrationv1.ValidatingAdmissionPolicy{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: admissionregistrationv1.ValidatingAdmissionPolicySpec{
			MatchConstraints: &admissionregistrationv1.MatchResources{ResourceRules: []admissionregistrationv1.NamedRuleWithOperations{{
				RuleWithOperations: admissionregistrationv1.RuleWithOperations{Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Delete},
					Rule: admissionregistrationv1.Rule{APIGroups: []string{""}, APIVersions: []string{"v1"}, Resources: []string{"pods"}}}}}},
			Validations: []admissionregistrationv1.Validation{{Expression: allowed, Message: message, Reason: ptr(metav1.StatusReasonForbidden)}},
		}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := admin.AdmissionregistrationV1().ValidatingAdmissionPolicyBindings().Create(ctx, &admissionregistrationv1.ValidatingAdmissionPolicyBinding{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: admissionregistrationv1.ValidatingAdmissionPolicyBindingSpec{PolicyName: name,
			ValidationActions: []admissionregistrationv1.ValidationAction{admissionregistrationv1.Deny},
			MatchResources: &admissionregistrationv1.MatchResources{NamespaceSelector: &metav1.LabelSelector{
				MatchLabels: map[string]string{corev1.LabelMetadataName: ns}}}},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = admin.AdmissionregistrationV1().ValidatingAdmissionPolicyBindings().Delete(ctx, name, metav1.DeleteOptions{})
		_ = admin.AdmissionregistrationV1().ValidatingAdmissionPolicies().Delete(ctx, name, metav1.DeleteOptions{})
	})
}

// namespaceInitializerConfiguration holds namespaces for one initializer.
const namespaceInitializerConfiguration = `
apiVersion: admissionregistration.k8s.io/v1alpha1
kind: InitializerConfiguration
metadata:
  name: namespace-config
initializers:
  - name: nsinit.example.com
    rules:
      - apiGroups: [""]
        apiVersions: [v1]
        resources: [namespaces]
`

// runInitializer runs an initializer controller for name in ns, as an initializer would be
// written with client-go: an informer on the uninitialized pods; for each whose list starts
// with name, its work (here: a changed image) and its name removed, in one update. It
// returns the function that stops it.
func runInitializer(t *testing.T, client kubernetes.Interface, ns, name string) (stop func()) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	factory := informers.NewSharedInformerFactoryWithOptions(client, 0, informers.WithNamespace(ns),
		informers.WithTweakListOptions(func(o *metav1.ListOptions) { o.LabelSelector = initializers.UninitializedLabel }))
	informer := factory.Core().V1().Pods().Informer()
	initialize := func(obj any) {
		pod, ok := obj.(*corev1.Pod)
		if !ok {
			return
		}
		err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
			current, err := client.CoreV1().Pods(ns).Get(ctx, pod.Name, metav1.GetOptions{})
			if err != nil {
				return err
			}
			pending := strings.Split(current.Annotations[initializers.PendingAnnotation], ",")
			if pending[0] != name {
				return nil
			}
			if name == "podimage.example.com" {
				current.Spec.Containers[0].Image += "-initialized"
			}
			current.Annotations[initializers.PendingAnnotation] = strings.Join(pending[1:], ",")
			_, err = client.CoreV1().Pods(ns).Update(ctx, current, metav1.UpdateOptions{})
			return err
		})
		if err != nil && ctx.Err() == nil && !apierrors.IsNotFound(err) {
			t.Errorf("initializer %s on pod %s: %v", name, pod.Name, err)
		}
	}
	if _, err := informer.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    initialize,
		UpdateFunc: func(_, obj any) { initialize(obj) },
	}); err != nil {
		t.Fatal(err)
	}
	factory.Start(ctx.Done())
	return func() {
		cancel()
		factory.Shutdown()
	}
}

func waitForPods(t *testing.T, client kubernetes.Interface, ns string, opts metav1.ListOptions, done func([]corev1.Pod) bool) []corev1.Pod {
	t.Helper()
	var pods []corev1.Pod
	err := wait.PollUntilContextTimeout(context.Background(), 100*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		list, err := client.CoreV1().Pods(ns).List(ctx, opts)
		if err != nil {
			return false, nil
		}
		pods = list.Items
		return done(pods), nil
	})
	if err != nil {
		t.Fatalf("pods %v never reached the state waited for: %v", podNames(pods), err)
	}
	return pods
}

func gateNames(p *corev1.Pod) []string {
	var out []string
	for _, g := range p.Spec.SchedulingGates {
		out = append(out, g.Name)
	}
	return out
}

func podNames(pods []corev1.Pod) []string {
	var out []string
	for _, p := range pods {
		out = append(out, p.Name)
	}
	slices.Sort(out)
	return out
}
