package initialresources

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"net/http"
	"net/url"
	"os"
	"regexp"
	"strconv"
	"strings"
	"time"

	api "k8s.io/kubernetes/pkg/apis/core"

	portcullisapi "github.com/portcullis-k8s/portcullis/pkg/apis/admission"
)

// maxResponseBytes bounds what one query may return: a history that large is a
// misconfigured selector, not data to sort in the API server. The answer is decoded as it
// is read, so this bounds the work, not the memory.
const maxResponseBytes = 256 << 20

// maxSamples bounds the samples one history keeps (8 bytes each: 4 MiB): past it, a
// uniform random sample of that many stands for them (reservoir sampling), whose
// percentile is the history's within a small fraction of a percentile.
const maxSamples = 1 << 19

// prometheus reads cAdvisor's container metrics from a Prometheus server's HTTP API
// (/api/v1/query_range): the rate of the CPU counter in millicores, the memory gauge in bytes.
type prometheus struct {
	cfg    *portcullisapi.InitialResourcesPrometheus
	base   *url.URL
	client *http.Client
	now    func() time.Time
	// maxSamples is maxSamples but in tests.
	maxSamples int
}

var _ usageHistory = &prometheus{}

// newPrometheus connects the source to cfg's server; the CA file is read now, so a bad one
// stops the start.
func newPrometheus(cfg *portcullisapi.InitialResourcesPrometheus) (*prometheus, error) {
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
	return &prometheus{cfg: cfg, base: base, client: &http.Client{Transport: transport, Timeout: cfg.Timeout.Duration}, now: time.Now,
		maxSamples: maxSamples}, nil
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

// chunks is how many range queries read window at cfg's step and points per series.
func chunks(cfg *portcullisapi.InitialResourcesPrometheus, window time.Duration) int {
	points := int64(window/cfg.Step.Duration) + 1
	per := int64(*cfg.MaxPointsPerSeries)
	return int((points + per - 1) / per)
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
	kept := newReservoir(p.maxSamples)
	for from := start; !from.After(end); from = from.Add(chunk + step) {
		to := from.Add(chunk)
		if to.After(end) {
			to = end
		}
		err := p.queryRange(ctx, q, from, to, step, func(v float64) {
			if !math.IsNaN(v) && !math.IsInf(v, 0) && v >= 0 {
				kept.add(v * scale)
			}
		})
		if err != nil {
			return nil, err
		}
	}
	return kept.samples, nil
}

// reservoir keeps at most max of the values added to it: all of them while they fit, then
// a uniform random sample of them (Vitter's algorithm R), from a fixed seed so that the
// same history gives the same estimate.
type reservoir struct {
	samples []float64
	seen    int
	max     int
	rnd     *rand.Rand
}

func newReservoir(max int) *reservoir {
	return &reservoir{max: max, rnd: rand.New(rand.NewPCG(1, 2))}
}

func (r *reservoir) add(v float64) {
	r.seen++
	if len(r.samples) < r.max {
		r.samples = append(r.samples, v)
		return
	}
	if j := r.rnd.IntN(r.seen); j < r.max {
		r.samples[j] = v
	}
}

// queryRange runs one range query and passes every value of every series to add, decoding
// the answer as it is read: what is held is the decoder's buffer, not the answer.
func (p *prometheus) queryRange(ctx context.Context, query string, start, end time.Time, step time.Duration, add func(float64)) error {
	form := url.Values{
		"query": {query},
		"start": {strconv.FormatInt(start.Unix(), 10)},
		"end":   {strconv.FormatInt(end.Unix(), 10)},
		"step":  {strconv.FormatFloat(step.Seconds(), 'f', -1, 64)},
	}
	u := p.base.JoinPath("api", "v1", "query_range")
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, u.String(), strings.NewReader(form.Encode()))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	if p.cfg.BearerTokenFile != "" {
		// Read at each query: projected tokens are rotated on disk.
		token, err := os.ReadFile(p.cfg.BearerTokenFile)
		if err != nil {
			return fmt.Errorf("prometheus.bearerTokenFile: %w", err)
		}
		req.Header.Set("Authorization", "Bearer "+strings.TrimSpace(string(token)))
	}
	resp, err := p.client.Do(req)
	if err != nil {
		return fmt.Errorf("querying Prometheus at %s: %w", p.cfg.URL, err)
	}
	defer func() { _ = resp.Body.Close() }()
	body := &cappedReader{r: resp.Body, left: maxResponseBytes}
	answer, err := decodeRange(json.NewDecoder(body), add)
	if body.over {
		return fmt.Errorf("Prometheus at %s answered more than %d MiB for %s", p.cfg.URL, maxResponseBytes>>20, query)
	}
	if err != nil {
		return fmt.Errorf("Prometheus at %s answered HTTP %d, not its API's JSON: %w", p.cfg.URL, resp.StatusCode, err)
	}
	if answer.status != "success" {
		return fmt.Errorf("Prometheus at %s refused %s: HTTP %d, %s: %s", p.cfg.URL, query, resp.StatusCode, answer.errorType, answer.error)
	}
	if answer.resultType != "matrix" {
		return fmt.Errorf("Prometheus at %s answered a %q for a range query", p.cfg.URL, answer.resultType)
	}
	return answer.valueErr
}

// cappedReader reads at most left bytes, then fails, noting it.
type cappedReader struct {
	r    io.Reader
	left int64
	over bool
}

func (c *cappedReader) Read(b []byte) (int, error) {
	if c.left <= 0 {
		c.over = true
		return 0, errors.New("answer too large")
	}
	if int64(len(b)) > c.left {
		b = b[:c.left]
	}
	n, err := c.r.Read(b)
	c.left -= int64(n)
	return n, err
}

// rangeAnswer is what decodeRange keeps of the API's answer besides the values.
type rangeAnswer struct {
	status, errorType, error, resultType string
	// valueErr is the first value that is not a number, if any.
	valueErr error
}

// decodeRange reads a query_range answer token by token
// ({"status":…,"data":{"resultType":"matrix","result":[{"metric":{…},"values":[[t,"v"],…]}]}}),
// passing each value to add; the members are accepted in any order, unknown ones skipped.
func decodeRange(dec *json.Decoder, add func(float64)) (rangeAnswer, error) {
	var a rangeAnswer
	err := decodeObject(dec, func(key string) error {
		switch key {
		case "status":
			return decodeString(dec, &a.status)
		case "errorType":
			return decodeString(dec, &a.errorType)
		case "error":
			return decodeString(dec, &a.error)
		case "data":
			return decodeObject(dec, func(key string) error {
				switch key {
				case "resultType":
					return decodeString(dec, &a.resultType)
				case "result":
					return decodeArray(dec, func() error {
						return decodeObject(dec, func(key string) error {
							if key != "values" {
								return skipValue(dec)
							}
							return decodeArray(dec, func() error { return decodePoint(dec, add, &a.valueErr) })
						})
					})
				}
				return skipValue(dec)
			})
		}
		return skipValue(dec)
	})
	return a, err
}

// decodePoint reads one [timestamp, "value"] pair.
func decodePoint(dec *json.Decoder, add func(float64), valueErr *error) error {
	if err := expectDelim(dec, '['); err != nil {
		return err
	}
	if _, err := dec.Token(); err != nil { // the timestamp
		return err
	}
	tok, err := dec.Token()
	if err != nil {
		return err
	}
	s, isString := tok.(string)
	v, perr := strconv.ParseFloat(s, 64)
	switch {
	case !isString && *valueErr == nil:
		*valueErr = fmt.Errorf("a sample value %v is not a string", tok)
	case isString && perr != nil && *valueErr == nil:
		*valueErr = fmt.Errorf("a sample value %q: %w", s, perr)
	case isString && perr == nil:
		add(v)
	}
	return expectDelim(dec, ']')
}

func expectDelim(dec *json.Decoder, want json.Delim) error {
	tok, err := dec.Token()
	if err != nil {
		return err
	}
	if d, ok := tok.(json.Delim); !ok || d != want {
		return fmt.Errorf("expected %q, found %v", want, tok)
	}
	return nil
}

// decodeObject reads an object, calling member for each key with the decoder at its value.
func decodeObject(dec *json.Decoder, member func(key string) error) error {
	if err := expectDelim(dec, '{'); err != nil {
		return err
	}
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return err
		}
		key, _ := tok.(string)
		if err := member(key); err != nil {
			return err
		}
	}
	return expectDelim(dec, '}')
}

// decodeArray reads an array, calling element with the decoder at each element.
func decodeArray(dec *json.Decoder, element func() error) error {
	if err := expectDelim(dec, '['); err != nil {
		return err
	}
	for dec.More() {
		if err := element(); err != nil {
			return err
		}
	}
	return expectDelim(dec, ']')
}

func decodeString(dec *json.Decoder, into *string) error {
	tok, err := dec.Token()
	if err != nil {
		return err
	}
	s, ok := tok.(string)
	if !ok {
		return fmt.Errorf("expected a string, found %v", tok)
	}
	*into = s
	return nil
}

// skipValue reads past one value, however nested, holding none of it.
func skipValue(dec *json.Decoder) error {
	depth := 0
	for {
		tok, err := dec.Token()
		if err != nil {
			return err
		}
		if d, ok := tok.(json.Delim); ok {
			if d == '{' || d == '[' {
				depth++
			} else {
				depth--
			}
		}
		if depth == 0 {
			return nil
		}
	}
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
