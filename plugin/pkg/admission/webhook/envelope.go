package webhook

import (
	"bytes"
	"encoding/json"
	"fmt"

	admissionv1 "k8s.io/api/admission/v1"
	admissionv1beta1 "k8s.io/api/admission/v1beta1"
	"k8s.io/apimachinery/pkg/runtime"
)

// The request body of a webhook call, built from the objects' JSON as encoded once per
// change (EncodedObjects) rather than by the client's codec, which encodes the review with
// encoding/json and so scans and copies each object's JSON again on every call (a
// RawExtension's bytes are compacted as they are written). The bytes are the codec's:
// encoding/json's encoder, the review's apiVersion and kind set, a final newline; an
// object's JSON is json.Marshal's, already compact and HTML-escaped, which compaction
// leaves as it is. TestEnvelopeIsTheCodecsBytes holds both to it.

// reviewObjects is where encoding/json writes a request's object and old object when both
// are empty: nothing after them in a request (dryRun, options) can hold the sequence.
var reviewObjects = []byte(`"object":null,"oldObject":null`)

// encodeReview is request's body: an admission.k8s.io/v1 or v1beta1 AdmissionReview whose
// objects are taken from encoded.
func encodeReview(request runtime.Object, encoded *EncodedObjects) ([]byte, error) {
	var object, oldObject *runtime.RawExtension
	switch r := request.(type) {
	case *admissionv1.AdmissionReview:
		r.APIVersion, r.Kind = admissionv1.SchemeGroupVersion.String(), "AdmissionReview"
		object, oldObject = &r.Request.Object, &r.Request.OldObject
	case *admissionv1beta1.AdmissionReview:
		r.APIVersion, r.Kind = admissionv1beta1.SchemeGroupVersion.String(), "AdmissionReview"
		object, oldObject = &r.Request.Object, &r.Request.OldObject
	default:
		return nil, fmt.Errorf("unexpected admission review %T", request)
	}
	objectJSON, err := encoded.raw(object)
	if err != nil {
		return nil, err
	}
	oldObjectJSON, err := encoded.raw(oldObject)
	if err != nil {
		return nil, err
	}
	// Written empty, then spliced in.
	savedObject, savedOld := *object, *oldObject
	*object, *oldObject = runtime.RawExtension{}, runtime.RawExtension{}
	var envelope bytes.Buffer
	err = json.NewEncoder(&envelope).Encode(request)
	*object, *oldObject = savedObject, savedOld
	if err != nil {
		return nil, err
	}
	at := bytes.LastIndex(envelope.Bytes(), reviewObjects)
	if at < 0 {
		return nil, fmt.Errorf("no objects in the encoded %T", request)
	}
	head, tail := envelope.Bytes()[:at], envelope.Bytes()[at+len(reviewObjects):]
	body := make([]byte, 0, envelope.Len()+len(objectJSON)+len(oldObjectJSON))
	body = append(body, head...)
	body = append(body, `"object":`...)
	body = append(body, objectJSON...)
	body = append(body, `,"oldObject":`...)
	body = append(body, oldObjectJSON...)
	return append(body, tail...), nil
}

// raw is ext's JSON as encoding/json writes it: its object's, encoded once, or null.
func (e *EncodedObjects) raw(ext *runtime.RawExtension) ([]byte, error) {
	switch {
	case ext.Raw != nil:
		// Never so from upstream's review: encoding/json's own, compacted.
		return json.Marshal(ext)
	case ext.Object == nil:
		return []byte("null"), nil
	}
	return e.JSON(ext.Object)
}
