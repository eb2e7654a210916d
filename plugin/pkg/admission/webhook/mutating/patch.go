package mutating

import (
	"bytes"
	"encoding"
	"encoding/json"
	"reflect"
	"strings"
	"unicode/utf8"

	jsonpatch "gopkg.in/evanphx/json-patch.v4"

	"k8s.io/apimachinery/pkg/runtime"
)

// applyPatch applies a webhook's JSON patch to doc, the JSON of object (json.Marshal's).
// The patches webhooks return most (add, replace or remove a member of an object below the
// top level, reached through objects only: a label, an annotation, a field of the spec) are
// applied to the bytes where they stand; anything else goes through json-patch v4, as
// upstream applies every patch. json-patch decodes the whole document into a tree and writes
// it out again on every call. The bytes written here differ from its output only in the
// order of the members of the objects the patch goes through, which decoding the patched
// object does not see: a shortcut is taken only where the object's Go type decodes those
// objects member by member (no custom decoder on the way, which could keep their bytes), and
// never for a member of the top level, where decoding reads the kind by a case-insensitive
// match. TestPatchDecodesAsJSONPatchV4 and FuzzPatchDecodesAsJSONPatchV4 hold the two to the
// same decoded object and the same failures.
func applyPatch(doc []byte, patch jsonpatch.Patch, object runtime.Object) ([]byte, error) {
	if patched, ok := applyToMembers(doc, patch, object); ok {
		return patched, nil
	}
	return patch.Apply(doc)
}

// maxOpsInPlace bounds the operations applied to the bytes: each one scans and copies the
// document, where json-patch decodes and writes it once for the whole patch.
const maxOpsInPlace = 8

// pointerDecoder decodes a JSON pointer's reference tokens, as json-patch v4 does.
var pointerDecoder = strings.NewReplacer("~1", "/", "~0", "~")

// memberOp is one operation applied in place: kind on the member named by the last of
// tokens, in the object the others lead to.
type memberOp struct {
	kind   string
	tokens []string
	// value is the operation's value as json-patch writes it (compacted, HTML-escaped).
	value []byte
}

// applyToMembers applies patch to doc's bytes when every operation can be, and reports
// whether it could; when it cannot, json-patch applies the whole patch, failures included.
// doc must be json.Marshal's: no member named twice in an object.
func applyToMembers(doc []byte, patch jsonpatch.Patch, object runtime.Object) ([]byte, bool) {
	if len(patch) == 0 || len(patch) > maxOpsInPlace {
		return nil, false
	}
	// Every operation's shape first, so that a patch json-patch must apply is found before
	// any work on the document.
	ops := make([]memberOp, 0, len(patch))
	for _, op := range patch {
		m := memberOp{kind: op.Kind()}
		if m.kind != "add" && m.kind != "replace" && m.kind != "remove" {
			return nil, false
		}
		path, err := op.Path()
		if err != nil || !strings.HasPrefix(path, "/") {
			return nil, false
		}
		m.tokens = strings.Split(path[1:], "/")
		if len(m.tokens) < 2 {
			return nil, false
		}
		for i, token := range m.tokens {
			m.tokens[i] = pointerDecoder.Replace(token)
		}
		if !decodedByMember(object, m.tokens[:len(m.tokens)-1]) {
			return nil, false
		}
		if m.kind != "remove" {
			raw, ok := op["value"]
			switch {
			case !ok:
				return nil, false
			case raw == nil:
				// A null value decodes to a nil *json.RawMessage.
				m.value = []byte("null")
			default:
				// As json-patch writes it: encoding/json compacts a raw value.
				if m.value, err = json.Marshal(raw); err != nil || !uniqueMembers(m.value) {
					return nil, false
				}
			}
		}
		ops = append(ops, m)
	}

	out := doc
	for _, m := range ops {
		// The object holding the member: found through objects only.
		start := skipSpace(out, 0)
		end := skipValue(out, start)
		if end < 0 || out[start] != '{' {
			return nil, false
		}
		for _, token := range m.tokens[:len(m.tokens)-1] {
			found, ok := findMember(out, start, token)
			if !ok || !found.found || out[found.valueStart] != '{' {
				return nil, false
			}
			start, end = found.valueStart, found.valueEnd
		}
		found, ok := findMember(out, start, m.tokens[len(m.tokens)-1])
		if !ok {
			return nil, false
		}
		switch {
		case m.kind == "remove" && !found.found:
			return nil, false
		case m.kind == "remove":
			out = splice(out, found.removeStart, found.removeEnd, nil)
		case found.found:
			out = splice(out, found.valueStart, found.valueEnd, m.value)
		default:
			// A new member, last in its object (json-patch's replace adds a missing one too).
			key, err := json.Marshal(m.tokens[len(m.tokens)-1])
			if err != nil {
				return nil, false
			}
			member := make([]byte, 0, len(key)+len(m.value)+2)
			if !found.empty {
				member = append(member, ',')
			}
			member = append(member, key...)
			member = append(member, ':')
			member = append(member, m.value...)
			closing := end - 1 // the object's '}'
			out = splice(out, closing, closing, member)
		}
	}
	return out, true
}

// decodedByMember says whether the objects that path leads through, from object's top level
// to the one it names, are each decoded member by member, independently of their members'
// order: a custom resource's maps, or Go structs and maps with no decoder of their own (a
// RawExtension keeps its bytes as they come, and json-patch sorts the members of every
// object it goes through).
func decodedByMember(object runtime.Object, path []string) bool {
	if _, ok := object.(runtime.Unstructured); ok {
		return true
	}
	t := reflect.TypeOf(object)
	for i := 0; ; i++ {
		for t.Kind() == reflect.Pointer {
			t = t.Elem()
		}
		if hasOwnDecoder(t) {
			return false
		}
		if i == len(path) {
			return t.Kind() == reflect.Struct || t.Kind() == reflect.Map && t.Key().Kind() == reflect.String
		}
		switch t.Kind() {
		case reflect.Struct:
			field, ok := jsonField(t, path[i])
			if !ok {
				return false
			}
			t = field.Type
		case reflect.Map:
			if t.Key().Kind() != reflect.String {
				return false
			}
			t = t.Elem()
		default:
			return false
		}
	}
}

var (
	jsonUnmarshaler = reflect.TypeFor[json.Unmarshaler]()
	textUnmarshaler = reflect.TypeFor[encoding.TextUnmarshaler]()
)

func hasOwnDecoder(t reflect.Type) bool {
	p := reflect.PointerTo(t)
	return t.Implements(jsonUnmarshaler) || p.Implements(jsonUnmarshaler) || t.Implements(textUnmarshaler) || p.Implements(textUnmarshaler)
}

// jsonField is the field of struct type t that decoding fills from the member name (exactly:
// Kubernetes decodes case-sensitively), found as encoding/json finds it: the shallowest, an
// embedded struct without a name being part of its parent. Two at the same depth: none.
func jsonField(t reflect.Type, name string) (reflect.StructField, bool) {
	level := []reflect.Type{t}
	for depth := 0; len(level) > 0 && depth < 8; depth++ {
		var found []reflect.StructField
		var next []reflect.Type
		for _, st := range level {
			for i := range st.NumField() {
				f := st.Field(i)
				tag := f.Tag.Get("json")
				if tag == "-" {
					continue
				}
				tagName, _, _ := strings.Cut(tag, ",")
				if f.Anonymous && tagName == "" {
					ft := f.Type
					if ft.Kind() == reflect.Pointer {
						ft = ft.Elem()
					}
					if ft.Kind() == reflect.Struct {
						next = append(next, ft)
						continue
					}
				}
				if !f.IsExported() {
					continue
				}
				if tagName == "" {
					tagName = f.Name
				}
				if tagName == name {
					found = append(found, f)
				}
			}
		}
		switch len(found) {
		case 0:
			level = next
		case 1:
			return found[0], true
		default:
			return reflect.StructField{}, false
		}
	}
	return reflect.StructField{}, false
}

// splice is b with b[from:to] replaced by with, in a new slice.
func splice(b []byte, from, to int, with []byte) []byte {
	out := make([]byte, 0, len(b)-(to-from)+len(with))
	out = append(out, b[:from]...)
	out = append(out, with...)
	return append(out, b[to:]...)
}

// member is where an object's member lies in a document: its value, and the span to cut
// to remove it (with one separating comma).
type member struct {
	found                  bool
	valueStart, valueEnd   int
	removeStart, removeEnd int
	// empty says the object has no members.
	empty bool
}

// findMember looks for key among the members of the object starting at start; ok is false
// when the object is malformed.
func findMember(b []byte, start int, key string) (m member, ok bool) {
	i := start + 1
	m.empty = true
	prevEnd := -1 // the end of the previous member's value
	for {
		i = skipSpace(b, i)
		if i >= len(b) {
			return member{}, false
		}
		if b[i] == '}' {
			return m, true
		}
		if !m.empty {
			if b[i] != ',' {
				return member{}, false
			}
			i = skipSpace(b, i+1)
		}
		memberStart := i
		keyEnd := skipString(b, i)
		if keyEnd < 0 {
			return member{}, false
		}
		named, ok := isNamed(b[i:keyEnd], key)
		if !ok {
			return member{}, false
		}
		i = skipSpace(b, keyEnd)
		if i >= len(b) || b[i] != ':' {
			return member{}, false
		}
		valueStart := skipSpace(b, i+1)
		valueEnd := skipValue(b, valueStart)
		if valueEnd < 0 {
			return member{}, false
		}
		if named {
			m.found, m.valueStart, m.valueEnd = true, valueStart, valueEnd
			if m.empty {
				// The first member: cut it and the comma after it, if any.
				m.removeStart, m.removeEnd = memberStart, valueEnd
				if next := skipSpace(b, valueEnd); next < len(b) && b[next] == ',' {
					m.removeEnd = next + 1
				}
			} else {
				// A later member: cut the comma before it.
				m.removeStart, m.removeEnd = prevEnd, valueEnd
			}
		}
		m.empty = false
		prevEnd = valueEnd
		i = valueEnd
	}
}

// isNamed says whether a member's quoted name decodes to key, as encoding/json decodes it.
func isNamed(quoted []byte, key string) (named, ok bool) {
	inner := quoted[1 : len(quoted)-1]
	if bytes.IndexByte(inner, '\\') < 0 && utf8.Valid(inner) {
		return string(inner) == key, true
	}
	var name string
	if err := json.Unmarshal(quoted, &name); err != nil {
		return false, false
	}
	return name == key, true
}

// uniqueMembers says whether no object in the JSON value v names a member twice (decoding
// would merge the two where json-patch keeps the last).
func uniqueMembers(v []byte) bool {
	end, ok := checkMembers(v, skipSpace(v, 0))
	return ok && end >= 0
}

// checkMembers checks the value at b[i] and returns its end.
func checkMembers(b []byte, i int) (int, bool) {
	if i >= len(b) {
		return -1, false
	}
	switch b[i] {
	case '{':
		var names []string
		i = skipSpace(b, i+1)
		if i < len(b) && b[i] == '}' {
			return i + 1, true
		}
		for {
			keyEnd := skipString(b, i)
			if keyEnd < 0 {
				return -1, false
			}
			var name string
			if json.Unmarshal(b[i:keyEnd], &name) != nil {
				return -1, false
			}
			for _, n := range names {
				if n == name {
					return -1, false
				}
			}
			names = append(names, name)
			i = skipSpace(b, keyEnd)
			if i >= len(b) || b[i] != ':' {
				return -1, false
			}
			end, ok := checkMembers(b, skipSpace(b, i+1))
			if !ok {
				return -1, false
			}
			i = skipSpace(b, end)
			if i >= len(b) {
				return -1, false
			}
			if b[i] == '}' {
				return i + 1, true
			}
			if b[i] != ',' {
				return -1, false
			}
			i = skipSpace(b, i+1)
		}
	case '[':
		i = skipSpace(b, i+1)
		if i < len(b) && b[i] == ']' {
			return i + 1, true
		}
		for {
			end, ok := checkMembers(b, i)
			if !ok {
				return -1, false
			}
			i = skipSpace(b, end)
			if i >= len(b) {
				return -1, false
			}
			if b[i] == ']' {
				return i + 1, true
			}
			if b[i] != ',' {
				return -1, false
			}
			i = skipSpace(b, i+1)
		}
	}
	end := skipValue(b, i)
	return end, end >= 0
}

func skipSpace(b []byte, i int) int {
	for i < len(b) && (b[i] == ' ' || b[i] == '\n' || b[i] == '\t' || b[i] == '\r') {
		i++
	}
	return i
}

// skipString returns the index after the string starting at b[i] ('"'), or -1.
func skipString(b []byte, i int) int {
	if i >= len(b) || b[i] != '"' {
		return -1
	}
	for i++; i < len(b); i++ {
		switch b[i] {
		case '\\':
			i++
		case '"':
			return i + 1
		}
	}
	return -1
}

// skipValue returns the index after the JSON value starting at b[i], or -1. It checks
// brackets and strings only: the document is valid JSON already (json.Marshal's, or a
// patch's values, which json-patch decoded).
func skipValue(b []byte, i int) int {
	if i >= len(b) {
		return -1
	}
	switch b[i] {
	case '"':
		return skipString(b, i)
	case '{', '[':
		depth := 0
		for ; i < len(b); i++ {
			switch b[i] {
			case '"':
				end := skipString(b, i)
				if end < 0 {
					return -1
				}
				i = end - 1
			case '{', '[':
				depth++
			case '}', ']':
				depth--
				if depth == 0 {
					return i + 1
				}
			}
		}
		return -1
	}
	// A number, true, false or null.
	j := i
	for j < len(b) && !strings.ContainsRune(" \t\r\n,}]", rune(b[j])) {
		j++
	}
	if j == i {
		return -1
	}
	return j
}
