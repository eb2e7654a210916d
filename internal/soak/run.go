package soak

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/yaml"

	pspexamples "github.com/portcullis-k8s/portcullis/build/deploy/podsecuritypolicy"
	"github.com/portcullis-k8s/portcullis/internal/controlplane"
	"github.com/portcullis-k8s/portcullis/internal/harness"
	"github.com/portcullis-k8s/portcullis/internal/pki"
)

const (
	// namespace holds every run's pods; each run has a cluster of its own.
	namespace = "soak"
	// loadUser is the identity of the load's clients: not an admin, so RBAC, priority and
	// fairness and PodSecurityPolicy's "use" check all apply to it.
	loadUser = "soak-load"
	// grantedPolicy is the example PodSecurityPolicy the load's user may use.
	grantedPolicy = "baseline"
	// readyTimeout bounds the wait for the webhooks and the policy to take effect, and for
	// the server to be ready again after a fault.
	readyTimeout = 2 * time.Minute
)

// Results are everything one soak measured.
type Results struct {
	Options           Options
	Machine           Machine
	Started, Finished time.Time
	// Binaries describes each server compared, by Ours and Stock.
	Binaries map[string]BinaryInfo
	// Loads are the runs without a fault, one per binary; Faults one per fault and binary.
	Loads, Faults []*RunResult
	// HA is the pair's run; nil when not run.
	HA *HAResult
	// BadInputs are the malformed requests' answers per binary; nil when not run.
	BadInputs map[string]*BadInputRun
	// Fuzz is hack/fuzz.sh's report; nil when it was not run.
	Fuzz *FuzzReport
	// IRFlood is the InitialResources flood; nil when not run. IRFloodUnbounded is the
	// same flood on the server whose caches are unbounded, whose checks must fail; nil
	// when not run.
	IRFlood, IRFloodUnbounded *IRFloodResult
}

// RunResult is one run of the load, under a fault or not, on one binary.
type RunResult struct {
	Binary string
	// Fault is empty for the load alone.
	Fault        FaultKind
	Window       FaultWindow
	Load         *LoadResult
	Recovery     Recovery
	Verification Verification
	Panics       PanicLines
	// Dir keeps the run's logs.
	Dir string
}

// Name is the run's name, e.g. "etcd-kill, ours".
func (r *RunResult) Name() string {
	fault := string(r.Fault)
	if fault == "" {
		fault = "load"
	}
	return fault + ", " + r.Binary
}

// id is the run's name as a label value, e.g. "etcd-kill-ours".
func (r *RunResult) id() string {
	return strings.NewReplacer(", ", "-", " ", "-").Replace(r.Name())
}

// environment is what every run shares.
type environment struct {
	opts            Options
	binaries        map[string]string
	etcdBinary      string
	pki             *controlplane.PKI
	loadCert        pki.Pair
	admissionConfig string
	progress        *harness.Progress
}

func newEnvironment(opts Options) *environment {
	return &environment{
		opts:       opts,
		binaries:   map[string]string{Ours: filepath.Join(opts.BinDir, "kube-apiserver"), Stock: filepath.Join(opts.BinDir, "kube-apiserver-stock")},
		etcdBinary: filepath.Join(opts.BinDir, "etcd"),
		progress:   harness.NewProgress(opts.Progress),
	}
}

func (e *environment) progressf(format string, args ...any) {
	e.progress.Printf(format, args...)
}

// Run runs the load on each binary, then each fault on each binary, then the HA pairs
// (and ours on an etcd cluster), the bad inputs and the InitialResources flood, one after the other, and reads the fuzzing report. Every process it
// starts is stopped before it returns. A run whose checks fail is recorded, not an error:
// errors are for a harness that could not measure.
func Run(ctx context.Context, opts Options) (*Results, error) {
	if err := opts.Validate(); err != nil {
		return nil, fmt.Errorf("invalid options: %w", err)
	}
	env := newEnvironment(opts)
	results := &Results{Options: opts, Machine: readMachine(), Started: env.progress.Started(), Binaries: map[string]BinaryInfo{}}
	for _, b := range opts.Binaries {
		info, err := describeBinary(env.binaries[b])
		if err != nil {
			return nil, err
		}
		results.Binaries[b] = info
	}
	if _, err := os.Stat(env.etcdBinary); err != nil {
		return nil, fmt.Errorf("etcd is not built: %w", err)
	}
	if err := env.writePKI(); err != nil {
		return nil, err
	}

	for _, b := range opts.Binaries {
		env.progressf("load: %d creates from %d clients on %s", opts.Load.Pods, opts.Load.Clients, b)
		r, err := env.runOne(ctx, b, "")
		if err != nil {
			return nil, fmt.Errorf("load on %s: %w", b, err)
		}
		env.report(r)
		results.Loads = append(results.Loads, r)
	}
	for _, f := range opts.Faults {
		for _, b := range opts.Binaries {
			env.progressf("fault %s on %s", f, b)
			r, err := env.runOne(ctx, b, f)
			if err != nil {
				return nil, fmt.Errorf("%s on %s: %w", f, b, err)
			}
			env.report(r)
			results.Faults = append(results.Faults, r)
		}
	}
	if opts.HA {
		ha, err := env.runHA(ctx)
		if err != nil {
			return nil, fmt.Errorf("HA: %w", err)
		}
		results.HA = ha
	}
	if opts.BadInputs {
		results.BadInputs = map[string]*BadInputRun{}
		for _, b := range opts.Binaries {
			env.progressf("bad inputs on %s", b)
			run, err := env.runBadInputs(ctx, b)
			if err != nil {
				return nil, fmt.Errorf("bad inputs on %s: %w", b, err)
			}
			results.BadInputs[b] = run
		}
	}
	if opts.IRFlood.Images > 0 && slices.Contains(opts.Binaries, Ours) {
		flood, err := env.runIRFlood(ctx)
		if err != nil {
			return nil, fmt.Errorf("InitialResources flood: %w", err)
		}
		results.IRFlood = flood
		unbounded := *env
		unbounded.opts.IRFlood.Unbounded = true
		if results.IRFloodUnbounded, err = unbounded.runIRFlood(ctx); err != nil {
			return nil, fmt.Errorf("InitialResources flood on %s: %w", UnboundedBinary, err)
		}
	}
	if opts.FuzzReport != "" {
		fuzz, err := readFuzzReport(opts.FuzzReport)
		if err != nil && !errors.Is(err, os.ErrNotExist) {
			return nil, err
		}
		results.Fuzz = fuzz
	}
	results.Finished = time.Now()
	env.progressf("done")
	return results, nil
}

func (e *environment) report(r *RunResult) {
	v := r.Verification
	e.progressf("  %s: %d of %d acknowledged (%.0f/s), lost %d, refused-but-stored %d, recovered %v after %s, panics %d",
		r.Name(), r.Load.Acked(), len(r.Load.Outcomes), r.Load.Throughput(), v.Lost, v.RefusedStored,
		r.Recovery.Recovered, r.Recovery.After.Round(time.Millisecond), r.Panics.Count)
}

// writePKI lays out the control plane's PKI, the load user's certificate and ours'
// admission configuration.
func (e *environment) writePKI() error {
	dir := filepath.Join(e.opts.WorkDir, "pki")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	files, err := controlplane.WritePKI(dir)
	if err != nil {
		return err
	}
	ca, err := pki.LoadOrCreateCA(dir, "ca")
	if err != nil {
		return err
	}
	if e.loadCert, err = ca.ClientCert(dir, loadUser, loadUser); err != nil {
		return err
	}
	e.pki = files
	e.admissionConfig = filepath.Join(e.opts.WorkDir, "admission-config.yaml")
	return writeAdmissionConfig(e.admissionConfig)
}

// loadConfig reaches host as the load's user.
func (e *environment) loadConfig(host string) *rest.Config {
	return &rest.Config{
		Host: host,
		TLSClientConfig: rest.TLSClientConfig{
			CAFile: e.pki.CA.CertFile, CertFile: e.loadCert.CertFile, KeyFile: e.loadCert.KeyFile,
		},
		// No client-side rate limit: the closed loop sets the pace.
		QPS:            -1,
		Timeout:        30 * time.Second,
		WarningHandler: rest.NoWarnings{},
		UserAgent:      "portcullis-soak-load",
	}
}

// runOne runs the load on a fresh etcd and server of binary, under fault (none if empty).
func (e *environment) runOne(ctx context.Context, binary string, fault FaultKind) (result *RunResult, err error) {
	name := string(fault)
	if name == "" {
		name = "load"
	}
	dir := filepath.Join(e.opts.WorkDir, name+"-"+binary)
	result = &RunResult{Binary: binary, Fault: fault, Dir: dir}
	var stops []func() error
	defer func() {
		for i := len(stops) - 1; i >= 0; i-- {
			err = errors.Join(err, stops[i]())
		}
	}()

	etcd, err := startEtcdMember(ctx, e.etcdBinary, filepath.Join(dir, "etcd"), e.opts.Load.EtcdFsync)
	if err != nil {
		return nil, err
	}
	stops = append(stops, etcd.stop)
	etcdURL := etcd.clientURL
	var proxy *delayProxy
	if fault == FaultSlowEtcd {
		u, err := url.Parse(etcd.clientURL)
		if err != nil {
			return nil, err
		}
		if proxy, err = startDelayProxy(u.Host); err != nil {
			return nil, err
		}
		stops = append(stops, proxy.Close)
		etcdURL = "http://" + proxy.Addr()
	}
	webhooks, err := startWebhookServer(filepath.Join(dir, "webhooks"))
	if err != nil {
		return nil, err
	}
	stops = append(stops, webhooks.close)
	server, err := startAPIServer(ctx, e.serverSetup(binary, etcdURL), filepath.Join(dir, "apiserver"))
	if err != nil {
		return nil, err
	}
	stops = append(stops, server.stop)
	if err := e.prepare(ctx, server, binary, webhooks); err != nil {
		return nil, err
	}

	var injector func(context.Context) (FaultWindow, error)
	if fault != "" {
		targets := faultTargets{webhooks: webhooks, etcd: etcd, proxy: proxy}
		injector = func(ctx context.Context) (FaultWindow, error) { return inject(ctx, fault, e.opts, targets) }
	}
	if err := e.loadUnderFault(ctx, result, server.admin.Host, e.opts.FaultAt, injector); err != nil {
		return nil, err
	}
	// After a fault the server may need a moment before it lists again.
	if err := server.process.WaitFor(ctx, readyTimeout, pollInterval, "/readyz after the run", func() error { return server.readyz(ctx) }, nil); err != nil {
		return nil, err
	}
	result.Verification, err = verify(ctx, etcdAccess{endpoints: []string{etcd.clientURL}}, server.client, namespace, result.Load, binary == Ours)
	if err != nil {
		return nil, err
	}
	result.Panics, err = FindPanics(server.logFile(), filepath.Join(etcd.dir, "etcd.log"))
	return result, err
}

// loadUnderFault runs the load against host, with inject (unless nil) started once the
// fraction at of the creates are answered, and records the load, the fault's window and the
// recovery in result. It returns once the fault is over.
func (e *environment) loadUnderFault(ctx context.Context, result *RunResult, host string, at float64, inject func(context.Context) (FaultWindow, error)) error {
	clients, err := controlplane.Clients(e.loadConfig(host), e.opts.Load.Clients)
	if err != nil {
		return err
	}
	load := &podLoad{clients: clients, namespace: namespace, run: result.id(), opts: e.opts.Load}
	type injected struct {
		window FaultWindow
		err    error
	}
	faultDone := make(chan injected, 1)
	loadDone := make(chan struct{})
	if inject != nil {
		go func() {
			w, err := e.faultWhenDue(ctx, load, loadDone, at, result.Fault, inject)
			faultDone <- injected{w, err}
		}()
	}
	result.Load, err = load.execute(ctx)
	close(loadDone)
	if inject == nil {
		result.Recovery = computeRecovery(result.Load.Outcomes, result.Load.Started)
		return err
	}
	// The fault restores what it stopped before it returns: wait for it in any case.
	f := <-faultDone
	if err != nil {
		return err
	}
	if f.err != nil {
		return fmt.Errorf("injecting %s: %w", result.Fault, f.err)
	}
	result.Window = f.window
	result.Recovery = computeRecovery(result.Load.Outcomes, result.Window.End)
	return nil
}

// faultWhenDue calls inject once the fraction at of the creates are answered; if the load ends
// first, nothing is injected.
func (e *environment) faultWhenDue(ctx context.Context, load *podLoad, loadDone <-chan struct{}, at float64, fault FaultKind, inject func(context.Context) (FaultWindow, error)) (FaultWindow, error) {
	due := int64(at * float64(e.opts.Load.Pods))
	ticker := time.NewTicker(10 * time.Millisecond)
	defer ticker.Stop()
	deadline := time.After(e.opts.Load.Timeout)
	for load.answered.Load() < due {
		select {
		case <-loadDone:
			return FaultWindow{Kind: fault}, nil
		case <-deadline:
			return FaultWindow{Kind: fault}, nil
		case <-ctx.Done():
			return FaultWindow{Kind: fault}, ctx.Err()
		case <-ticker.C:
		}
	}
	return inject(ctx)
}

func (e *environment) serverSetup(binary, etcdURL string, extraFlags ...string) serverSetup {
	return serverSetup{binary: e.binaries[binary], kind: binary, pki: e.pki, etcdURL: etcdURL,
		admissionConfig: e.admissionConfig, extraFlags: extraFlags}
}

// prepare creates the namespace and its default ServiceAccount (no controller manager runs
// to), grants the load's user pod creates and, on ours, the use of a PodSecurityPolicy,
// registers the webhooks, and waits until a dry run shows all of them in force.
func (e *environment) prepare(ctx context.Context, server *apiServer, binary string, webhooks *webhookServer) error {
	client := server.client
	if _, err := client.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: namespace}}, metav1.CreateOptions{}); err != nil {
		return fmt.Errorf("creating namespace %s: %w", namespace, err)
	}
	if _, err := client.CoreV1().ServiceAccounts(namespace).Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "default"}}, metav1.CreateOptions{}); err != nil {
		return fmt.Errorf("creating the default ServiceAccount: %w", err)
	}
	role := &rbacv1.ClusterRole{
		ObjectMeta: metav1.ObjectMeta{Name: loadUser},
		Rules: []rbacv1.PolicyRule{
			{APIGroups: []string{""}, Resources: []string{"pods"}, Verbs: []string{"create", "get", "list"}},
			{APIGroups: []string{"policy"}, Resources: []string{"podsecuritypolicies"}, ResourceNames: []string{grantedPolicy}, Verbs: []string{"use"}},
		},
	}
	if _, err := client.RbacV1().ClusterRoles().Create(ctx, role, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("creating the load's ClusterRole: %w", err)
	}
	binding := &rbacv1.RoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: loadUser, Namespace: namespace},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: loadUser},
		Subjects:   []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: rbacv1.UserKind, Name: loadUser}},
	}
	if _, err := client.RbacV1().RoleBindings(namespace).Create(ctx, binding, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("creating the load's RoleBinding: %w", err)
	}
	if binary == Ours {
		if err := createGrantedPolicy(ctx, server.admin); err != nil {
			return err
		}
	}
	if err := webhooks.registerWebhooks(ctx, client, namespace); err != nil {
		return err
	}
	return e.waitInForce(ctx, server, binary)
}

// waitInForce waits until server admits and refuses as the load expects: its
// configuration informers may lag the writes.
func (e *environment) waitInForce(ctx context.Context, server *apiServer, binary string) error {
	probe, err := kubernetes.NewForConfig(e.loadConfig(server.admin.Host))
	if err != nil {
		return err
	}
	return server.process.WaitFor(ctx, readyTimeout, pollInterval, "webhooks and policy in force", func() error {
		return inForce(ctx, probe, binary == Ours)
	}, nil)
}

// createGrantedPolicy creates the example baseline PodSecurityPolicy.
func createGrantedPolicy(ctx context.Context, admin *rest.Config) error {
	doc, err := pspexamples.Policy(grantedPolicy)
	if err != nil {
		return err
	}
	obj := &unstructured.Unstructured{}
	if err := yaml.Unmarshal(doc, &obj.Object); err != nil {
		return fmt.Errorf("the example policy %s: %w", grantedPolicy, err)
	}
	dyn, err := dynamic.NewForConfig(admin)
	if err != nil {
		return err
	}
	gvr := schema.GroupVersionResource{Group: "policy", Version: "v1beta1", Resource: "podsecuritypolicies"}
	if _, err := dyn.Resource(gvr).Create(ctx, obj, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("creating the PodSecurityPolicy %s: %w", grantedPolicy, err)
	}
	return nil
}

// inForce dry-runs a pod and a marked pod as the load's user: the first must come back
// with both webhooks' mutations (and, on ours, the policy's annotation), the second must be
// refused by design.
func inForce(ctx context.Context, client kubernetes.Interface, wantPolicy bool) error {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	l := &podLoad{run: "probe"}
	dryRun := metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}}
	pod, err := client.CoreV1().Pods(namespace).Create(ctx, l.pod("probe", false), dryRun)
	if err != nil {
		return err
	}
	for _, a := range []string{mutatedByFail, mutatedByIgnore} {
		if pod.Annotations[a] != "true" {
			return fmt.Errorf("%w: the dry-run pod lacks %s", errNotYet, a)
		}
	}
	if wantPolicy && pod.Annotations[pspAnnotation] != grantedPolicy {
		return fmt.Errorf("%w: the dry-run pod was not admitted by the policy %s (annotations %v)", errNotYet, grantedPolicy, pod.Annotations)
	}
	_, err = client.CoreV1().Pods(namespace).Create(ctx, l.pod("probe-refused", true), dryRun)
	o := Outcome{Marked: true, Sent: time.Now()}
	if err != nil {
		o.Code, o.Reason, o.Message = describeError(err)
	}
	if !o.RefusedByDesign() {
		return fmt.Errorf("%w: the marked dry-run pod was not refused by design (%v)", errNotYet, err)
	}
	return nil
}
