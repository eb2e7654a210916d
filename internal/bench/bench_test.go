package bench

import (
	"context"
	"errors"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/fake"
	clienttesting "k8s.io/client-go/testing"
)

func TestPercentile(t *testing.T) {
	ms := func(v ...int) []time.Duration {
		out := make([]time.Duration, len(v))
		for i, x := range v {
			out[i] = time.Duration(x) * time.Millisecond
		}
		return out
	}
	// Recorded out of order: Latencies sorts them.
	l := newLatencies(ms(10, 1, 9, 2, 8, 3, 7, 4, 6, 5))
	for _, tc := range []struct {
		p    float64
		want time.Duration
	}{
		{50, 5 * time.Millisecond},
		{99, 10 * time.Millisecond},
		{100, 10 * time.Millisecond},
		{10, 1 * time.Millisecond},
		{11, 2 * time.Millisecond},
		{0, 0},
	} {
		if got := l.Percentile(tc.p); got != tc.want {
			t.Errorf("p%v = %s, want %s", tc.p, got, tc.want)
		}
	}
	if got := newLatencies(nil).Percentile(50); got != 0 {
		t.Errorf("p50 of nothing = %s, want 0", got)
	}
	// 99th of 200: rank 198, so the two largest samples do not count.
	many := make([]int, 200)
	for i := range many {
		many[i] = i + 1
	}
	if got := newLatencies(ms(many...)).Percentile(99); got != 198*time.Millisecond {
		t.Errorf("p99 of 1..200 ms = %s, want 198ms", got)
	}
}

func TestSummarize(t *testing.T) {
	for _, tc := range []struct {
		in   []float64
		want Summary
	}{
		{nil, Summary{}},
		{[]float64{3}, Summary{Median: 3, Min: 3, Max: 3, N: 1}},
		{[]float64{5, 1, 3}, Summary{Median: 3, Min: 1, Max: 5, N: 3}},
		{[]float64{4, 1, 2, 3}, Summary{Median: 2.5, Min: 1, Max: 4, N: 4}},
	} {
		if got := summarize(tc.in); got != tc.want {
			t.Errorf("summarize(%v) = %+v, want %+v", tc.in, got, tc.want)
		}
	}
	in := []float64{3, 1, 2}
	summarize(in)
	if !slices.Equal(in, []float64{3, 1, 2}) {
		t.Errorf("summarize reordered its input: %v", in)
	}
}

func TestPairedRatios(t *testing.T) {
	got, err := pairedRatios([]float64{2, 3}, []float64{1, 2})
	if err != nil || !slices.Equal(got, []float64{2, 1.5}) {
		t.Errorf("got %v, %v", got, err)
	}
	if _, err := pairedRatios([]float64{1}, []float64{1, 2}); err == nil {
		t.Error("runs of different counts were paired")
	}
	if _, err := pairedRatios([]float64{1}, []float64{0}); err == nil {
		t.Error("a ratio over zero was reported")
	}
}

func TestParseVmRSS(t *testing.T) {
	got, err := parseVmRSS(strings.NewReader("Name:\tx\nVmPeak:\t  9 kB\nVmRSS:\t  2048 kB\n"), "status")
	if err != nil || got != 2048*1024 {
		t.Errorf("got %d, %v; want %d", got, err, 2048*1024)
	}
	for _, bad := range []string{"Name:\tx\n", "VmRSS:\t12 MB\n", "VmRSS:\tmany kB\n"} {
		if _, err := parseVmRSS(strings.NewReader(bad), "status"); err == nil {
			t.Errorf("%q parsed without error", bad)
		}
	}
}

const sampleBenchOutput = `goos: linux
goarch: amd64
pkg: example.com/p/exec
cpu: AMD EPYC
BenchmarkDecide/A/checked-typical-pod-2         	    2000	         5.789 ns/op	       0 B/op	       0 allocs/op
BenchmarkIgnored/B/ignored-proxy-2   	    2000	        15.40 ns/op	       0 B/op	       0 allocs/op
BenchmarkDecide/A/checked-typical-pod-2         	    2000	         6.5 ns/op	       0 B/op	       0 allocs/op
PASS
ok  	example.com/p/exec	0.411s
pkg: example.com/p/preset
BenchmarkAdmit/checked-apply/presets=1000-2  	    2000	     78566 ns/op	   21104 B/op	      22 allocs/op
BenchmarkAdmit/pod-deep-copy-alone-2         	      10	      2828 ns/op	    1616 B/op	       5 allocs/op
PASS
`

func TestParseBenchmarks(t *testing.T) {
	byPackage := map[string][]string{"example.com/p/exec": {"A", "B"}, "example.com/p/preset": {"P"}}
	got, err := parseBenchmarks(strings.NewReader(sampleBenchOutput), byPackage, 2)
	if err != nil {
		t.Fatal(err)
	}
	want := []PluginBenchmark{
		{Plugins: []string{"A"}, Package: "example.com/p/exec", Name: "BenchmarkDecide/A/checked-typical-pod", Case: CaseChecked,
			NsPerOp: []float64{5.789, 6.5}, BytesPerOp: []float64{0, 0}, AllocsPerOp: []float64{0, 0}},
		{Plugins: []string{"B"}, Package: "example.com/p/exec", Name: "BenchmarkIgnored/B/ignored-proxy", Case: CaseIgnored,
			NsPerOp: []float64{15.4}, BytesPerOp: []float64{0}, AllocsPerOp: []float64{0}},
		{Plugins: []string{"P"}, Package: "example.com/p/preset", Name: "BenchmarkAdmit/checked-apply/presets=1000", Case: CaseChecked,
			NsPerOp: []float64{78566}, BytesPerOp: []float64{21104}, AllocsPerOp: []float64{22}},
		{Plugins: []string{"P"}, Package: "example.com/p/preset", Name: "BenchmarkAdmit/pod-deep-copy-alone", Case: CaseOther,
			NsPerOp: []float64{2828}, BytesPerOp: []float64{1616}, AllocsPerOp: []float64{5}},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("parsed benchmarks (-want +got):\n%s", diff)
	}

	// A benchmark of a multi-plugin package that names none measures them all.
	got, err = parseBenchmarks(strings.NewReader("pkg: example.com/p/exec\nBenchmarkShared/ignored-x-2 10 1 ns/op 0 B/op 0 allocs/op\n"), byPackage, 2)
	if err != nil || len(got) != 1 || !slices.Equal(got[0].Plugins, []string{"A", "B"}) {
		t.Errorf("got %+v, %v; want the benchmark attributed to A and B", got, err)
	}

	for name, bad := range map[string]string{
		"no -benchmem":     "pkg: x\nBenchmarkX-2 10 1 ns/op\n",
		"no package":       "BenchmarkX-2 10 1 ns/op 0 B/op 0 allocs/op\n",
		"a value that NaN": "pkg: x\nBenchmarkX-2 10 fast ns/op 0 B/op 0 allocs/op\n",
	} {
		if _, err := parseBenchmarks(strings.NewReader(bad), byPackage, 2); err == nil {
			t.Errorf("%s: parsed without error", name)
		}
	}
}

func TestRegistryPackages(t *testing.T) {
	byPackage, names, err := registryPackages()
	if err != nil {
		t.Fatal(err)
	}
	if len(names) == 0 {
		t.Fatal("no plugins in the registry")
	}
	seen := 0
	for pkg, plugins := range byPackage {
		if !strings.HasPrefix(pkg, "github.com/portcullis-k8s/portcullis/plugin/") {
			t.Errorf("%v registered from %q, outside plugin/", plugins, pkg)
		}
		seen += len(plugins)
	}
	if seen != len(names) {
		t.Errorf("%d plugins mapped to packages, %d in the registry", seen, len(names))
	}
}

func TestPackageOfFunc(t *testing.T) {
	for symbol, want := range map[string]string{
		"example.com/a/b.Register":     "example.com/a/b",
		"example.com/a/b.(*T).m":       "example.com/a/b",
		"example.com/a/b.New.func1":    "example.com/a/b",
		"gopkg.in/yaml%2ev2.Unmarshal": "gopkg.in/yaml.v2",
	} {
		if got, err := packageOfFunc(symbol); err != nil || got != want {
			t.Errorf("packageOfFunc(%q) = %q, %v; want %q", symbol, got, err, want)
		}
	}
	if _, err := packageOfFunc("nodot"); err == nil {
		t.Error("a symbol without a package was accepted")
	}
}

func TestSecurityContextViolations(t *testing.T) {
	uid := int64(1)
	for _, tc := range []struct {
		name        string
		mutate      func(*corev1.Pod)
		subresource string
		want        []string
	}{
		{"the load's pod", func(*corev1.Pod) {}, "", nil},
		{"pod runAsUser", func(p *corev1.Pod) { p.Spec.SecurityContext.RunAsUser = &uid }, "",
			[]string{"pod.Spec.SecurityContext.RunAsUser is forbidden"}},
		{"init and second container", func(p *corev1.Pod) {
			p.Spec.InitContainers[0].SecurityContext.RunAsUser = &uid
			p.Spec.Containers[1].SecurityContext.SELinuxOptions = &corev1.SELinuxOptions{}
		}, "", []string{"spec.initContainers[0].securityContext.runAsUser is forbidden", "spec.containers[1].securityContext.seLinuxOptions is forbidden"}},
		{"ephemeral containers are checked on their subresource only", func(p *corev1.Pod) {
			p.Spec.SecurityContext.RunAsUser = &uid
			p.Spec.EphemeralContainers = []corev1.EphemeralContainer{{EphemeralContainerCommon: corev1.EphemeralContainerCommon{
				Name: "debug", SecurityContext: &corev1.SecurityContext{RunAsUser: &uid}}}}
		}, "ephemeralcontainers", []string{"spec.ephemeralContainers[0].securityContext.runAsUser is forbidden"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			pod := benchPod("p")
			tc.mutate(pod)
			if diff := cmp.Diff(tc.want, securityContextViolations(pod, tc.subresource)); diff != "" {
				t.Errorf("violations (-want +got):\n%s", diff)
			}
		})
	}
}

func TestEquivalenceCasesMatchTheWebhook(t *testing.T) {
	// The webhook implements the plugin's rule; every case must get its stated verdict from it.
	for _, c := range equivalenceCases() {
		var pod *corev1.Pod
		subresource := ""
		if c.ephemeral != nil {
			pod = benchPod(probeTargetName)
			pod.Spec.EphemeralContainers = append(pod.Spec.EphemeralContainers, *c.ephemeral)
			subresource = "ephemeralcontainers"
		} else {
			pod = c.pod
		}
		if refused := len(securityContextViolations(pod, subresource)) > 0; refused != c.refused {
			t.Errorf("%s: the webhook refuses it: %v, want %v", c.name, refused, c.refused)
		}
	}
}

func TestOptionsValidate(t *testing.T) {
	opts := DefaultOptions()
	opts.BinDir, opts.RepoRoot, opts.WorkDir = "bin", ".", "work"
	if err := opts.Validate(); err != nil {
		t.Fatalf("the default options with directories set are invalid: %v", err)
	}
	bad := opts
	bad.DropIn.Load.Creates = 0
	bad.FanOut.Webhooks = []int{0, maxWebhooksProbed + 1}
	bad.FanOut.Hold = 0
	bad.WorkDir = ""
	err := bad.Validate()
	if err == nil {
		t.Fatal("invalid options were accepted")
	}
	for _, want := range []string{"drop-in creates", "got 0", "got 65", "hold", "work dir"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("the error %q does not mention %q", err, want)
		}
	}
}

func TestDisturbance(t *testing.T) {
	before := cpuSample{busy: 100, total: 1000, own: 50, ok: true}
	after := cpuSample{busy: 700, total: 2000, own: 450, ok: true}
	// 600 ticks busy, 400 of them ours: 200 of 1000 went elsewhere.
	if d := disturbance("t", before, after); !d.Known || d.ForeignShare != 0.2 {
		t.Errorf("got %+v, want a known share of 0.2", d)
	}
	if d := disturbance("t", before, cpuSample{}); d.Known {
		t.Errorf("a failed sample gave %+v", d)
	}
	// Own time can outrun the machine's busy time by rounding: never a negative share.
	if d := disturbance("t", before, cpuSample{busy: 200, total: 2000, own: 300, ok: true}); d.ForeignShare != 0 {
		t.Errorf("got %+v, want a share of 0", d)
	}
}

func TestFormatting(t *testing.T) {
	for _, tc := range []struct{ got, want string }{
		{thousands(2000), "2,000"},
		{thousands(100), "100"},
		{thousands(1234567), "1,234,567"},
		{formatSeconds(Summary{Median: 0.0123, Min: 0.011, Max: 0.0131, N: 3}), "12.3 (11.0–13.1) ms"},
		{formatSeconds(Summary{Median: 2.5, Min: 2.5, Max: 2.5, N: 1}), "2.50 s"},
		{formatSignedSeconds(Summary{Median: -0.0002, Min: -0.002, Max: 0.001, N: 3}), "-0.20 (-2.00 to +1.00) ms"},
		{formatRatio(Summary{Median: 1.01, Min: 0.99, Max: 1.02, N: 5}), "1.010 (0.990–1.020)"},
		{withinTolerance(1.049), "yes"},
		{withinTolerance(0.94), "**no**"},
		{goalMet(CaseIgnored, 900, 0), "yes"},
		{goalMet(CaseIgnored, 900, 1), "**no**"},
		{goalMet(CaseChecked, 5001, 0), "**no**"},
		{goalMet(CaseOther, 1e9, 9), "—"},
	} {
		if tc.got != tc.want {
			t.Errorf("got %q, want %q", tc.got, tc.want)
		}
	}
}

func TestCreateLoad(t *testing.T) {
	client := fake.NewClientset()
	clients := []kubernetes.Interface{client, client, client}
	run, err := createLoad{clients: clients, namespace: "ns", namePrefix: "run", count: 10, timeout: time.Minute}.run(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if run.Creates != 10 || run.Clients != 3 || run.Latencies.Count() != 10 || run.Elapsed <= 0 {
		t.Errorf("got %d creates from %d clients, %d latencies, elapsed %s", run.Creates, run.Clients, run.Latencies.Count(), run.Elapsed)
	}
	pods, err := client.CoreV1().Pods("ns").List(context.Background(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(pods.Items) != 10 {
		t.Errorf("%d pods stored, want 10 distinct ones", len(pods.Items))
	}

	failing := fake.NewClientset()
	failing.PrependReactor("create", "pods", func(clienttesting.Action) (bool, runtime.Object, error) {
		return true, nil, errors.New("etcd is full")
	})
	_, err = createLoad{clients: []kubernetes.Interface{failing}, namespace: "ns", namePrefix: "run", count: 5, timeout: time.Minute}.run(context.Background())
	if err == nil || !strings.Contains(err.Error(), "etcd is full") || !strings.Contains(err.Error(), "ns/run-") {
		t.Errorf("got %v, want the first create's error naming the pod", err)
	}

	if _, err := (createLoad{namespace: "ns", count: 1, timeout: time.Minute}).run(context.Background()); err == nil {
		t.Error("a run without clients did not fail")
	}
}

func TestCaseGoalJudge(t *testing.T) {
	p := &PluginsResult{Benchmarks: []PluginBenchmark{
		{Package: "example.com/podpreset", Name: "BenchmarkAdmit/pod-deep-copy-alone", NsPerOp: []float64{1000, 1200, 1100}},
	}}
	beyondCopy := caseGoal{ns: 3000, beyond: "BenchmarkAdmit/pod-deep-copy-alone"}
	for _, tc := range []struct {
		name     string
		goal     caseGoal
		pkg      string
		median   float64
		wantGoal string
		wantMet  string
	}{
		{"within the goal beyond the copy", beyondCopy, "example.com/podpreset", 4000, "≤ 3 µs beyond `pod-deep-copy-alone`", "yes"},
		{"over the goal beyond the copy", beyondCopy, "example.com/podpreset", 4200, "≤ 3 µs beyond `pod-deep-copy-alone`", "**no**"},
		{"the baseline of another package does not count", beyondCopy, "example.com/other", 2000, "≤ 3 µs beyond `pod-deep-copy-alone`", "missing"},
		{"an absolute goal", caseGoal{ns: 15000}, "example.com/podpreset", 15000, "≤ 15 µs", "yes"},
		{"an absolute goal missed", caseGoal{ns: 200000}, "example.com/podpreset", 200001, "≤ 200 µs", "**no**"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			goal, met := tc.goal.judge(p, tc.pkg, tc.median)
			if goal != tc.wantGoal || met != tc.wantMet {
				t.Errorf("judge = %q, %q; want %q, %q", goal, met, tc.wantGoal, tc.wantMet)
			}
		})
	}
}

func TestStatCPUTicks(t *testing.T) {
	// A command name with spaces and a parenthesis, then fields 3 to 17: utime=11, stime=22,
	// cutime=33, cstime=44.
	stat := "1234 (kube (api) server) S 1 1234 1234 0 -1 4194560 100 0 0 0 11 22 33 44 20 0 12 0 5 6 7"
	for _, tc := range []struct {
		children bool
		want     uint64
	}{{false, 33}, {true, 110}} {
		got, err := statCPUTicks(stat, tc.children)
		if err != nil || got != tc.want {
			t.Errorf("children %t: got %d, %v; want %d", tc.children, got, err, tc.want)
		}
	}
	for _, bad := range []string{"", "1234 kube-apiserver S 1", "1 (x) S 1 2 3", "1 (x) S 1 1 1 0 -1 0 0 0 0 0 eleven 22 33 44"} {
		if _, err := statCPUTicks(bad, true); err == nil {
			t.Errorf("%q: want an error", bad)
		}
	}
	// The real file parses; a process that does not exist is an error, not zero.
	if _, err := processCPU(os.Getpid()); err != nil {
		t.Errorf("this process's CPU time: %v", err)
	}
	if _, err := processCPU(-1); err == nil {
		t.Error("pid -1: want an error")
	}
}

func TestRatioGoal(t *testing.T) {
	for _, tc := range []struct {
		goal        ratioGoal
		ratio       Summary
		text, judge string
	}{
		{ratioGoal{at: 0.92, most: true}, single(0.91), "≤ 0.92", "yes"},
		{ratioGoal{at: 0.92, most: true}, single(0.93), "≤ 0.92", "**no**"},
		{ratioGoal{at: 1.05}, single(1.05), "≥ 1.05", "yes"},
		{ratioGoal{at: 1.05}, single(1.01), "≥ 1.05", "**no**"},
		{within5, single(1.06), "within 5%", "**no**"},
		{within5, single(0.96), "within 5%", "yes"},
		{noiseGoal, Summary{Median: 0.9, Min: 0.85, Max: 1.02}, "within noise (range straddles 1)", "yes"},
		{noiseGoal, Summary{Median: 0.9, Min: 0.85, Max: 0.98}, "within noise (range straddles 1)", "**no**"},
		{noiseGoal, Summary{Median: 1.1, Min: 1.01, Max: 1.2}, "within noise (range straddles 1)", "**no**"},
		{ratioGoal{}, single(3), "—", "—"},
	} {
		if got := tc.goal.String(); got != tc.text {
			t.Errorf("%+v: text %q, want %q", tc.goal, got, tc.text)
		}
		if got := tc.goal.met(tc.ratio); got != tc.judge {
			t.Errorf("%+v at %v: %q, want %q", tc.goal, tc.ratio, got, tc.judge)
		}
	}
}

func TestSpentTime(t *testing.T) {
	at := func(ms int) time.Time { return time.Unix(0, 0).Add(time.Duration(ms) * time.Millisecond) }
	call := func(from, to int) Interval { return Interval{Start: at(from), End: at(to)} }
	for _, tc := range []struct {
		name  string
		calls []Interval
		want  time.Duration
	}{
		{"none", nil, 0},
		{"one after another: the sum", []Interval{call(0, 2), call(5, 6), call(3, 4)}, 4 * time.Millisecond},
		{"in parallel: the union", []Interval{call(0, 4), call(1, 3), call(2, 6)}, 6 * time.Millisecond},
		{"overlapping and apart", []Interval{call(10, 12), call(0, 3), call(2, 5)}, 7 * time.Millisecond},
		{"touching", []Interval{call(0, 2), call(2, 3)}, 3 * time.Millisecond},
	} {
		if got := (Spent{Calls: tc.calls}).Time(); got != tc.want {
			t.Errorf("%s: %s, want %s", tc.name, got, tc.want)
		}
	}
}
