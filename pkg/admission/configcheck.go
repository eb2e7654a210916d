package admission

import (
	"fmt"
	"slices"

	"k8s.io/apimachinery/pkg/runtime"
	genericadmission "k8s.io/apiserver/pkg/admission"
	apiserverinstall "k8s.io/apiserver/pkg/apis/apiserver/install"
	kubeoptions "k8s.io/kubernetes/pkg/kubeapiserver/options"
)

// CheckConfigurations reads the configuration of every enabled plugin of ours that takes one
// (Plugin.CheckConfig) from the admission config file, as its factory will: upstream builds
// the admission chain only after it has dialled etcd, and a bad entry must stop the start
// before that, naming the file and the plugin.
func CheckConfigurations(opts *kubeoptions.AdmissionOptions) error {
	file := opts.GenericAdmission.ConfigFile
	enabled := EnabledPlugins(opts)
	var names []string
	for _, p := range Plugins() {
		if p.CheckConfig != nil && slices.Contains(enabled, p.Name) {
			names = append(names, p.Name)
		}
	}
	if len(names) == 0 {
		return nil
	}
	scheme := runtime.NewScheme()
	apiserverinstall.Install(scheme)
	provider, err := genericadmission.ReadAdmissionConfiguration(names, file, scheme)
	if err != nil {
		return fmt.Errorf("--admission-control-config-file %s: %w", file, err)
	}
	for _, p := range Plugins() {
		if !slices.Contains(names, p.Name) {
			continue
		}
		config, err := provider.ConfigFor(p.Name)
		if err != nil {
			return fmt.Errorf("--admission-control-config-file %s: %w", file, err)
		}
		if err := p.CheckConfig(config); err != nil {
			return fmt.Errorf("--admission-control-config-file %s: the entry of %s: %w", file, p.Name, err)
		}
	}
	return nil
}
