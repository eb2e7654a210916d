package trace

import (
	"encoding/json"
	"reflect"
	"slices"
	"strconv"
	"strings"
)

// ChangedPaths returns the JSON pointers (RFC 6901) at which after differs from before, both
// JSON documents: the shallowest path of each addition, removal or replacement, sorted. A
// list that changed length is reported element by element up to the shorter length, then
// the elements added or removed past it. Undecodable input is reported as the root.
func ChangedPaths(before, after []byte) []string {
	var b, a any
	if json.Unmarshal(before, &b) != nil || json.Unmarshal(after, &a) != nil {
		return []string{""}
	}
	var paths []string
	diff("", b, a, &paths)
	slices.Sort(paths)
	return paths
}

func diff(path string, before, after any, paths *[]string) {
	switch b := before.(type) {
	case map[string]any:
		a, ok := after.(map[string]any)
		if !ok {
			break
		}
		for k, bv := range b {
			av, ok := a[k]
			if !ok {
				*paths = append(*paths, path+"/"+escape(k))
				continue
			}
			diff(path+"/"+escape(k), bv, av, paths)
		}
		for k := range a {
			if _, ok := b[k]; !ok {
				*paths = append(*paths, path+"/"+escape(k))
			}
		}
		return
	case []any:
		a, ok := after.([]any)
		if !ok {
			break
		}
		for i := range max(len(a), len(b)) {
			at := path + "/" + strconv.Itoa(i)
			if i >= len(a) || i >= len(b) {
				*paths = append(*paths, at)
				continue
			}
			diff(at, b[i], a[i], paths)
		}
		return
	}
	if !reflect.DeepEqual(before, after) {
		*paths = append(*paths, path)
	}
}

// escape escapes a key for a JSON pointer.
func escape(key string) string {
	return strings.ReplaceAll(strings.ReplaceAll(key, "~", "~0"), "/", "~1")
}

// PatchPaths returns the paths a JSON patch's operations name, in order, each once.
func PatchPaths(patch []byte) []string {
	var ops []struct {
		Path string `json:"path"`
	}
	if json.Unmarshal(patch, &ops) != nil {
		return nil
	}
	var paths []string
	for _, op := range ops {
		if !slices.Contains(paths, op.Path) {
			paths = append(paths, op.Path)
		}
	}
	return paths
}
