package initialresources

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"net/http"
	"net/url"
	"os"
	"regexp"
	"strconv"
	"strings"
	"time"

	api "k8s.io/kubernetes/pkg/apis/core"

	admissionv1alpha1 "github.com/portcullis-k8s/api/admission/v1alpha1"
)

// maxResponseBytes bounds what one query may return: a history that large is a
// misconfigured selector, not data to sort in the API server.
const maxResponseBytes = 256 << 20

// prometheus reads cAdvisor's container metrics from a Prometheus server's HTTP API
// (/api/v1/query_range): the rate of the CPU counter in millicores, the memory gauge in bytes.
type prometheus struct {
	cfg    *admissionv1alpha1.InitialResourcesPrometheus
	base   *url.URL
	client *http.Client
	now    func() time.Time
}

var _ usageHistory = &prometheus{}

// newPrometheus connects the source to cfg's server; the CA file is read now, so a bad one
// stops the start.
func newPrometheus(cfg *admissionv1alpha1.InitialResourcesPrometheus) (*prometheus, error) {
	base, err := url.Parse(cfg.URL)
	if err != nil {
		return nil, fmt.Errorf("prometheus.url: %w", err)
	}
	transport := http.DefaultTransport.(*http.Transport).Clone()
	if cfg.CAFile != "" {
		pem, err := os.ReadFile(cfg.CAFile)
		if err != nil {
			return nil, fmt.Errorf("prometheus.caFile: %w", err)
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("prometheus.caFile %s: no PEM certificate in it", cfg.CAFile)
		}
		transport.TLSClientConfig = &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}
	}
	if cfg.BearerTokenFile != "" {
		if _, err := os.Stat(cfg.BearerTokenFile); err != nil {
			return nil, fmt.Errorf("prometheus.bearerTokenFile: %w", err)
		}
	}
	return &prometheus{cfg: cfg, base: base, client: &http.Client{Transport: transport, Timeout: cfg.Timeout.Duration}, now: time.Now}, nil
}

// query is the PromQL expression whose samples are resource's usage.
func (p *prometheus) query(resource api.ResourceName, img image, exact bool, namespace string) string {
	var names []string
	if exact {
		for _, s := range img.exact {
			names = append(names, regexp.QuoteMeta(s))
		}
	} else {
		for _, s := range img.repository {
			names = append(names, regexp.QuoteMeta(s))
		}
	}
	imageMatch := strings.Join(names, "|")
	if !exact {
		imageMatch = "(" + imageMatch + ")([:@].*)?"
	}
	// cAdvisor's pod-level series have container="" and the sandbox's "POD": neither is a
	// container of the image.
	selector := []string{
		fmt.Sprintf("%s=~%s", p.cfg.ImageLabel, strconv.Quote(imageMatch)),
		fmt.Sprintf(`%s!=""`, p.cfg.ContainerLabel),
		fmt.Sprintf(`%s!="POD"`, p.cfg.ContainerLabel),
	}
	if namespace != "" {
		selector = append(selector, fmt.Sprintf("%s=%s", p.cfg.NamespaceLabel, strconv.Quote(namespace)))
	}
	series := "{" + strings.Join(selector, ",") + "}"
	if resource == api.ResourceCPU {
		return fmt.Sprintf("rate(%s%s[%s])", p.cfg.CPUMetric, series, promDuration(p.cfg.CPURateWindow.Duration))
	}
	return p.cfg.MemoryMetric + series
}

// Samples reads the window in as many range queries as the points-per-series limit needs.
func (p *prometheus) Samples(ctx context.Context, resource api.ResourceName, img image, exact bool, namespace string, window time.Duration) ([]float64, error) {
	if resource != api.ResourceCPU && resource != api.ResourceMemory {
		return nil, nil
	}
	q := p.query(resource, img, exact, namespace)
	step := p.cfg.Step.Duration
	end := p.now().Truncate(step)
	start := end.Add(-window)
	// A range query returns the points start, start+step, …, end: chunks of at most
	// maxPoints points, each starting one step after the previous one ended.
	chunk := time.Duration(*p.cfg.MaxPointsPerSeries-1) * step
	scale := 1.0
	if resource == api.ResourceCPU {
		scale = 1000 // cores to millicores
	}
	var samples []float64
	for from := start; !from.After(end); from = from.Add(chunk + step) {
		to := from.Add(chunk)
		if to.After(end) {
			to = end
		}
		values, err := p.queryRange(ctx, q, from, to, step)
		if err != nil {
			return nil, err
		}
		for _, v := range values {
			if !math.IsNaN(v) && !math.IsInf(v, 0) && v >= 0 {
				samples = append(samples, v*scale)
			}
		}
	}
	return samples, nil
}

// queryRange runs one range query and returns every value of every series.
func (p *prometheus) queryRange(ctx context.Context, query string, start, end time.Time, step time.Duration) ([]float64, error) {
	form := url.Values{
		"query": {query},
		"start": {strconv.FormatInt(start.Unix(), 10)},
		"end":   {strconv.FormatInt(end.Unix(), 10)},
		"step":  {strconv.FormatFloat(step.Seconds(), 'f', -1, 64)},
	}
	u := p.base.JoinPath("api", "v1", "query_range")
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, u.String(), strings.NewReader(form.Encode()))
	if err != nil {
		return nil, err
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	if p.cfg.BearerTokenFile != "" {
		// Read at each query: projected tokens are rotated on disk.
		token, err := os.ReadFile(p.cfg.BearerTokenFile)
		if err != nil {
			return nil, fmt.Errorf("prometheus.bearerTokenFile: %w", err)
		}
		req.Header.Set("Authorization", "Bearer "+strings.TrimSpace(string(token)))
	}
	resp, err := p.client.Do(req)
	if err != nil {
		return nil, fmt.Errorf("querying Prometheus at %s: %w", p.cfg.URL, err)
	}
	defer func() { _ = resp.Body.Close() }()
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxResponseBytes+1))
	if err != nil {
		return nil, fmt.Errorf("reading Prometheus's answer from %s: %w", p.cfg.URL, err)
	}
	if len(body) > maxResponseBytes {
		return nil, fmt.Errorf("Prometheus at %s answered more than %d MiB for %s", p.cfg.URL, maxResponseBytes>>20, query)
	}
	var answer struct {
		Status    string `json:"status"`
		ErrorType string `json:"errorType"`
		Error     string `json:"error"`
		Data      struct {
			ResultType string `json:"resultType"`
			Result     []struct {
				Values [][2]json.RawMessage `json:"values"`
			} `json:"result"`
		} `json:"data"`
	}
	if err := json.Unmarshal(body, &answer); err != nil {
		return nil, fmt.Errorf("Prometheus at %s answered HTTP %d, not its API's JSON: %w", p.cfg.URL, resp.StatusCode, err)
	}
	if answer.Status != "success" {
		return nil, fmt.Errorf("Prometheus at %s refused %s: HTTP %d, %s: %s", p.cfg.URL, query, resp.StatusCode, answer.ErrorType, answer.Error)
	}
	if answer.Data.ResultType != "matrix" {
		return nil, fmt.Errorf("Prometheus at %s answered a %q for a range query", p.cfg.URL, answer.Data.ResultType)
	}
	var values []float64
	for _, series := range answer.Data.Result {
		for _, point := range series.Values {
			var s string
			if err := json.Unmarshal(point[1], &s); err != nil {
				return nil, fmt.Errorf("Prometheus at %s: a sample value: %w", p.cfg.URL, err)
			}
			v, err := strconv.ParseFloat(s, 64)
			if err != nil {
				return nil, fmt.Errorf("Prometheus at %s: a sample value %q: %w", p.cfg.URL, s, err)
			}
			values = append(values, v)
		}
	}
	return values, nil
}

// promDuration writes d as PromQL does: whole seconds or a coarser unit.
func promDuration(d time.Duration) string {
	switch {
	case d%time.Hour == 0:
		return fmt.Sprintf("%dh", d/time.Hour)
	case d%time.Minute == 0:
		return fmt.Sprintf("%dm", d/time.Minute)
	case d%time.Second == 0:
		return fmt.Sprintf("%ds", d/time.Second)
	default:
		return fmt.Sprintf("%dms", d/time.Millisecond)
	}
}
