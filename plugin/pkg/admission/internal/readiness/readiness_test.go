package readiness

import (
	"context"
	"sync/atomic"
	"testing"
	"time"
)

func TestWait(t *testing.T) {
	if !Wait(context.Background(), func() bool { return true }, time.Hour) {
		t.Error("ready at once, but Wait said no")
	}
	if Wait(context.Background(), func() bool { return false }, time.Millisecond) {
		t.Error("never ready, but Wait said yes")
	}
	var calls atomic.Int32
	if !Wait(context.Background(), func() bool { return calls.Add(1) > 2 }, time.Minute) {
		t.Error("ready on the third look, but Wait said no")
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if Wait(ctx, func() bool { return false }, time.Hour) {
		t.Error("the request ended, but Wait said yes")
	}
}

func TestUntilDrained(t *testing.T) {
	drained := make(chan struct{})
	ctx := UntilDrained(drained)
	if ctx.Err() != nil {
		t.Fatal("ended before the server drained")
	}
	close(drained)
	<-ctx.Done() // the test times out if it never ends
}

func TestCheck(t *testing.T) {
	ready := false
	check := Check("thing-loaded", "the thing is not loaded", func() bool { return ready })
	if check.Name() != "thing-loaded" {
		t.Errorf("name %q", check.Name())
	}
	if err := check.Check(nil); err == nil || err.Error() != "the thing is not loaded" {
		t.Errorf("not ready: got %v", err)
	}
	ready = true
	if err := check.Check(nil); err != nil {
		t.Errorf("ready: got %v", err)
	}
}
