package preflight

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"

	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apiserver/pkg/admission"
	apiserverconfiginstall "k8s.io/apiserver/pkg/apis/apiserver/install"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"

	portcullisapi "github.com/portcullis-k8s/portcullis/pkg/apis/admission"
	"github.com/portcullis-k8s/portcullis/plugin/pkg/admission/webhook"
	"github.com/portcullis-k8s/portcullis/plugin/pkg/admission/webhookconfigurationguard"
)

// webhookFindings reads the cluster's webhook configurations through kubeconfig (read-only:
// two lists) and returns the WebhookConfigurationGuard's findings over them, with the checks'
// modes from the guard's entry in admissionConfigFile, or the defaults when there is none.
func webhookFindings(ctx context.Context, kubeconfig, admissionConfigFile string) ([]webhookconfigurationguard.Finding, string, error) {
	cfg, err := guardConfiguration(admissionConfigFile)
	if err != nil {
		return nil, "", err
	}
	restConfig, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		return nil, "", fmt.Errorf("--kubeconfig %s: %w", kubeconfig, err)
	}
	client, err := kubernetes.NewForConfig(restConfig)
	if err != nil {
		return nil, "", fmt.Errorf("--kubeconfig %s: %w", kubeconfig, err)
	}
	mutating, err := client.AdmissionregistrationV1().MutatingWebhookConfigurations().List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, "", fmt.Errorf("listing MutatingWebhookConfigurations through %s: %w", kubeconfig, err)
	}
	validating, err := client.AdmissionregistrationV1().ValidatingWebhookConfigurations().List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, "", fmt.Errorf("listing ValidatingWebhookConfigurations through %s: %w", kubeconfig, err)
	}
	summary := fmt.Sprintf("%d MutatingWebhookConfigurations and %d ValidatingWebhookConfigurations read through %s", len(mutating.Items), len(validating.Items), kubeconfig)
	findings := webhookconfigurationguard.CheckCluster(cfg, mutating.Items, validating.Items)
	metrics, err := client.CoreV1().RESTClient().Get().AbsPath("/metrics").DoRaw(ctx)
	if err != nil {
		// Reading metrics needs get on the non-resource URL /metrics; the configurations'
		// findings stand without it.
		summary += fmt.Sprintf("; the idempotency probe's results not read (GET /metrics: %v)", err)
		return findings, summary, nil
	}
	probed, err := idempotencyFindings(metrics, mutating.Items, restConfig.Host)
	if err != nil {
		summary += fmt.Sprintf("; the idempotency probe's results not read (%v)", err)
	}
	return append(findings, probed...), summary, nil
}

// idempotencyFindings reports each mutating webhook the idempotency probe of the server
// whose /metrics text is metrics found not idempotent (portcullis_admission_webhook_
// idempotency_probes_total{result="not_idempotent"} above 0), with the configurations that
// have a webhook of that name.
func idempotencyFindings(metrics []byte, mutating []admissionregistrationv1.MutatingWebhookConfiguration, server string) ([]webhookconfigurationguard.Finding, error) {
	parser := expfmt.NewTextParser(model.UTF8Validation)
	families, err := parser.TextToMetricFamilies(bytes.NewReader(metrics))
	if err != nil {
		return nil, fmt.Errorf("parsing the server's metrics: %w", err)
	}
	family, ok := families[webhook.ProbesMetric]
	if !ok {
		return nil, nil
	}
	probes := map[string]map[string]float64{}
	for _, m := range family.GetMetric() {
		var name, result string
		for _, l := range m.GetLabel() {
			switch l.GetName() {
			case "name":
				name = l.GetValue()
			case "result":
				result = l.GetValue()
			}
		}
		if probes[name] == nil {
			probes[name] = map[string]float64{}
		}
		probes[name][result] += m.GetCounter().GetValue()
	}
	var findings []webhookconfigurationguard.Finding
	for _, name := range slices.Sorted(maps.Keys(probes)) {
		bad := probes[name][webhook.ProbeNotIdempotent]
		if bad == 0 {
			continue
		}
		var configurations []string
		for _, c := range mutating {
			for _, h := range c.Webhooks {
				if h.Name == name {
					configurations = append(configurations, c.Name)
				}
			}
		}
		in := "no MutatingWebhookConfiguration has it any more"
		if len(configurations) > 0 {
			in = "MutatingWebhookConfiguration " + strings.Join(configurations, ", ")
		}
		findings = append(findings, webhookconfigurationguard.Finding{Message: fmt.Sprintf(
			"mutating webhook %s (%s) is not idempotent: given its own output, it changed it again in %.0f of %.0f idempotency probes of the server at %s; "+
				"it will misbehave when reinvoked (reinvocationPolicy IfNeeded) — the server's log line \"Mutating webhook is not idempotent\" names the paths",
			name, in, bad, bad+probes[name][webhook.ProbeIdempotent], server)})
	}
	return findings, nil
}

// guardConfiguration returns the guard's configuration from the admission config file, as
// the server reads it (defaults when the file or the entry is absent).
func guardConfiguration(admissionConfigFile string) (*portcullisapi.WebhookConfigurationGuardConfiguration, error) {
	entry, err := pluginEntry(admissionConfigFile, webhookconfigurationguard.PluginName)
	if err != nil {
		return nil, err
	}
	cfg, err := webhookconfigurationguard.LoadConfiguration(entry)
	if err != nil && admissionConfigFile != "" {
		return nil, fmt.Errorf("--admission-control-config-file %s: %w", admissionConfigFile, err)
	}
	return cfg, err
}

// pluginEntry returns plugin's entry in the admission config file, as the server reads it
// (nil when the file or the entry is absent).
func pluginEntry(admissionConfigFile, plugin string) (io.Reader, error) {
	if admissionConfigFile == "" {
		return nil, nil
	}
	scheme := runtime.NewScheme()
	apiserverconfiginstall.Install(scheme)
	provider, err := admission.ReadAdmissionConfiguration([]string{plugin}, admissionConfigFile, scheme)
	if err != nil {
		return nil, fmt.Errorf("--admission-control-config-file %s: %w", admissionConfigFile, err)
	}
	entry, err := provider.ConfigFor(plugin)
	if err != nil {
		return nil, fmt.Errorf("--admission-control-config-file %s: %w", admissionConfigFile, err)
	}
	return entry, nil
}

// printWebhookFindings prints the findings, each with its level.
func printWebhookFindings(w io.Writer, summary string, findings []webhookconfigurationguard.Finding) {
	fmt.Fprintf(w, "Webhook configurations against the admission webhook good practices (%s):\n", summary)
	if len(findings) == 0 {
		fmt.Fprintln(w, "  no finding")
	}
	for _, f := range findings {
		level := "Warn"
		if f.Deny {
			level = "Deny"
		}
		fmt.Fprintf(w, "  [%s] %s\n", level, f.Message)
	}
}
