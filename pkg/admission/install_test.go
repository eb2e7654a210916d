package admission

import (
	"flag"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/sets"
	genericadmission "k8s.io/apiserver/pkg/admission"
	"k8s.io/apiserver/pkg/admission/initializer"
	"k8s.io/apiserver/pkg/authorization/authorizerfactory"
	"k8s.io/apiserver/pkg/util/compatibility"
	utilfeature "k8s.io/apiserver/pkg/util/feature"
	dynamicfake "k8s.io/client-go/dynamic/fake"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/fake"
	kubeoptions "k8s.io/kubernetes/pkg/kubeapiserver/options"

	admissionregistrationv1alpha1 "github.com/portcullis-k8s/api/admissionregistration/v1alpha1"
	policyv1beta1 "github.com/portcullis-k8s/api/policy/v1beta1"
	settingsv1alpha1 "github.com/portcullis-k8s/api/settings/v1alpha1"
	"github.com/portcullis-k8s/portcullis/pkg/admission/portcullisconfig"
	portcullisapi "github.com/portcullis-k8s/portcullis/pkg/apis/admission"
	"github.com/portcullis-k8s/portcullis/pkg/apis/admission/validation"
	"github.com/portcullis-k8s/portcullis/pkg/kubecompat"
)

var updatePinned = flag.Bool("update", false, "rewrite testdata/ with upstream's current lists (after a deliberate version bump)")

// installed returns kube-apiserver's admission options with our plugins installed, as the
// command builds them.
func installed(t *testing.T) *kubeoptions.AdmissionOptions {
	t.Helper()
	opts, _ := installedWithSettings(t)
	return opts
}

func installedWithSettings(t *testing.T) (*kubeoptions.AdmissionOptions, *Settings) {
	t.Helper()
	opts := kubeoptions.NewAdmissionOptions()
	settings, err := Install(opts)
	if err != nil {
		t.Fatalf("Install: %v", err)
	}
	return opts, settings
}

// lastPlugins must end the chain in this order: policy and webhook plugins see the object
// every other plugin has already changed, and ResourceQuota/AlwaysDeny are final by design.
// Initializers sits among them where 1.10 had it: it records the initialization of the
// object the mutating webhooks made, for the validating ones to see.
var lastPlugins = []string{
	"MutatingAdmissionPolicy",
	"MutatingAdmissionWebhook",
	"Initializers",
	"ValidatingAdmissionPolicy",
	"ValidatingAdmissionWebhook",
	"ResourceQuota",
	"AlwaysDeny",
}

func TestEveryRegisteredPluginAppearsOnceInTheOrder(t *testing.T) {
	opts := installed(t).GenericAdmission
	order := opts.RecommendedPluginOrder
	seen := map[string]int{}
	for _, name := range order {
		seen[name]++
	}
	for name, n := range seen {
		if n != 1 {
			t.Errorf("plugin %q appears %d times in the order", name, n)
		}
	}
	registered := sets.New(opts.Plugins.Registered()...)
	if inOrder := sets.New(order...); !inOrder.Equal(registered) {
		t.Errorf("registered but not ordered: %v; ordered but not registered: %v",
			sets.List(registered.Difference(inOrder)), sets.List(inOrder.Difference(registered)))
	}
	for _, p := range Plugins() {
		if !registered.Has(p.Name) {
			t.Errorf("plugin of ours %q is not registered", p.Name)
		}
	}
	// Upstream's own consistency check must hold too: it runs at server start-up.
	if errs := opts.Validate(); len(errs) != 0 {
		t.Errorf("upstream's admission option validation failed: %v", errs)
	}
}

func TestUpstreamRelativeOrderIsKept(t *testing.T) {
	order := installed(t).GenericAdmission.RecommendedPluginOrder
	upstream := sets.New(kubeoptions.AllOrderedPlugins...)
	var upstreamInOurs []string
	for _, name := range order {
		if upstream.Has(name) {
			upstreamInOurs = append(upstreamInOurs, name)
		}
	}
	if diff := cmp.Diff(kubeoptions.AllOrderedPlugins, upstreamInOurs); diff != "" {
		t.Errorf("upstream's plugins are reordered (-upstream +ours):\n%s", diff)
	}
}

func TestPolicyWebhookQuotaAndDenyStayLast(t *testing.T) {
	order := installed(t).GenericAdmission.RecommendedPluginOrder
	if len(order) < len(lastPlugins) {
		t.Fatalf("order too short: %v", order)
	}
	tail := order[len(order)-len(lastPlugins):]
	if diff := cmp.Diff(lastPlugins, tail); diff != "" {
		t.Errorf("the end of the chain changed (-want +got):\n%s", diff)
	}
}

func TestEachPluginOfOursSitsAtItsAnchor(t *testing.T) {
	order := installed(t).GenericAdmission.RecommendedPluginOrder
	for _, p := range Plugins() {
		at := slices.Index(order, p.Name)
		anchor := slices.Index(order, p.Anchor.Name)
		want := anchor - 1
		if p.Anchor.After {
			want = anchor + 1
		}
		// A later plugin of ours may share the anchor and sit between; allow only ours there.
		lo, hi := min(at, want), max(at, want)
		for _, between := range order[lo+1 : hi+1] {
			if between != p.Name && !isOurs(between) {
				t.Errorf("%s should sit %s, but %s is between them in %v", p.Name, p.Anchor, between, order)
			}
		}
	}
}

// isOurs says whether name's plugin is ours: one we add, or one we replace upstream's with.
func isOurs(name string) bool {
	return slices.ContainsFunc(Plugins(), func(p Plugin) bool { return p.Name == name }) ||
		slices.ContainsFunc(Replacements(), func(r Replacement) bool { return r.Name == name })
}

func TestDefaultsMatchStock(t *testing.T) {
	opts := installed(t).GenericAdmission
	stock := kubeoptions.NewAdmissionOptions().GenericAdmission
	if diff := cmp.Diff(defaultOn(stock.RecommendedPluginOrder, stock.DefaultOffPlugins),
		defaultOn(opts.RecommendedPluginOrder, opts.DefaultOffPlugins)); diff != "" {
		t.Errorf("the default-on chain differs from stock (-stock +ours):\n%s", diff)
	}
	for _, p := range Plugins() {
		if !opts.DefaultOffPlugins.Has(p.Name) {
			t.Errorf("plugin of ours %q is on by default; every plugin of ours must be off", p.Name)
		}
	}
	if opts.DisablePlugins != nil || opts.EnablePlugins != nil {
		t.Errorf("Install touched the user's flags: enable=%v disable=%v", opts.EnablePlugins, opts.DisablePlugins)
	}
}

// TestRefusedEnforcementModesNameUpstreamPlugins keeps enforcement's refused list honest:
// every name is a plugin upstream registers (renamed or removed upstream, it would refuse
// nothing).
func TestRefusedEnforcementModesNameUpstreamPlugins(t *testing.T) {
	registered := sets.New(kubeoptions.NewAdmissionOptions().GenericAdmission.Plugins.Registered()...)
	for _, name := range validation.RefusedPlugins() {
		if !registered.Has(name) {
			t.Errorf("enforcement mode refused for %q, which upstream does not register (renamed or removed?)", name)
		}
	}
}

func TestInstallDoesNotShareUpstreamState(t *testing.T) {
	before := slices.Clone(kubeoptions.AllOrderedPlugins)
	installed(t)
	if diff := cmp.Diff(before, kubeoptions.AllOrderedPlugins); diff != "" {
		t.Errorf("Install modified upstream's AllOrderedPlugins:\n%s", diff)
	}
	if fresh := kubeoptions.NewAdmissionOptions().GenericAdmission; fresh.DefaultOffPlugins.Has(Plugins()[0].Name) {
		t.Errorf("Install leaked our default-off plugins into upstream's defaults")
	}
}

func TestPluginsImplementTheirPhase(t *testing.T) {
	opts := installed(t).GenericAdmission
	for _, p := range Plugins() {
		t.Run(p.Name, func(t *testing.T) {
			plugin, err := opts.Plugins.InitPlugin(p.Name, nil, fakeInitializers(t))
			if err != nil {
				t.Fatalf("building %s: %v", p.Name, err)
			}
			_, mutates := plugin.(genericadmission.MutationInterface)
			_, validates := plugin.(genericadmission.ValidationInterface)
			if mutates != p.Phase.Mutates() || validates != p.Phase.Validates() {
				t.Errorf("%s is registered as %q but implements mutating=%v validating=%v", p.Name, p.Phase, mutates, validates)
			}
		})
	}
}

func TestOrderErrors(t *testing.T) {
	base := []string{"A", "B", "C"}
	tests := []struct {
		name    string
		ours    []Plugin
		want    []string
		wantErr string
	}{
		{name: "after", ours: []Plugin{{Name: "X", Anchor: After("A")}}, want: []string{"A", "X", "B", "C"}},
		{name: "before", ours: []Plugin{{Name: "X", Anchor: Before("A")}}, want: []string{"X", "A", "B", "C"}},
		{name: "after the last", ours: []Plugin{{Name: "X", Anchor: After("C")}}, want: []string{"A", "B", "C", "X"}},
		{name: "anchored on an earlier plugin of ours", ours: []Plugin{{Name: "X", Anchor: After("B")}, {Name: "Y", Anchor: After("X")}}, want: []string{"A", "B", "X", "Y", "C"}},
		{name: "missing anchor", ours: []Plugin{{Name: "X", Anchor: After("Gone")}}, wantErr: `"X" is anchored after Gone`},
		{name: "duplicate of upstream", ours: []Plugin{{Name: "B", Anchor: After("A")}}, wantErr: `"B" is listed twice`},
		{name: "no name", ours: []Plugin{{Anchor: After("A")}}, wantErr: "has no name"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := Order(base, tc.ours)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("want error containing %q, got %v", tc.wantErr, err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
			if diff := cmp.Diff([]string{"A", "B", "C"}, base); diff != "" {
				t.Errorf("Order modified its input:\n%s", diff)
			}
		})
	}
}

// TestUpstreamDrift pins upstream's ordered plugin list and default-on set. When a Kubernetes
// bump changes either, this fails with the difference: check every anchor of ours still means
// what it meant, then run `go test ./pkg/admission -run TestUpstreamDrift -update` (with the
// minor's build: make test-unit KUBE_MINOR=1.N GO_TEST_FLAGS=... or GOFLAGS as the Makefile
// sets it). Each minor pins its own lists, under testdata/<minor>/.
func TestUpstreamDrift(t *testing.T) {
	stock := kubeoptions.NewAdmissionOptions().GenericAdmission
	pinned := map[string][]string{
		"upstream-order.txt":      stock.RecommendedPluginOrder,
		"upstream-default-on.txt": defaultOn(stock.RecommendedPluginOrder, stock.DefaultOffPlugins),
	}
	for file, current := range pinned {
		path := filepath.Join("testdata", kubecompat.Minor, file)
		if *updatePinned {
			if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(path, []byte(strings.Join(current, "\n")+"\n"), 0o644); err != nil {
				t.Fatal(err)
			}
			continue
		}
		data, err := os.ReadFile(path)
		if err != nil {
			t.Fatalf("reading the pinned list: %v", err)
		}
		want := strings.Fields(string(data))
		if diff := cmp.Diff(want, current); diff != "" {
			t.Errorf("upstream changed %s (-pinned +upstream now):\n%s\nCheck the anchors in plugins.go, then rerun with -update.", path, diff)
		}
	}
}

// fakeInitializers give plugins what the server's generic initializer gives them, backed by
// fakes, so that plugins needing clients can be built in a unit test.
func fakeInitializers(t *testing.T) genericadmission.PluginInitializers {
	client := fake.NewClientset()
	// The fake dynamic client serves our own APIs too.
	scheme := runtime.NewScheme()
	for _, add := range []func(*runtime.Scheme) error{settingsv1alpha1.AddToScheme, policyv1beta1.AddToScheme, admissionregistrationv1alpha1.AddToScheme} {
		if err := add(scheme); err != nil {
			t.Fatal(err)
		}
	}
	stop := make(chan struct{})
	t.Cleanup(func() { close(stop) })
	return genericadmission.PluginInitializers{initializer.New(
		client,
		dynamicfake.NewSimpleDynamicClient(scheme),
		informers.NewSharedInformerFactory(client, 0),
		authorizerfactory.NewAlwaysAllowAuthorizer(),
		utilfeature.DefaultFeatureGate,
		compatibility.DefaultBuildEffectiveVersion(),
		stop,
		meta.NewDefaultRESTMapper(nil),
	)}
}

// defaultOn lists, in order, the plugins that run when no admission flag is given.
func defaultOn(order []string, defaultOff sets.Set[string]) []string {
	var on []string
	for _, name := range order {
		if !defaultOff.Has(name) {
			on = append(on, name)
		}
	}
	return on
}

// TestReplacementsTakeUpstreamNames holds the replaced plugins to stock's names, place and
// default, and checks that the name builds upstream's plugin unless the Portcullis entry (or
// the entry in our kind of earlier releases) turns our dispatch on.
func TestReplacementsTakeUpstreamNames(t *testing.T) {
	installedOpts, settings := installedWithSettings(t)
	opts := installedOpts.GenericAdmission
	portcullisFile := filepath.Join(t.TempDir(), "admission.yaml")
	if err := os.WriteFile(portcullisFile, []byte("apiVersion: apiserver.config.k8s.io/v1\nkind: AdmissionConfiguration\nplugins:\n- name: Portcullis\n  configuration:\n"+
		indent(portcullisconfig.Example(), "    ")), 0o600); err != nil {
		t.Fatal(err)
	}
	example, err := portcullisconfig.Load(portcullisFile)
	if err != nil {
		t.Fatal(err)
	}
	traceFile := filepath.Join(t.TempDir(), "admission.yaml")
	if err := os.WriteFile(traceFile, []byte("apiVersion: apiserver.config.k8s.io/v1\nkind: AdmissionConfiguration\nplugins:\n- name: Portcullis\n  configuration:\n"+
		indent("apiVersion: admission.portcullis.io/v1alpha1\nkind: PortcullisConfiguration\nadmissionTrace: {onRequest: true, audit: true}\n", "    ")), 0o600); err != nil {
		t.Fatal(err)
	}
	traceAlone, err := portcullisconfig.Load(traceFile)
	if err != nil {
		t.Fatal(err)
	}
	traced := &portcullisconfig.Configuration{PortcullisConfiguration: portcullisapi.PortcullisConfiguration{
		WebhookDispatch: &portcullisapi.WebhookDispatch{Mutating: &portcullisapi.WebhookDispatchSettings{}, Validating: &portcullisapi.WebhookDispatchSettings{}},
		AdmissionTrace:  &portcullisapi.AdmissionTrace{Audit: true},
	}}
	stock := kubeoptions.NewAdmissionOptions().GenericAdmission
	want := sets.New(stock.Plugins.Registered()...)
	for _, p := range Plugins() {
		want.Insert(p.Name)
	}
	if diff := cmp.Diff(sets.List(want), opts.Plugins.Registered()); diff != "" {
		t.Errorf("registered plugins differ from stock's plus ours (-want +got):\n%s", diff)
	}
	// With no settings of ours, the name builds upstream's own plugin: the server is stock's.
	// With a setting of our dispatch, ours.
	const upstreamWebhookPackage = "k8s.io/apiserver/pkg/admission/plugin/webhook/"
	// A webhook kubeconfig: upstream's entry names one (1.35's requires it).
	kubeconfig := filepath.Join(t.TempDir(), "webhooks.kubeconfig")
	if err := os.WriteFile(kubeconfig, []byte("apiVersion: v1\nkind: Config\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	upstreamKind := "apiVersion: apiserver.config.k8s.io/v1\nkind: WebhookAdmissionConfiguration\nkubeConfigFile: " + kubeconfig + "\n"
	// The form of earlier releases, in both webhook plugins' entries, read as the command reads
	// it (portcullisconfig.Load converts it; the registry hands the plugin the result).
	legacyNone := "apiVersion: admission.portcullis.io/v1alpha1\nkind: WebhookDispatchConfiguration\nkubeConfigFile: " + kubeconfig + "\n"
	legacySet := legacyNone + "circuitBreaker: {}\ntimeBudget: {}\n"
	loadLegacy := func(entry string) *portcullisconfig.Configuration {
		file := filepath.Join(t.TempDir(), "admission.yaml")
		content := "apiVersion: apiserver.config.k8s.io/v1\nkind: AdmissionConfiguration\nplugins:\n"
		for _, r := range Replacements() {
			content += "- name: " + r.Name + "\n  configuration:\n" + indent(entry, "    ")
		}
		if err := os.WriteFile(file, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
		loaded, err := portcullisconfig.Load(file)
		if err != nil {
			t.Fatal(err)
		}
		return loaded
	}
	configs := []struct {
		name, config string
		portcullis   *portcullisconfig.Configuration
		ours         bool
	}{
		{"none", "", nil, false},
		{"upstream's kind", upstreamKind, nil, false},
		{"a Portcullis entry without dispatch", upstreamKind, &portcullisconfig.Configuration{}, false},
		{"the Portcullis entry's example", upstreamKind, example, true},
		{"the example, no entry of its own", "", example, true},
		// The trace alone asks nothing of our dispatch: exactly stock unless asked.
		{"the admission trace alone", upstreamKind, traceAlone, false},
		{"a dispatch traced and nothing else", upstreamKind, traced, false},
		{"earlier releases' kind, no settings", legacyNone, loadLegacy(legacyNone), false},
		{"earlier releases' kind, breakers and budget", legacySet, loadLegacy(legacySet), true},
	}
	for _, r := range Replacements() {
		if !slices.Contains(stock.RecommendedPluginOrder, r.Name) || stock.DefaultOffPlugins.Has(r.Name) {
			t.Errorf("%s is not a default-on plugin of stock's order", r.Name)
		}
		if slices.Index(opts.RecommendedPluginOrder, r.Name) < 0 || opts.DefaultOffPlugins.Has(r.Name) {
			t.Errorf("%s lost its place or default in our order", r.Name)
		}
		for _, c := range configs {
			t.Run(r.Name+"/"+c.name, func(t *testing.T) {
				settings.Set(c.portcullis)
				defer settings.Set(nil)
				var reader io.Reader
				if c.config != "" {
					reader = strings.NewReader(c.config)
				}
				plugin, err := opts.Plugins.InitPlugin(r.Name, reader, fakeInitializers(t))
				if err != nil {
					t.Fatalf("building %s: %v", r.Name, err)
				}
				pkg := reflect.TypeOf(plugin).Elem().PkgPath()
				switch {
				case c.ours && !strings.HasPrefix(pkg, "github.com/portcullis-k8s/portcullis/"):
					t.Errorf("%s builds %s's plugin, want ours", r.Name, pkg)
				case !c.ours && !strings.HasPrefix(pkg, upstreamWebhookPackage):
					t.Errorf("%s builds %s's plugin, want upstream's own", r.Name, pkg)
				}
				_, mutates := plugin.(genericadmission.MutationInterface)
				_, validates := plugin.(genericadmission.ValidationInterface)
				if mutates != r.Phase.Mutates() || validates != r.Phase.Validates() {
					t.Errorf("%s implements mutating=%v validating=%v, want %q", r.Name, mutates, validates, r.Phase)
				}
			})
		}
	}
}

func TestReplaceRefusesWhatIsNotUpstreams(t *testing.T) {
	opts := kubeoptions.NewAdmissionOptions().GenericAdmission
	noop := func(*genericadmission.Plugins, func(io.Reader) (io.Reader, *portcullisapi.PortcullisConfiguration)) {}
	err := replace(opts, []Replacement{{Name: "NoSuchPlugin", Register: noop}}, &Settings{})
	if err == nil || !strings.Contains(err.Error(), "NoSuchPlugin") {
		t.Fatalf("replacing a plugin upstream does not have: %v, want an error naming it", err)
	}
	err = replace(opts, []Replacement{{Name: "LimitRanger", Register: noop}}, &Settings{})
	if err == nil || !strings.Contains(err.Error(), "LimitRanger") {
		t.Fatalf("replacing a plugin this registry registers itself: %v, want an error naming it", err)
	}
}

func indent(s, by string) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	for i := range lines {
		lines[i] = by + lines[i]
	}
	return strings.Join(lines, "\n") + "\n"
}
