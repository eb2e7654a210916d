package initialresources

import (
	"context"
	"errors"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	api "k8s.io/kubernetes/pkg/apis/core"
)

// historyQuery is one question asked of a usage history.
type historyQuery struct {
	resource  api.ResourceName
	image     string // the image's key
	exact     bool
	namespace string
	window    time.Duration
}

// fakeHistory answers from a table and records what it was asked.
type fakeHistory struct {
	mu      sync.Mutex
	samples map[historyQuery][]float64
	err     error
	// release, when set, holds every answer until it is closed.
	release chan struct{}
	asked   []historyQuery
}

func (f *fakeHistory) Samples(ctx context.Context, resource api.ResourceName, img image, exact bool, namespace string, window time.Duration) ([]float64, error) {
	q := historyQuery{resource, img.key, exact, namespace, window}
	f.mu.Lock()
	f.asked = append(f.asked, q)
	release, err, samples := f.release, f.err, f.samples[q]
	f.mu.Unlock()
	if release != nil {
		select {
		case <-release:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	return samples, err
}

func (f *fakeHistory) queries() []historyQuery {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.asked)
}

// ramp is n samples 1, 2, …, n: its 90th percentile is ceil(0.9n).
func ramp(n int) []float64 {
	s := make([]float64, n)
	for i := range s {
		s[i] = float64(i + 1)
	}
	return s
}

const (
	week  = 7 * 24 * time.Hour
	month = 30 * 24 * time.Hour
)

// TestTiers holds the estimate to 1.10's order of histories, its threshold and its rule
// that the last history tried decides when none has enough samples.
func TestTiers(t *testing.T) {
	img, _ := parseImage("nginx:1.25")
	cpu := api.ResourceCPU
	tagNS := func(w time.Duration) historyQuery { return historyQuery{cpu, img.key, true, "ns", w} }
	tagAll := func(w time.Duration) historyQuery { return historyQuery{cpu, img.key, true, "", w} }
	repoAll := historyQuery{cpu, img.key, false, "", month}
	repoNS := historyQuery{cpu, img.key, false, "ns", month}
	everyTier := []historyQuery{tagNS(week), tagNS(month), tagAll(week), tagAll(month), repoAll}
	tests := []struct {
		name          string
		samples       map[historyQuery][]float64
		namespaceOnly bool
		want          int64
		wantOK        bool
		wantAsked     []historyQuery
	}{
		{"the image in the namespace over a week is enough", map[historyQuery][]float64{tagNS(week): ramp(30), tagNS(month): ramp(1000)},
			false, 27, true, everyTier[:1]},
		{"then over a month", map[historyQuery][]float64{tagNS(week): ramp(29), tagNS(month): ramp(40)},
			false, 36, true, everyTier[:2]},
		{"then anywhere over a week", map[historyQuery][]float64{tagNS(month): ramp(10), tagAll(week): ramp(50)},
			false, 45, true, everyTier[:3]},
		{"then anywhere over a month", map[historyQuery][]float64{tagAll(month): ramp(100)},
			false, 90, true, everyTier[:4]},
		{"then the repository anywhere over a month", map[historyQuery][]float64{repoAll: ramp(200)},
			false, 180, true, everyTier},
		{"too few everywhere: the last history tried decides", map[historyQuery][]float64{tagNS(month): ramp(29), repoAll: ramp(10)},
			false, 9, true, everyTier},
		{"too few everywhere, none in the last: no estimate", map[historyQuery][]float64{tagNS(month): ramp(29)},
			false, 0, false, everyTier},
		{"nothing anywhere", nil, false, 0, false, everyTier},
		{"namespace only: the repository in the namespace", map[historyQuery][]float64{repoNS: ramp(30), repoAll: ramp(1000)},
			true, 27, true, []historyQuery{tagNS(week), tagNS(month), repoNS}},
		{"namespace only, enough in the namespace over a week", map[historyQuery][]float64{tagNS(week): ramp(30)},
			true, 27, true, []historyQuery{tagNS(week)}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			h := &fakeHistory{samples: tc.samples}
			tr := tiers{percentile: 90, threshold: 30, short: week, long: month, namespaceOnly: tc.namespaceOnly}
			got, ok, err := tr.estimate(context.Background(), h, cpu, img, "ns")
			if err != nil {
				t.Fatal(err)
			}
			if got != tc.want || ok != tc.wantOK {
				t.Errorf("estimate = %d, %t; want %d, %t", got, ok, tc.want, tc.wantOK)
			}
			if diff := cmp.Diff(tc.wantAsked, h.queries(), cmp.AllowUnexported(historyQuery{})); diff != "" {
				t.Errorf("histories asked (-want +got):\n%s", diff)
			}
		})
	}
}

func TestTiersStopAtAnError(t *testing.T) {
	img, _ := parseImage("nginx")
	h := &fakeHistory{err: errors.New("down")}
	tr := tiers{percentile: 90, threshold: 30, short: week, long: month}
	if _, ok, err := tr.estimate(context.Background(), h, api.ResourceMemory, img, "ns"); err == nil || ok {
		t.Errorf("estimate = %t, %v; want the source's error", ok, err)
	}
	if n := len(h.queries()); n != 1 {
		t.Errorf("%d histories asked after an error, want 1", n)
	}
}

func TestPercentile(t *testing.T) {
	tests := []struct {
		samples []float64
		p       int32
		want    int64
	}{
		{ramp(100), 90, 90},
		{ramp(100), 100, 100},
		{ramp(100), 1, 1},
		{[]float64{5}, 90, 5},
		{[]float64{2, 1}, 50, 1},
		{[]float64{0.2, 1.2, 0.4}, 90, 2}, // rounded up to a whole millicore or byte
		{[]float64{3, 1, 2, 10}, 75, 3},
	}
	for _, tc := range tests {
		if got := percentile(tc.samples, tc.p); got != tc.want {
			t.Errorf("percentile(%v, %d) = %d, want %d", tc.samples, tc.p, got, tc.want)
		}
	}
}
