// Package configfile reads a plugin's configuration from its entry of the admission config
// file (the reader upstream hands each plugin's factory).
package configfile

import (
	"fmt"
	"io"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// Decode decodes the entry read from r as a T of kind want, with decoder (strict, so that a
// misspelt field is an error naming it). With no entry (a nil reader, or an empty one) it
// returns empty: the plugin's defaults follow. Errors start with the plugin's name.
func Decode[T runtime.Object](plugin string, r io.Reader, decoder runtime.Decoder, empty T, want schema.GroupVersionKind) (T, error) {
	if r == nil {
		return empty, nil
	}
	data, err := io.ReadAll(r)
	if err != nil {
		return empty, fmt.Errorf("%s: reading configuration: %w", plugin, err)
	}
	if len(data) == 0 {
		return empty, nil
	}
	obj, gvk, err := decoder.Decode(data, nil, nil)
	if err != nil {
		return empty, fmt.Errorf("%s: decoding configuration: %w", plugin, err)
	}
	decoded, ok := obj.(T)
	if !ok {
		return empty, fmt.Errorf("%s: configuration is %v, want %s", plugin, gvk, want)
	}
	return decoded, nil
}

// Load is Decode followed by the plugin's defaults and validation: the configuration its
// factory uses, or an error naming the plugin and every invalid field.
func Load[T runtime.Object](plugin string, r io.Reader, decoder runtime.Decoder, empty T, want schema.GroupVersionKind,
	setDefaults func(T), validate func(T) field.ErrorList) (T, error) {
	var none T
	cfg, err := Decode(plugin, r, decoder, empty, want)
	if err != nil {
		return none, err
	}
	setDefaults(cfg)
	if errs := validate(cfg); len(errs) > 0 {
		return none, fmt.Errorf("%s: invalid configuration: %w", plugin, errs.ToAggregate())
	}
	return cfg, nil
}
