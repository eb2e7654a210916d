package preflight

import (
	"bytes"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"os/user"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"

	"github.com/spf13/pflag"
	"sigs.k8s.io/yaml"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	"k8s.io/apimachinery/pkg/util/sets"
	apiserverconfig "k8s.io/apiserver/pkg/apis/apiserver"
	apiserverconfiginstall "k8s.io/apiserver/pkg/apis/apiserver/install"
	apiserverconfigv1 "k8s.io/apiserver/pkg/apis/apiserver/v1"
	apiserverconfigv1alpha1 "k8s.io/apiserver/pkg/apis/apiserver/v1alpha1"
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
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	certutil "k8s.io/client-go/util/cert"
	tracingapi "k8s.io/component-base/tracing/api/v1"
	"k8s.io/kubernetes/cmd/kube-apiserver/app/options"
	"k8s.io/kubernetes/pkg/kubeapiserver/authorizer"
	kubeoptions "k8s.io/kubernetes/pkg/kubeapiserver/options"
	"k8s.io/kubernetes/pkg/serviceaccount"

	"github.com/portcullis-k8s/portcullis/cmd/kube-apiserver/app/nodeconfig"
	portcullisadmission "github.com/portcullis-k8s/portcullis/pkg/admission"
	"github.com/portcullis-k8s/portcullis/pkg/admission/enforcement"
	"github.com/portcullis-k8s/portcullis/pkg/admission/portcullisconfig"
	portcullisapi "github.com/portcullis-k8s/portcullis/pkg/apis/admission"
	"github.com/portcullis-k8s/portcullis/plugin/pkg/admission/initialresources"
	webhookmutating "github.com/portcullis-k8s/portcullis/plugin/pkg/admission/webhook/mutating"
	webhookvalidating "github.com/portcullis-k8s/portcullis/plugin/pkg/admission/webhook/validating"
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
// server would not; and, by checkReadableAsUnit, each file the unit's user and capabilities
// leave it unable to read.
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
	r.checkReadableAsUnit(service)
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

// legacyEnforcementEntry is the entry that held the enforcement modes before the Portcullis
// entry; portcullisconfig.Load reads it, as it reads the Portcullis entry, whatever the
// plugins.
const legacyEnforcementEntry = "EnforcementModes"

// admissionConfigScheme decodes the admission config file as the server does: the kinds of
// k8s.io/apiserver/pkg/server/options' configScheme, strict.
var admissionConfigScheme = func() *runtime.Scheme {
	scheme := runtime.NewScheme()
	utilruntime.Must(apiserverconfig.AddToScheme(scheme))
	utilruntime.Must(apiserverconfigv1alpha1.AddToScheme(scheme))
	utilruntime.Must(apiserverconfigv1.AddToScheme(scheme))
	return scheme
}()

// admissionNamedFile is a file the admission config file names, directly or through a file
// it names.
type admissionNamedFile struct {
	// label says where the file is named: the admission config file, the entry
	// (plugins[i] (Name)) and the field.
	label, path string
	// loadedAtStart says the server reads the file while it builds the admission chain (or
	// reads the Portcullis entry) and refuses to start without it: that load reports it, so
	// preflight does not report it again.
	loadedAtStart bool
	// entryPath says the file is a plugin entry's path:, read while the chain is built.
	entryPath bool
}

// checkAdmissionConfigFiles checks the files that --admission-control-config-file names, as
// checkFiles checks the flags': each plugin entry's path, the webhook plugins' kubeconfig and
// the client certificates, keys and token files its users name, ImagePolicyWebhook's
// kubeconfig and the files it names, and InitialResources' Prometheus CA and token files.
// Each is named (by file, entry and field) for the static pod's mounts and the unit's
// sandbox; one that is missing or unreadable is a problem, unless the load of the admission
// chain or of the Portcullis entry reports it already. Only the entries the server reads
// count: those of enabled plugins (the first of each name, as upstream takes it), and ours.
// A file that does not parse is left to those loads.
//
// It returns whether an enabled plugin's entry names a path: it cannot read: upstream's
// chain load then exits the process (klog.Fatalf) rather than return an error, so preflight
// must not build the chains.
func checkAdmissionConfigFiles(r *PreflightReport, s *options.ServerRunOptions) (unreadablePluginPath bool) {
	file := s.Admission.GenericAdmission.ConfigFile
	if file == "" || !readable(file) {
		return false // none, or reported by checkFiles
	}
	for _, named := range admissionConfigFiles(file, portcullisadmission.EnabledPlugins(s.Admission)) {
		r.namedFiles = append(r.namedFiles, [2]string{"admission-control-config-file " + named.label, named.path})
		if named.loadedAtStart {
			continue
		}
		if f, err := os.Open(named.path); err != nil {
			r.problem("%s %s: %v", named.label, named.path, err)
			unreadablePluginPath = unreadablePluginPath || named.entryPath
		} else {
			f.Close()
		}
	}
	return unreadablePluginPath
}

// admissionConfigFiles lists the files the admission config file names in the entries the
// server reads, with enabled the plugins it enables.
func admissionConfigFiles(file string, enabled []string) []admissionNamedFile {
	data, err := os.ReadFile(file)
	if err != nil {
		return nil
	}
	obj, err := runtime.Decode(serializer.NewCodecFactory(admissionConfigScheme, serializer.EnableStrict).UniversalDecoder(), data)
	if err != nil {
		// Upstream's legacy unversioned form: ImagePolicyWebhook's own configuration is the
		// whole file. Anything else is the admission chain's load to report.
		if (runtime.IsMissingVersion(err) || runtime.IsMissingKind(err) || runtime.IsNotRegisteredError(err)) && slices.Contains(enabled, "ImagePolicyWebhook") {
			return imagePolicyFiles(file+" (ImagePolicyWebhook's configuration, in the legacy unversioned form)", data)
		}
		return nil
	}
	config, ok := obj.(*apiserverconfig.AdmissionConfiguration)
	if !ok {
		return nil
	}
	var files []admissionNamedFile
	seen := sets.New[string]()
	for i, entry := range config.Plugins {
		if seen.Has(entry.Name) {
			continue // upstream reads a plugin's first entry only
		}
		seen.Insert(entry.Name)
		ours := entry.Name == portcullisconfig.EntryName || entry.Name == legacyEnforcementEntry
		if !ours && !slices.Contains(enabled, entry.Name) {
			continue // the server never reads the entry of a plugin it does not enable
		}
		at := fmt.Sprintf("%s: plugins[%d] (%s)", file, i, entry.Name)
		var entryConfig []byte
		switch {
		case entry.Configuration != nil:
			entryConfig = entry.Configuration.Raw
		case entry.Path != "":
			// Relative to the admission config file's directory, as upstream's
			// ReadAdmissionConfiguration resolves it. Our entries' files are read, and
			// reported, by portcullisconfig.Load; a plugin's by the chain's load, which
			// exits the process (klog.Fatalf) instead of returning an error.
			path := entry.Path
			if !filepath.IsAbs(path) {
				path = filepath.Join(filepath.Dir(file), path)
			}
			files = append(files, admissionNamedFile{label: at + ": path", path: path, loadedAtStart: ours, entryPath: !ours})
			if entryConfig, err = os.ReadFile(path); err != nil {
				continue
			}
		}
		if ours || entryConfig == nil {
			continue
		}
		switch entry.Name {
		case webhookmutating.PluginName, webhookvalidating.PluginName:
			files = append(files, webhookKubeconfigFiles(at, entry.Name, entryConfig)...)
		case "ImagePolicyWebhook":
			files = append(files, imagePolicyFiles(at, entryConfig)...)
		case initialresources.PluginName:
			files = append(files, initialResourcesFiles(at, entryConfig)...)
		}
	}
	return files
}

// webhookKubeconfigFiles are the files of a webhook plugin's entry: its kubeConfigFile, which
// the plugin loads at start (upstream requires an absolute path), and the client
// certificates, keys and token files of its users, which the server reads only when it calls
// a webhook (its clusters are not read: a webhook's CA bundle is its configuration's).
// Relative paths in the kubeconfig are relative to its directory, as client-go resolves them.
func webhookKubeconfigFiles(at, plugin string, config []byte) []admissionNamedFile {
	upstream, _, err := portcullisconfig.WebhookEntry(config, plugin == webhookvalidating.PluginName)
	if err != nil {
		return nil
	}
	kubeconfig, err := upstreamWebhookKubeConfigFile(bytes.NewReader(upstream))
	if err != nil || kubeconfig == "" {
		return nil
	}
	files := []admissionNamedFile{{label: at + ": kubeConfigFile", path: kubeconfig, loadedAtStart: true}}
	raw, err := rawKubeconfig(kubeconfig)
	if err != nil {
		return files
	}
	for _, name := range slices.Sorted(maps.Keys(raw.AuthInfos)) {
		authInfo := raw.AuthInfos[name]
		for _, f := range [][2]string{{"client-certificate", authInfo.ClientCertificate}, {"client-key", authInfo.ClientKey}, {"tokenFile", authInfo.TokenFile}} {
			if f[1] != "" {
				files = append(files, admissionNamedFile{label: fmt.Sprintf("%s: kubeConfigFile %s: user %s: %s", at, kubeconfig, name, f[0]), path: f[1]})
			}
		}
	}
	return files
}

// imagePolicyFiles are the files of ImagePolicyWebhook's configuration: imagePolicy.kubeConfigFile
// and the certificate authority, client certificate, key and token file of its current
// context. The plugin loads them all at start, building its client, so the chain's load
// reports any that is missing.
func imagePolicyFiles(at string, config []byte) []admissionNamedFile {
	// Upstream decodes it loosely (yaml.NewYAMLOrJSONDecoder), and so does this.
	var decoded struct {
		ImagePolicy struct {
			KubeConfigFile string `json:"kubeConfigFile"`
		} `json:"imagePolicy"`
	}
	if err := yaml.Unmarshal(config, &decoded); err != nil || decoded.ImagePolicy.KubeConfigFile == "" {
		return nil
	}
	kubeconfig := decoded.ImagePolicy.KubeConfigFile
	files := []admissionNamedFile{{label: at + ": imagePolicy.kubeConfigFile", path: kubeconfig, loadedAtStart: true}}
	raw, err := rawKubeconfig(kubeconfig)
	if err != nil {
		return files
	}
	current := raw.Contexts[raw.CurrentContext]
	if current == nil {
		return files
	}
	prefix := fmt.Sprintf("%s: imagePolicy.kubeConfigFile %s: ", at, kubeconfig)
	if cluster := raw.Clusters[current.Cluster]; cluster != nil && cluster.CertificateAuthority != "" {
		files = append(files, admissionNamedFile{label: prefix + "cluster " + current.Cluster + ": certificate-authority", path: cluster.CertificateAuthority, loadedAtStart: true})
	}
	if authInfo := raw.AuthInfos[current.AuthInfo]; authInfo != nil {
		for _, f := range [][2]string{{"client-certificate", authInfo.ClientCertificate}, {"client-key", authInfo.ClientKey}, {"tokenFile", authInfo.TokenFile}} {
			if f[1] != "" {
				files = append(files, admissionNamedFile{label: prefix + "user " + current.AuthInfo + ": " + f[0], path: f[1], loadedAtStart: true})
			}
		}
	}
	return files
}

// initialResourcesFiles are InitialResources' Prometheus CA and token files, when Prometheus
// is one of its sources: the plugin reads the CA file and checks the token file at start, so
// the chain's load reports either missing.
func initialResourcesFiles(at string, config []byte) []admissionNamedFile {
	cfg, err := initialresources.LoadConfiguration(bytes.NewReader(config))
	if err != nil || cfg.Prometheus == nil || !slices.Contains(cfg.Sources, portcullisapi.InitialResourcesSourcePrometheus) {
		return nil
	}
	var files []admissionNamedFile
	for _, f := range [][2]string{{"prometheus.caFile", cfg.Prometheus.CAFile}, {"prometheus.bearerTokenFile", cfg.Prometheus.BearerTokenFile}} {
		if f[1] != "" {
			files = append(files, admissionNamedFile{label: at + ": " + f[0], path: f[1], loadedAtStart: true})
		}
	}
	return files
}

// rawKubeconfig reads a kubeconfig as the server's webhook clients do (client-go's loading
// rules with the file as the explicit path), relative paths resolved against its directory.
func rawKubeconfig(path string) (clientcmdapi.Config, error) {
	rules := clientcmd.NewDefaultClientConfigLoadingRules()
	rules.ExplicitPath = path
	return clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, &clientcmd.ConfigOverrides{}).RawConfig()
}

// The access bits of a mode, in the others' place: read a file, search a directory.
const (
	readBit   fs.FileMode = 4
	searchBit fs.FileMode = 1
)

// mayAccess says whether a process of uid and gids holding caps gets the access want (readBit
// and/or searchBit) to a file owned by owner:group with permission bits perm, by the
// kernel's check without ACLs: the owner's bits for the owner, the group's for a member of the
// group, the others' for anyone else, whatever the other bits say. CAP_DAC_OVERRIDE and
// CAP_DAC_READ_SEARCH each read and search anything.
func mayAccess(uid uint32, gids []uint32, caps nodeconfig.CapabilitySet, owner, group uint32, perm, want fs.FileMode) bool {
	if caps.ReadsAnything() {
		return true
	}
	var bits fs.FileMode
	switch {
	case uid == owner:
		bits = perm >> 6
	case slices.Contains(gids, group):
		bits = perm >> 3
	default:
		bits = perm
	}
	return bits&want == want
}

// unitUser is who the unit runs the server as.
type unitUser struct {
	name string
	uid  uint32
	gids []uint32
	caps nodeconfig.CapabilitySet
	// why says who runs the server, without which capabilities, by which settings.
	why string
}

// may says whether the unit's user gets the access want to the file of info.
func (u unitUser) may(info fs.FileInfo, want fs.FileMode) bool {
	st, ok := info.Sys().(*syscall.Stat_t)
	if !ok {
		return true // nothing to judge by
	}
	return mayAccess(u.uid, u.gids, u.caps, st.Uid, st.Gid, info.Mode().Perm(), want)
}

// resolveUnitUser finds the uid and groups the unit runs the server with, as systemd sets
// them: root (no User=) keeps group 0 unless Group= names another; another user has its
// group (or Group='s) and the groups that list it; SupplementaryGroups= adds to either. It
// returns a note instead when it cannot tell.
func resolveUnitUser(service *nodeconfig.SystemdService) (unitUser, string) {
	u := unitUser{name: "root", caps: service.Capabilities()}
	var primary uint32
	if !service.RunsAsRoot() {
		if service.DynamicUser() {
			return u, fmt.Sprintf("%s: preflight cannot tell which user systemd allocates, so it does not check that the server may read the files it names by their permission bits", strings.Join(service.Assignments("DynamicUser"), "; "))
		}
		found, err := lookupUser(service.User())
		if err != nil {
			return u, fmt.Sprintf("%s: %v; preflight does not check that the server may read the files it names by their permission bits (systemd does not start a unit whose user it cannot find)", strings.Join(service.Assignments("User"), "; "), err)
		}
		uid, _ := strconv.ParseUint(found.Uid, 10, 32)
		gid, _ := strconv.ParseUint(found.Gid, 10, 32)
		u.name, u.uid, primary = found.Username, uint32(uid), uint32(gid)
		if groups, err := found.GroupIds(); err == nil {
			for _, g := range groups {
				if n, err := strconv.ParseUint(g, 10, 32); err == nil {
					u.gids = append(u.gids, uint32(n))
				}
			}
		}
	}
	if service.Group() != "" && !service.KeepsRoot() {
		gid, err := lookupGroup(service.Group())
		if err != nil {
			return u, fmt.Sprintf("%s: %v; preflight does not check that the server may read the files it names by their permission bits", strings.Join(service.Assignments("Group"), "; "), err)
		}
		primary = gid
	}
	if !service.KeepsRoot() {
		for _, name := range service.SupplementaryGroups() {
			gid, err := lookupGroup(name)
			if err != nil {
				return u, fmt.Sprintf("SupplementaryGroups=%s: %v; preflight does not check that the server may read the files it names by their permission bits", name, err)
			}
			u.gids = append(u.gids, gid)
		}
	}
	slices.Sort(u.gids)
	u.gids = append([]uint32{primary}, slices.DeleteFunc(slices.Compact(u.gids), func(g uint32) bool { return g == primary })...)
	groups := make([]string, len(u.gids))
	for i, g := range u.gids {
		groups[i] = strconv.FormatUint(uint64(g), 10)
	}
	u.why = fmt.Sprintf("the unit runs the server as %s (uid %d, groups %s) without CAP_DAC_OVERRIDE or CAP_DAC_READ_SEARCH (%s), so only the permission bits decide",
		u.name, u.uid, strings.Join(groups, ","), service.CapabilitySettings())
	return u, ""
}

// lookupUser finds a user by name or uid, as User= takes either.
func lookupUser(name string) (*user.User, error) {
	if _, err := strconv.ParseUint(name, 10, 32); err == nil {
		return user.LookupId(name)
	}
	return user.Lookup(name)
}

// lookupGroup finds a group's id by name, or takes a number as it is, as Group= does.
func lookupGroup(name string) (uint32, error) {
	if n, err := strconv.ParseUint(name, 10, 32); err == nil {
		return uint32(n), nil
	}
	g, err := user.LookupGroup(name)
	if err != nil {
		return 0, err
	}
	n, err := strconv.ParseUint(g.Gid, 10, 32)
	return uint32(n), err
}

// checkReadableAsUnit reports, when the unit leaves the server neither CAP_DAC_OVERRIDE nor
// CAP_DAC_READ_SEARCH (the kit's unit runs as root with CapabilityBoundingSet= empty), each
// file the server reads that its user and groups could not read by the permission bits, and
// each directory on the way to one that they could not search: preflight, running as root
// with every capability, reads them all. Files the sandbox hides, or missing ones, are
// reported by their own checks.
func (r *PreflightReport) checkReadableAsUnit(service *nodeconfig.SystemdService) {
	if service.Capabilities().ReadsAnything() {
		return
	}
	who, note := resolveUnitUser(service)
	if note != "" {
		r.Notes = append(r.Notes, note)
		return
	}
	blocked := map[string][]string{}
	var blockedOrder []string
	for _, named := range r.namedFiles {
		label := "--" + named[0] + " " + named[1]
		if service.CannotRead(named[1]) != "" {
			continue
		}
		path, err := filepath.Abs(named[1])
		if err != nil {
			continue
		}
		info, err := os.Stat(path)
		if err != nil {
			continue
		}
		for _, dir := range searchedDirectories(path) {
			dirInfo, err := os.Stat(dir)
			if err != nil || who.may(dirInfo, searchBit) {
				continue
			}
			if _, seen := blocked[dir]; !seen {
				blockedOrder = append(blockedOrder, dir)
			}
			if !slices.Contains(blocked[dir], label) {
				blocked[dir] = append(blocked[dir], label)
			}
		}
		if !info.IsDir() && !who.may(info, readBit) {
			r.problem("%s: the server could not read it as the unit runs it: it is owned by %s, mode %04o, and %s; chown it to %s, or give it a group the unit has (Group=, SupplementaryGroups=) and chmod g+r",
				label, ownerOf(info), info.Mode().Perm(), who.why, who.name)
		}
	}
	for _, dir := range blockedOrder {
		info, err := os.Stat(dir)
		if err != nil {
			continue
		}
		r.problem("directory %s: the server could not search it as the unit runs it, so it cannot reach %s: it is owned by %s, mode %04o, and %s; chown it to %s, give it a group the unit has (Group=, SupplementaryGroups=) and chmod g+x, or chmod o+x",
			dir, strings.Join(blocked[dir], ", "), ownerOf(info), info.Mode().Perm(), who.why, who.name)
	}
}

// searchedDirectories are the directories the kernel searches to open path: those on the
// path as given and, when symbolic links lead elsewhere, on the path they resolve to.
func searchedDirectories(path string) []string {
	var dirs []string
	add := func(p string) {
		for dir := filepath.Dir(p); ; dir = filepath.Dir(dir) {
			if !slices.Contains(dirs, dir) {
				dirs = append(dirs, dir)
			}
			if dir == filepath.Dir(dir) {
				return
			}
		}
	}
	add(path)
	if resolved, err := filepath.EvalSymlinks(path); err == nil && resolved != path {
		add(resolved)
	}
	slices.Sort(dirs)
	return dirs
}

// ownerOf names a file's owner and group, by name where the machine knows them.
func ownerOf(info fs.FileInfo) string {
	st, ok := info.Sys().(*syscall.Stat_t)
	if !ok {
		return "?"
	}
	owner, group := strconv.FormatUint(uint64(st.Uid), 10), strconv.FormatUint(uint64(st.Gid), 10)
	if u, err := user.LookupId(owner); err == nil {
		owner = u.Username
	}
	if g, err := user.LookupGroupId(group); err == nil {
		group = g.Name
	}
	return owner + ":" + group
}

// checkAuditModeHasAuditLog warns of each enabled plugin, and each webhook of an enabled
// webhook plugin, in an enforcement mode with Audit when the command line gives the server no
// audit log to write its would-be denials to: no audit backend (--audit-log-path,
// --audit-webhook-config-file), or no --audit-policy-file (without one the server logs
// nothing). Enabled plugins only: one that is not enabled is warned of by NotEnabled.
func checkAuditModeHasAuditLog(r *PreflightReport, s *options.ServerRunOptions, portcullis *portcullisconfig.Configuration) {
	backend := s.Audit.LogOptions.Path != "" || s.Audit.WebhookOptions.ConfigFile != ""
	policy := s.Audit.PolicyFile != ""
	if (backend && policy) || portcullis == nil {
		return
	}
	missing := "the command line has neither an audit backend nor --audit-policy-file"
	switch {
	case backend:
		missing = "the command line has an audit backend but no --audit-policy-file, without which the server logs nothing"
	case policy:
		missing = "the command line has --audit-policy-file but no audit backend"
	}
	warn := func(subject, label string) {
		r.Warnings = append(r.Warnings, fmt.Sprintf("%s runs in enforcement mode %s, but no audit log is configured (--audit-log-path or --audit-webhook-config-file, with --audit-policy-file): "+
			"what it would refuse is recorded nowhere; %s: configure both, with a policy that logs these requests at level Metadata or above, where the would-deny audit annotation records each",
			subject, label, missing))
	}
	enabled := portcullisadmission.EnabledPlugins(s.Admission)
	for _, p := range portcullis.EnforcementModes {
		if soften := enforcement.SoftenFor(p.Modes); soften.Audit && slices.Contains(enabled, p.Name) {
			warn(p.Name, soften.Label)
		}
	}
	for _, plugin := range []struct {
		name, field string
		validating  bool
	}{{webhookmutating.PluginName, "mutating", false}, {webhookvalidating.PluginName, "validating", true}} {
		dispatch := portcullis.Dispatch(plugin.validating)
		if dispatch == nil || !slices.Contains(enabled, plugin.name) {
			continue
		}
		for _, m := range sortedWebhookModes(dispatch) {
			if soften := enforcement.SoftenFor(m.Modes); soften.Audit {
				warn(fmt.Sprintf("%s's webhook %s/%s (webhookDispatch.%s.enforcementModes)", plugin.name, m.Configuration, m.Webhook, plugin.field), soften.Label)
			}
		}
	}
}
