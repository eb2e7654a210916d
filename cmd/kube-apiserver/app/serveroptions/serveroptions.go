// Package serveroptions holds what the server and its preflight share: stock
// kube-apiserver's options with Portcullis's admission plugins installed, the flags they
// define, and the server's scheme knowing our kinds.
package serveroptions

import (
	"fmt"

	"k8s.io/apiserver/pkg/server/flagz"
	cliflag "k8s.io/component-base/cli/flag"
	"k8s.io/component-base/cli/globalflag"
	"k8s.io/component-base/logs"
	"k8s.io/component-base/version/verflag"
	"k8s.io/kubernetes/cmd/kube-apiserver/app/options"
	"k8s.io/kubernetes/pkg/api/legacyscheme"
	_ "k8s.io/kubernetes/pkg/apis/admissionregistration/install" // upstream's first, see init
	_ "k8s.io/kubernetes/pkg/apis/policy/install"

	portcullisadmission "github.com/portcullis-k8s/portcullis/pkg/admission"
	admissionregistrationinstall "github.com/portcullis-k8s/portcullis/pkg/apis/admissionregistration/install"
	policyinstall "github.com/portcullis-k8s/portcullis/pkg/apis/policy/install"
)

func init() {
	// The server's scheme knows our kinds from process start, as it knows upstream's groups
	// (k8s.io/kubernetes/pkg/apis/*/install do the same), so that the storage can encode and
	// decode them. Knowing a kind serves nothing; the command's serveNativeAPIs decides what
	// is served. Upstream's installs of the same groups run first (imported below, so their
	// init functions come before this one): ours add kinds to versions upstream registers.
	policyinstall.Install(legacyscheme.Scheme)
	admissionregistrationinstall.Install(legacyscheme.Scheme)
}

// New returns stock kube-apiserver's options with Portcullis's admission plugins
// installed: registered, ordered and default-off. The settings carry the admission config
// file's Portcullis entry to the plugins; set them once the flags are parsed.
func New() (*options.ServerRunOptions, *portcullisadmission.Settings, error) {
	s := options.NewServerRunOptions()
	settings, err := portcullisadmission.Install(s.Admission)
	if err != nil {
		return nil, nil, fmt.Errorf("installing Portcullis admission plugins: %w", err)
	}
	return s, settings, nil
}

// NamedFlagSets returns the server's flags by help section, as stock defines them: the
// options' own, then --version and the global logging flags.
func NamedFlagSets(s *options.ServerRunOptions, name string) cliflag.NamedFlagSets {
	fss := s.Flags()
	s.Flagz = flagz.NamedFlagSetsReader{FlagSets: fss}
	globalFlags := fss.FlagSet("global")
	verflag.AddFlags(globalFlags)
	globalflag.AddGlobalFlags(globalFlags, name, logs.SkipLoggingConfigurationFlags())
	return fss
}
