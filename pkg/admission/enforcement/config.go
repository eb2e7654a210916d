package enforcement

import (
	"errors"

	portcullisapi "github.com/portcullis-k8s/portcullis/pkg/apis/admission"
)

// New returns the decorator that applies plugins' enforcement modes, as
// portcullisconfig.Load validated them; source names where they were read (file and entry), for errors. No plugins
// give a decorator that changes nothing.
func New(source string, plugins []portcullisapi.PluginEnforcement) *Decorator {
	registerMetrics()
	return newDecorator(source, plugins)
}

// Soften is what a list of modes does to a denial: Warn and Audit say how it is recorded,
// Label names the combination (Warn, Audit or Warn+Audit) in metrics and messages. The zero
// value is Deny.
type Soften struct {
	Warn, Audit bool
	Label       string
}

// SoftenFor returns what validated modes do to a denial.
func SoftenFor(modes []portcullisapi.EnforcementMode) Soften {
	var s Soften
	for _, mode := range modes {
		switch mode {
		case portcullisapi.EnforcementModeWarn:
			s.Warn = true
		case portcullisapi.EnforcementModeAudit:
			s.Audit = true
		}
	}
	switch {
	case s.Warn && s.Audit:
		s.Label = "Warn+Audit"
	case s.Warn:
		s.Label = "Warn"
	case s.Audit:
		s.Label = "Audit"
	}
	return s
}

// Softens says whether the modes soften anything (not Deny).
func (s Soften) Softens() bool { return s.Warn || s.Audit }

// errNotValidating is recorded when a configured plugin turns out to have no validating
// phase; Decorate cannot return an error, so Err reports it.
var errNotValidating = errors.New("it has no validating phase, and only a validating phase's denials can be softened")
