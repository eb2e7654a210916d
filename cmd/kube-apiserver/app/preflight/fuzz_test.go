package preflight

import (
	"strings"
	"testing"

	"k8s.io/kubernetes/cmd/kube-apiserver/app/options"

	"github.com/portcullis-k8s/portcullis/cmd/kube-apiserver/app/serveroptions"
	portcullisadmission "github.com/portcullis-k8s/portcullis/pkg/admission"
)

// The seed corpus below is the inputs of preflight_test.go;
// crashers Go finds are kept under testdata/fuzz/<target>.

// FuzzParseServerFlags parses a command line (one argument a line) as preflight does, with
// our options and, for the comparison with stock, with stock's options after our plugin
// names are taken out of the admission flags.
func FuzzParseServerFlags(f *testing.F) {
	for _, seed := range [][]string{
		{"--secure-port=6443", "--tls-cert-file=/etc/kubernetes/pki/apiserver.crt"},
		{"--etcd-servers=https://10.0.0.1:2379,https://10.0.0.2:2379", "--v=2", "--profiling=false"},
		{"--enable-admission-plugins=NodeRestriction,PodPreset,SecurityContextDeny", "--disable-admission-plugins", "DenyEscalatingExec,ResourceQuota", "--v=2"},
		{"--enable_admission_plugins=PodSecurityPolicy", "--admission-control", "AlwaysAdmit,WebhookConfigurationGuard"},
		{"--etcd_servers=https://127.0.0.1:2379", "--feature-gates=AllAlpha=false", "--runtime-config=policy/v1beta1=true"},
		{"--admission-control-config-file=/etc/kubernetes/admission.yaml", "--", "--enable-admission-plugins=PodPreset"},
		{"positional", ""},
		{"--enable-admission-plugins"},
		// pflag reads the lists as CSV: withoutOurPlugins left a quoted name of ours in.
		{`--enable-admission-plugins="PodPreset",NodeRestriction`, "--disable-admission-plugins", `"Security""ContextDeny",WebhookConfigurationGuard`},
		{"--disable-admission-plugins", `"Security""ContextDeny", "WebhookConfigurationGuard"`},
		{"-v", "3", "--bogus"},
	} {
		f.Add(strings.Join(seed, "\n"))
	}
	ours := map[string]bool{}
	for _, p := range portcullisadmission.Plugins() {
		ours[p.Name] = true
	}
	f.Fuzz(func(t *testing.T, commandLine string) {
		args := strings.Split(commandLine, "\n")
		s, _, err := serveroptions.New()
		if err != nil {
			t.Fatal(err)
		}
		_, oursErr := parseServerFlags(s, args)

		stripped := withoutOurPlugins(args)
		if len(stripped) != len(args) {
			t.Fatalf("withoutOurPlugins changed the number of arguments: %q into %q", args, stripped)
		}
		stock := options.NewServerRunOptions()
		_, stockErr := parseServerFlags(stock, stripped)
		// Stock has the same flags and only the admission lists' values changed, which
		// parsing does not judge.
		if (oursErr == nil) != (stockErr == nil) {
			t.Fatalf("ours parses %q with %v, stock parses %q with %v", args, oursErr, stripped, stockErr)
		}
		if stockErr != nil {
			return
		}
		for _, list := range [][]string{stock.Admission.GenericAdmission.EnablePlugins, stock.Admission.GenericAdmission.DisablePlugins, stock.Admission.PluginNames} {
			for _, name := range list {
				if ours[strings.TrimSpace(name)] {
					t.Errorf("our plugin %q is still on stock's command line %q", name, stripped)
				}
			}
		}
	})
}
