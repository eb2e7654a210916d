package soak

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"

	"github.com/portcullis-k8s/portcullis/plugin/pkg/admission/podpreset"
)

// FaultRollingRestart stops each server of an HA pair with SIGTERM and starts it again,
// one after the other, under load.
const FaultRollingRestart FaultKind = "rolling-restart"

// haAdvertiseAddresses are the pair's advertised addresses, from TEST-NET-1 (RFC 5737): the
// endpoint reconciler refuses loopback addresses, and nothing dials these; the servers
// listen on 127.0.0.1.
var haAdvertiseAddresses = []string{"192.0.2.1", "192.0.2.2"}

// HAClusterResult is section 3's run: two of ours on a three-member etcd over TLS.
type HAClusterResult struct {
	Run *RunResult
	// EtcdMembers is the etcd cluster's size.
	EtcdMembers int
	// MasterLeases are the endpoint reconciler's leases in etcd, before and after the
	// rolling restart; Endpoints the kubernetes Service's addresses then.
	MasterLeasesBefore, MasterLeasesAfter []string
	EndpointsBefore, EndpointsAfter       []string
	// IdentityLeases are the kube-apiserver identity leases in kube-system.
	IdentityLeases []string
	// CRDGeneration is the PodPreset CRD's generation after the run, and CRDWrittenDuring
	// says whether anything wrote it while both servers ran the load and restarted.
	CRDGeneration    int64
	CRDWrittenDuring bool
	// PolicyAPIServed says, per server, whether policy/v1beta1 podsecuritypolicies is served.
	PolicyAPIServed []bool
	// SameChain says, per server, whether the dry runs gave the same verdicts: both
	// webhooks' annotations and the policy's, the refusal by design, and
	// SecurityContextDeny's refusal.
	SameChain []bool
}

// runHACluster starts a three-member etcd over TLS, two of ours on it with the lease
// endpoint reconciler, and a balancer; checks the leases, the endpoints, the CRD and the
// chain through each server; then restarts both, one after the other, under load.
func (e *environment) runHACluster(ctx context.Context) (result *HAClusterResult, err error) {
	dir := filepath.Join(e.opts.WorkDir, "ha-cluster-"+Ours)
	run := &RunResult{Binary: Ours, Fault: FaultRollingRestart, Dir: dir}
	result = &HAClusterResult{Run: run, EtcdMembers: etcdClusterSize}
	var stops []func() error
	defer func() {
		for i := len(stops) - 1; i >= 0; i-- {
			err = errors.Join(err, stops[i]())
		}
	}()
	etcd, err := startEtcdCluster(ctx, e.etcdBinary, filepath.Join(dir, "etcd"), e.opts.Load.EtcdFsync)
	if err != nil {
		return nil, err
	}
	stops = append(stops, etcd.stop)
	webhooks, err := startWebhookServer(filepath.Join(dir, "webhooks"))
	if err != nil {
		return nil, err
	}
	stops = append(stops, webhooks.close)
	var setups []serverSetup
	for _, address := range haAdvertiseAddresses {
		flags := append(etcd.apiServerFlags(), "--endpoint-reconciler-type=lease", "--advertise-address="+address)
		setups = append(setups, e.serverSetup(Ours, "", flags...))
	}
	servers, balancer, err := e.startBalancedPair(ctx, dir, Ours, setups, webhooks, &stops)
	if err != nil {
		return nil, err
	}
	admin := servers[0].client
	if result.MasterLeasesBefore, result.EndpointsBefore, err = waitEndpoints(ctx, etcd, admin); err != nil {
		return nil, err
	}
	crdBefore, err := podPresetCRD(ctx, servers[0])
	if err != nil {
		return nil, err
	}
	for _, s := range servers {
		result.PolicyAPIServed = append(result.PolicyAPIServed, servesPolicyAPI(s.client))
		result.SameChain = append(result.SameChain, e.sameChain(ctx, s) == nil)
	}

	restart := func(ctx context.Context) (FaultWindow, error) {
		w := FaultWindow{Kind: FaultRollingRestart, Injected: true, Start: time.Now(),
			Detail: "each of the two servers stopped with SIGTERM and started again, one after the other, each back at /readyz before the next stops"}
		for _, s := range servers {
			if err := s.stop(); err != nil {
				return w, err
			}
			if err := s.start(ctx); err != nil {
				return w, err
			}
		}
		w.End = time.Now()
		return w, nil
	}
	// Two restarts take longer than the other faults: they start at half the usual share,
	// so that the load outlasts them.
	if err := e.loadUnderFault(ctx, run, "https://"+balancer.Addr(), e.opts.FaultAt/2, restart); err != nil {
		return nil, err
	}
	if result.MasterLeasesAfter, result.EndpointsAfter, err = waitEndpoints(ctx, etcd, admin); err != nil {
		return nil, err
	}
	crdAfter, err := podPresetCRD(ctx, servers[1])
	if err != nil {
		return nil, err
	}
	result.CRDGeneration = crdAfter.GetGeneration()
	result.CRDWrittenDuring = crdAfter.GetResourceVersion() != crdBefore.GetResourceVersion()
	leases, err := admin.CoordinationV1().Leases("kube-system").List(ctx, metav1.ListOptions{LabelSelector: "apiserver.kubernetes.io/identity=kube-apiserver"})
	if err != nil {
		return nil, err
	}
	for _, l := range leases.Items {
		result.IdentityLeases = append(result.IdentityLeases, l.Name)
	}
	run.Verification, err = verify(ctx, etcd.access(), admin, namespace, run.Load, true)
	if err != nil {
		return nil, err
	}
	run.Panics, err = FindPanics(append([]string{servers[0].logFile(), servers[1].logFile()}, etcd.logFiles()...)...)
	return result, err
}

// waitEndpoints waits until the endpoint reconciler's leases in etcd and the kubernetes
// Service's endpoints both name the pair's two addresses, and returns them as found last.
func waitEndpoints(ctx context.Context, etcd *etcdCluster, client kubernetes.Interface) (leases, endpoints []string, err error) {
	want := slices.Clone(haAdvertiseAddresses)
	slices.Sort(want)
	deadline := time.Now().Add(readyTimeout)
	for {
		leases, err = masterLeases(ctx, etcd)
		if err == nil {
			endpoints, err = serviceEndpoints(ctx, client)
		}
		if err == nil && slices.Equal(leases, want) && slices.Equal(endpoints, want) {
			return leases, endpoints, nil
		}
		if time.Now().After(deadline) {
			return leases, endpoints, fmt.Errorf("the endpoint leases %v and the kubernetes Service's endpoints %v are not %v after %s (last error: %v)",
				leases, endpoints, want, readyTimeout, err)
		}
		if err := pause(ctx, pollInterval); err != nil {
			return nil, nil, err
		}
	}
}

// masterLeases lists the lease endpoint reconciler's keys in etcd: one per live server.
func masterLeases(ctx context.Context, etcd *etcdCluster) ([]string, error) {
	access := etcd.access()
	client, err := clientv3.New(clientv3.Config{Endpoints: access.endpoints, TLS: access.tls, DialTimeout: 10 * time.Second, Logger: zap.NewNop(), Context: ctx})
	if err != nil {
		return nil, err
	}
	defer client.Close()
	prefix := etcdPrefix + "/masterleases/"
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	resp, err := client.Get(ctx, prefix, clientv3.WithPrefix(), clientv3.WithKeysOnly())
	if err != nil {
		return nil, err
	}
	var ips []string
	for _, kv := range resp.Kvs {
		ips = append(ips, strings.TrimPrefix(string(kv.Key), prefix))
	}
	slices.Sort(ips)
	return ips, nil
}

// serviceEndpoints returns the addresses of the kubernetes Service's endpoints.
func serviceEndpoints(ctx context.Context, client kubernetes.Interface) ([]string, error) {
	ep, err := client.CoreV1().Endpoints(corev1.NamespaceDefault).Get(ctx, "kubernetes", metav1.GetOptions{})
	if err != nil {
		return nil, err
	}
	var ips []string
	for _, subset := range ep.Subsets {
		for _, a := range subset.Addresses {
			ips = append(ips, a.IP)
		}
	}
	slices.Sort(ips)
	return ips, nil
}

var crdResource = schema.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"}

// podPresetCRD reads the PodPreset CRD both servers keep installed.
func podPresetCRD(ctx context.Context, s *apiServer) (interface {
	GetGeneration() int64
	GetResourceVersion() string
}, error) {
	dyn, err := dynamic.NewForConfig(s.admin)
	if err != nil {
		return nil, err
	}
	crd, err := dyn.Resource(crdResource).Get(ctx, podpreset.CRDName, metav1.GetOptions{})
	if err != nil {
		return nil, fmt.Errorf("reading the PodPreset CRD: %w", err)
	}
	return crd, nil
}

// servesPolicyAPI reports whether the server's discovery lists podsecuritypolicies in
// policy/v1beta1.
func servesPolicyAPI(client kubernetes.Interface) bool {
	resources, err := client.Discovery().ServerResourcesForGroupVersion("policy/v1beta1")
	if err != nil {
		return false
	}
	for _, r := range resources.APIResources {
		if r.Name == "podsecuritypolicies" {
			return true
		}
	}
	return false
}

// sameChain dry-runs, as the load's user, the load's pod, a marked pod and a pod with
// runAsUser through s: admitted with every annotation, refused by design, and refused by
// SecurityContextDeny.
func (e *environment) sameChain(ctx context.Context, s *apiServer) error {
	client, err := kubernetes.NewForConfig(e.loadConfig(s.admin.Host))
	if err != nil {
		return err
	}
	if err := inForce(ctx, client, true); err != nil {
		return err
	}
	l := &podLoad{run: "probe"}
	pod := l.pod("probe-run-as-user", false)
	pod.Spec.SecurityContext.RunAsUser = ptr(int64(1000))
	_, err = client.CoreV1().Pods(namespace).Create(ctx, pod, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
	if !apierrors.IsForbidden(err) || !strings.Contains(err.Error(), "SecurityContext") {
		return fmt.Errorf("a pod with runAsUser: want SecurityContextDeny's refusal, got %v", err)
	}
	return nil
}

func writeHACluster(b *bytes.Buffer, h *HAClusterResult) {
	fmt.Fprintf(b, "### Two of ours on a %d-member etcd over TLS, restarted one after the other\n\n", h.EtcdMembers)
	b.WriteString("Three etcd members on loopback with peer and client certificates from `internal/pki` (mutual TLS between members and from kube-apiserver); two of ours on them with every plugin enabled, `--endpoint-reconciler-type=lease`, each advertising an address of its own from TEST-NET-1 (the reconciler refuses loopback; nothing dials it), behind the TCP balancer. Under the load, each server is stopped with SIGTERM and started again, one after the other.\n\n")
	check := func(ok bool) string {
		if ok {
			return "yes"
		}
		return "**no**"
	}
	all := func(values []bool) bool {
		return len(values) > 0 && !slices.Contains(values, false)
	}
	b.WriteString("| check | found | as it should be |\n|---|---|---|\n")
	fmt.Fprintf(b, "| endpoint leases in etcd (`/registry/masterleases/`), before / after the restarts | %s / %s | %s |\n",
		listOrNone(h.MasterLeasesBefore), listOrNone(h.MasterLeasesAfter), check(len(h.MasterLeasesBefore) == 2 && slices.Equal(h.MasterLeasesBefore, h.MasterLeasesAfter)))
	fmt.Fprintf(b, "| the kubernetes Service's endpoints, before / after | %s / %s | %s |\n",
		listOrNone(h.EndpointsBefore), listOrNone(h.EndpointsAfter), check(len(h.EndpointsBefore) == 2 && slices.Equal(h.EndpointsBefore, h.EndpointsAfter)))
	fmt.Fprintf(b, "| kube-apiserver identity leases in kube-system | %s | %s |\n", listOrNone(h.IdentityLeases), check(len(h.IdentityLeases) >= 1))
	fmt.Fprintf(b, "| the PodPreset CRD: generation; written while both servers ran, restarted and served the load | %d; %s | %s |\n",
		h.CRDGeneration, map[bool]string{true: "written", false: "not written"}[h.CRDWrittenDuring], check(h.CRDGeneration == 1 && !h.CRDWrittenDuring))
	fmt.Fprintf(b, "| policy/v1beta1 podsecuritypolicies served by each server | %v | %s |\n", h.PolicyAPIServed, check(all(h.PolicyAPIServed)))
	fmt.Fprintf(b, "| the same verdicts through each server (both webhooks' and the policy's annotations, the refusal by design, SecurityContextDeny's refusal) | %v | %s |\n", h.SameChain, check(all(h.SameChain)))
	b.WriteString("\nThe identity lease's name is a hash of the host's name, as upstream derives it: two servers on one host share one lease, which is what a single machine can show. The endpoint leases are keyed by advertised address, one per server.\n\n")
	writeHATable(b, []*RunResult{h.Run}, "Time to recover runs from the end of the second restart.")
}

// failures lists the checks of section 3 that failed, beside the run's own.
func (h *HAClusterResult) failures() []string {
	var out []string
	if len(h.MasterLeasesBefore) != 2 || !slices.Equal(h.MasterLeasesBefore, h.MasterLeasesAfter) {
		out = append(out, fmt.Sprintf("HA cluster: endpoint leases %v before the restarts, %v after; want both servers' each time", h.MasterLeasesBefore, h.MasterLeasesAfter))
	}
	if len(h.EndpointsBefore) != 2 || !slices.Equal(h.EndpointsBefore, h.EndpointsAfter) {
		out = append(out, fmt.Sprintf("HA cluster: the kubernetes Service's endpoints %v before, %v after; want both servers' each time", h.EndpointsBefore, h.EndpointsAfter))
	}
	if h.CRDGeneration != 1 || h.CRDWrittenDuring {
		out = append(out, fmt.Sprintf("HA cluster: the PodPreset CRD is at generation %d, written during the run: %v; the servers fight over it", h.CRDGeneration, h.CRDWrittenDuring))
	}
	if slices.Contains(h.PolicyAPIServed, false) {
		out = append(out, fmt.Sprintf("HA cluster: policy/v1beta1 served per server: %v", h.PolicyAPIServed))
	}
	if slices.Contains(h.SameChain, false) {
		out = append(out, fmt.Sprintf("HA cluster: the same verdicts per server: %v", h.SameChain))
	}
	return append(out, h.Run.failures()...)
}

func listOrNone(items []string) string {
	if len(items) == 0 {
		return "none"
	}
	return strings.Join(items, ", ")
}
