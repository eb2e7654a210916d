// Package fuzzer fills admission.portcullis.io's internal kinds for the round-trip test: every
// field a default would fill is set, so that decoding (which defaults) gives the object back.
package fuzzer

import (
	"time"

	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	runtimeserializer "k8s.io/apimachinery/pkg/runtime/serializer"
	"sigs.k8s.io/randfill"

	"github.com/portcullis-k8s/portcullis/pkg/apis/admission"
)

// Funcs returns the fuzzer functions of admission.portcullis.io.
func Funcs(_ runtimeserializer.CodecFactory) []any {
	return []any{
		func(b *admission.WebhookCircuitBreaker, c randfill.Continue) {
			c.FillNoCustom(b)
			setInt32(&b.FailureThreshold, c)
			setDuration(&b.InitialBackoff, c)
			setDuration(&b.MaxBackoff, c)
		},
		func(b *admission.WebhookTimeBudget, c randfill.Continue) {
			c.FillNoCustom(b)
			setDuration(&b.DeadlineMargin, c)
		},
		func(p *admission.WebhookIdempotencyProbe, c randfill.Continue) {
			c.FillNoCustom(p)
			setInt32(&p.MaxInFlight, c)
		},
		func(cfg *admission.InitialResourcesConfiguration, c randfill.Continue) {
			c.FillNoCustom(cfg)
			if len(cfg.Sources) == 0 {
				cfg.Sources = []admission.InitialResourcesSourceName{admission.InitialResourcesSourceVerticalPodAutoscaler}
			}
			setInt32(&cfg.Percentile, c)
			setInt32(&cfg.SamplesThreshold, c)
			setDuration(&cfg.ShortWindow, c)
			setDuration(&cfg.LongWindow, c)
			setDuration(&cfg.CacheTTL, c)
			setDuration(&cfg.MissWait, c)
			setInt32(&cfg.CacheEntries, c)
			if cfg.CacheBytes == nil {
				cfg.CacheBytes = resource.NewQuantity(c.Int63n(1<<30), resource.BinarySI)
			}
			if cfg.FitLimitRanges == nil {
				fit := c.Bool()
				cfg.FitLimitRanges = &fit
			}
			if cfg.VerticalPodAutoscaler == nil {
				cfg.VerticalPodAutoscaler = &admission.InitialResourcesVerticalPodAutoscaler{}
			}
			setString(&cfg.VerticalPodAutoscaler.Recommendation, admission.InitialResourcesRecommendationUncappedTarget)
		},
		func(p *admission.InitialResourcesPrometheus, c randfill.Continue) {
			c.FillNoCustom(p)
			setDuration(&p.Timeout, c)
			setDuration(&p.Step, c)
			setInt32(&p.MaxPointsPerSeries, c)
			setDuration(&p.CPURateWindow, c)
			for _, s := range []*string{&p.CPUMetric, &p.MemoryMetric, &p.ImageLabel, &p.NamespaceLabel, &p.ContainerLabel} {
				setString(s, "x")
			}
		},
		func(cfg *admission.PersistentVolumeLabelConfiguration, c randfill.Continue) {
			c.FillNoCustom(cfg)
			if len(cfg.Resolvers) == 0 {
				cfg.Resolvers = []admission.PersistentVolumeLabelResolverName{admission.PersistentVolumeLabelResolverNodes}
			}
			setString(&cfg.LabelKeys, admission.PersistentVolumeLabelKeysBoth)
			setString(&cfg.NodeAffinity, admission.PersistentVolumeLabelNodeAffinityNone)
			setString(&cfg.Unresolved, admission.PersistentVolumeLabelUnresolvedRefuse)
		},
		func(cfg *admission.WebhookConfigurationGuardConfiguration, c randfill.Continue) {
			c.FillNoCustom(cfg)
			for _, m := range []*admission.GuardCheckMode{&cfg.Checks.SystemNamespaces, &cfg.Checks.ReviewResources, &cfg.Checks.SelfIntercept,
				&cfg.Checks.Timeout, &cfg.Checks.CatchAll, &cfg.Checks.Chain} {
				setString(m, admission.GuardCheckModeDeny)
			}
			setInt32(&cfg.TimeoutThresholdSeconds, c)
			setInt32(&cfg.RequestBudgetSeconds, c)
		},
	}
}

func setInt32(p **int32, c randfill.Continue) {
	if *p == nil {
		v := c.Int31()
		*p = &v
	}
}

func setDuration(p **metav1.Duration, c randfill.Continue) {
	if *p == nil {
		*p = &metav1.Duration{Duration: time.Duration(c.Int63())}
	}
}

// setString sets an empty string field, which a default would fill, to a value of its own.
func setString[S ~string](p *S, value S) {
	if *p == "" {
		*p = value
	}
}
