package app

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"

	"github.com/spf13/pflag"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	apiserverconfig "k8s.io/apiserver/pkg/apis/apiserver"
	apiserverconfiginstall "k8s.io/apiserver/pkg/apis/apiserver/install"
	apiserverconfigvalidation "k8s.io/apiserver/pkg/apis/apiserver/validation"
	"k8s.io/apiserver/pkg/audit/policy"
	"k8s.io/apiserver/pkg/authentication/token/tokenfile"
	authorizationcel "k8s.io/apiserver/pkg/authorization/cel"
	"k8s.io/apiserver/pkg/server/egressselector"
	genericoptions "k8s.io/apiserver/pkg/server/options"
	"k8s.io/apiserver/pkg/server/options/encryptionconfig"
	utilfeature "k8s.io/apiserver/pkg/util/feature"
	webhookutil "k8s.io/apiserver/pkg/util/webhook"
	"k8s.io/client-go/rest"
	certutil "k8s.io/client-go/util/cert"
	tracingapi "k8s.io/component-base/tracing/api/v1"
	"k8s.io/kubernetes/cmd/kube-apiserver/app/options"
	"k8s.io/kubernetes/pkg/kubeapiserver/authorizer"
	kubeoptions "k8s.io/kubernetes/pkg/kubeapiserver/options"
	"k8s.io/kubernetes/pkg/serviceaccount"

	"github.com/portcullis-k8s/portcullis/cmd/kube-apiserver/app/nodeconfig"
)

// configLoaders load, for each flag naming a configuration file, that file with the loader
// the server uses at start-up, validating it as the server does. None of them contacts
// anything or starts background work.
var configLoaders = []struct {
	flag string
	load func(ctx context.Context, r *PreflightReport, s *options.ServerRunOptions, path string) error
}{
	{"audit-policy-file", func(_ context.Context, _ *PreflightReport, _ *options.ServerRunOptions, path string) error {
		_, err := policy.LoadPolicyFromFile(path)
		return err
	}},
	{"encryption-provider-config", loadEncryptionConfig},
	{"authentication-config", func(_ context.Context, _ *PreflightReport, s *options.ServerRunOptions, path string) error {
		// Only the file and the flag it conflicts with: the other authenticators' files are
		// checked under their own flags.
		authn := &kubeoptions.BuiltInAuthenticationOptions{AuthenticationConfigFile: path, Anonymous: s.Authentication.Anonymous}
		_, err := authn.ToAuthenticationConfig()
		return err
	}},
	{"authorization-config", func(_ context.Context, _ *PreflightReport, _ *options.ServerRunOptions, path string) error {
		_, _, err := authorizer.LoadAndValidateFile(path, authorizationcel.NewDefaultCompiler(), nil)
		return err
	}},
	{"egress-selector-config-file", func(_ context.Context, _ *PreflightReport, _ *options.ServerRunOptions, path string) error {
		config, err := egressselector.ReadEgressSelectorConfiguration(path)
		if err != nil {
			return err
		}
		return egressselector.ValidateEgressSelectorConfiguration(config).ToAggregate()
	}},
	{"tracing-config-file", func(_ context.Context, _ *PreflightReport, _ *options.ServerRunOptions, path string) error {
		config, err := genericoptions.ReadTracingConfiguration(path)
		if err != nil {
			return err
		}
		return tracingapi.ValidateTracingConfiguration(config, utilfeature.DefaultFeatureGate, nil).ToAggregate()
	}},
	{"token-auth-file", func(_ context.Context, _ *PreflightReport, _ *options.ServerRunOptions, path string) error {
		_, err := tokenfile.NewCSV(path)
		return err
	}},
	{"audit-webhook-config-file", loadWebhookKubeconfig},
	{"authentication-token-webhook-config-file", loadWebhookKubeconfig},
	{"authorization-webhook-config-file", loadWebhookKubeconfig},
}

// checkConfigFiles reports, by flag and file, each configuration file the server would
// refuse at start-up. Unreadable files are left to checkFiles.
func checkConfigFiles(ctx context.Context, r *PreflightReport, s *options.ServerRunOptions, fs *pflag.FlagSet) {
	for _, loader := range configLoaders {
		for _, path := range flagValues(fs, loader.flag) {
			if !readable(path) {
				continue
			}
			if err := loader.load(ctx, r, s, path); err != nil {
				r.problem("--%s %s: %v", loader.flag, path, err)
			}
		}
	}
}

// loadWebhookKubeconfig loads a webhook's kubeconfig as the server's webhook clients do and
// builds its TLS configuration, which reads and parses the certificates it names.
func loadWebhookKubeconfig(_ context.Context, _ *PreflightReport, _ *options.ServerRunOptions, path string) error {
	config, err := webhookutil.LoadKubeconfig(path, nil)
	if err != nil {
		return err
	}
	_, err = rest.TLSConfigFor(config)
	return err
}

// loadEncryptionConfig loads the encryption configuration with the server's loader. That
// loader also dials each KMS plugin and keeps probing it, so a configuration with a KMS
// provider is only decoded and validated, and the plugins are named in a note.
func loadEncryptionConfig(ctx context.Context, r *PreflightReport, _ *options.ServerRunOptions, path string) error {
	if config, err := decodeEncryptionConfig(path); err == nil {
		if endpoints := kmsEndpoints(config); len(endpoints) > 0 {
			r.Notes = append(r.Notes, fmt.Sprintf("--encryption-provider-config %s: preflight contacts no KMS plugin (%s); the server does at start-up", path, strings.Join(endpoints, ", ")))
			return apiserverconfigvalidation.ValidateEncryptionConfiguration(config, false).ToAggregate()
		}
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	_, err := encryptionconfig.LoadEncryptionConfig(ctx, path, false, "preflight")
	return err
}

func decodeEncryptionConfig(path string) (*apiserverconfig.EncryptionConfiguration, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	scheme := runtime.NewScheme()
	apiserverconfiginstall.Install(scheme)
	obj, err := runtime.Decode(serializer.NewCodecFactory(scheme, serializer.EnableStrict).UniversalDecoder(), data)
	if err != nil {
		return nil, err
	}
	config, ok := obj.(*apiserverconfig.EncryptionConfiguration)
	if !ok {
		return nil, fmt.Errorf("not an EncryptionConfiguration: %T", obj)
	}
	return config, nil
}

func kmsEndpoints(config *apiserverconfig.EncryptionConfiguration) []string {
	var endpoints []string
	for _, resource := range config.Resources {
		for _, provider := range resource.Providers {
			if provider.KMS != nil {
				endpoints = append(endpoints, provider.KMS.Name+" at "+provider.KMS.Endpoint)
			}
		}
	}
	return endpoints
}

// checkSNICertKeys checks that each --tls-sni-cert-key pair is readable and matches.
func checkSNICertKeys(r *PreflightReport, s *options.ServerRunOptions) {
	for _, pair := range s.SecureServing.SNICertKeys {
		var missing []string
		for _, path := range []string{pair.CertFile, pair.KeyFile} {
			if f, err := os.Open(path); err != nil {
				missing = append(missing, err.Error())
			} else {
				f.Close()
			}
		}
		if len(missing) > 0 {
			r.problem("--tls-sni-cert-key %s,%s: %s", pair.CertFile, pair.KeyFile, strings.Join(missing, "; "))
			continue
		}
		if _, err := tls.LoadX509KeyPair(pair.CertFile, pair.KeyFile); err != nil {
			r.problem("--tls-sni-cert-key %s,%s: %v", pair.CertFile, pair.KeyFile, err)
		}
	}
}

// checkWritableDirectories reports the directories the server writes to at start-up that
// it could not: --cert-dir when it has to generate its serving certificate there, and the
// directory of --audit-log-path, which it creates when missing. Writability is that of the
// user running preflight, so run it as the server's user.
func checkWritableDirectories(r *PreflightReport, s *options.ServerRunOptions) {
	serving := s.SecureServing
	if serving.BindPort != 0 && serving.ServerCert.CertKey.CertFile == "" && serving.ServerCert.CertKey.KeyFile == "" && serving.ServerCert.CertDirectory != "" {
		dir := serving.ServerCert.CertDirectory
		cert := filepath.Join(dir, serving.ServerCert.PairName+".crt")
		key := filepath.Join(dir, serving.ServerCert.PairName+".key")
		if ok, _ := certutil.CanReadCertAndKey(cert, key); !ok {
			r.writtenPaths = append(r.writtenPaths, [2]string{"cert-dir", dir})
			if _, err := creatableDirectory(dir); err != nil {
				r.problem("--cert-dir %s: the server writes its self-signed serving certificate there, but %v", dir, err)
			}
		}
	}
	if path := s.Audit.LogOptions.Path; path != "" && path != "-" {
		r.writtenPaths = append(r.writtenPaths, [2]string{"audit-log-path", path})
		dir := filepath.Dir(path)
		missing, err := creatableDirectory(dir)
		switch {
		case err != nil:
			r.problem("--audit-log-path %s: directory %s: %v", path, dir, err)
		case missing:
			r.Notes = append(r.Notes, fmt.Sprintf("--audit-log-path %s: directory %s does not exist; the server will create it", path, dir))
		}
	}
}

// checkSandbox reports each file the server reads or writes that the systemd unit's sandbox
// keeps from it: preflight, outside the sandbox, finds it readable or writable, but the
// server would not.
func (r *PreflightReport) checkSandbox(service *nodeconfig.SystemdService) {
	for _, named := range r.namedFiles {
		if why := service.CannotRead(named[1]); why != "" {
			r.problem("--%s %s: the server cannot read it under the unit's sandbox: %s", named[0], named[1], why)
		}
	}
	for _, written := range r.writtenPaths {
		if why := service.CannotWrite(written[1]); why != "" {
			r.problem("--%s %s: the server cannot write it under the unit's sandbox: %s", written[0], written[1], why)
		}
	}
}

// wOK and xOK are access(2)'s W_OK and X_OK.
const wOK, xOK = 0x2, 0x1

// creatableDirectory reports whether dir is missing, and an error when it is not a
// writable directory and cannot be created as one.
func creatableDirectory(dir string) (missing bool, err error) {
	for p := dir; ; p = filepath.Dir(p) {
		info, err := os.Stat(p)
		switch {
		case err == nil && !info.IsDir():
			return p != dir, fmt.Errorf("%s is not a directory", p)
		case err == nil:
			if err := syscall.Access(p, wOK|xOK); err != nil {
				return p != dir, fmt.Errorf("%s is not writable: %w", p, err)
			}
			return p != dir, nil
		case !errors.Is(err, fs.ErrNotExist):
			return false, err
		case filepath.Dir(p) == p:
			return true, err
		}
	}
}

// externalSignerNotContacted stands in for the --service-account-signing-endpoint plugin,
// which the server dials while completing its options: preflight contacts nothing, and
// never signs or verifies a token.
type externalSignerNotContacted struct {
	serviceaccount.TokenGenerator
	serviceaccount.PublicKeysGetter
}

func readable(path string) bool {
	f, err := os.Open(path)
	if err != nil {
		return false
	}
	f.Close()
	return true
}
