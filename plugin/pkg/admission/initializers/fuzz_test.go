package initializers

import (
	"context"
	"slices"
	"strings"
	"testing"

	"k8s.io/apiserver/pkg/authentication/user"
	api "k8s.io/kubernetes/pkg/apis/core"
)

// FuzzAdmitUpdate updates a pending pod with any pending list, result and gates, by a user
// with initialize and delete, with initialize only, or with neither, dry run or not. Admit
// never panics, and, checked by the test's own reading of the lists:
//   - an update it lets through leaves the label exactly where the list is, and a gate of
//     every initializer still pending that had one;
//   - a user without initialize changes no list;
//   - an object is deleted only for a refused update that set a result, by a user who may
//     delete, on an object that was pending, not in a dry run.
func FuzzAdmitUpdate(f *testing.F) {
	for _, seed := range []struct {
		oldPending, newPending, result, gate string
		who                                  uint8
		dryRun                               bool
	}{
		{"a.example.com,b.example.com", "b.example.com", "", "a.example.com", 0, true},
		{"a.example.com", "", "", "", 1, false},
		{"a.example.com", "a.example.com,,", "", "b.example.com", 2, true},
		{"", "x", "{\"code\":403}", "", 0, false},
		{"a.example.com,b.example.com", "b.example.com, a.example.com", "not json", "b.example.com", 0, false},
		{"a.example.com", "a.example.com", "failed", "", 1, false},
		{"a.example.com", "a.example.com", "failed", "", 0, false},
	} {
		f.Add(seed.oldPending, seed.newPending, seed.result, seed.gate, seed.who, seed.dryRun)
	}
	users := []user.Info{initializerUser, initializeOnly, ordinaryUser}
	f.Fuzz(func(t *testing.T, oldPending, newPending, result, gate string, who uint8, dryRun bool) {
		requester := users[int(who)%len(users)]
		p, c := newPlugin(t)
		old := pendingPod(oldPending)
		for _, name := range names(oldPending) {
			old.Spec.SchedulingGates = append(old.Spec.SchedulingGates, api.PodSchedulingGate{Name: name})
		}
		updated := pendingPod(newPending)
		updated.Spec.SchedulingGates = slices.Clone(old.Spec.SchedulingGates)
		if gate != "" {
			updated.Spec.SchedulingGates = slices.DeleteFunc(updated.Spec.SchedulingGates, func(g api.PodSchedulingGate) bool { return g.Name == gate })
		}
		if result != "" {
			updated.Annotations[ResultAnnotation] = result
		}
		request, done := context.WithCancel(context.Background())
		err := p.Admit(request, updateAttributes(updated, old, requester, dryRun), nil)
		done()
		p.deletions.Wait()
		deleted := c.made(true)
		if len(deleted) > 0 && (err == nil || result == "" || dryRun || requester != initializerUser || len(names(oldPending)) == 0) {
			t.Fatalf("deleted by %s (dry run %v, result %q, old list %q): %v", requester.GetName(), dryRun, result, oldPending, err)
		}
		for _, d := range c.made(false) {
			if d.user != requester.GetName() {
				t.Fatalf("deleted as %s, not as the requester %s", d.user, requester.GetName())
			}
		}
		if err != nil {
			return
		}
		value, annotated := updated.Annotations[PendingAnnotation]
		if _, labelled := updated.Labels[UninitializedLabel]; labelled != annotated || (annotated && value == "") {
			t.Fatalf("annotation %q (%v), label %v", value, annotated, labelled)
		}
		if requester == ordinaryUser && !slices.Equal(names(value), names(oldPending)) {
			t.Fatalf("a user without initialize changed the list from %q to %q", oldPending, value)
		}
		for _, name := range names(value) {
			if slices.ContainsFunc(old.Spec.SchedulingGates, func(g api.PodSchedulingGate) bool { return g.Name == name }) &&
				!slices.ContainsFunc(updated.Spec.SchedulingGates, func(g api.PodSchedulingGate) bool { return g.Name == name }) {
				t.Fatalf("the gate of %s, still pending, was removed", name)
			}
		}
	})
}

// names reads a pending list the simple way, independently of the plugin's parser: the
// entries between commas, trimmed, empty ones left out.
func names(list string) []string {
	var out []string
	for _, name := range strings.Split(list, ",") {
		if name = strings.TrimSpace(name); name != "" {
			out = append(out, name)
		}
	}
	return out
}
