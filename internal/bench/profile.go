package bench

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apiextensionsclient "k8s.io/apiextensions-apiserver/pkg/client/clientset/clientset"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/portcullis-k8s/portcullis/internal/controlplane"
	"github.com/portcullis-k8s/portcullis/internal/harness"
)

// ProfileOptions size `make pgo-profile`: the workload whose CPU profiles, merged, become
// cmd/kube-apiserver/default.pgo.
type ProfileOptions struct {
	// BinDir holds kube-apiserver (ours, the binary profiled) and etcd.
	BinDir string
	// WorkDir receives PKI, etcd data, the servers' logs and each phase's profile. It must exist.
	WorkDir string
	// GoTool is the go command whose pprof merges the profiles.
	GoTool string
	// Out is the merged profile's path.
	Out string
	// Window is how long each phase is profiled; a phase of weight w is profiled w windows.
	Window time.Duration
	// Clients is how many clients drive each phase, each on its own connection.
	Clients int
	// ListPods is how many pods the list phases list.
	ListPods int
	// Watchers is how many watches the watch phase keeps open.
	Watchers int
	// Progress receives a line per step; nil discards them.
	Progress io.Writer
}

// DefaultProfileOptions are `make pgo-profile`'s sizes: about 3 minutes of profiled work.
func DefaultProfileOptions() ProfileOptions {
	return ProfileOptions{GoTool: "go", Window: 10 * time.Second, Clients: 8, ListPods: 5000, Watchers: 100}
}

// Validate reports every option that cannot work.
func (o ProfileOptions) Validate() error {
	var errs []error
	for _, setting := range []struct{ name, value string }{
		{"bin dir", o.BinDir}, {"work dir", o.WorkDir}, {"go tool", o.GoTool}, {"out", o.Out},
	} {
		if setting.value == "" {
			errs = append(errs, fmt.Errorf("%s is not set", setting.name))
		}
	}
	if o.Window < time.Second {
		errs = append(errs, fmt.Errorf("window %s: the profile endpoint takes whole seconds, at least 1", o.Window))
	}
	if o.Clients < 1 || o.ListPods < 1 || o.Watchers < 1 {
		errs = append(errs, fmt.Errorf("clients (%d), list pods (%d) and watchers (%d) must be at least 1", o.Clients, o.ListPods, o.Watchers))
	}
	return errors.Join(errs...)
}

// profilePhase is one part of the profiled workload. run drives the server until ctx ends.
type profilePhase struct {
	name string
	// weight is how many windows it is profiled: its share of the merged profile.
	weight int
	setup  func(ctx context.Context) error
	run    func(ctx context.Context) error
}

// profileWorkload is what the phases share.
type profileWorkload struct {
	opts     ProfileOptions
	server   *apiServer
	clients  []kubernetes.Interface
	webhooks *webhookServer
}

const (
	profileNamespace = "pgo"
	// profileOpsPerClient bounds every phase's loop in count as well as in time.
	profileOpsPerClient = 1_000_000
)

// CollectProfile runs the documented workload against our binary, profiles the server's
// CPU through /debug/pprof/profile during each phase and merges the profiles into opts.Out.
// The phases follow what a control plane spends its CPU on: pod creates through the default
// admission chain (the bulk, as in make bench's table 1), pod updates and deletes, lists
// from the watch cache and, on a second server started with --watch-cache=false, from etcd,
// watches, ConfigMap and Secret churn, custom resources, and pod creates through a mutating
// webhook.
func CollectProfile(ctx context.Context, opts ProfileOptions) (err error) {
	if err := opts.Validate(); err != nil {
		return fmt.Errorf("invalid options: %w", err)
	}
	progressf := harness.NewProgress(opts.Progress).Printf
	binary := filepath.Join(opts.BinDir, "kube-apiserver")
	files, err := controlplane.WritePKI(filepath.Join(opts.WorkDir, "pki"))
	if err != nil {
		return err
	}
	profileDir := filepath.Join(opts.WorkDir, "profiles")
	if err := os.MkdirAll(profileDir, 0o755); err != nil {
		return err
	}
	webhooks, err := startWebhookServer(filepath.Join(opts.WorkDir, "webhook"), 0)
	if err != nil {
		return err
	}
	defer func() { err = errors.Join(err, webhooks.close()) }()

	var profiles []string
	for _, server := range []struct {
		name  string
		flags []string
		// phases take the workload this server runs.
		phases func(w *profileWorkload) []profilePhase
	}{
		{"watch-cache", nil, (*profileWorkload).cachedPhases},
		// Without the watch cache every list and get goes to etcd, as on servers that
		// disable it for some resources.
		{"no-watch-cache", []string{"--watch-cache=false"}, (*profileWorkload).uncachedPhases},
	} {
		dir := filepath.Join(opts.WorkDir, server.name)
		progressf("starting etcd and %s with %s", binary, server.name)
		written, err := profileServer(ctx, opts, binary, files, dir, server.flags, webhooks, server.phases, profileDir, server.name, progressf)
		if err != nil {
			return fmt.Errorf("%s: %w", server.name, err)
		}
		profiles = append(profiles, written...)
	}
	progressf("merging %d profiles into %s", len(profiles), opts.Out)
	return mergeProfiles(ctx, opts.GoTool, profiles, opts.Out)
}

// profileServer starts etcd and binary with flags, runs the phases phasesOf returns and
// profiles each; it returns the profiles' paths.
func profileServer(ctx context.Context, opts ProfileOptions, binary string, files *controlplane.PKI, dir string, flags []string,
	webhooks *webhookServer, phasesOf func(*profileWorkload) []profilePhase, profileDir, serverName string, progressf func(string, ...any)) (written []string, err error) {
	etcd, err := startEtcd(ctx, filepath.Join(opts.BinDir, "etcd"), filepath.Join(dir, "etcd"))
	if err != nil {
		return nil, err
	}
	defer func() { err = errors.Join(err, etcd.stop()) }()
	server, err := startAPIServer(ctx, binary, files, dir, etcd.clientURL, flags...)
	if err != nil {
		return nil, err
	}
	defer func() { err = errors.Join(err, server.stop()) }()
	clients, err := controlplane.Clients(server.config, opts.Clients)
	if err != nil {
		return nil, err
	}
	if err := loadNamespace(ctx, server.client, profileNamespace); err != nil {
		return nil, err
	}
	w := &profileWorkload{opts: opts, server: server, clients: clients, webhooks: webhooks}
	for _, phase := range phasesOf(w) {
		if phase.setup != nil {
			if err := phase.setup(ctx); err != nil {
				return nil, fmt.Errorf("setting up phase %s: %w", phase.name, err)
			}
		}
		for window := range phase.weight {
			path := filepath.Join(profileDir, fmt.Sprintf("%s-%s-%d.pprof", serverName, phase.name, window+1))
			progressf("%s: profiling %s for %s (%d/%d)", serverName, phase.name, opts.Window, window+1, phase.weight)
			if err := profileWhile(ctx, server, opts.Window, path, phase.run); err != nil {
				return nil, fmt.Errorf("phase %s: %w", phase.name, err)
			}
			written = append(written, path)
		}
	}
	return written, nil
}

// profileWhile fetches a CPU profile of the server for window into path while run drives
// the server; run is stopped when the profile is in.
func profileWhile(ctx context.Context, server *apiServer, window time.Duration, path string, run func(context.Context) error) error {
	config := rest.CopyConfig(server.config)
	config.Timeout = window + time.Minute
	httpClient, err := rest.HTTPClientFor(config)
	if err != nil {
		return err
	}
	defer httpClient.CloseIdleConnections()
	url := fmt.Sprintf("%s/debug/pprof/profile?seconds=%d", config.Host, int(window.Seconds()))

	loadCtx, stopLoad := context.WithCancel(ctx)
	defer stopLoad()
	loadDone := make(chan error, 1)
	go func() { loadDone <- run(loadCtx) }()

	fetchErr := fetchProfile(ctx, httpClient, url, path)
	stopLoad()
	loadErr := <-loadDone
	if loadErr != nil && loadCtx.Err() != nil && errors.Is(loadErr, context.Canceled) {
		loadErr = nil // stopped on purpose
	}
	return errors.Join(fetchErr, loadErr)
}

func fetchProfile(ctx context.Context, client *http.Client, url, path string) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return err
	}
	resp, err := client.Do(req)
	if err != nil {
		return fmt.Errorf("fetching the CPU profile: %w", err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		body, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
		return fmt.Errorf("fetching the CPU profile: %s: %s", resp.Status, body)
	}
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if _, err := io.Copy(f, resp.Body); err != nil {
		return errors.Join(fmt.Errorf("writing %s: %w", path, err), f.Close())
	}
	return f.Close()
}

// mergeProfiles writes the merge of profiles to out with pprof (beside it, then renamed, so
// an interrupted run never leaves half a profile for the compiler to read).
func mergeProfiles(ctx context.Context, goTool string, profiles []string, out string) error {
	tmp := out + ".tmp"
	args := append([]string{"tool", "pprof", "-proto", "-output", tmp}, profiles...)
	cmd := exec.CommandContext(ctx, goTool, args...)
	if output, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("%s tool pprof: %w\n%s", goTool, err, output)
	}
	return os.Rename(tmp, out)
}

// cachedPhases is the workload on a server with the watch cache (the default), heaviest
// first: pod creates are what make bench's table 1 times.
func (w *profileWorkload) cachedPhases() []profilePhase {
	return []profilePhase{
		{name: "pod-creates", weight: 4, run: w.podCreates},
		{name: "pod-create-update-delete", weight: 3, run: w.podChurn},
		{name: "lists", weight: 2, setup: w.createListPods, run: w.lists},
		{name: "watches", weight: 2, run: w.watches},
		{name: "configmap-secret-churn", weight: 2, run: w.configMapSecretChurn},
		{name: "custom-resources", weight: 2, setup: w.createWidgetCRD, run: w.customResources},
		{name: "mutating-webhook", weight: 2, setup: w.installWebhook, run: w.podCreates},
	}
}

// uncachedPhases is the workload on a server without the watch cache: lists from etcd.
func (w *profileWorkload) uncachedPhases() []profilePhase {
	return []profilePhase{{name: "lists", weight: 2, setup: w.createListPods, run: w.lists}}
}

// eachClient runs op in a closed loop on every client until ctx ends or the count bound is
// reached; the first error other than ctx's ending stops it.
func (w *profileWorkload) eachClient(ctx context.Context, op func(ctx context.Context, client kubernetes.Interface, worker, i int) error) error {
	var wg sync.WaitGroup
	errs := make([]error, len(w.clients))
	for worker, client := range w.clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range profileOpsPerClient {
				if ctx.Err() != nil {
					return
				}
				if err := op(ctx, client, worker, i); err != nil {
					if ctx.Err() == nil {
						errs[worker] = err
					}
					return
				}
			}
		}()
	}
	wg.Wait()
	return errors.Join(errs...)
}

// podName is unique per phase run, worker and iteration.
func podName(kind string, worker, i int) string {
	return fmt.Sprintf("%s-%d-%d-%d", kind, time.Now().UnixNano()%1_000_000_000, worker, i)
}

func (w *profileWorkload) podCreates(ctx context.Context) error {
	err := w.eachClient(ctx, func(ctx context.Context, client kubernetes.Interface, worker, i int) error {
		_, err := client.CoreV1().Pods(profileNamespace).Create(ctx, benchPod(podName("create", worker, i)), metav1.CreateOptions{})
		return err
	})
	// Keep the server's object count level from window to window.
	return errors.Join(err, deleteLoadPods(context.WithoutCancel(ctx), w.server.client, profileNamespace))
}

func (w *profileWorkload) podChurn(ctx context.Context) error {
	zero := int64(0)
	return w.eachClient(ctx, func(ctx context.Context, client kubernetes.Interface, worker, i int) error {
		pods := client.CoreV1().Pods(profileNamespace)
		pod := benchPod(podName("churn", worker, i))
		pod.Labels = map[string]string{"churn": "true"} // not the load label: deleted here
		created, err := pods.Create(ctx, pod, metav1.CreateOptions{})
		if err != nil {
			return err
		}
		created.Labels["updated"] = strconv.Itoa(i)
		if _, err := pods.Update(ctx, created, metav1.UpdateOptions{}); err != nil {
			return err
		}
		return pods.Delete(ctx, created.Name, metav1.DeleteOptions{GracePeriodSeconds: &zero})
	})
}

const listNamespace = "pgo-lists"

// createListPods fills listNamespace with opts.ListPods pods, once per server.
func (w *profileWorkload) createListPods(ctx context.Context) error {
	if err := loadNamespace(ctx, w.server.client, listNamespace); err != nil {
		return err
	}
	load := createLoad{clients: w.clients, namespace: listNamespace, namePrefix: "listed", count: w.opts.ListPods, timeout: 5 * time.Minute}
	_, err := load.run(ctx)
	return err
}

// lists lists the pods three ways: resourceVersion 0 (any cached state), a consistent list
// (the latest state) and pages of 500.
func (w *profileWorkload) lists(ctx context.Context) error {
	return w.eachClient(ctx, func(ctx context.Context, client kubernetes.Interface, worker, i int) error {
		pods := client.CoreV1().Pods(listNamespace)
		switch (worker + i) % 3 {
		case 0:
			_, err := pods.List(ctx, metav1.ListOptions{ResourceVersion: "0"})
			return err
		case 1:
			_, err := pods.List(ctx, metav1.ListOptions{})
			return err
		default:
			options := metav1.ListOptions{Limit: 500}
			for range w.opts.ListPods/500 + 1 {
				page, err := pods.List(ctx, options)
				if err != nil || page.Continue == "" {
					return err
				}
				options.Continue = page.Continue
			}
			return nil
		}
	})
}

const watchNamespace = "pgo-watches"

// watches keeps opts.Watchers watches on a namespace's pods open while the clients create
// and delete pods in it, and drains every event.
func (w *profileWorkload) watches(ctx context.Context) error {
	if _, err := w.server.client.CoreV1().Namespaces().Get(ctx, watchNamespace, metav1.GetOptions{}); err != nil {
		if err := loadNamespace(ctx, w.server.client, watchNamespace); err != nil {
			return err
		}
	}
	var wg sync.WaitGroup
	watchErrs := make([]error, w.opts.Watchers)
	for i := range w.opts.Watchers {
		client := w.clients[i%len(w.clients)]
		watcher, err := client.CoreV1().Pods(watchNamespace).Watch(ctx, metav1.ListOptions{})
		if err != nil {
			if ctx.Err() != nil {
				break
			}
			return fmt.Errorf("watch %d: %w", i, err)
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer watcher.Stop()
			for {
				select {
				case <-ctx.Done():
					return
				case _, ok := <-watcher.ResultChan():
					if !ok {
						if ctx.Err() == nil {
							watchErrs[i] = fmt.Errorf("watch %d ended before the phase", i)
						}
						return
					}
				}
			}
		}()
	}
	zero := int64(0)
	err := w.eachClient(ctx, func(ctx context.Context, client kubernetes.Interface, worker, i int) error {
		pods := client.CoreV1().Pods(watchNamespace)
		created, err := pods.Create(ctx, benchPod(podName("watched", worker, i)), metav1.CreateOptions{})
		if err != nil {
			return err
		}
		return pods.Delete(ctx, created.Name, metav1.DeleteOptions{GracePeriodSeconds: &zero})
	})
	wg.Wait()
	return errors.Join(append([]error{err}, watchErrs...)...)
}

// configMapSecretChurn creates, updates and deletes ConfigMaps and Secrets of about 1 KiB.
func (w *profileWorkload) configMapSecretChurn(ctx context.Context) error {
	value := strings.Repeat("v", 1024)
	return w.eachClient(ctx, func(ctx context.Context, client kubernetes.Interface, worker, i int) error {
		name := podName("churn", worker, i)
		if worker%2 == 0 {
			configMaps := client.CoreV1().ConfigMaps(profileNamespace)
			created, err := configMaps.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name}, Data: map[string]string{"value": value}}, metav1.CreateOptions{})
			if err != nil {
				return err
			}
			created.Data["updated"] = strconv.Itoa(i)
			if _, err := configMaps.Update(ctx, created, metav1.UpdateOptions{}); err != nil {
				return err
			}
			return configMaps.Delete(ctx, name, metav1.DeleteOptions{})
		}
		secrets := client.CoreV1().Secrets(profileNamespace)
		created, err := secrets.Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: name}, StringData: map[string]string{"value": value}}, metav1.CreateOptions{})
		if err != nil {
			return err
		}
		created.Data["updated"] = []byte(strconv.Itoa(i))
		if _, err := secrets.Update(ctx, created, metav1.UpdateOptions{}); err != nil {
			return err
		}
		return secrets.Delete(ctx, name, metav1.DeleteOptions{})
	})
}

// widgets is the custom resource the workload churns.
var widgets = schema.GroupVersionResource{Group: "pgo.portcullis.dev", Version: "v1", Resource: "widgets"}

// createWidgetCRD installs the Widget CRD, with a structural schema, and waits until it serves.
func (w *profileWorkload) createWidgetCRD(ctx context.Context) error {
	client, err := apiextensionsclient.NewForConfig(w.server.config)
	if err != nil {
		return err
	}
	crd := &apiextensionsv1.CustomResourceDefinition{
		ObjectMeta: metav1.ObjectMeta{Name: widgets.Resource + "." + widgets.Group},
		Spec: apiextensionsv1.CustomResourceDefinitionSpec{
			Group: widgets.Group,
			Names: apiextensionsv1.CustomResourceDefinitionNames{Plural: widgets.Resource, Singular: "widget", Kind: "Widget", ListKind: "WidgetList"},
			Scope: apiextensionsv1.NamespaceScoped,
			Versions: []apiextensionsv1.CustomResourceDefinitionVersion{{
				Name: widgets.Version, Served: true, Storage: true,
				Schema: &apiextensionsv1.CustomResourceValidation{OpenAPIV3Schema: &apiextensionsv1.JSONSchemaProps{
					Type: "object",
					Properties: map[string]apiextensionsv1.JSONSchemaProps{
						"spec": {Type: "object", Properties: map[string]apiextensionsv1.JSONSchemaProps{
							"size":   {Type: "integer", Minimum: ptrTo(0.0)},
							"color":  {Type: "string", Enum: []apiextensionsv1.JSON{{Raw: []byte(`"red"`)}, {Raw: []byte(`"blue"`)}}},
							"labels": {Type: "object", AdditionalProperties: &apiextensionsv1.JSONSchemaPropsOrBool{Schema: &apiextensionsv1.JSONSchemaProps{Type: "string"}}},
						}},
					},
				}},
			}},
		},
	}
	if _, err := client.ApiextensionsV1().CustomResourceDefinitions().Create(ctx, crd, metav1.CreateOptions{}); err != nil {
		return err
	}
	dynamicClient, err := dynamic.NewForConfig(w.server.config)
	if err != nil {
		return err
	}
	return wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, policyApplyTimeout, true, func(ctx context.Context) (bool, error) {
		_, err := dynamicClient.Resource(widgets).Namespace(profileNamespace).List(ctx, metav1.ListOptions{})
		return err == nil, nil
	})
}

func ptrTo[T any](v T) *T { return &v }

// customResources creates, updates and deletes Widgets.
func (w *profileWorkload) customResources(ctx context.Context) error {
	clients := make([]dynamic.Interface, len(w.clients))
	for i := range clients {
		var err error
		if clients[i], err = dynamic.NewForConfig(w.server.config); err != nil {
			return err
		}
	}
	return w.eachClient(ctx, func(ctx context.Context, _ kubernetes.Interface, worker, i int) error {
		resource := clients[worker].Resource(widgets).Namespace(profileNamespace)
		widget := &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": widgets.Group + "/" + widgets.Version,
			"kind":       "Widget",
			"metadata":   map[string]any{"name": podName("widget", worker, i)},
			"spec":       map[string]any{"size": int64(i), "color": "red", "labels": map[string]any{"tier": "profile"}},
		}}
		created, err := resource.Create(ctx, widget, metav1.CreateOptions{})
		if err != nil {
			return err
		}
		if err := unstructured.SetNestedField(created.Object, "blue", "spec", "color"); err != nil {
			return err
		}
		if _, err := resource.Update(ctx, created, metav1.UpdateOptions{}); err != nil {
			return err
		}
		return resource.Delete(ctx, created.GetName(), metav1.DeleteOptions{})
	})
}

// installWebhook registers one mutating webhook on pod creates, answering at once with a
// patch, and waits until creates reach it.
func (w *profileWorkload) installWebhook(ctx context.Context) error {
	if err := loadNamespace(ctx, w.server.client, dispatchNamespace); err != nil {
		return err
	}
	_, err := installImmediate(ctx, w.server, w.webhooks, mutatingKind, 1, nil)
	return err
}
