package initialresources

import (
	"context"
	"encoding/pem"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	api "k8s.io/kubernetes/pkg/apis/core"

	portcullisapi "github.com/portcullis-k8s/portcullis/pkg/apis/admission"
)

// rangeQuery is one /api/v1/query_range request as the fake server read it.
type rangeQuery struct {
	query            string
	start, end, step int64
	authorization    string
}

// fakePrometheus answers range queries with one series whose value at every point is
// value, and records the queries.
type fakePrometheus struct {
	mu      sync.Mutex
	queries []rangeQuery
	value   string
	status  int    // non-zero: answer this status with Prometheus's error body
	errText string // the error body's message
}

func (f *fakePrometheus) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.URL.Path != "/prefix/api/v1/query_range" || r.Method != http.MethodPost {
		http.Error(w, "not the range API", http.StatusNotFound)
		return
	}
	if err := r.ParseForm(); err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	num := func(k string) int64 { v, _ := strconv.ParseFloat(r.PostForm.Get(k), 64); return int64(v) }
	q := rangeQuery{r.PostForm.Get("query"), num("start"), num("end"), num("step"), r.Header.Get("Authorization")}
	f.mu.Lock()
	f.queries = append(f.queries, q)
	f.mu.Unlock()
	w.Header().Set("Content-Type", "application/json")
	if f.status != 0 {
		w.WriteHeader(f.status)
		fmt.Fprintf(w, `{"status":"error","errorType":"bad_data","error":%q}`, f.errText)
		return
	}
	var points []string
	for ts := q.start; ts <= q.end; ts += q.step {
		points = append(points, fmt.Sprintf(`[%d,%q]`, ts, f.value))
	}
	fmt.Fprintf(w, `{"status":"success","data":{"resultType":"matrix","result":[{"metric":{"image":"x"},"values":[%s]}]}}`, strings.Join(points, ","))
}

func (f *fakePrometheus) recorded() []rangeQuery {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]rangeQuery(nil), f.queries...)
}

func prometheusConfig(t testing.TB, url string, mutate func(*portcullisapi.InitialResourcesPrometheus)) *portcullisapi.InitialResourcesPrometheus {
	t.Helper()
	cfg := &portcullisapi.InitialResourcesConfiguration{Prometheus: &portcullisapi.InitialResourcesPrometheus{URL: url}}
	setDefaults(t, cfg)
	if mutate != nil {
		mutate(cfg.Prometheus)
	}
	return cfg.Prometheus
}

var fixedNow = time.Date(2026, 11, 1, 12, 0, 0, 0, time.UTC)

func TestPrometheusQueries(t *testing.T) {
	img, _ := parseImage("registry.local:5000/app:v1.2")
	tests := []struct {
		name      string
		resource  api.ResourceName
		exact     bool
		namespace string
		want      string
	}{
		{"cpu, this image, in a namespace", api.ResourceCPU, true, "team-a",
			`rate(container_cpu_usage_seconds_total{image=~"registry\\.local:5000/app:v1\\.2",container!="",container!="POD",namespace="team-a"}[2m])`},
		{"memory, this image, anywhere", api.ResourceMemory, true, "",
			`container_memory_working_set_bytes{image=~"registry\\.local:5000/app:v1\\.2",container!="",container!="POD"}`},
		{"memory, any tag of the repository", api.ResourceMemory, false, "",
			`container_memory_working_set_bytes{image=~"(registry\\.local:5000/app)([:@].*)?",container!="",container!="POD"}`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			fake := &fakePrometheus{value: "0.25"}
			server := httptest.NewServer(fake)
			defer server.Close()
			p, err := newPrometheus(prometheusConfig(t, server.URL+"/prefix", nil))
			if err != nil {
				t.Fatal(err)
			}
			p.now = func() time.Time { return fixedNow }
			samples, err := p.Samples(context.Background(), tc.resource, img, tc.exact, tc.namespace, week)
			if err != nil {
				t.Fatal(err)
			}
			queries := fake.recorded()
			if len(queries) != 1 || queries[0].query != tc.want {
				t.Fatalf("queries %+v, want one: %s", queries, tc.want)
			}
			q := queries[0]
			if q.end != fixedNow.Unix() || q.start != fixedNow.Add(-week).Unix() || q.step != 300 {
				t.Errorf("range %d..%d step %d, want the week before %d in 5m steps", q.start, q.end, q.step, fixedNow.Unix())
			}
			wantValue := 0.25
			if tc.resource == api.ResourceCPU {
				wantValue = 250 // cores to millicores
			}
			if len(samples) != int(week/(5*time.Minute))+1 || samples[0] != wantValue {
				t.Errorf("%d samples, first %v; want %d of %v", len(samples), samples[0], int(week/(5*time.Minute))+1, wantValue)
			}
		})
	}
}

// TestPrometheusChunksLongWindows: a window with more points than the server allows per
// series is read in several queries that cover every step once.
func TestPrometheusChunksLongWindows(t *testing.T) {
	fake := &fakePrometheus{value: "1"}
	server := httptest.NewServer(fake)
	defer server.Close()
	p, err := newPrometheus(prometheusConfig(t, server.URL+"/prefix", func(c *portcullisapi.InitialResourcesPrometheus) {
		maxPoints := int32(1000)
		c.MaxPointsPerSeries = &maxPoints
	}))
	if err != nil {
		t.Fatal(err)
	}
	p.now = func() time.Time { return fixedNow }
	img, _ := parseImage("nginx")
	samples, err := p.Samples(context.Background(), api.ResourceMemory, img, true, "", month)
	if err != nil {
		t.Fatal(err)
	}
	const step = 300
	points := int(month/time.Second)/step + 1 // 8641
	if len(samples) != points {
		t.Errorf("%d samples, want %d: every step of the month once", len(samples), points)
	}
	queries := fake.recorded()
	if len(queries) != 9 {
		t.Errorf("%d queries, want 9 of at most 1000 points", len(queries))
	}
	next := fixedNow.Add(-month).Unix()
	for _, q := range queries {
		if n := (q.end-q.start)/step + 1; n > 1000 {
			t.Errorf("a query of %d points", n)
		}
		if q.start != next {
			t.Errorf("a query starts at %d, want %d (no gap, no overlap)", q.start, next)
		}
		next = q.end + step
	}
	if next != fixedNow.Unix()+step {
		t.Errorf("the queries end at %d, want %d", next-step, fixedNow.Unix())
	}
}

func TestPrometheusErrors(t *testing.T) {
	img, _ := parseImage("nginx")
	t.Run("the server's refusal is in the error", func(t *testing.T) {
		fake := &fakePrometheus{status: http.StatusUnprocessableEntity, errText: "query processing would load too many samples"}
		server := httptest.NewServer(fake)
		defer server.Close()
		p, err := newPrometheus(prometheusConfig(t, server.URL+"/prefix", nil))
		if err != nil {
			t.Fatal(err)
		}
		_, err = p.Samples(context.Background(), api.ResourceCPU, img, true, "", week)
		if err == nil || !strings.Contains(err.Error(), "too many samples") || !strings.Contains(err.Error(), "422") {
			t.Errorf("error %v, want Prometheus's message and status", err)
		}
	})
	t.Run("not Prometheus", func(t *testing.T) {
		server := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { _, _ = w.Write([]byte("<html>login</html>")) }))
		defer server.Close()
		p, err := newPrometheus(prometheusConfig(t, server.URL, nil))
		if err != nil {
			t.Fatal(err)
		}
		if _, err := p.Samples(context.Background(), api.ResourceCPU, img, true, "", week); err == nil || !strings.Contains(err.Error(), "not its API's JSON") {
			t.Errorf("error %v, want one saying the answer is not Prometheus's", err)
		}
	})
	t.Run("down", func(t *testing.T) {
		server := httptest.NewServer(http.NotFoundHandler())
		url := server.URL
		server.Close()
		p, err := newPrometheus(prometheusConfig(t, url, nil))
		if err != nil {
			t.Fatal(err)
		}
		if _, err := p.Samples(context.Background(), api.ResourceCPU, img, true, "", week); err == nil || !strings.Contains(err.Error(), url) {
			t.Errorf("error %v, want one naming the server", err)
		}
	})
}

// TestPrometheusTLSAndToken: an https server verified with caFile, and the token file sent as
// a bearer token, read again at each query.
func TestPrometheusTLSAndToken(t *testing.T) {
	fake := &fakePrometheus{value: "1"}
	server := httptest.NewTLSServer(fake)
	defer server.Close()
	dir := t.TempDir()
	caFile, tokenFile := filepath.Join(dir, "ca.crt"), filepath.Join(dir, "token")
	if err := os.WriteFile(caFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: server.Certificate().Raw}), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(tokenFile, []byte("first\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	p, err := newPrometheus(prometheusConfig(t, server.URL+"/prefix", func(c *portcullisapi.InitialResourcesPrometheus) {
		c.CAFile, c.BearerTokenFile = caFile, tokenFile
		c.Step = &metav1.Duration{Duration: time.Hour}
	}))
	if err != nil {
		t.Fatal(err)
	}
	img, _ := parseImage("nginx")
	for _, token := range []string{"first", "rotated"} {
		if err := os.WriteFile(tokenFile, []byte(token+"\n"), 0o600); err != nil {
			t.Fatal(err)
		}
		if _, err := p.Samples(context.Background(), api.ResourceCPU, img, true, "", week); err != nil {
			t.Fatal(err)
		}
		queries := fake.recorded()
		if got := queries[len(queries)-1].authorization; got != "Bearer "+token {
			t.Errorf("Authorization %q, want the token file's %q", got, token)
		}
	}
	if _, err := newPrometheus(prometheusConfig(t, server.URL, func(c *portcullisapi.InitialResourcesPrometheus) { c.CAFile = tokenFile })); err == nil ||
		!strings.Contains(err.Error(), "prometheus.caFile") {
		t.Errorf("a CA file without a certificate: %v, want an error naming prometheus.caFile", err)
	}
	if _, err := newPrometheus(prometheusConfig(t, server.URL, func(c *portcullisapi.InitialResourcesPrometheus) { c.BearerTokenFile = filepath.Join(dir, "none") })); err == nil ||
		!strings.Contains(err.Error(), "prometheus.bearerTokenFile") {
		t.Errorf("a missing token file: %v, want an error naming prometheus.bearerTokenFile", err)
	}
}

// TestPrometheusDecoding: the answer is decoded as it is read, whatever the order of its
// members, skipping what the plugin does not read; values that are not numbers and answers
// that are not a matrix are errors.
func TestPrometheusDecoding(t *testing.T) {
	img, _ := parseImage("nginx")
	tests := []struct {
		name    string
		body    string
		want    []float64
		wantErr string
	}{
		{name: "members in any order, unknown ones skipped",
			body: `{"data":{"result":[{"values":[[1,"1"],[2,"2.5"]],"metric":{"image":"nginx","deep":[{"a":[1,{"b":null}]}]}},` +
				`{"metric":{},"values":[[3,"3"]],"histograms":[[1,{"count":"1"}]]}],"resultType":"matrix"},"warnings":["w"],"status":"success"}`,
			want: []float64{1, 2.5, 3}},
		{name: "NaN, infinities and negatives are left out", body: `{"status":"success","data":{"resultType":"matrix","result":[{"values":[[1,"NaN"],[2,"+Inf"],[3,"-1"],[4,"4"]]}]}}`,
			want: []float64{4}},
		{name: "no series", body: `{"status":"success","data":{"resultType":"matrix","result":[]}}`},
		{name: "a value that is not a number", body: `{"status":"success","data":{"resultType":"matrix","result":[{"values":[[1,"x"]]}]}}`, wantErr: `"x"`},
		{name: "a value that is not a string", body: `{"status":"success","data":{"resultType":"matrix","result":[{"values":[[1,2]]}]}}`, wantErr: "not a string"},
		{name: "a vector", body: `{"status":"success","data":{"resultType":"vector","result":[{"value":[1,"1"]}]}}`, wantErr: `"vector"`},
		{name: "truncated", body: `{"status":"success","data":{"resultType":"matrix","result":[{"values":[[1,"1"]`, wantErr: "not its API's JSON"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			server := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { _, _ = w.Write([]byte(tc.body)) }))
			defer server.Close()
			p, err := newPrometheus(prometheusConfig(t, server.URL, func(c *portcullisapi.InitialResourcesPrometheus) {
				c.Step = &metav1.Duration{Duration: 24 * time.Hour} // one query for the week
			}))
			if err != nil {
				t.Fatal(err)
			}
			got, err := p.Samples(context.Background(), api.ResourceMemory, img, true, "", week)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("error %v, want one containing %s", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(got, tc.want) {
				t.Errorf("samples %v, want %v", got, tc.want)
			}
		})
	}
}

// TestPrometheusKeepsABoundedSample: a history of more samples than the plugin keeps is a
// uniform sample of them, of the bound's size, whose percentile is the history's within a
// percentile.
func TestPrometheusKeepsABoundedSample(t *testing.T) {
	const series, keep = 40, 1000
	// Every series has 2,017 points (a week at 5m): values 0..80,679 over all of them.
	server := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if err := r.ParseForm(); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		fmt.Fprint(w, `{"status":"success","data":{"resultType":"matrix","result":[`)
		points := int(week/(5*time.Minute)) + 1
		for s := range series {
			if s > 0 {
				fmt.Fprint(w, ",")
			}
			fmt.Fprint(w, `{"metric":{},"values":[`)
			for i := range points {
				if i > 0 {
					fmt.Fprint(w, ",")
				}
				fmt.Fprintf(w, `[%d,"%d"]`, i, s*points+i)
			}
			fmt.Fprint(w, `]}`)
		}
		fmt.Fprint(w, `]}}`)
	}))
	defer server.Close()
	p, err := newPrometheus(prometheusConfig(t, server.URL, nil))
	if err != nil {
		t.Fatal(err)
	}
	p.maxSamples = keep
	img, _ := parseImage("nginx")
	samples, err := p.Samples(context.Background(), api.ResourceMemory, img, true, "", week)
	if err != nil {
		t.Fatal(err)
	}
	if len(samples) != keep {
		t.Fatalf("%d samples kept, want %d", len(samples), keep)
	}
	total := series * (int(week/(5*time.Minute)) + 1)
	got, want := percentile(samples, 90), int64(0.9*float64(total))
	if diff := got - want; diff < -int64(total)/100 || diff > int64(total)/100 {
		t.Errorf("90th percentile of the sample %d, of the history %d: more than a percentile apart", got, want)
	}
}
