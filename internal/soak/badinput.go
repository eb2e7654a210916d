package soak

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"
	"unicode/utf8"

	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/portcullis-k8s/portcullis/plugin/pkg/admission/podpreset"
)

// RequestBodyLimit is kube-apiserver's limit on a request body (--max-request-body-bytes'
// default, upstream's server.Config.MaxRequestBodyBytes): a body of this many bytes is read,
// one byte more is refused with 413 before it is decoded.
const RequestBodyLimit = 3 << 20

// NoPlugin files a case under no plugin of ours: the generic request path.
const NoPlugin = "—"

// The objects a case may need before it is sent; PrepareBadInputs creates them.
const (
	// NeedsPod is the plain pod BadInputTarget, labelled to match the preset.
	NeedsPod = "pod"
	// NeedsPrivilegedPod is the pod BadInputPrivileged, with a privileged container.
	NeedsPrivilegedPod = "privileged pod"
	// NeedsHostPIDPod is the pod BadInputHostPID, sharing the host's PID namespace.
	NeedsHostPIDPod = "host-pid pod"
	// NeedsPodPreset is the PodPreset BadInputTarget in the namespace.
	NeedsPodPreset = "podpreset"
	// NeedsPodSecurityPolicy is the permissive PodSecurityPolicy BadInputClusterName(namespace).
	NeedsPodSecurityPolicy = "podsecuritypolicy"
	// NeedsValidatingWebhookConfiguration is BadInputClusterName(namespace), one webhook
	// with failurePolicy Ignore over the namespace's pods, served nowhere.
	NeedsValidatingWebhookConfiguration = "validatingwebhookconfiguration"
	// NeedsMutatingWebhookConfiguration is its mutating twin.
	NeedsMutatingWebhookConfiguration = "mutatingwebhookconfiguration"
)

// Names of the objects PrepareBadInputs creates.
const (
	BadInputTarget     = "badinput"
	BadInputPrivileged = "badinput-privileged"
	BadInputHostPID    = "badinput-host-pid"
	badInputLabel      = "badinput.portcullis.io/role"
)

// BadInputClusterName is the name of the cluster-scoped objects (policy, webhook
// configurations) PrepareBadInputs creates for a namespace's cases.
func BadInputClusterName(namespace string) string { return "badinput-" + namespace }

// BadInput is one malformed request.
type BadInput struct {
	// Name says what is malformed, prefixed with the resource: "pods: invalid JSON". Unique.
	Name string
	// Plugin is the plugin of ours the case is filed under: one that admits the resource or
	// subresource the request targets, by its --enable-admission-plugins name; NoPlugin for
	// the generic request path.
	Plugin string
	// Method, Path (absolute, with its query), ContentType and Body are the request, sent as
	// they are.
	Method      string
	Path        string
	ContentType string
	Body        []byte
	// Needs names the object (Needs* constants) that must exist first; empty for none.
	Needs string
	// Twin, for a case against a resource only Portcullis serves (PodSecurityPolicy), names
	// the case against a resource stock serves that takes the same path through upstream's
	// handlers: where upstream's own code answers 5xx, compare ours with stock's answer to it.
	Twin string
	// Want is the status Portcullis answers with every plugin of ours enabled (the
	// integration test's server); 0 when any clear 4xx will do. Stock may differ where a
	// plugin of ours decides (exec), or where it serves nothing (PodPreset, PodSecurityPolicy).
	Want int
}

// BadInputResult is what the server answered to one case.
type BadInputResult struct {
	Case BadInput
	// Status is the HTTP status code; 0 when no response came (Message says why).
	Status int
	// Reason is the metav1.Status reason of the answer, when it was a Status.
	Reason string
	// Message is the Status message (or the body, or the transport error), shortened.
	Message string
}

// Clear reports whether the server refused the request clearly: a 4xx that says why.
func (r BadInputResult) Clear() bool {
	return r.Status >= 400 && r.Status < 500 && strings.TrimSpace(r.Message) != ""
}

// SameFailureAs reports whether r, not clear, is upstream's own answer: stock's answer to
// the case (to its Twin, when it has one) is the same 5xx, or no response either.
func (r BadInputResult) SameFailureAs(stock BadInputResult) bool {
	return !r.Clear() && r.Status == stock.Status && (r.Status == 0 || r.Status >= 500)
}

func (r BadInputResult) String() string {
	return fmt.Sprintf("%s [%s]: %d %s: %s", r.Case.Name, r.Case.Plugin, r.Status, r.Reason, r.Message)
}

// Content types of the table.
const (
	contentJSON      = "application/json"
	contentYAML      = "application/yaml"
	contentProtobuf  = "application/vnd.kubernetes.protobuf"
	contentJSONPatch = "application/json-patch+json"
	contentMerge     = "application/merge-patch+json"
	contentSMP       = "application/strategic-merge-patch+json"
	contentApply     = "application/apply-patch+yaml"
)

// resource describes one resource of ours (or one a plugin of ours admits), for the cases
// every such resource gets.
type resource struct {
	name string // "pods"
	// createPlugin and patchPlugin file the create and the update, patch and delete cases.
	createPlugin, patchPlugin string
	collection                string // the collection's path
	existing                  string // the name of the object PrepareBadInputs creates
	needs                     string
	apiVersion, kind          string
	// object returns a valid object of the resource named name, as JSON-ready maps.
	object func(name string) map[string]any
	// wrongType sets a field of the object to a value of the wrong type.
	wrongType func(obj map[string]any)
	// unknownField is a merge patch adding a field the schema does not know.
	unknownField string
	// native: served by a Go type (strategic merge patch applies); else a custom resource.
	native bool
	// wrongKind is a kind of the same group version that the collection does not serve.
	wrongKind string
	// twin names a resource stock serves whose cases stand in for these on stock (BadInput.Twin).
	twin string
}

// BadInputs returns the table of malformed requests for namespace, which must exist with
// PrepareBadInputs' objects in it. Each must get a clear 4xx, never a 5xx, but for the few
// that upstream's own code (stock's too, Kubernetes 1.37.2) answers 5xx or panics on:
// an update or a watch with a resourceVersion that is not a number, an apply patch with a
// string where a map belongs, a strategic merge patch with a $setElementOrder that is not a
// list, protobuf sent to a custom resource (apiextensions-apiserver panics), and an object
// too large for etcd (storageLimitCases); BadInputResult.SameFailureAs tells them apart.
func BadInputs(namespace string) []BadInput {
	cluster := BadInputClusterName(namespace)
	resources := []resource{
		{
			name: "pods", createPlugin: "SecurityContextDeny", patchPlugin: "SecurityContextDeny",
			collection: "/api/v1/namespaces/" + namespace + "/pods", existing: BadInputTarget, needs: NeedsPod,
			apiVersion: "v1", kind: "Pod", native: true, wrongKind: "Service",
			object: func(name string) map[string]any {
				return map[string]any{
					"apiVersion": "v1", "kind": "Pod",
					"metadata": map[string]any{"name": name, "labels": map[string]any{badInputLabel: "target"}},
					"spec":     map[string]any{"containers": []any{map[string]any{"name": "a", "image": "registry.k8s.io/pause:3.10"}}},
				}
			},
			wrongType:    func(obj map[string]any) { spec(obj)["terminationGracePeriodSeconds"] = "thirty" },
			unknownField: `{"spec":{"bogus":true}}`,
		},
		{
			name: "podpresets", createPlugin: "PodPreset", patchPlugin: "PodPreset",
			collection: "/apis/settings.k8s.io/v1alpha1/namespaces/" + namespace + "/podpresets", existing: BadInputTarget, needs: NeedsPodPreset,
			apiVersion: "settings.k8s.io/v1alpha1", kind: "PodPreset", wrongKind: "PodPresetList",
			object: func(name string) map[string]any {
				return map[string]any{
					"apiVersion": "settings.k8s.io/v1alpha1", "kind": "PodPreset",
					"metadata": map[string]any{"name": name},
					"spec": map[string]any{
						"selector": map[string]any{"matchLabels": map[string]any{badInputLabel: "target"}},
						"env":      []any{map[string]any{"name": "BADINPUT", "value": "1"}},
					},
				}
			},
			wrongType:    func(obj map[string]any) { spec(obj)["env"] = "BADINPUT=1" },
			unknownField: `{"spec":{"bogus":true}}`,
		},
		{
			name: "podsecuritypolicies", createPlugin: "PodSecurityPolicy", patchPlugin: "PodSecurityPolicy",
			collection: "/apis/policy/v1beta1/podsecuritypolicies", existing: cluster, needs: NeedsPodSecurityPolicy,
			apiVersion: "policy/v1beta1", kind: "PodSecurityPolicy", native: true, wrongKind: "PodDisruptionBudget",
			twin:         "validatingwebhookconfigurations",
			object:       permissivePolicy,
			wrongType:    func(obj map[string]any) { spec(obj)["privileged"] = "yes" },
			unknownField: `{"spec":{"bogus":true}}`,
		},
		{
			name: "validatingwebhookconfigurations", createPlugin: "WebhookConfigurationGuard", patchPlugin: "WebhookConfigurationGuard",
			collection: "/apis/admissionregistration.k8s.io/v1/validatingwebhookconfigurations", existing: cluster, needs: NeedsValidatingWebhookConfiguration,
			apiVersion: "admissionregistration.k8s.io/v1", kind: "ValidatingWebhookConfiguration", native: true, wrongKind: "MutatingWebhookConfiguration",
			object: func(name string) map[string]any {
				return webhookConfiguration("ValidatingWebhookConfiguration", name, namespace, 1)
			},
			wrongType:    func(obj map[string]any) { obj["webhooks"].([]any)[0].(map[string]any)["timeoutSeconds"] = "five" },
			unknownField: `{"bogus":true}`,
		},
		{
			name: "mutatingwebhookconfigurations", createPlugin: "WebhookConfigurationGuard", patchPlugin: "WebhookConfigurationGuard",
			collection: "/apis/admissionregistration.k8s.io/v1/mutatingwebhookconfigurations", existing: cluster, needs: NeedsMutatingWebhookConfiguration,
			apiVersion: "admissionregistration.k8s.io/v1", kind: "MutatingWebhookConfiguration", native: true, wrongKind: "ValidatingWebhookConfiguration",
			object: func(name string) map[string]any {
				return webhookConfiguration("MutatingWebhookConfiguration", name, namespace, 1)
			},
			wrongType:    func(obj map[string]any) { obj["webhooks"].([]any)[0].(map[string]any)["reinvocationPolicy"] = 7 },
			unknownField: `{"bogus":true}`,
		},
	}
	var cases []BadInput
	for _, r := range resources {
		for _, c := range r.cases(namespace) {
			if r.twin != "" {
				c.Twin = r.twin + strings.TrimPrefix(c.Name, r.name)
			}
			cases = append(cases, c)
		}
	}
	cases = append(cases, execCases(namespace)...)
	cases = append(cases, ourValidationCases(namespace)...)
	cases = append(cases, storageLimitCases(namespace)...)
	return cases
}

// cases are the malformed requests every resource gets.
func (r resource) cases(namespace string) []BadInput {
	name := "badinput-create"
	if !strings.Contains(r.collection, "/namespaces/") {
		name = "badinput-create-" + namespace
	}
	valid := mustJSON(r.object(name))
	object := r.collection + "/" + r.existing
	create := func(what string, want int, contentType string, body []byte, query string) BadInput {
		return BadInput{Name: r.name + ": " + what, Plugin: r.createPlugin, Method: http.MethodPost, Path: r.collection + query,
			ContentType: contentType, Body: body, Want: want}
	}
	onExisting := func(what, method string, want int, contentType string, body []byte, query string) BadInput {
		return BadInput{Name: r.name + ": " + what, Plugin: r.patchPlugin, Method: method, Path: object + query,
			ContentType: contentType, Body: body, Needs: r.needs, Want: want}
	}
	list := func(what string, want int, query string) BadInput {
		return BadInput{Name: r.name + ": " + what, Plugin: r.patchPlugin, Method: http.MethodGet, Path: r.collection + query, Want: want}
	}
	with := func(mutate func(map[string]any)) []byte {
		obj := r.object(name)
		mutate(obj)
		return mustJSON(obj)
	}

	wrongKind := strings.Replace(string(valid), `"kind":"`+r.kind+`"`, `"kind":"`+r.wrongKind+`"`, 1)
	wrongVersion := strings.Replace(string(valid), `"apiVersion":"`+r.apiVersion+`"`, `"apiVersion":"`+r.apiVersion+`9"`, 1)
	duplicate := strings.Replace(string(valid), `"metadata":{`, `"metadata":{"name":"one","name":"two",`, 1)
	unknown := with(func(obj map[string]any) { obj["bogusTopLevelField"] = true })
	// Typed decoders refuse an array where an object belongs; a custom resource decodes it
	// and its schema refuses it: either way after the nesting was parsed.
	deepInField := bytes.Replace(valid, []byte(`"metadata":{`), []byte(`"metadata":{"annotations":`+nested(9990)+`,`), 1)
	tooDeep := bytes.Replace(valid, []byte(`"metadata":{`), []byte(`"metadata":{"annotations":`+nested(10_001)+`,`), 1)

	cases := []BadInput{
		create("invalid JSON", 400, contentJSON, []byte(`{"apiVersion": "`+r.apiVersion+`", "kind": "`+r.kind+`", metadata: {name: x}}`), ""),
		create("truncated JSON", 400, contentJSON, valid[:len(valid)/2], ""),
		create("empty body", 400, contentJSON, nil, ""),
		create("JSON array instead of an object", 400, contentJSON, []byte("["+string(valid)+"]"), ""),
		create("JSON null", 0, contentJSON, []byte("null"), ""),
		create("wrong kind", 0, contentJSON, []byte(wrongKind), ""),
		create("wrong apiVersion", 400, contentJSON, []byte(wrongVersion), ""),
		create("unknown field, fieldValidation=Strict", 400, contentJSON, unknown, "?fieldValidation=Strict"),
		create("duplicate field, fieldValidation=Strict", 400, contentJSON, []byte(duplicate), "?fieldValidation=Strict"),
		create("a string where another type belongs", 0, contentJSON, with(r.wrongType), ""),
		create("invalid fieldValidation directive", 422, contentJSON, valid, "?fieldValidation=Loud"),
		create("invalid dryRun directive", 422, contentJSON, valid, "?dryRun=Some"),
		create("9,990 levels of arrays where an object belongs", 0, contentJSON, deepInField, ""),
		create("10,001 levels of arrays, past the decoder's depth limit", 400, contentJSON, tooDeep, ""),
		create("body of exactly 3 MiB (an annotation too long)", 422, contentJSON, padded(r.object(name), RequestBodyLimit), ""),
		create("body of 3 MiB and a byte", 413, contentJSON, padded(r.object(name), RequestBodyLimit+1), ""),
		create("invalid YAML", 400, contentYAML, []byte("apiVersion: "+r.apiVersion+"\nkind: "+r.kind+"\nmetadata: {name: [x\n  : y"), ""),
		create("YAML alias bomb", 400, contentYAML, aliasBomb(r.apiVersion, r.kind), ""),
		create("YAML of 10,001 nested flow sequences", 400, contentYAML, []byte("apiVersion: "+r.apiVersion+"\nkind: "+r.kind+"\nmetadata:\n  annotations: "+nested(10_001)+"\n"), ""),
		create("protobuf that is JSON", 0, contentProtobuf, valid, ""),
		create("protobuf envelope around garbage", 0, contentProtobuf, append([]byte("k8s\x00"), 0x0a, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01), ""),
		create("content type text/plain", 415, "text/plain", valid, ""),

		onExisting("update with invalid JSON", http.MethodPut, 400, contentJSON, valid[:len(valid)-3], ""),
		onExisting("update naming another object", http.MethodPut, 400, contentJSON, valid, ""),
		onExisting("update with resourceVersion not a number", http.MethodPut, 0, contentJSON,
			mustJSON(withMeta(r.object(r.existing), "resourceVersion", "not-a-number")), ""),
		onExisting("update with unknown field, fieldValidation=Strict", http.MethodPut, 400, contentJSON,
			mustJSON(withTop(r.object(r.existing), "bogusTopLevelField", true)), "?fieldValidation=Strict"),

		onExisting("JSON patch with an unknown op", http.MethodPatch, 0, contentJSONPatch, []byte(`[{"op":"frobnicate","path":"/metadata/labels/x","value":"y"}]`), ""),
		onExisting("JSON patch that is not a list", http.MethodPatch, 400, contentJSONPatch, []byte(`{"op":"add","path":"/metadata/labels","value":{}}`), ""),
		onExisting("JSON patch with invalid JSON", http.MethodPatch, 400, contentJSONPatch, []byte(`[{"op":"add","path":`), ""),
		onExisting("JSON patch removing a path that is not there", http.MethodPatch, 0, contentJSONPatch, []byte(`[{"op":"remove","path":"/metadata/labels/not-there/deeper"}]`), ""),
		onExisting("JSON patch whose test fails", http.MethodPatch, 0, contentJSONPatch, []byte(`[{"op":"test","path":"/metadata/name","value":"something-else"}]`), ""),
		onExisting("JSON patch with a path of no leading slash", http.MethodPatch, 0, contentJSONPatch, []byte(`[{"op":"add","path":"metadata","value":1}]`), ""),
		onExisting("JSON patch of 10,001 operations", http.MethodPatch, 0, contentJSONPatch, manyOps(10_001), ""),
		onExisting("JSON patch setting the kind", http.MethodPatch, 0, contentJSONPatch, []byte(`[{"op":"replace","path":"/kind","value":"`+r.wrongKind+`"}]`), ""),
		onExisting("merge patch with invalid JSON", http.MethodPatch, 400, contentMerge, []byte(`{"metadata":{"labels":`), ""),
		onExisting("merge patch that is a list", http.MethodPatch, 0, contentMerge, []byte(`[1,2,3]`), ""),
		onExisting("merge patch with the wrong type", http.MethodPatch, 0, contentMerge, []byte(`{"metadata":{"labels":"not-a-map"}}`), ""),
		onExisting("merge patch of 10,001 nested arrays", http.MethodPatch, 400, contentMerge, []byte(`{"metadata":{"annotations":`+nested(10_001)+`}}`), ""),
		onExisting("merge patch with an unknown field, fieldValidation=Strict", http.MethodPatch, 0, contentMerge, []byte(r.unknownField), "?fieldValidation=Strict"),
		onExisting("merge patch with a duplicate field, fieldValidation=Strict", http.MethodPatch, 0, contentMerge, []byte(`{"metadata":{"labels":{"a":"1","a":"2"}}}`), "?fieldValidation=Strict"),
		onExisting("merge patch of 3 MiB and a byte", http.MethodPatch, 413, contentMerge, padded(map[string]any{"metadata": map[string]any{}}, RequestBodyLimit+1), ""),
		onExisting("patch of content type application/json", http.MethodPatch, 415, contentJSON, []byte(`{"metadata":{"labels":{"a":"b"}}}`), ""),
		onExisting("patch of no content type", http.MethodPatch, 415, "", []byte(`{"metadata":{"labels":{"a":"b"}}}`), ""),
		onExisting("apply patch without fieldManager", http.MethodPatch, 422, contentApply, []byte("apiVersion: "+r.apiVersion+"\nkind: "+r.kind+"\nmetadata: {name: "+r.existing+"}\n"), ""),
		onExisting("apply patch with invalid YAML", http.MethodPatch, 0, contentApply, []byte("apiVersion: [\nkind"), "?fieldManager=badinput"),
		onExisting("apply patch of the wrong kind", http.MethodPatch, 0, contentApply, []byte("apiVersion: "+r.apiVersion+"\nkind: "+r.wrongKind+"\nmetadata: {name: "+r.existing+"}\n"), "?fieldManager=badinput"),
		onExisting("apply patch with a string where a map belongs", http.MethodPatch, 0, contentApply, []byte("apiVersion: "+r.apiVersion+"\nkind: "+r.kind+"\nmetadata: {name: "+r.existing+", labels: nope}\n"), "?fieldManager=badinput"),
		list("list with a label selector that does not parse", 400, "?labelSelector="+url.QueryEscape("a in (b")),
		list("list with a field selector on an unknown field", 400, "?fieldSelector="+url.QueryEscape("spec.bogus=x")),
		list("list with resourceVersion not a number", 0, "?resourceVersion=not-a-number&resourceVersionMatch=NotOlderThan"),
		list("list with a limit that is not a number", 0, "?limit=many"),
		list("watch with resourceVersion not a number", 0, "?watch=true&resourceVersion=not-a-number"),
		list("list with a continue token that is not one", 0, "?limit=1&continue=bm90LWEtdG9rZW4"),
		onExisting("delete with an invalid body", http.MethodDelete, 400, contentJSON, []byte(`{"kind":"DeleteOptions","apiVersion":"v1","gracePeriodSeconds":"soon"`), ""),
		onExisting("delete with a precondition on another uid", http.MethodDelete, 409, contentJSON, []byte(`{"kind":"DeleteOptions","apiVersion":"v1","preconditions":{"uid":"00000000-0000-0000-0000-000000000000"}}`), ""),
	}
	if r.native {
		cases = append(cases,
			onExisting("strategic merge patch with a $setElementOrder that is not a list", http.MethodPatch, 0, contentSMP, []byte(`{"metadata":{"$setElementOrder/ownerReferences":"x"}}`), ""),
			onExisting("strategic merge patch with the wrong type", http.MethodPatch, 0, contentSMP, []byte(`{"metadata":{"labels":["not","a","map"]}}`), ""),
			onExisting("strategic merge patch of a list element without its merge key", http.MethodPatch, 0, contentSMP, []byte(`{"metadata":{"ownerReferences":[{"kind":"X"}]}}`), ""),
		)
	} else {
		cases = append(cases,
			onExisting("strategic merge patch of a custom resource", http.MethodPatch, 415, contentSMP, []byte(`{"metadata":{"labels":{"a":"b"}}}`), ""),
		)
	}
	return cases
}

// execCases are the requests to pods/exec and pods/attach. Without a kubelet no connection
// can be made: these target the checks before one (query parsing, the plugins of ours,
// the pod's lookup).
func execCases(namespace string) []BadInput {
	pods := "/api/v1/namespaces/" + namespace + "/pods/"
	connect := func(name, plugin, method, path, needs string, want int) BadInput {
		return BadInput{Name: name, Plugin: plugin, Method: method, Path: pods + path, Needs: needs, Want: want}
	}
	return []BadInput{
		connect("pods/exec: into a privileged pod", "DenyExecOnPrivileged", http.MethodPost, BadInputPrivileged+"/exec?container=a&stdout=true&command=true", NeedsPrivilegedPod, 403),
		connect("pods/attach: to a privileged pod", "DenyExecOnPrivileged", http.MethodPost, BadInputPrivileged+"/attach?container=a&stdout=true", NeedsPrivilegedPod, 403),
		connect("pods/exec: into a privileged pod, no command", "DenyExecOnPrivileged", http.MethodPost, BadInputPrivileged+"/exec?container=a&stdout=true", NeedsPrivilegedPod, 0),
		connect("pods/exec: into a host-pid pod", "DenyEscalatingExec", http.MethodPost, BadInputHostPID+"/exec?container=a&stdout=true&command=true", NeedsHostPIDPod, 403),
		connect("pods/attach: to a host-pid pod", "DenyEscalatingExec", http.MethodPost, BadInputHostPID+"/attach?container=a&stdout=true", NeedsHostPIDPod, 403),
		connect("pods/exec: into a pod that does not exist", "DenyEscalatingExec", http.MethodPost, "badinput-not-there/exec?container=a&stdout=true&command=true", "", 0),
		connect("pods/attach: to a pod that does not exist", "DenyExecOnPrivileged", http.MethodPost, "badinput-not-there/attach?container=a&stdout=true", "", 0),
		connect("pods/exec: a query that does not parse (stdout=maybe)", "DenyEscalatingExec", http.MethodPost, BadInputTarget+"/exec?container=a&stdout=maybe&command=true", NeedsPod, 400),
		connect("pods/exec: a query with a bad escape", "DenyEscalatingExec", http.MethodPost, BadInputTarget+"/exec?container=a&command=%zz", NeedsPod, 400),
		connect("pods/exec: no command", "DenyEscalatingExec", http.MethodPost, BadInputTarget+"/exec?container=a&stdout=true", NeedsPod, 0),
		connect("pods/exec: a container the pod lacks", "DenyEscalatingExec", http.MethodPost, BadInputTarget+"/exec?container=nope&stdout=true&command=true", NeedsPod, 0),
		connect("pods/exec: no stream asked for", "DenyEscalatingExec", http.MethodPost, BadInputTarget+"/exec?container=a&command=true", NeedsPod, 0),
		connect("pods/exec: method PUT", "DenyEscalatingExec", http.MethodPut, BadInputTarget+"/exec?container=a&stdout=true&command=true", NeedsPod, 405),
		connect("pods/attach: method DELETE", "DenyExecOnPrivileged", http.MethodDelete, BadInputTarget+"/attach?container=a&stdout=true", NeedsPod, 405),
		connect("pods/exec: into a privileged pod, method PATCH", "DenyExecOnPrivileged", http.MethodPatch, BadInputPrivileged+"/exec?container=a&stdout=true&command=true", NeedsPrivilegedPod, 405),
	}
}

// ourValidationCases are well-formed requests that the code of ours refuses: the plugins'
// own checks, and the validation of what Portcullis serves natively.
func ourValidationCases(namespace string) []BadInput {
	pods := "/api/v1/namespaces/" + namespace + "/pods/"
	presets := "/apis/settings.k8s.io/v1alpha1/namespaces/" + namespace + "/podpresets"
	policies := "/apis/policy/v1beta1/podsecuritypolicies"
	preset := func(mutate func(spec map[string]any)) []byte {
		p := permissivePreset("badinput-invalid")
		mutate(spec(p))
		return mustJSON(p)
	}
	policy := func(mutate func(spec map[string]any)) []byte {
		p := permissivePolicy("badinput-invalid-" + namespace)
		mutate(spec(p))
		return mustJSON(p)
	}
	volumes := "/api/v1/persistentvolumes"
	configmaps := "/api/v1/namespaces/" + namespace + "/configmaps"
	// A CSI volume whose node affinity is requirement: the resolvers read it before
	// validation refuses it.
	volume := func(requirement map[string]any) []byte {
		return mustJSON(map[string]any{
			"apiVersion": "v1", "kind": "PersistentVolume", "metadata": map[string]any{"name": "badinput-invalid-" + namespace},
			"spec": map[string]any{
				"capacity": map[string]any{"storage": "1Gi"}, "accessModes": []any{"ReadWriteOnce"},
				"csi": map[string]any{"driver": "hostpath.csi.k8s.io", "volumeHandle": "badinput"},
				"nodeAffinity": map[string]any{"required": map[string]any{"nodeSelectorTerms": []any{
					map[string]any{"matchExpressions": []any{requirement}}}}},
			},
		})
	}
	var env []any
	for i := range 1025 {
		env = append(env, map[string]any{"name": fmt.Sprintf("E%d", i), "value": "1"})
	}
	c := func(name, plugin, method, path, contentType string, body []byte, needs string, want int) BadInput {
		return BadInput{Name: name, Plugin: plugin, Method: method, Path: path, ContentType: contentType, Body: body, Needs: needs, Want: want}
	}
	ephemeral := func(securityContext map[string]any) []byte {
		return mustJSON(map[string]any{"spec": map[string]any{"ephemeralContainers": []any{map[string]any{
			"name": "debugger", "image": "registry.k8s.io/pause:3.10", "securityContext": securityContext}}}})
	}
	return []BadInput{
		c("pods/ephemeralcontainers: an ephemeral container with runAsUser", "SecurityContextDeny", http.MethodPatch, pods+BadInputTarget+"/ephemeralcontainers",
			contentSMP, ephemeral(map[string]any{"runAsUser": 0}), NeedsPod, 403),
		c("pods/ephemeralcontainers: an ephemeral container with runAsUser a string", "SecurityContextDeny", http.MethodPatch, pods+BadInputTarget+"/ephemeralcontainers",
			contentSMP, ephemeral(map[string]any{"runAsUser": "root"}), NeedsPod, 0),
		c("pods/ephemeralcontainers: invalid JSON", "SecurityContextDeny", http.MethodPatch, pods+BadInputTarget+"/ephemeralcontainers",
			contentSMP, []byte(`{"spec":{"ephemeralContainers":[{`), NeedsPod, 400),
		c("pods/ephemeralcontainers: an update of no ephemeral container's name", "SecurityContextDeny", http.MethodPatch, pods+BadInputTarget+"/ephemeralcontainers",
			contentJSONPatch, []byte(`[{"op":"add","path":"/spec/ephemeralContainers","value":[{"image":"x"}]}]`), NeedsPod, 422),
		c("pods: a pod of a privileged container with runAsUser", "SecurityContextDeny", http.MethodPost, strings.TrimSuffix(pods, "/"), contentJSON,
			mustJSON(withSpec(badInputPodObject("badinput-run-as-user"), "securityContext", map[string]any{"runAsUser": 0})), "", 403),
		c("pods: an image with a trailing space, in a container without requests", "InitialResources", http.MethodPost, strings.TrimSuffix(pods, "/"), contentJSON,
			mustJSON(withContainer(badInputPodObject("badinput-image-space"), "image", "registry.k8s.io/pause:3.10 ")), "", 422),
		c("pods: a memory request that is no quantity", "InitialResources", http.MethodPost, strings.TrimSuffix(pods, "/"), contentJSON,
			mustJSON(withContainer(badInputPodObject("badinput-request"), "resources", map[string]any{"requests": map[string]any{"memory": "lots"}})), "", 400),
		c("persistentvolumes: a node-affinity operator that does not exist", "PersistentVolumeLabel", http.MethodPost, volumes, contentJSON,
			volume(map[string]any{"key": "topology.hostpath.csi/node", "operator": "Near", "values": []any{"n"}}), "", 422),
		c("persistentvolumes: a node-affinity zone of 64 characters", "PersistentVolumeLabel", http.MethodPost, volumes, contentJSON,
			volume(map[string]any{"key": "topology.kubernetes.io/zone", "operator": "In", "values": []any{strings.Repeat("z", 64)}}), "", 422),
		c("configmaps: a pending initializer whose name is not fully qualified", "Initializers", http.MethodPost, configmaps, contentJSON,
			mustJSON(map[string]any{"apiVersion": "v1", "kind": "ConfigMap", "metadata": map[string]any{
				"name": "badinput-pending", "annotations": map[string]any{"initializer.admission.portcullis.io/pending": "a.example.com,example"}}}), "", 422),
		c("initializerconfigurations: an initializer name that is not fully qualified, a rule with a subresource", "Initializers", http.MethodPost,
			"/apis/admissionregistration.k8s.io/v1alpha1/initializerconfigurations", contentJSON,
			mustJSON(map[string]any{"apiVersion": "admissionregistration.k8s.io/v1alpha1", "kind": "InitializerConfiguration",
				"metadata": map[string]any{"name": "badinput-invalid-" + namespace},
				"initializers": []any{map[string]any{"name": "example", "rules": []any{map[string]any{
					"apiGroups": []any{""}, "apiVersions": []any{"v1"}, "resources": []any{"pods/status"}}}}}}), "", 422),
		c("pods/exec: a pod name with an escaped slash", "DenyEscalatingExec", http.MethodPost, pods+"a%2Fb/exec?container=a&stdout=true&command=true", "", nil, "", 0),
		c("pods/exec: a pod name of 300 characters", "DenyExecOnPrivileged", http.MethodPost, pods+strings.Repeat("a", 300)+"/exec?container=a&stdout=true&command=true", "", nil, "", 0),
		c("podpresets: a selector operator that does not exist", "PodPreset", http.MethodPost, presets, contentJSON,
			preset(func(s map[string]any) {
				s["selector"] = map[string]any{"matchExpressions": []any{map[string]any{"key": "a", "operator": "Near", "values": []any{"b"}}}}
			}), "", 422),
		c("podpresets: 1,025 env vars", "PodPreset", http.MethodPost, presets, contentJSON, preset(func(s map[string]any) { s["env"] = env }), "", 422),
		c("podpresets: a volume of two sources", "PodPreset", http.MethodPost, presets, contentJSON,
			preset(func(s map[string]any) {
				s["volumes"] = []any{map[string]any{"name": "v", "emptyDir": map[string]any{}, "hostPath": map[string]any{"path": "/tmp"}}}
			}), "", 422),
		c("podpresets: nothing to inject", "PodPreset", http.MethodPost, presets, contentJSON,
			preset(func(s map[string]any) { delete(s, "env") }), "", 422),
		c("podsecuritypolicies: a runAsUser range of min above max", "PodSecurityPolicy", http.MethodPost, policies, contentJSON,
			policy(func(s map[string]any) {
				s["runAsUser"] = map[string]any{"rule": "MustRunAs", "ranges": []any{map[string]any{"min": 10, "max": 1}}}
			}), "", 422),
		c("podsecuritypolicies: a volume type that does not exist", "PodSecurityPolicy", http.MethodPost, policies, contentJSON,
			policy(func(s map[string]any) { s["volumes"] = []any{"floppyDisk"} }), "", 422),
		// (A host port range of min above max is accepted, as 1.24 accepted it, with a warning.)
		c("podsecuritypolicies: required drops beside every capability allowed", "PodSecurityPolicy", http.MethodPost, policies, contentJSON,
			policy(func(s map[string]any) { s["requiredDropCapabilities"] = []any{"NET_RAW"} }), "", 422),
		c("podsecuritypolicies: a runAsUser rule that does not exist", "PodSecurityPolicy", http.MethodPost, policies, contentJSON,
			policy(func(s map[string]any) { s["runAsUser"] = map[string]any{"rule": "Whoever"} }), "", 422),
	}
}

// storageLimitCases are objects that decode, validate and pass admission (every plugin of
// ours that admits them reads them whole, the webhook dispatch serializes them) and are
// then too large to store: past etcd's request limit (1.5 MiB by default), which upstream
// answers 413, or past its etcd client's message limit (2 MiB), which upstream 1.37 answers
// 500 (the gRPC error reaches the handler wrapped, and its 413 check misses it).
func storageLimitCases(namespace string) []BadInput {
	const (
		pastServer = 1_800_000 // past etcd's 1.5 MiB, within the client's 2 MiB
		pastClient = 2_500_000 // past the etcd client's 2 MiB
	)
	pod := func(name string, size int, labels map[string]any) []byte {
		return mustJSON(map[string]any{
			"apiVersion": "v1", "kind": "Pod",
			"metadata": map[string]any{"name": name, "labels": labels},
			"spec": map[string]any{"containers": []any{map[string]any{
				"name": "a", "image": "registry.k8s.io/pause:3.10",
				"env": []any{map[string]any{"name": "BIG", "value": strings.Repeat("x", size)}},
			}}},
		})
	}
	preset := func(size int) []byte {
		p := permissivePreset("badinput-big")
		spec(p)["env"] = []any{map[string]any{"name": "BIG", "value": strings.Repeat("x", size)}}
		return mustJSON(p)
	}
	policy := func(size int) []byte {
		p := permissivePolicy(fmt.Sprintf("badinput-big-%d-%s", size, namespace))
		var drivers []any
		for total := 0; total < size; total += len(`{"driver":""},`) + 49 {
			drivers = append(drivers, map[string]any{"driver": fmt.Sprintf("example.com/driver-%030d", len(drivers))})
		}
		spec(p)["allowedFlexVolumes"] = drivers
		return mustJSON(p)
	}
	// Webhooks with long URLs, scoped to the namespace and served nowhere: the guard and the
	// dispatch's informers see hundreds of them at once.
	hooks := func(kind string, size int) []byte {
		const n = 500
		c := webhookConfiguration(kind, fmt.Sprintf("badinput-big-%d-%s", size, namespace), namespace, n)
		for _, w := range c["webhooks"].([]any) {
			w.(map[string]any)["clientConfig"] = map[string]any{"url": "https://127.0.0.1:1/" + strings.Repeat("x", size/n)}
		}
		return mustJSON(c)
	}
	post := func(name, plugin, path string, body []byte, twin string) BadInput {
		return BadInput{Name: name, Plugin: plugin, Method: http.MethodPost, Path: path, ContentType: contentJSON, Body: body, Twin: twin}
	}
	pods := "/api/v1/namespaces/" + namespace + "/pods"
	presets := "/apis/settings.k8s.io/v1alpha1/namespaces/" + namespace + "/podpresets"
	policies := "/apis/policy/v1beta1/podsecuritypolicies"
	validating := "/apis/admissionregistration.k8s.io/v1/validatingwebhookconfigurations"
	mutating := "/apis/admissionregistration.k8s.io/v1/mutatingwebhookconfigurations"
	const (
		podServer = "pods: a 1.8 MB env value, past etcd's request limit, through the webhook dispatch"
		podClient = "pods: a 2.5 MB env value, past the etcd client's message limit, through the webhook dispatch"
	)
	cases := []BadInput{
		post(podServer, "MutatingAdmissionWebhook", pods, pod("badinput-big", pastServer, nil), ""),
		post(podClient, "ValidatingAdmissionWebhook", pods, pod("badinput-bigger", pastClient, nil), ""),
		post("pods: a 1.8 MB env value matching the preset, past etcd's request limit", "PodPreset", pods, pod("badinput-big-preset", pastServer, map[string]any{badInputLabel: "target"}), ""),
		post("podpresets: a 1.8 MB env value, past etcd's request limit", "PodPreset", presets, preset(pastServer), ""),
		post("podpresets: a 2.5 MB env value, past the etcd client's message limit", "PodPreset", presets, preset(pastClient), ""),
		post("podsecuritypolicies: 1.8 MB of flex volume drivers, past etcd's request limit", "PodSecurityPolicy", policies, policy(pastServer), podServer),
		post("podsecuritypolicies: 2.5 MB of flex volume drivers, past the etcd client's message limit", "PodSecurityPolicy", policies, policy(pastClient), podClient),
		post("validatingwebhookconfigurations: 1.8 MB of webhooks, past etcd's request limit", "WebhookConfigurationGuard", validating, hooks("ValidatingWebhookConfiguration", pastServer), ""),
		post("validatingwebhookconfigurations: 2.5 MB of webhooks, past the etcd client's message limit", "WebhookConfigurationGuard", validating, hooks("ValidatingWebhookConfiguration", pastClient), ""),
		post("mutatingwebhookconfigurations: 1.8 MB of webhooks, past etcd's request limit", "WebhookConfigurationGuard", mutating, hooks("MutatingWebhookConfiguration", pastServer), ""),
		post("mutatingwebhookconfigurations: 2.5 MB of webhooks, past the etcd client's message limit", "WebhookConfigurationGuard", mutating, hooks("MutatingWebhookConfiguration", pastClient), ""),
	}
	return cases
}

func spec(obj map[string]any) map[string]any { return obj["spec"].(map[string]any) }

func withSpec(obj map[string]any, key string, value any) map[string]any {
	spec(obj)[key] = value
	return obj
}

// withContainer sets a field of the pod's first container.
func withContainer(obj map[string]any, key string, value any) map[string]any {
	spec(obj)["containers"].([]any)[0].(map[string]any)[key] = value
	return obj
}

func badInputPodObject(name string) map[string]any {
	return map[string]any{
		"apiVersion": "v1", "kind": "Pod",
		"metadata": map[string]any{"name": name},
		"spec": map[string]any{"containers": []any{map[string]any{
			"name": "a", "image": "registry.k8s.io/pause:3.10", "securityContext": map[string]any{"privileged": true}}}},
	}
}

func withMeta(obj map[string]any, key string, value any) map[string]any {
	obj["metadata"].(map[string]any)[key] = value
	return obj
}

func withTop(obj map[string]any, key string, value any) map[string]any {
	obj[key] = value
	return obj
}

func permissivePolicy(name string) map[string]any {
	return map[string]any{
		"apiVersion": "policy/v1beta1", "kind": "PodSecurityPolicy",
		"metadata": map[string]any{"name": name},
		"spec": map[string]any{
			"privileged": true, "allowPrivilegeEscalation": true, "hostPID": true, "hostIPC": true, "hostNetwork": true,
			"allowedCapabilities": []any{"*"}, "volumes": []any{"*"},
			"hostPorts":          []any{map[string]any{"min": 0, "max": 65535}},
			"runAsUser":          map[string]any{"rule": "RunAsAny"},
			"seLinux":            map[string]any{"rule": "RunAsAny"},
			"supplementalGroups": map[string]any{"rule": "RunAsAny"},
			"fsGroup":            map[string]any{"rule": "RunAsAny"},
		},
	}
}

func permissivePreset(name string) map[string]any {
	return map[string]any{
		"apiVersion": "settings.k8s.io/v1alpha1", "kind": "PodPreset",
		"metadata": map[string]any{"name": name},
		"spec": map[string]any{
			"selector": map[string]any{"matchLabels": map[string]any{badInputLabel: "target"}},
			"env":      []any{map[string]any{"name": "BADINPUT", "value": "1"}},
		},
	}
}

// webhookConfiguration is a configuration of n webhooks over the namespace's pods, served
// at an address where nothing listens, failing open with a 1 s timeout.
func webhookConfiguration(kind, name, namespace string, n int) map[string]any {
	url := "https://127.0.0.1:1/badinput"
	var webhooks []any
	for i := range n {
		w := map[string]any{
			"name":                    fmt.Sprintf("hook-%d.badinput.portcullis.io", i),
			"clientConfig":            map[string]any{"url": url},
			"rules":                   []any{map[string]any{"operations": []any{"CREATE", "UPDATE"}, "apiGroups": []any{""}, "apiVersions": []any{"v1"}, "resources": []any{"pods"}}},
			"namespaceSelector":       map[string]any{"matchLabels": map[string]any{corev1.LabelMetadataName: namespace}},
			"failurePolicy":           "Ignore",
			"timeoutSeconds":          1,
			"sideEffects":             "None",
			"admissionReviewVersions": []any{"v1"},
		}
		if kind == "MutatingWebhookConfiguration" {
			w["reinvocationPolicy"] = "Never"
		}
		webhooks = append(webhooks, w)
	}
	return map[string]any{
		"apiVersion": "admissionregistration.k8s.io/v1", "kind": kind,
		"metadata": map[string]any{"name": name},
		"webhooks": webhooks,
	}
}

// nested is depth levels of JSON arrays.
func nested(depth int) string { return strings.Repeat("[", depth) + strings.Repeat("]", depth) }

// padded is obj with an annotation that brings its JSON to exactly size bytes.
func padded(obj map[string]any, size int) []byte {
	meta, ok := obj["metadata"].(map[string]any)
	if !ok {
		meta = map[string]any{}
		obj["metadata"] = meta
	}
	meta["annotations"] = map[string]any{"badinput.portcullis.io/padding": ""}
	n := size - len(mustJSON(obj))
	meta["annotations"] = map[string]any{"badinput.portcullis.io/padding": strings.Repeat("x", max(n, 0))}
	return mustJSON(obj)
}

// manyOps is a JSON patch of n operations, each harmless.
func manyOps(n int) []byte {
	var b strings.Builder
	b.WriteString("[")
	for i := range n {
		if i > 0 {
			b.WriteString(",")
		}
		b.WriteString(`{"op":"test","path":"/metadata/name","value":"` + BadInputTarget + `"}`)
	}
	b.WriteString("]")
	return []byte(b.String())
}

// aliasBomb is a YAML document whose aliases expand to 10^9 strings ("billion laughs").
func aliasBomb(apiVersion, kind string) []byte {
	var b strings.Builder
	fmt.Fprintf(&b, "apiVersion: %s\nkind: %s\nmetadata:\n  name: bomb\n", apiVersion, kind)
	b.WriteString(`a: &a ["lol","lol","lol","lol","lol","lol","lol","lol","lol","lol"]` + "\n")
	prev := "a"
	for _, c := range "bcdefghi" {
		name := string(c)
		refs := strings.TrimSuffix(strings.Repeat("*"+prev+",", 10), ",")
		fmt.Fprintf(&b, "%s: &%s [%s]\n", name, name, refs)
		prev = name
	}
	return []byte(b.String())
}

func mustJSON(v any) []byte {
	data, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return data
}

// maxMessage is how much of a message a result keeps.
const maxMessage = 300

// RunBadInputs sends each case as it is, with config's credentials, one after the other,
// and records the answers. An error is returned only when no request can be sent at all;
// a request that gets no response is recorded with status 0.
func RunBadInputs(ctx context.Context, config *rest.Config, cases []BadInput) ([]BadInputResult, error) {
	client, err := rest.HTTPClientFor(config)
	if err != nil {
		return nil, err
	}
	host := strings.TrimSuffix(config.Host, "/")
	if !strings.Contains(host, "://") {
		host = "https://" + host
	}
	results := make([]BadInputResult, 0, len(cases))
	for _, c := range cases {
		if err := ctx.Err(); err != nil {
			return results, err
		}
		results = append(results, send(ctx, client, host, c))
	}
	return results, nil
}

func send(ctx context.Context, client *http.Client, host string, c BadInput) BadInputResult {
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	result := BadInputResult{Case: c}
	var body io.Reader
	if c.Body != nil {
		body = bytes.NewReader(c.Body)
	}
	req, err := http.NewRequestWithContext(ctx, c.Method, host+c.Path, body)
	if err != nil {
		result.Message = shorten(err.Error())
		return result
	}
	if c.ContentType != "" {
		req.Header.Set("Content-Type", c.ContentType)
	}
	req.Header.Set("Accept", "application/json")
	resp, err := client.Do(req)
	if err != nil {
		result.Message = shorten(err.Error())
		return result
	}
	defer resp.Body.Close()
	result.Status = resp.StatusCode
	data, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	var status metav1.Status
	if json.Unmarshal(data, &status) == nil && status.Kind == "Status" {
		result.Reason = string(status.Reason)
		result.Message = shorten(status.Message)
	} else {
		result.Message = shorten(string(data))
	}
	return result
}

// shorten keeps the first maxMessage bytes of s (on a rune boundary), on one line.
func shorten(s string) string {
	s = strings.Join(strings.Fields(s), " ")
	if len(s) <= maxMessage {
		return s
	}
	cut := maxMessage
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + " …"
}

// PrepareBadInputs creates what the cases need (BadInput.Needs): the namespace with its
// default ServiceAccount, a permissive PodSecurityPolicy (the admin may use any), the preset,
// the webhook configurations, then the pods. Objects of an API the server does not serve
// (PodPreset and PodSecurityPolicy on stock) are skipped. It may run again on the same
// namespace. The privileged and host-pid pods need --allow-privileged=true.
func PrepareBadInputs(ctx context.Context, client kubernetes.Interface, namespace string) error {
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: namespace}}
	if _, err := client.CoreV1().Namespaces().Create(ctx, ns, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("namespace %s: %w", namespace, err)
	}
	sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "default"}}
	if _, err := client.CoreV1().ServiceAccounts(namespace).Create(ctx, sa, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("default ServiceAccount of %s: %w", namespace, err)
	}
	cluster := BadInputClusterName(namespace)
	raw := client.CoreV1().RESTClient()
	objects := []struct {
		what, path string
		object     map[string]any
	}{
		{"PodSecurityPolicy", "/apis/policy/v1beta1/podsecuritypolicies", permissivePolicy(cluster)},
		{"PodPreset", "/apis/settings.k8s.io/v1alpha1/namespaces/" + namespace + "/podpresets", permissivePreset(BadInputTarget)},
		{"ValidatingWebhookConfiguration", "/apis/admissionregistration.k8s.io/v1/validatingwebhookconfigurations", webhookConfiguration("ValidatingWebhookConfiguration", cluster, namespace, 1)},
		{"MutatingWebhookConfiguration", "/apis/admissionregistration.k8s.io/v1/mutatingwebhookconfigurations", webhookConfiguration("MutatingWebhookConfiguration", cluster, namespace, 1)},
	}
	for _, o := range objects {
		err := raw.Post().AbsPath(o.path).SetHeader("Content-Type", contentJSON).Body(mustJSON(o.object)).Do(ctx).Error()
		if err != nil && !apierrors.IsAlreadyExists(err) && !apierrors.IsNotFound(err) {
			return fmt.Errorf("%s: %w", o.what, err)
		}
	}
	privileged := true
	pods := []*corev1.Pod{
		badInputPod(BadInputTarget, nil),
		badInputPod(BadInputPrivileged, func(p *corev1.Pod) {
			p.Spec.Containers[0].SecurityContext = &corev1.SecurityContext{Privileged: &privileged}
		}),
		badInputPod(BadInputHostPID, func(p *corev1.Pod) { p.Spec.HostPID = true }),
	}
	for _, pod := range pods {
		if err := createOncePolicyAdmits(ctx, client, namespace, pod); err != nil {
			return fmt.Errorf("pod %s: %w", pod.Name, err)
		}
	}
	return nil
}

// createOncePolicyAdmits creates pod in namespace, retrying while PodSecurityPolicy refuses it: the
// plugin reads policies from an informer, so the policy created just before may not be in
// its cache yet. Any other refusal, and a refusal that outlasts 30 s, is returned.
func createOncePolicyAdmits(ctx context.Context, client kubernetes.Interface, namespace string, pod *corev1.Pod) error {
	var last error
	err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		_, last = client.CoreV1().Pods(namespace).Create(ctx, pod, metav1.CreateOptions{})
		switch {
		case last == nil || apierrors.IsAlreadyExists(last):
			return true, nil
		case apierrors.IsForbidden(last) && strings.Contains(last.Error(), "PodSecurityPolicy"):
			return false, nil
		default:
			return false, last
		}
	})
	if err != nil && last != nil {
		return last
	}
	return err
}

func badInputPod(name string, mutate func(*corev1.Pod)) *corev1.Pod {
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{badInputLabel: "target"}},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "a", Image: "registry.k8s.io/pause:3.10"}}},
	}
	if mutate != nil {
		mutate(pod)
	}
	return pod
}

// CleanupBadInputs deletes what PrepareBadInputs created, the namespace included, and
// anything a case created by mistake under the table's cluster-scoped names.
func CleanupBadInputs(ctx context.Context, client kubernetes.Interface, namespace string) error {
	raw := client.CoreV1().RESTClient()
	var errs []error
	for _, collection := range []string{
		"/apis/policy/v1beta1/podsecuritypolicies",
		"/apis/admissionregistration.k8s.io/v1/validatingwebhookconfigurations",
		"/apis/admissionregistration.k8s.io/v1/mutatingwebhookconfigurations",
	} {
		for _, name := range []string{BadInputClusterName(namespace), "badinput-create-" + namespace,
			"badinput-big-1800000-" + namespace, "badinput-big-2500000-" + namespace} {
			if err := raw.Delete().AbsPath(collection, name).Do(ctx).Error(); err != nil && !apierrors.IsNotFound(err) {
				errs = append(errs, fmt.Errorf("%s/%s: %w", collection, name, err))
			}
		}
	}
	if err := client.CoreV1().Namespaces().Delete(ctx, namespace, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
		errs = append(errs, err)
	}
	if len(errs) > 0 {
		return fmt.Errorf("cleaning up after the bad inputs: %v", errs)
	}
	return nil
}

// InstallPodPresetCRD creates the PodPreset CRD our plugin installs, and waits until it is
// established: on stock, so that the podpresets cases take the custom-resource path there
// too (without the plugin) rather than 404.
func InstallPodPresetCRD(ctx context.Context, config *rest.Config) error {
	crd, err := podpreset.CRD()
	if err != nil {
		return err
	}
	object, err := runtime.DefaultUnstructuredConverter.ToUnstructured(crd)
	if err != nil {
		return err
	}
	client, err := dynamic.NewForConfig(config)
	if err != nil {
		return err
	}
	crds := client.Resource(apiextensionsv1.SchemeGroupVersion.WithResource("customresourcedefinitions"))
	if _, err := crds.Create(ctx, &unstructured.Unstructured{Object: object}, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("creating the PodPreset CRD: %w", err)
	}
	return wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		got, err := crds.Get(ctx, podpreset.CRDName, metav1.GetOptions{})
		if err != nil {
			return false, nil
		}
		conditions, _, _ := unstructured.NestedSlice(got.Object, "status", "conditions")
		for _, c := range conditions {
			if c, ok := c.(map[string]any); ok && c["type"] == "Established" && c["status"] == "True" {
				return true, nil
			}
		}
		return false, nil
	})
}
