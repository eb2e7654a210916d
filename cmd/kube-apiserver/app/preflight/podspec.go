package preflight

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"reflect"
	"regexp"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	corev1defaults "k8s.io/kubernetes/pkg/apis/core/v1"

	"github.com/portcullis-k8s/portcullis/cmd/kube-apiserver/app/nodeconfig"
)

// podListKeys names, by a list's field name, the fields that identify its items, so that two
// lists are compared item by item whatever their order: the kubelet does not care about
// the order of these, and kubeadm does not keep it (it copies the proxy variables in the
// order of the shell's environment).
var podListKeys = map[string][]string{
	"containers":          {"name"},
	"initContainers":      {"name"},
	"ephemeralContainers": {"name"},
	"volumes":             {"name"},
	"volumeMounts":        {"mountPath"},
	"volumeDevices":       {"devicePath"},
	"env":                 {"name"},
	"ports":               {"containerPort", "protocol"},
	"imagePullSecrets":    {"name"},
	"resourceClaims":      {"name"},
	"resizePolicy":        {"resourceName"},
}

// podContainerLists are the lists of containers, whose items' settings are each a
// container's.
var podContainerLists = map[string]bool{"containers": true, "initContainers": true, "ephemeralContainers": true}

// podEntryMaps are the maps whose keys are entries, not fields: each entry is a setting of
// its own.
var podEntryMaps = map[string]bool{"labels": true, "annotations": true, "nodeSelector": true}

// podChange is one setting the rendered pod has otherwise than the running one.
type podChange struct {
	// path names the setting: spec.containers[kube-apiserver].env[HTTPS_PROXY].
	path string
	// was and now are the running and the rendered value, as decoded from JSON; nil where
	// the pod does not have the setting.
	was, now any
	// list is, for an item of a keyed list, the list's field name ("env", "volumes", ...).
	list string
	// container is the container whose setting it is; "" for the pod's own.
	container string
}

// comparePodSpecs reports what the rendered static pod changes in the running one besides
// the kube-apiserver container's command line (checkAgainstRunning compares it flag by flag)
// and image (checked on their own): a re-render by kubeadm takes the proxy variables of the
// shell it runs in, and drops what the running manifest got from a patch the node no longer
// has or from a hand edit. Only the hostPath volumes and read-only mounts that Portcullis's
// kubeadm configuration adds are expected; they are notes, every other change a problem.
func (r *PreflightReport) comparePodSpecs(runningPath string, running, rendered *nodeconfig.StaticPod) {
	apiServer := rendered.Container
	was, err := comparablePod(running, rendered)
	if err != nil {
		r.problem("--running-manifest %s: %v", runningPath, err)
		return
	}
	now, err := comparablePod(rendered, rendered)
	if err != nil {
		r.problem("--manifest: %v", err)
		return
	}
	if running.Container != apiServer {
		r.problem("the kube-apiserver container is named %s in the running manifest %s and %s in the rendered one: %s", running.Container, runningPath, apiServer, otherRenderAdvice)
	}
	// kubeadm writes the advertise address into an annotation and the probes too: their
	// changes follow from the flag's, which checkAgainstRunning reports.
	wasAddress, nowAddress := lastFlagValue(running.Args, "advertise-address"), lastFlagValue(rendered.Args, "advertise-address")
	moved := wasAddress != "" && nowAddress != "" && wasAddress != nowAddress
	var changes []podChange
	diffPodValues("", "", "", was, now, &changes)
	slices.SortStableFunc(changes, func(a, b podChange) int { return strings.Compare(a.path, b.path) })

	// What Portcullis's kubeadm configuration adds: hostPath volumes, and read-only mounts of
	// the kube-apiserver container (by volume, for the volume's note).
	readOnlyMounts := map[string][]string{}
	addedVolumes := map[string]bool{}
	for _, c := range changes {
		if volume, path, ok := addedReadOnlyMount(c, apiServer); ok {
			readOnlyMounts[volume] = append(readOnlyMounts[volume], path)
		}
		if volume, _, ok := addedHostPathVolume(c); ok {
			addedVolumes[volume] = true
		}
	}
	for _, c := range changes {
		if volume, hostPath, ok := addedHostPathVolume(c); ok {
			note := fmt.Sprintf("adds the hostPath volume %s (%s)", volume, hostPath)
			if mounts := readOnlyMounts[volume]; len(mounts) > 0 {
				note += " mounted read-only at " + strings.Join(mounts, ", ")
			}
			r.Notes = append(r.Notes, note)
			continue
		}
		if volume, path, ok := addedReadOnlyMount(c, apiServer); ok {
			if !addedVolumes[volume] {
				r.Notes = append(r.Notes, fmt.Sprintf("the kube-apiserver container mounts the volume %s read-only at %s as well", volume, path))
			}
			continue
		}
		wasText, nowText := displayPodValue(c, c.was), displayPodValue(c, c.now)
		advice := otherRenderAdvice
		if name, ok := proxyVariable(c, apiServer); ok {
			advice = proxyAdvice(name, c)
		} else if moved && c.was != nil && c.now != nil && strings.ReplaceAll(wasText, wasAddress, nowAddress) == nowText {
			advice = fmt.Sprintf("it follows --advertise-address, which changes from %s to %s: render from the node's own configuration (docs/operating.md, 2a)", wasAddress, nowAddress)
		}
		switch {
		case c.was == nil:
			r.problem("%s is added (%s), which the running manifest %s does not have: %s", c.path, nowText, runningPath, advice)
		case c.now == nil:
			r.problem("%s, which the running manifest %s has (%s), is gone: %s", c.path, runningPath, wasText, advice)
		default:
			r.problem("%s changes from %s (the running manifest's) to %s: %s", c.path, wasText, nowText, advice)
		}
	}
}

// lastFlagValue is the value args give the flag name last (the one the server keeps); "" for
// none.
func lastFlagValue(args []string, name string) string {
	values := givenFlags(args)[name]
	if len(values) == 0 {
		return ""
	}
	return values[len(values)-1]
}

// otherRenderAdvice is what to do about a change that is not kubeadm's doing at render time.
const otherRenderAdvice = "the running manifest was rendered with other patches or by another kubeadm release, or edited by hand: put the setting the node needs in its patches (/etc/kubernetes/patches) or the ClusterConfiguration, and render again"

// proxyAdvice is what to do about a proxy variable that differs: kubeadm copies every
// variable whose name ends in _proxy (any case) from the environment it runs in.
func proxyAdvice(name string, c podChange) string {
	hint := "set " + name + " to the running manifest's value"
	switch {
	case c.was == nil:
		hint = "unset " + name
	case c.now == nil:
		hint = "export " + name + " as the running manifest has it"
	}
	return fmt.Sprintf("kubeadm copies the proxy variables (HTTP_PROXY, HTTPS_PROXY, NO_PROXY, any name ending in _proxy, any case) from the shell that renders the manifest: render again from a shell with the same proxy variables as when the running manifest was rendered (%s)", hint)
}

// proxyVariable returns the name of the kube-apiserver container's environment variable c
// is, if kubeadm takes it from the shell.
func proxyVariable(c podChange, apiServer string) (string, bool) {
	if c.list != "env" || c.container != apiServer {
		return "", false
	}
	name := envName(c)
	return name, strings.HasSuffix(strings.ToLower(name), "_proxy")
}

// envName is the name of the environment variable c is.
func envName(c podChange) string {
	for _, v := range []any{c.now, c.was} {
		if item, ok := v.(map[string]any); ok {
			if name, ok := item["name"].(string); ok {
				return name
			}
		}
	}
	return ""
}

// addedHostPathVolume returns the name and host path of the hostPath volume c adds, if it
// is one.
func addedHostPathVolume(c podChange) (volume, hostPath string, ok bool) {
	item, _ := c.now.(map[string]any)
	source, isHostPath := item["hostPath"].(map[string]any)
	if c.list != "volumes" || c.container != "" || c.was != nil || !isHostPath {
		return "", "", false
	}
	volume, _ = item["name"].(string)
	hostPath, _ = source["path"].(string)
	return volume, hostPath, true
}

// addedReadOnlyMount returns the volume and mount path of the read-only mount c adds to the
// kube-apiserver container, if it is one.
func addedReadOnlyMount(c podChange, apiServer string) (volume, path string, ok bool) {
	item, _ := c.now.(map[string]any)
	if c.list != "volumeMounts" || c.container != apiServer || c.was != nil || item["readOnly"] != true {
		return "", "", false
	}
	volume, _ = item["name"].(string)
	path, _ = item["mountPath"].(string)
	return volume, path, true
}

// comparablePod is p's pod as the kubelet runs it (the kubelet decodes a static pod with the
// API's defaults, so a default written out is no change), as generic JSON, which also
// writes quantities one way: metadata's name, namespace, labels and annotations, and the
// spec, less the kube-apiserver container's command line and image. That container takes
// rendered's name, so that the two are compared whatever they are named.
func comparablePod(p, rendered *nodeconfig.StaticPod) (map[string]any, error) {
	pod := p.Pod.DeepCopy()
	apiServer := slices.IndexFunc(pod.Spec.Containers, func(c corev1.Container) bool { return c.Name == p.Container })
	if apiServer < 0 {
		return nil, fmt.Errorf("no container %s", p.Container)
	}
	// The image's default pull policy goes with the image, which is not compared.
	c := &pod.Spec.Containers[apiServer]
	c.Name, c.Image = rendered.Container, rendered.Image
	corev1defaults.SetObjectDefaults_Pod(pod)
	data, err := json.Marshal(pod)
	if err != nil {
		return nil, err
	}
	var whole struct {
		Metadata map[string]any `json:"metadata"`
		Spec     map[string]any `json:"spec"`
	}
	if err := json.Unmarshal(data, &whole); err != nil {
		return nil, err
	}
	metadata := map[string]any{}
	for _, field := range []string{"name", "namespace", "labels", "annotations"} {
		if v, ok := whole.Metadata[field]; ok {
			metadata[field] = v
		}
	}
	// JSON keeps the containers in order.
	containers, _ := whole.Spec["containers"].([]any)
	if c, ok := containers[apiServer].(map[string]any); ok {
		delete(c, "command")
		delete(c, "args")
		delete(c, "image")
	}
	return map[string]any{"metadata": metadata, "spec": whole.Spec}, nil
}

// diffPodValues adds to changes each setting that differs between was and now, the values
// at path of field; container is the container they belong to, if any. Keyed lists are
// compared item by item, entry maps entry by entry, other maps field by field; anything
// else (a scalar, an unkeyed list) is one setting.
func diffPodValues(path, field, container string, was, now any, changes *[]podChange) {
	if reflect.DeepEqual(was, now) {
		return
	}
	if keys, ok := podListKeys[field]; ok {
		wasItems, wasOK := keyedItems(was, keys)
		nowItems, nowOK := keyedItems(now, keys)
		if wasOK && nowOK {
			for _, key := range slices.Sorted(maps.Keys(union(wasItems, nowItems))) {
				a, b := wasItems[key], nowItems[key]
				itemPath, itemContainer := path+"["+key+"]", container
				if podContainerLists[field] {
					itemContainer = key
				}
				switch {
				case reflect.DeepEqual(a, b):
				// An environment variable is one setting, its value or valueFrom.
				case a == nil || b == nil || field == "env":
					*changes = append(*changes, podChange{path: itemPath, was: nilIfEmpty(a), now: nilIfEmpty(b), list: field, container: itemContainer})
				default:
					diffPodValues(itemPath, "", itemContainer, a, b, changes)
				}
			}
			return
		}
	}
	// Tolerations are a set: their order means nothing.
	if field == "tolerations" && sameItems(was, now) {
		return
	}
	wasMap, wasOK := was.(map[string]any)
	nowMap, nowOK := now.(map[string]any)
	if podEntryMaps[field] {
		wasOK, nowOK = wasOK || was == nil, nowOK || now == nil
	}
	if !wasOK || !nowOK {
		*changes = append(*changes, podChange{path: path, was: was, now: now, container: container})
		return
	}
	for _, key := range slices.Sorted(maps.Keys(union(wasMap, nowMap))) {
		diffPodValues(fieldPath(path, key, podEntryMaps[field]), key, container, wasMap[key], nowMap[key], changes)
	}
}

// keyedItems returns a list's items by their key fields' values ("6443/TCP"); false when an
// item lacks a key or two share one, which is then no set of items to compare by key.
func keyedItems(list any, keys []string) (map[string]map[string]any, bool) {
	out := map[string]map[string]any{}
	if list == nil {
		return out, true
	}
	items, ok := list.([]any)
	if !ok {
		return nil, false
	}
	for _, item := range items {
		m, ok := item.(map[string]any)
		if !ok {
			return nil, false
		}
		var parts []string
		for _, k := range keys {
			v, ok := m[k]
			if !ok {
				return nil, false
			}
			parts = append(parts, fmt.Sprint(v))
		}
		key := strings.Join(parts, "/")
		if _, dup := out[key]; dup {
			return nil, false
		}
		out[key] = m
	}
	return out, true
}

func union[V any](a, b map[string]V) map[string]bool {
	out := map[string]bool{}
	for k := range a {
		out[k] = true
	}
	for k := range b {
		out[k] = true
	}
	return out
}

// nilIfEmpty makes an absent item nil as an interface, not a nil map.
func nilIfEmpty(m map[string]any) any {
	if m == nil {
		return nil
	}
	return m
}

// sameItems reports whether two lists hold the same items, in whatever order.
func sameItems(a, b any) bool {
	encode := func(list any) []string {
		items, _ := list.([]any)
		var out []string
		for _, item := range items {
			data, _ := json.Marshal(item)
			out = append(out, string(data))
		}
		slices.Sort(out)
		return out
	}
	return slices.Equal(encode(a), encode(b))
}

// plainField is a key that reads well after a dot.
var plainField = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_-]*$`)

// fieldPath appends key to path: after a dot for a field, in brackets for a map's entry
// (a label, an annotation) or a key a dot would make ambiguous.
func fieldPath(path, key string, entry bool) string {
	switch {
	case entry || !plainField.MatchString(key):
		return path + "[" + key + "]"
	case path == "":
		return key
	default:
		return path + "." + key
	}
}

// secretName matches environment variable names whose values are likely credentials.
var secretName = regexp.MustCompile(`(?i)pass|secret|token|credential|key|auth`)

// urlUserinfo matches the user (and password) of a URL; schemelessUserinfo that of a
// proxy address without a scheme, which curl and Go's net/http take (user:pass@host:3128).
var (
	urlUserinfo        = regexp.MustCompile(`(?i)\b([a-z][a-z0-9+.-]*://)[^/?#\s"]*@`)
	schemelessUserinfo = regexp.MustCompile(`^[^/?#\s"]*@`)
)

// displayPodValue writes v, a value of c, for an operator: a string as it is, anything else
// as JSON; the value alone for an environment variable. It never shows the user and
// password of a URL, nor a value whose variable's name says it is a secret.
func displayPodValue(c podChange, v any) string {
	if v == nil {
		return ""
	}
	if c.list == "env" {
		item, _ := v.(map[string]any)
		rest := maps.Clone(item)
		delete(rest, "name")
		v = rest
		value, isValue := rest["value"].(string)
		switch {
		case len(rest) == 0:
			v = "" // an empty value, which JSON leaves out
		case isValue && len(rest) == 1:
			if secretName.MatchString(envName(c)) {
				return "a value not shown, as its name suggests a secret"
			}
			v = schemelessUserinfo.ReplaceAllString(value, "***@")
		}
	}
	var text string
	if s, ok := v.(string); ok && s != "" {
		text = s
	} else {
		var b bytes.Buffer
		enc := json.NewEncoder(&b)
		enc.SetEscapeHTML(false)
		_ = enc.Encode(v)
		text = strings.TrimSuffix(b.String(), "\n")
	}
	return urlUserinfo.ReplaceAllString(text, "${1}***@")
}
