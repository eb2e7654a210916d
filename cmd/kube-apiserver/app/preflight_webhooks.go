package app

import (
	"context"
	"fmt"
	"io"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apiserver/pkg/admission"
	apiserverconfiginstall "k8s.io/apiserver/pkg/apis/apiserver/install"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"

	guardv1alpha1 "github.com/portcullis-k8s/api/admission/v1alpha1"
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
	return webhookconfigurationguard.CheckCluster(cfg, mutating.Items, validating.Items), summary, nil
}

// guardConfiguration returns the guard's configuration from the admission config file, as
// the server reads it (defaults when the file or the entry is absent).
func guardConfiguration(admissionConfigFile string) (*guardv1alpha1.WebhookConfigurationGuardConfiguration, error) {
	var entry io.Reader
	if admissionConfigFile != "" {
		scheme := runtime.NewScheme()
		apiserverconfiginstall.Install(scheme)
		provider, err := admission.ReadAdmissionConfiguration([]string{webhookconfigurationguard.PluginName}, admissionConfigFile, scheme)
		if err != nil {
			return nil, fmt.Errorf("--admission-control-config-file %s: %w", admissionConfigFile, err)
		}
		if entry, err = provider.ConfigFor(webhookconfigurationguard.PluginName); err != nil {
			return nil, fmt.Errorf("--admission-control-config-file %s: %w", admissionConfigFile, err)
		}
	}
	cfg, err := webhookconfigurationguard.LoadConfiguration(entry)
	if err != nil && admissionConfigFile != "" {
		return nil, fmt.Errorf("--admission-control-config-file %s: %w", admissionConfigFile, err)
	}
	return cfg, err
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
