package soak

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

func storedPod(name, uid string, annotations ...string) *corev1.Pod {
	a := map[string]string{}
	for _, k := range annotations {
		a[k] = "true"
	}
	return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, UID: types.UID(uid), Annotations: a}}
}

func TestCompare(t *testing.T) {
	now := time.Now()
	outcomes := []Outcome{
		{Name: "kept", Sent: now, UID: "1"},
		{Name: "lost", Sent: now, UID: "2"},
		{Name: "replaced", Sent: now, UID: "3"},
		{Name: "no-ignore", Sent: now, UID: "4"},
		{Name: "refused", Sent: now, Code: 403, Reason: "Forbidden", Message: "no"},
		{Name: "timed-out", Sent: now, Code: 504, Reason: "Timeout"},
		{Name: "unsent"},
	}
	both := []string{mutatedByFail, mutatedByIgnore, pspAnnotation}
	stored := map[string]*corev1.Pod{
		"kept":      storedPod("kept", "1", both...),
		"replaced":  storedPod("replaced", "other", both...),
		"no-ignore": storedPod("no-ignore", "4", mutatedByFail),
		"refused":   storedPod("refused", "5"),
		"timed-out": storedPod("timed-out", "6"),
		"stranger":  storedPod("stranger", "7"),
	}
	listed := map[string]string{"kept": "1", "no-ignore": "4"}
	v := compare(outcomes, stored, listed, 1, true)
	want := Verification{InEtcd: 6, Listed: 2, Lost: 2, LostNames: []string{"lost", "replaced"}, RefusedStored: 1, FailedStored: 1,
		Unexpected: 1, WithoutIgnoreMutation: 1, WithoutPolicy: 1, Undecodable: 1}
	if v.InEtcd != want.InEtcd || v.Listed != want.Listed || v.Lost != want.Lost || v.RefusedStored != want.RefusedStored ||
		v.FailedStored != want.FailedStored || v.Unexpected != want.Unexpected || v.WithoutIgnoreMutation != want.WithoutIgnoreMutation ||
		v.WithoutPolicy != want.WithoutPolicy || v.Undecodable != want.Undecodable || v.WithoutFailMutation != 0 || v.MissingFromList != 0 {
		t.Errorf("got %+v\nwant %+v", v, want)
	}
	if len(v.LostNames) != 2 {
		t.Errorf("lost names %v", v.LostNames)
	}
	if v.OK() {
		t.Error("a verification with losses is OK")
	}
	if !(Verification{WithoutIgnoreMutation: 3, FailedStored: 2}).OK() {
		t.Error("skipped Ignore mutations and failed-yet-stored pods fail the verification; both are allowed")
	}
}
