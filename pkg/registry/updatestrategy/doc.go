// Package updatestrategy answers upstream's questions of an update strategy whose
// signatures differ between Kubernetes minors: 1.37 passes the request's context to
// AllowCreateOnUpdate and AllowUnconditionalUpdate, 1.35 and 1.36 do not. A strategy embeds
// one of the answers.
package updatestrategy

// NameResourceVersion refuses an update of a missing object, and an update that does not
// name the resourceVersion it read.
type NameResourceVersion struct{}

// Replace refuses an update of a missing object; an update without a resourceVersion
// replaces the object.
type Replace struct{}
