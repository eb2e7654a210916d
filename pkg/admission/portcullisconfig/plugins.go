package portcullisconfig

import (
	"fmt"
	"io"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/portcullis-k8s/portcullis/pkg/apis/admission"
	"github.com/portcullis-k8s/portcullis/pkg/apis/admission/validation"
)

// The entries of Portcullis's own plugins, read from the reader upstream hands each plugin's
// factory (the command's CheckConfigurations reads them the same way before etcd, and names
// the file and the entry). No entry — a nil or empty reader — gives the kind's defaults.

// LoadInitialResources reads the InitialResources plugin's entry.
func LoadInitialResources(r io.Reader) (*admission.InitialResourcesConfiguration, error) {
	return loadPluginEntry(r, "InitialResourcesConfiguration", validation.ValidateInitialResourcesConfiguration)
}

// LoadPersistentVolumeLabel reads the PersistentVolumeLabel plugin's entry.
func LoadPersistentVolumeLabel(r io.Reader) (*admission.PersistentVolumeLabelConfiguration, error) {
	return loadPluginEntry(r, "PersistentVolumeLabelConfiguration", validation.ValidatePersistentVolumeLabelConfiguration)
}

// LoadWebhookConfigurationGuard reads the WebhookConfigurationGuard plugin's entry.
func LoadWebhookConfigurationGuard(r io.Reader) (*admission.WebhookConfigurationGuardConfiguration, error) {
	return loadPluginEntry(r, "WebhookConfigurationGuardConfiguration", validation.ValidateWebhookConfigurationGuardConfiguration)
}

// loadPluginEntry decodes, defaults, converts and validates a plugin's entry of kind; the
// errors are the plugin's to prefix with its name.
func loadPluginEntry[T runtime.Object](r io.Reader, kind string, validate func(T, *field.Path) field.ErrorList) (T, error) {
	var none T
	var data []byte
	if r != nil {
		var err error
		if data, err = io.ReadAll(r); err != nil {
			return none, fmt.Errorf("reading configuration: %w", err)
		}
	}
	var cfg T
	if len(data) == 0 {
		obj, err := defaulted(kind)
		if err != nil {
			return none, err
		}
		cfg = obj.(T)
	} else {
		decoded, err := decode[T](data, kind)
		if err != nil {
			return none, fmt.Errorf("decoding configuration: %w", err)
		}
		cfg = decoded
	}
	if errs := validate(cfg, nil); len(errs) > 0 {
		return none, fmt.Errorf("invalid configuration: %w", errs.ToAggregate())
	}
	return cfg, nil
}

// defaulted returns kind's internal form with every default and nothing else set: what an
// entry without configuration gives.
func defaulted(kind string) (runtime.Object, error) {
	external, err := scheme.New(versioned.WithKind(kind))
	if err != nil {
		return nil, err
	}
	scheme.Default(external)
	internal, err := scheme.New(admission.SchemeGroupVersion.WithKind(kind))
	if err != nil {
		return nil, err
	}
	if err := scheme.Convert(external, internal, nil); err != nil {
		return nil, err
	}
	return internal, nil
}
