package initialresources

import (
	"bytes"
	"fmt"
	"net/url"
	"strings"
	"testing"
	"time"
	"unicode"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	api "k8s.io/kubernetes/pkg/apis/core"
	corev1defaults "k8s.io/kubernetes/pkg/apis/core/v1"
	"k8s.io/kubernetes/plugin/pkg/admission/limitranger"

	portcullisapi "github.com/portcullis-k8s/portcullis/pkg/apis/admission"
)

// Seeds are the tests' inputs; crashers Go finds are kept under testdata/fuzz/<target>.

// FuzzLoadConfiguration loads the plugin's configuration from the admission config file:
// an error names the plugin; a configuration loaded is valid, and a plugin can be built
// from it (which reads no file the configuration does not name).
func FuzzLoadConfiguration(f *testing.F) {
	const header = "apiVersion: admission.portcullis.io/v1alpha1\nkind: InitialResourcesConfiguration\n"
	for _, seed := range []string{
		"",
		ExampleConfig,
		header + "prometheus:\n  url: http://prometheus:9090\n  step: 1h\n  cpuRateWindow: 2h\n",
		header + "sources: [Prometheus, VerticalPodAutoscaler]\nprometheus:\n  url: https://p/prefix\n  maxPointsPerSeries: 5\n",
		header + "percentile: 101\n",
		header + "missWait: 0s\nnamespaceOnly: true\nfitLimitRanges: true\n",
		header + "shortWindow: 1h\nlongWindow: 1m\n",
		header + "verticalPodAutoscaler:\n  recommendation: uncappedTarget\n",
		header + "prometheus:\n  url: http://p\n  imageLabel: \"\"\n  cpuMetric: \"a b\"\n",
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		cfg, err := LoadConfiguration(bytes.NewReader(data))
		if err != nil {
			if !strings.HasPrefix(err.Error(), PluginName+": ") {
				t.Errorf("the error does not name the plugin: %v", err)
			}
			return
		}
		if err := loadedConfigurationHolds(cfg); err != nil {
			t.Fatalf("loaded, yet %v", err)
		}
		if cfg.Prometheus != nil && (cfg.Prometheus.CAFile != "" || cfg.Prometheus.BearerTokenFile != "") {
			return // the files are read by New
		}
		if _, err := New(cfg); err != nil {
			t.Errorf("New refused a valid configuration: %v", err)
		}
	})
}

// loadedConfigurationHolds checks, independently of pkg/apis/admission/validation, what
// every loaded configuration must be for the plugin to work: every setting present
// (defaulted), within the ranges the documentation states, and each name Prometheus will be
// sent one it accepts.
func loadedConfigurationHolds(cfg *portcullisapi.InitialResourcesConfiguration) error {
	if len(cfg.Sources) == 0 || cfg.Percentile == nil || cfg.SamplesThreshold == nil || cfg.ShortWindow == nil ||
		cfg.LongWindow == nil || cfg.CacheTTL == nil || cfg.MissWait == nil || cfg.VerticalPodAutoscaler == nil {
		return fmt.Errorf("a setting is not defaulted: %+v", cfg)
	}
	seen := map[portcullisapi.InitialResourcesSourceName]bool{}
	for _, s := range cfg.Sources {
		if seen[s] || (s != "Prometheus" && s != "VerticalPodAutoscaler") || (s == "Prometheus" && cfg.Prometheus == nil) {
			return fmt.Errorf("sources %v", cfg.Sources)
		}
		seen[s] = true
	}
	switch {
	case *cfg.Percentile < 1 || *cfg.Percentile > 100:
		return fmt.Errorf("percentile %d", *cfg.Percentile)
	case *cfg.SamplesThreshold < 1:
		return fmt.Errorf("samplesThreshold %d", *cfg.SamplesThreshold)
	case cfg.ShortWindow.Duration <= 0 || cfg.LongWindow.Duration < cfg.ShortWindow.Duration:
		return fmt.Errorf("windows %s, %s", cfg.ShortWindow.Duration, cfg.LongWindow.Duration)
	case cfg.CacheTTL.Duration <= 0:
		return fmt.Errorf("cacheTTL %s", cfg.CacheTTL.Duration)
	case cfg.MissWait.Duration < 0 || cfg.MissWait.Duration > 5*time.Second:
		return fmt.Errorf("missWait %s", cfg.MissWait.Duration)
	case cfg.VerticalPodAutoscaler.Recommendation != "target" && cfg.VerticalPodAutoscaler.Recommendation != "uncappedTarget":
		return fmt.Errorf("recommendation %q", cfg.VerticalPodAutoscaler.Recommendation)
	}
	p := cfg.Prometheus
	if p == nil {
		return nil
	}
	if u, err := url.Parse(p.URL); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return fmt.Errorf("prometheus.url %q", p.URL)
	}
	if p.Timeout == nil || p.Step == nil || p.CPURateWindow == nil || p.MaxPointsPerSeries == nil {
		return fmt.Errorf("a prometheus setting is not defaulted: %+v", p)
	}
	switch {
	case p.Timeout.Duration <= 0 || p.CPURateWindow.Duration <= 0:
		return fmt.Errorf("prometheus timeout %s, cpuRateWindow %s", p.Timeout.Duration, p.CPURateWindow.Duration)
	case p.Step.Duration <= 0 || p.Step.Duration > cfg.ShortWindow.Duration:
		return fmt.Errorf("prometheus.step %s", p.Step.Duration)
	case *p.MaxPointsPerSeries < 1 || *p.MaxPointsPerSeries > 11000:
		return fmt.Errorf("prometheus.maxPointsPerSeries %d", *p.MaxPointsPerSeries)
	}
	for _, name := range []string{p.CPUMetric, p.MemoryMetric, p.ImageLabel, p.NamespaceLabel, p.ContainerLabel} {
		if !promName(name) {
			return fmt.Errorf("%q is no Prometheus name", name)
		}
	}
	for _, label := range []string{p.ImageLabel, p.NamespaceLabel, p.ContainerLabel} {
		if strings.Contains(label, ":") {
			return fmt.Errorf("label %q has a colon", label)
		}
	}
	for _, file := range []string{p.CAFile, p.BearerTokenFile} {
		if file != "" && !strings.HasPrefix(file, "/") {
			return fmt.Errorf("file %q is not absolute", file)
		}
	}
	return nil
}

// promName: ASCII letters, digits, '_' and ':', not starting with a digit.
func promName(s string) bool {
	if s == "" {
		return false
	}
	for i, r := range s {
		ok := r < unicode.MaxASCII && (unicode.IsLetter(r) || r == '_' || r == ':' || (i > 0 && unicode.IsDigit(r)))
		if !ok {
			return false
		}
	}
	return true
}

// FuzzFitLimitRanges: with fitLimitRanges, whatever the namespace's LimitRange and the
// estimate, Kubernetes' own LimitRanger (its defaulting then its validation, run here
// after the plugin as in the chain) admits the pod the plugin changed whenever it admits
// the pod unchanged; no request set is zero; and, checked by containerWindow, computed
// here from the LimitRange alone, the estimate is set, moved into the window the Container
// item allows, whenever that window is not empty (with no Pod item, whose check may leave it
// unset), and nothing is set outside it.
func FuzzFitLimitRanges(f *testing.F) {
	// milli-units (millicores); 0 leaves a field out. The pod: one container estimated,
	// one ("other") that sets a request and limit.
	for _, seed := range [][11]int64{
		{0, 0, 0, 0, 0, 0, 0, 0, 250, 0, 0},        // no LimitRange item
		{100, 2000, 0, 0, 0, 0, 0, 0, 50, 0, 0},    // min, max
		{0, 0, 1000, 0, 2000, 0, 0, 0, 50, 0, 0},   // default limit, ratio
		{0, 0, 1000, 0, 3000, 0, 0, 0, 50, 0, 0},   // a ratio that does not divide
		{0, 0, 500, 100, 10000, 0, 0, 0, 0, 0, 0},  // an idle image, a default request
		{0, 0, 0, 0, 0, 600, 100, 100, 512, 0, 0},  // a Pod max
		{2000, 0, 1000, 0, 0, 0, 0, 0, 5000, 0, 0}, // min above the default limit
		{0, 4000, 3000, 2000, 1500, 9000, 500, 700, 7, 0, 0},
		{0, 0, 1000, 500, 0, 0, 0, 0, 100, 250, 0},  // a Pod min
		{0, 0, 1000, 500, 0, 0, 0, 0, 100, 0, 2000}, // a Pod ratio
	} {
		f.Add(seed[0], seed[1], seed[2], seed[3], seed[4], seed[5], seed[6], seed[7], seed[8], seed[9], seed[10])
	}
	f.Fuzz(func(t *testing.T, minimum, maximum, def, defRequest, ratio, podMax, otherRequest, otherLimit, estimate, podMin, podRatio int64) {
		clamp := func(v int64) int64 { return min(max(v, 0), 1<<40) }
		q := func(m int64) resource.Quantity { return *resource.NewMilliQuantity(clamp(m), resource.DecimalSI) }
		list := func(m int64) corev1.ResourceList {
			if clamp(m) == 0 {
				return nil
			}
			return corev1.ResourceList{corev1.ResourceCPU: q(m)}
		}
		lr := &corev1.LimitRange{ObjectMeta: metav1.ObjectMeta{Name: "l", Namespace: "ns"}, Spec: corev1.LimitRangeSpec{Limits: []corev1.LimitRangeItem{
			{Type: corev1.LimitTypeContainer, Min: list(minimum), Max: list(maximum), Default: list(def), DefaultRequest: list(defRequest), MaxLimitRequestRatio: list(ratio)},
			{Type: corev1.LimitTypePod, Max: list(podMax), Min: list(podMin), MaxLimitRequestRatio: list(podRatio)},
		}}}
		corev1defaults.SetObjectDefaults_LimitRange(lr)
		newPod := func() *api.Pod {
			other := api.Container{Name: "other", Image: "busybox"}
			if clamp(otherRequest) > 0 && clamp(otherLimit) >= clamp(otherRequest) {
				other.Resources.Requests = api.ResourceList{api.ResourceCPU: q(otherRequest)}
				other.Resources.Limits = api.ResourceList{api.ResourceCPU: q(otherLimit)}
			}
			return &api.Pod{ObjectMeta: metav1.ObjectMeta{Name: "pod", Namespace: "ns"},
				Spec: api.PodSpec{Containers: []api.Container{{Name: "web", Image: "nginx"}, other}}}
		}
		limitRanger := func(pod *api.Pod) error {
			if err := limitranger.PodMutateLimitFunc(lr, pod); err != nil {
				return err
			}
			if err := limitranger.PodValidateLimitFunc(lr, pod); err != nil {
				return err
			}
			// The pod's own validation: a request at most its limit.
			for _, c := range pod.Spec.Containers {
				if r, ok := c.Resources.Requests[api.ResourceCPU]; ok {
					if l, ok := c.Resources.Limits[api.ResourceCPU]; ok && r.Cmp(l) > 0 {
						return fmt.Errorf("container %s: request %s above limit %s", c.Name, r.String(), l.String())
					}
				}
			}
			return nil
		}
		if limitRanger(newPod()) != nil {
			return // refused without the plugin: nothing to keep
		}
		w := newLimitWindows([]*corev1.LimitRange{lr})
		pod := newPod()
		n := needsOf(pod)[0]
		s := apply(n, "Prometheus", w, func(res api.ResourceName) (resource.Quantity, bool) {
			return q(estimate), res == api.ResourceCPU
		})
		w.keepAdmissible(pod, w.keepPodMax(pod, []set{s}))
		if r, ok := pod.Spec.Containers[0].Resources.Requests[api.ResourceCPU]; ok && r.Sign() <= 0 {
			t.Fatalf("a request of %s was set", r.String())
		}
		set, isSet := pod.Spec.Containers[0].Resources.Requests[api.ResourceCPU]
		if err := limitRanger(pod); err != nil {
			t.Fatalf("LimitRanger admits the pod unchanged, and refuses it with the request %s set from %dm: %v", set.String(), estimate, err)
		}
		// The estimate is kept whenever it can be: the window the Container item allows,
		// computed here from the LimitRange alone, decides what is set.
		lower, upper, open := containerWindow(lr)
		podItems := clamp(podMax) > 0 || clamp(podMin) > 0 || clamp(podRatio) > 0
		switch {
		case isSet && (set.MilliValue() < lower || (upper >= 0 && set.MilliValue() > upper)):
			t.Fatalf("set %s, outside the window [%dm, %dm] the LimitRange allows", set.String(), lower, upper)
		case podItems:
			// The Pod item check is conservative: it may leave a request unset.
		case clamp(estimate) == 0 || !open:
			if isSet {
				t.Fatalf("set %s from an estimate of %dm (window [%dm, %dm]), want nothing set", set.String(), estimate, lower, upper)
			}
		default:
			want := max(clamp(estimate), lower)
			if upper >= 0 {
				want = min(want, upper)
			}
			if !isSet || set.MilliValue() != want {
				t.Fatalf("set %v (%v) from an estimate of %dm, want %dm: the window is [%dm, %dm]", set.String(), isSet, estimate, want, lower, upper)
			}
		}
	})
}

// containerWindow is the CPU request, in millicores, that a container setting neither request
// nor limit may have under lr's Container items, as LimitRanger judges it: at least min and
// at least default ÷ maxLimitRequestRatio (rounded up), and 1m; at most max and default (the
// limit LimitRanger gives it). upper is -1 when unbounded; open is false when the window is
// empty.
func containerWindow(lr *corev1.LimitRange) (lower, upper int64, open bool) {
	lower, upper = 1, -1
	atMost := func(v int64) {
		if upper < 0 || v < upper {
			upper = v
		}
	}
	for _, item := range lr.Spec.Limits {
		if item.Type != corev1.LimitTypeContainer {
			continue
		}
		if m, ok := item.Min[corev1.ResourceCPU]; ok {
			lower = max(lower, m.MilliValue())
		}
		if m, ok := item.Max[corev1.ResourceCPU]; ok {
			atMost(m.MilliValue())
		}
		if d, ok := item.Default[corev1.ResourceCPU]; ok {
			atMost(d.MilliValue())
			if r, ok := item.MaxLimitRequestRatio[corev1.ResourceCPU]; ok && r.MilliValue() > 0 {
				// default (m) ÷ ratio (m / 1000), rounded up; the fuzz clamps values to 2^40m,
				// so the product fits an int64.
				lower = max(lower, (d.MilliValue()*1000+r.MilliValue()-1)/r.MilliValue())
			}
		}
	}
	return lower, upper, upper < 0 || lower <= upper
}
