package persistentvolumelabel

import (
	"fmt"
	"io"

	"github.com/portcullis-k8s/portcullis/pkg/admission/portcullisconfig"
	portcullisapi "github.com/portcullis-k8s/portcullis/pkg/apis/admission"
)

// LoadConfiguration reads the plugin's configuration from the admission config file's
// reader, defaulted and validated (pkg/admission/portcullisconfig). A nil or empty reader
// gives the defaults.
func LoadConfiguration(r io.Reader) (*portcullisapi.PersistentVolumeLabelConfiguration, error) {
	cfg, err := portcullisconfig.LoadPersistentVolumeLabel(r)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", PluginName, err)
	}
	return cfg, nil
}

// CheckConfiguration reads the plugin's configuration as its factory does; the command
// runs it before the server dials etcd.
func CheckConfiguration(r io.Reader) error {
	cfg, err := LoadConfiguration(r)
	if err != nil {
		return err
	}
	// What New refuses, refused before etcd too.
	if _, err := compileRules(cfg.Rules); err != nil {
		return fmt.Errorf("%s: invalid configuration: %w", PluginName, err)
	}
	return nil
}

// ExampleConfig is a sample configuration for --admission-control-config-file: every
// setting at its default, and a rule for the operator's own volumes left as a comment.
const ExampleConfig = `apiVersion: admission.portcullis.io/v1alpha1
kind: PersistentVolumeLabelConfiguration
# resolvers defaults to [CSITopology, Nodes, VolumeID], and Rules after them when rules are given.
labelKeys: GA
nodeAffinity: Add
unresolved: Admit
# rules:
# - source: Cinder
#   match: '^(?P<zone>az-[0-9]+)-'
#   zone: '${zone}'
#   region: RegionOne
`

// RefusesWith says what the plugin refuses that stock admits under the configuration read
// from r: with unresolved: Refuse, in-tree zonal volumes whose zone no resolver finds (""
// otherwise). Preflight lists it.
func RefusesWith(r io.Reader) (string, error) {
	cfg, err := LoadConfiguration(r)
	if err != nil {
		return "", err
	}
	if cfg.Unresolved != portcullisapi.PersistentVolumeLabelUnresolvedRefuse {
		return "", nil
	}
	return "PersistentVolumes of in-tree zonal volumes (GCE PD, AWS EBS) whose zone no resolver finds (unresolved: Refuse)", nil
}
