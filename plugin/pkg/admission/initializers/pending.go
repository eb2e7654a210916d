package initializers

import (
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/portcullis-k8s/portcullis/pkg/apis/admissionregistration/validation"
)

// Where an object's initialization is recorded, in place of 1.13's metadata.initializers.
const (
	// PendingAnnotation lists the initializers still to act, in order, joined by ",": the
	// first is the one to act. Absent once the object is initialized.
	PendingAnnotation = "initializer.admission.portcullis.io/pending"
	// UninitializedLabel is "true" while PendingAnnotation is present, so that clients can
	// list either way with a label selector (1.13's includeUninitialized).
	UninitializedLabel = "initializer.admission.portcullis.io/uninitialized"
	// ResultAnnotation is an initializer's failure result (1.13's initializers.result): a
	// metav1.Status in JSON, or a message. Setting it while initializers are pending makes
	// the object deleted.
	ResultAnnotation = "initializer.admission.portcullis.io/result"
	// DeletionAuditAnnotation, on the audit event of the update that set a result, names the
	// object the server deletes for it.
	DeletionAuditAnnotation = "initializer.admission.portcullis.io/deletion"
	// DeletionErrorAnnotation, on an object whose failure result was answered, says why the
	// server could not delete it as the user who set the result.
	DeletionErrorAnnotation = "initializer.admission.portcullis.io/deletion-error"
)

var (
	pendingPath = field.NewPath("metadata", "annotations").Key(PendingAnnotation)
	resultPath  = field.NewPath("metadata", "annotations").Key(ResultAnnotation)
)

// parsePending reads a pending list as a client wrote it: fully qualified names, each once.
// "" is the empty list. A name of stored is not checked again (neither its form nor its being
// there twice): a list written while the plugin was off may hold an empty name, one the rules
// refuse or a duplicate, and removing the others must stay possible (isRemoval keeps an update
// from adding one more).
func parsePending(value string, stored []string) ([]string, field.ErrorList) {
	if value == "" {
		return nil, nil
	}
	var names []string
	var errs field.ErrorList
	for i, name := range strings.Split(value, ",") {
		name = strings.TrimSpace(name)
		if slices.Contains(stored, name) {
			names = append(names, name)
			continue
		}
		errs = append(errs, validation.ValidateInitializerName(pendingPath.Index(i), name)...)
		if slices.Contains(names, name) {
			errs = append(errs, field.Duplicate(pendingPath.Index(i), name))
		}
		names = append(names, name)
	}
	return names, errs
}

// formatPending writes a pending list.
func formatPending(names []string) string { return strings.Join(names, ",") }

// isRemoval reports whether updated is current with some entries removed, the others in
// their order: the only change an update may make to a pending list.
func isRemoval(current, updated []string) bool {
	i := 0
	for _, name := range updated {
		for i < len(current) && current[i] != name {
			i++
		}
		if i == len(current) {
			return false
		}
		i++
	}
	return true
}

// removed returns the entries of current that updated no longer has.
func removed(current, updated []string) []string {
	var out []string
	for _, name := range current {
		if !slices.Contains(updated, name) {
			out = append(out, name)
		}
	}
	return out
}

// failureStatus reads a failure result: a metav1.Status in JSON, else a message. The status
// is a failure, with a code (500 when the initializer gave none).
func failureStatus(result string) *apierrors.StatusError {
	status := metav1.Status{}
	if err := json.Unmarshal([]byte(result), &status); err != nil || (status.Message == "" && status.Reason == "") {
		status = metav1.Status{Message: result}
	}
	status.Status = metav1.StatusFailure
	if status.Code < 400 || status.Code > 599 {
		// A failure is an error: a code outside 4xx and 5xx would answer "success" with a
		// failure's body, or not be an HTTP status at all.
		status.Code = http.StatusInternalServerError
	}
	if status.Message == "" {
		status.Message = fmt.Sprintf("initialization failed: %s", status.Reason)
	}
	return &apierrors.StatusError{ErrStatus: status}
}
