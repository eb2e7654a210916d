// Package webhookconfigurationguard is the WebhookConfigurationGuard admission plugin: it
// checks MutatingWebhookConfigurations and ValidatingWebhookConfigurations, when they are
// created or updated, against the Kubernetes "Admission Webhook Good Practices", and reports
// every finding at once — as warnings, or as one refusal for the checks set to Deny.
//
// Beside the checks of one webhook (system namespaces, review resources, self-interception,
// timeout, catch-all rules) it checks what no platform does: the chain. After the write, for
// each resource, the worst-case serial mutating time plus the longest validating timeout
// must fit the request budget.
package webhookconfigurationguard

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apiserver/pkg/admission"
	genericadmissioninit "k8s.io/apiserver/pkg/admission/initializer"
	"k8s.io/apiserver/pkg/warning"
	"k8s.io/client-go/informers"
	admissionregistrationlisters "k8s.io/client-go/listers/admissionregistration/v1"
	"k8s.io/kubernetes/pkg/apis/admissionregistration"
	admissionregistrationconv "k8s.io/kubernetes/pkg/apis/admissionregistration/v1"

	portcullisapi "github.com/portcullis-k8s/portcullis/pkg/apis/admission"
)

// PluginName is the name of this admission controller.
const PluginName = "WebhookConfigurationGuard"

// Register registers the plugin; its configuration (a WebhookConfigurationGuardConfiguration)
// is optional.
func Register(plugins *admission.Plugins) {
	plugins.Register(PluginName, func(r io.Reader) (admission.Interface, error) {
		cfg, err := LoadConfiguration(r)
		if err != nil {
			return nil, err
		}
		return New(cfg), nil
	})
}

// Plugin checks webhook configurations when they are written.
type Plugin struct {
	*admission.Handler
	modes     map[checkID]portcullisapi.GuardCheckMode
	threshold int32
	budget    int32

	// The stored configurations, for the chain check only.
	mutatingLister   admissionregistrationlisters.MutatingWebhookConfigurationLister
	validatingLister admissionregistrationlisters.ValidatingWebhookConfigurationLister
}

var (
	_ admission.ValidationInterface                         = &Plugin{}
	_ admission.InitializationValidator                     = &Plugin{}
	_ genericadmissioninit.WantsExternalKubeInformerFactory = &Plugin{}
)

// New returns the plugin for a defaulted, validated configuration.
func New(cfg *portcullisapi.WebhookConfigurationGuardConfiguration) *Plugin {
	p := &Plugin{
		Handler:   admission.NewHandler(admission.Create, admission.Update),
		modes:     map[checkID]portcullisapi.GuardCheckMode{},
		threshold: *cfg.TimeoutThresholdSeconds,
		budget:    *cfg.RequestBudgetSeconds,
	}
	for _, m := range checkModes(&cfg.Checks) {
		p.modes[m.check] = *m.mode
	}
	return p
}

func (p *Plugin) on(c checkID) bool { return p.modes[c] != portcullisapi.GuardCheckModeOff }

// SetExternalKubeInformerFactory receives the shared informers. Only the chain check reads
// the stored configurations; with it off the plugin starts no informer and is ready at once.
func (p *Plugin) SetExternalKubeInformerFactory(f informers.SharedInformerFactory) {
	if !p.on(checkChain) {
		return
	}
	m := f.Admissionregistration().V1().MutatingWebhookConfigurations()
	v := f.Admissionregistration().V1().ValidatingWebhookConfigurations()
	p.mutatingLister, p.validatingLister = m.Lister(), v.Lister()
	p.SetReadyFunc(func() bool { return m.Informer().HasSynced() && v.Informer().HasSynced() })
}

// ValidateInitialization checks the chain check got its listers.
func (p *Plugin) ValidateInitialization() error {
	if p.on(checkChain) && (p.mutatingLister == nil || p.validatingLister == nil) {
		return fmt.Errorf("%s: missing webhook configuration listers", PluginName)
	}
	return nil
}

var (
	mutatingResource   = admissionregistration.Resource("mutatingwebhookconfigurations")
	validatingResource = admissionregistration.Resource("validatingwebhookconfigurations")
)

// Validate checks a written webhook configuration and reports every finding at once.
func (p *Plugin) Validate(ctx context.Context, a admission.Attributes, _ admission.ObjectInterfaces) error {
	gr := a.GetResource().GroupResource()
	if (gr != mutatingResource && gr != validatingResource) || a.GetSubresource() != "" {
		return nil
	}
	written, kind, name, err := hooksOf(a.GetObject())
	if err != nil {
		return admission.NewForbidden(a, err)
	}
	var all []*hook
	if p.on(checkChain) {
		if !p.WaitForReady() {
			return admission.NewForbidden(a, errors.New("not yet ready to handle request: webhook configurations not listed yet"))
		}
		if all, err = p.stored(kind, name); err != nil {
			return admission.NewForbidden(a, err)
		}
		all = append(all, written...)
	}
	findings := p.check(written, all)

	var denied []string
	for _, f := range findings {
		if p.modes[f.check] == portcullisapi.GuardCheckModeDeny {
			denied = append(denied, f.String())
		} else {
			warning.AddWarning(ctx, "", f.String())
		}
	}
	if len(denied) > 0 {
		return admission.NewForbidden(a, fmt.Errorf("%d finding(s) against the admission webhook good practices: %s",
			len(denied), strings.Join(denied, "; ")))
	}
	return nil
}

// check runs every check that is on over the written webhooks; all is every webhook after
// the write (for the chain).
func (p *Plugin) check(written, all []*hook) []finding {
	var out []finding
	for _, h := range written {
		if p.on(checkSystemNamespaces) {
			out = checkSystemNamespacesOf(h, out)
		}
		if p.on(checkReviewResources) {
			out = checkReviewResourcesOf(h, out)
		}
		if p.on(checkSelfIntercept) {
			out = checkSelfInterceptOf(h, out)
		}
		if p.on(checkTimeout) {
			out = checkTimeoutOf(h, p.threshold, out)
		}
		if p.on(checkCatchAll) {
			out = checkCatchAllOf(h, out)
		}
	}
	if p.on(checkChain) {
		out = checkChainOf(all, written, p.budget, out)
	}
	return out
}

// stored returns the webhooks of every stored configuration but the one being written
// (kind and name), which the write replaces.
func (p *Plugin) stored(kind, name string) ([]*hook, error) {
	muts, err := p.mutatingLister.List(labels.Everything())
	if err != nil {
		return nil, err
	}
	vals, err := p.validatingLister.List(labels.Everything())
	if err != nil {
		return nil, err
	}
	var out []*hook
	for _, c := range muts {
		if kind != mutatingKind || c.Name != name {
			out = append(out, mutatingHooks(c)...)
		}
	}
	for _, c := range vals {
		if kind != validatingKind || c.Name != name {
			out = append(out, validatingHooks(c)...)
		}
	}
	return out, nil
}

// hooksOf returns the webhooks of a written configuration. In kube-apiserver admission sees
// the internal types; they are converted to v1, the version the listers serve, so one model
// serves both.
func hooksOf(obj runtime.Object) ([]*hook, string, string, error) {
	switch c := obj.(type) {
	case *admissionregistration.MutatingWebhookConfiguration:
		var v1 admissionregistrationv1.MutatingWebhookConfiguration
		if err := admissionregistrationconv.Convert_admissionregistration_MutatingWebhookConfiguration_To_v1_MutatingWebhookConfiguration(c, &v1, nil); err != nil {
			return nil, "", "", err
		}
		return mutatingHooks(&v1), mutatingKind, c.Name, nil
	case *admissionregistration.ValidatingWebhookConfiguration:
		var v1 admissionregistrationv1.ValidatingWebhookConfiguration
		if err := admissionregistrationconv.Convert_admissionregistration_ValidatingWebhookConfiguration_To_v1_ValidatingWebhookConfiguration(c, &v1, nil); err != nil {
			return nil, "", "", err
		}
		return validatingHooks(&v1), validatingKind, c.Name, nil
	case *admissionregistrationv1.MutatingWebhookConfiguration:
		return mutatingHooks(c), mutatingKind, c.Name, nil
	case *admissionregistrationv1.ValidatingWebhookConfiguration:
		return validatingHooks(c), validatingKind, c.Name, nil
	}
	return nil, "", "", fmt.Errorf("unexpected object %T", obj)
}
