package bench

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

// LoadRun is what one run of pod creates measured.
type LoadRun struct {
	// Creates is how many pods were created (and timed).
	Creates int
	// Clients is how many clients created them concurrently.
	Clients int
	// Elapsed is the wall time from the first create sent to the last one answered.
	Elapsed time.Duration
	// Latencies holds the latency of every create.
	Latencies *Latencies
	// ByPod is every create's latency by the pod's name (alternatingCreates only), for
	// figures that take from each create what the webhooks it reached spent on it.
	ByPod map[string]time.Duration
}

// Throughput is creates per second over the run.
func (r LoadRun) Throughput() float64 {
	if r.Elapsed <= 0 {
		return 0
	}
	return float64(r.Creates) / r.Elapsed.Seconds()
}

// P50 and P99 are the run's median and 99th-percentile create latencies.
func (r LoadRun) P50() time.Duration { return r.Latencies.Percentile(50) }
func (r LoadRun) P99() time.Duration { return r.Latencies.Percentile(99) }

// createLoad describes one bounded run of pod creates.
type createLoad struct {
	clients   []kubernetes.Interface
	namespace string
	// namePrefix makes the pods' names unique across runs in one namespace.
	namePrefix string
	count      int
	// timeout bounds the whole run; it stops with an error when reached.
	timeout time.Duration
}

// run creates count pods, the clients taking the next one as soon as they are done with
// the last: a closed loop, so the pace is the server's. It stops at the first failure.
func (l createLoad) run(ctx context.Context) (LoadRun, error) {
	if len(l.clients) == 0 || l.count <= 0 {
		return LoadRun{}, fmt.Errorf("a load run needs at least one client and one create (got %d clients, %d creates)", len(l.clients), l.count)
	}
	ctx, cancel := context.WithTimeout(ctx, l.timeout)
	defer cancel()

	var (
		next     atomic.Int64
		wg       sync.WaitGroup
		errOnce  sync.Once
		firstErr error
	)
	perClient := make([][]time.Duration, len(l.clients))
	started := time.Now()
	for i, client := range l.clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			samples := make([]time.Duration, 0, l.count/len(l.clients)+1)
			defer func() { perClient[i] = samples }()
			pods := client.CoreV1().Pods(l.namespace)
			for {
				n := int(next.Add(1))
				if n > l.count || ctx.Err() != nil {
					return
				}
				pod := benchPod(fmt.Sprintf("%s-%d", l.namePrefix, n))
				sent := time.Now()
				_, err := pods.Create(ctx, pod, metav1.CreateOptions{})
				if err != nil {
					errOnce.Do(func() {
						firstErr = fmt.Errorf("creating pod %s/%s: %w", l.namespace, pod.Name, err)
						cancel()
					})
					return
				}
				samples = append(samples, time.Since(sent))
			}
		}()
	}
	wg.Wait()
	elapsed := time.Since(started)
	if firstErr != nil {
		return LoadRun{}, firstErr
	}
	var all []time.Duration
	for _, s := range perClient {
		all = append(all, s...)
	}
	if len(all) != l.count {
		if err := ctx.Err(); err != nil {
			return LoadRun{}, fmt.Errorf("%d of %d pod creates done when the run stopped after %s: %w", len(all), l.count, elapsed.Round(time.Millisecond), err)
		}
		return LoadRun{}, fmt.Errorf("recorded %d creates, want %d", len(all), l.count)
	}
	return LoadRun{Creates: l.count, Clients: len(l.clients), Elapsed: elapsed, Latencies: newLatencies(all)}, nil
}

// benchPod is the pod every load creates: shaped like a Deployment's pod, with an init
// container and two containers under a restricted-style security context, so that every
// policy has containers to walk and finds nothing to refuse.
func benchPod(name string) *corev1.Pod {
	nonRoot := true
	noEscalation := false
	sc := func() *corev1.SecurityContext {
		return &corev1.SecurityContext{
			RunAsNonRoot:             &nonRoot,
			AllowPrivilegeEscalation: &noEscalation,
			Capabilities:             &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}},
		}
	}
	container := func(name string) corev1.Container {
		return corev1.Container{Name: name, Image: "registry.k8s.io/pause:3.10", SecurityContext: sc()}
	}
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{loadPodLabel: "true"}},
		Spec: corev1.PodSpec{
			SecurityContext: &corev1.PodSecurityContext{
				RunAsNonRoot:   &nonRoot,
				SeccompProfile: &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault},
			},
			InitContainers: []corev1.Container{container("init")},
			Containers:     []corev1.Container{container("app"), container("sidecar")},
		},
	}
}

// loadPodLabel marks the pods the load creates, so they can be deleted between runs.
const loadPodLabel = "bench.portcullis.dev/load"

// deleteLoadPods deletes the pods the load created in namespace, so that every run starts
// with the server holding the same objects, however many runs came before. Pods on no node
// go at once, so the server holds none of them when this returns.
func deleteLoadPods(ctx context.Context, client kubernetes.Interface, namespace string) error {
	zero := int64(0)
	selector := metav1.ListOptions{LabelSelector: loadPodLabel + "=true"}
	pods := client.CoreV1().Pods(namespace)
	if err := pods.DeleteCollection(ctx, metav1.DeleteOptions{GracePeriodSeconds: &zero}, selector); err != nil {
		return fmt.Errorf("deleting the load's pods in %s: %w", namespace, err)
	}
	selector.Limit = 1
	left, err := pods.List(ctx, selector)
	if err != nil {
		return fmt.Errorf("listing the load's pods in %s: %w", namespace, err)
	}
	if len(left.Items) > 0 {
		return fmt.Errorf("the load's pods in %s outlived their deletion, %s among them", namespace, left.Items[0].Name)
	}
	return nil
}

// forbiddenPod is benchPod with runAsUser set: what SecurityContextDeny, and every policy
// equivalent to it, refuses. Probes use it to see whether a policy is in force.
func forbiddenPod(name string) *corev1.Pod {
	pod := benchPod(name)
	uid := int64(1000)
	pod.Spec.SecurityContext.RunAsUser = &uid
	return pod
}

// dryRunCreate sends a dry-run create of pod: it passes through admission, webhooks and
// policies included, but stores nothing.
func dryRunCreate(ctx context.Context, client kubernetes.Interface, namespace string, pod *corev1.Pod) error {
	_, err := client.CoreV1().Pods(namespace).Create(ctx, pod, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
	return err
}

// loadNamespace creates a namespace and its default ServiceAccount, which the
// ServiceAccount admission plugin requires of every pod. No controller manager runs to
// create it.
func loadNamespace(ctx context.Context, client kubernetes.Interface, name string) error {
	if _, err := client.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{}); err != nil {
		return fmt.Errorf("creating namespace %s: %w", name, err)
	}
	sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "default"}}
	if _, err := client.CoreV1().ServiceAccounts(name).Create(ctx, sa, metav1.CreateOptions{}); err != nil {
		return fmt.Errorf("creating the default ServiceAccount of %s: %w", name, err)
	}
	return nil
}
