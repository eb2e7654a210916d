package validation

import (
	"fmt"
	"net/url"
	"path/filepath"
	"regexp"
	"slices"
	"time"

	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/portcullis-k8s/portcullis/pkg/apis/admission"
)

// Limits of the InitialResources plugin's settings.
const (
	// maxMissWait keeps a miss far from the request timeout: admission is not the place to
	// wait for a monitoring system.
	maxMissWait = 5 * time.Second
	// The caches' sizes: room for a namespace's share of a few entries, up to what a
	// control plane's memory affords four times over.
	minCacheEntries, maxCacheEntries int32 = 16, 1000000
	minCacheBytes, maxCacheBytes     int64 = 64 << 10, 1 << 30
	// maxPointsPerSeries is Prometheus's own limit on a range query's points per series.
	maxPointsPerSeries int32 = 11000
)

var (
	// The names Prometheus accepts (its data model): a label name has no colon.
	prometheusMetricName = regexp.MustCompile(`^[a-zA-Z_:][a-zA-Z0-9_:]*$`)
	prometheusLabelName  = regexp.MustCompile(`^[a-zA-Z_][a-zA-Z0-9_]*$`)

	initialResourcesSources = []admission.InitialResourcesSourceName{
		admission.InitialResourcesSourcePrometheus,
		admission.InitialResourcesSourceVerticalPodAutoscaler,
	}
	initialResourcesRecommendations = []admission.InitialResourcesRecommendation{
		admission.InitialResourcesRecommendationTarget,
		admission.InitialResourcesRecommendationUncappedTarget,
	}
)

// ValidateInitialResourcesConfiguration checks the InitialResources plugin's defaulted
// configuration; fldPath is where it sits (nil: the entry's root).
func ValidateInitialResourcesConfiguration(cfg *admission.InitialResourcesConfiguration, fldPath *field.Path) field.ErrorList {
	var errs field.ErrorList
	sourcesPath := fldPath.Child("sources")
	if len(cfg.Sources) == 0 {
		errs = append(errs, field.Required(sourcesPath, "at least one source, or leave it out for the default"))
	}
	seen := sets.New[admission.InitialResourcesSourceName]()
	for i, s := range cfg.Sources {
		switch {
		case !slices.Contains(initialResourcesSources, s):
			errs = append(errs, field.NotSupported(sourcesPath.Index(i), s, initialResourcesSources))
		case seen.Has(s):
			errs = append(errs, field.Duplicate(sourcesPath.Index(i), s))
		case s == admission.InitialResourcesSourcePrometheus && cfg.Prometheus == nil:
			errs = append(errs, field.Required(fldPath.Child("prometheus"), "the Prometheus source needs a server"))
		}
		seen.Insert(s)
	}
	if cfg.Percentile == nil {
		errs = append(errs, field.Required(fldPath.Child("percentile"), "defaulted to 90"))
	} else if p := *cfg.Percentile; p < 1 || p > 100 {
		errs = append(errs, field.Invalid(fldPath.Child("percentile"), p, "must be between 1 and 100"))
	}
	if cfg.SamplesThreshold == nil {
		errs = append(errs, field.Required(fldPath.Child("samplesThreshold"), "defaulted to 30"))
	} else if t := *cfg.SamplesThreshold; t < 1 {
		errs = append(errs, field.Invalid(fldPath.Child("samplesThreshold"), t, "must be at least 1"))
	}
	errs = append(errs, positiveDuration(fldPath.Child("shortWindow"), cfg.ShortWindow)...)
	errs = append(errs, positiveDuration(fldPath.Child("longWindow"), cfg.LongWindow)...)
	if cfg.ShortWindow != nil && cfg.LongWindow != nil && cfg.LongWindow.Duration < cfg.ShortWindow.Duration {
		errs = append(errs, field.Invalid(fldPath.Child("longWindow"), cfg.LongWindow.Duration.String(), "must be at least shortWindow"))
	}
	errs = append(errs, positiveDuration(fldPath.Child("cacheTTL"), cfg.CacheTTL)...)
	if cfg.MissWait == nil {
		errs = append(errs, field.Required(fldPath.Child("missWait"), "defaulted to 100ms"))
	} else if w := cfg.MissWait.Duration; w < 0 || w > maxMissWait {
		errs = append(errs, field.Invalid(fldPath.Child("missWait"), w.String(), fmt.Sprintf("must be between 0s and %s", maxMissWait)))
	}
	if cfg.CacheEntries == nil {
		errs = append(errs, field.Required(fldPath.Child("cacheEntries"), "defaulted to 10000"))
	} else if n := *cfg.CacheEntries; n < minCacheEntries || n > maxCacheEntries {
		errs = append(errs, field.Invalid(fldPath.Child("cacheEntries"), n, fmt.Sprintf("must be between %d and %d", minCacheEntries, maxCacheEntries)))
	}
	if cfg.CacheBytes == nil {
		errs = append(errs, field.Required(fldPath.Child("cacheBytes"), "defaulted to 4Mi"))
	} else if b := cfg.CacheBytes.Value(); b < minCacheBytes || b > maxCacheBytes || cfg.CacheBytes.Cmp(*resource.NewQuantity(b, resource.BinarySI)) != 0 {
		// Value rounds a fraction up: comparing with the whole number refuses one.
		errs = append(errs, field.Invalid(fldPath.Child("cacheBytes"), cfg.CacheBytes.String(), "must be a whole number of bytes between 64Ki and 1Gi"))
	}
	if cfg.FitLimitRanges == nil {
		errs = append(errs, field.Required(fldPath.Child("fitLimitRanges"), "defaulted to true"))
	}
	if p := cfg.Prometheus; p != nil {
		errs = append(errs, validateInitialResourcesPrometheus(p, cfg.ShortWindow, fldPath.Child("prometheus"))...)
	}
	recommendationPath := fldPath.Child("verticalPodAutoscaler", "recommendation")
	if cfg.VerticalPodAutoscaler == nil {
		errs = append(errs, field.Required(recommendationPath, "defaulted to target"))
	} else if r := cfg.VerticalPodAutoscaler.Recommendation; !slices.Contains(initialResourcesRecommendations, r) {
		errs = append(errs, field.NotSupported(recommendationPath, r, initialResourcesRecommendations))
	}
	return errs
}

// validateInitialResourcesPrometheus checks a defaulted prometheus; a step longer than the
// short window would leave it without a sample.
func validateInitialResourcesPrometheus(p *admission.InitialResourcesPrometheus, shortWindow *metav1.Duration, fldPath *field.Path) field.ErrorList {
	var errs field.ErrorList
	if u, err := url.Parse(p.URL); p.URL == "" {
		errs = append(errs, field.Required(fldPath.Child("url"), "the server's http or https URL"))
	} else if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		errs = append(errs, field.Invalid(fldPath.Child("url"), p.URL, "must be an http or https URL with a host"))
	}
	for _, f := range []struct{ name, file string }{{"bearerTokenFile", p.BearerTokenFile}, {"caFile", p.CAFile}} {
		if f.file != "" && !filepath.IsAbs(f.file) {
			errs = append(errs, field.Invalid(fldPath.Child(f.name), f.file, "must be an absolute path"))
		}
	}
	errs = append(errs, positiveDuration(fldPath.Child("timeout"), p.Timeout)...)
	errs = append(errs, positiveDuration(fldPath.Child("step"), p.Step)...)
	if p.Step != nil && shortWindow != nil && p.Step.Duration > shortWindow.Duration {
		errs = append(errs, field.Invalid(fldPath.Child("step"), p.Step.Duration.String(), "must be at most shortWindow"))
	}
	if p.MaxPointsPerSeries == nil {
		errs = append(errs, field.Required(fldPath.Child("maxPointsPerSeries"), "defaulted to 11000"))
	} else if m := *p.MaxPointsPerSeries; m < 1 || m > maxPointsPerSeries {
		errs = append(errs, field.Invalid(fldPath.Child("maxPointsPerSeries"), m, fmt.Sprintf("must be between 1 and %d (Prometheus's limit)", maxPointsPerSeries)))
	}
	errs = append(errs, positiveDuration(fldPath.Child("cpuRateWindow"), p.CPURateWindow)...)
	for _, m := range []struct{ name, value string }{{"cpuMetric", p.CPUMetric}, {"memoryMetric", p.MemoryMetric}} {
		if !prometheusMetricName.MatchString(m.value) {
			errs = append(errs, field.Invalid(fldPath.Child(m.name), m.value, "must be a Prometheus metric name"))
		}
	}
	for _, l := range []struct{ name, value string }{{"imageLabel", p.ImageLabel}, {"namespaceLabel", p.NamespaceLabel}, {"containerLabel", p.ContainerLabel}} {
		if !prometheusLabelName.MatchString(l.value) {
			errs = append(errs, field.Invalid(fldPath.Child(l.name), l.value, "must be a Prometheus label name"))
		}
	}
	return errs
}

// positiveDuration checks a defaulted duration is above zero.
func positiveDuration(fldPath *field.Path, d *metav1.Duration) field.ErrorList {
	if d == nil {
		return field.ErrorList{field.Required(fldPath, "defaulted")}
	}
	if d.Duration <= 0 {
		return field.ErrorList{field.Invalid(fldPath, d.Duration.String(), "must be positive")}
	}
	return nil
}
