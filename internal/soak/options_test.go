package soak

import (
	"strings"
	"testing"
	"time"
)

func TestOptionsValidate(t *testing.T) {
	valid := func() Options {
		o := DefaultOptions()
		o.BinDir, o.WorkDir = "/bin", "/work"
		return o
	}
	for name, o := range map[string]Options{"default": valid(), "smoke": func() Options {
		o := SmokeOptions()
		o.BinDir, o.WorkDir = "/bin", "/work"
		return o
	}()} {
		if err := o.Validate(); err != nil {
			t.Errorf("%s options: %v", name, err)
		}
	}
	d := DefaultOptions()
	if d.Load.Pods != 10000 || d.Load.Clients != 16 || d.WebhookDown != 5*time.Second {
		t.Errorf("make soak's sizes are %d pods from %d clients, webhook down %s; the issue asks 10,000 from 16, 5 s", d.Load.Pods, d.Load.Clients, d.WebhookDown)
	}
	// Issue #36 asked 10,000 images; #48 asks them sized to fill the default caches.
	if d.IRFlood.Images < 10000 || d.IRFlood.CacheEntries != 10000 || d.IRFlood.CacheBytes != 4<<20 {
		t.Errorf("make soak floods InitialResources with %d images, caches of %d entries and %d bytes; want at least 10,000 against the defaults", d.IRFlood.Images, d.IRFlood.CacheEntries, d.IRFlood.CacheBytes)
	}

	cases := map[string]struct {
		mutate func(*Options)
		want   string
	}{
		"no bin dir":        {func(o *Options) { o.BinDir = "" }, "bin dir"},
		"unknown binary":    {func(o *Options) { o.Binaries = []string{"ours", "mine"} }, `unknown binary "mine"`},
		"binary twice":      {func(o *Options) { o.Binaries = []string{"ours", "ours"} }, "listed twice"},
		"no binary":         {func(o *Options) { o.Binaries = nil }, "no binary"},
		"no pods":           {func(o *Options) { o.Load.Pods = 0 }, "at least one pod"},
		"refuse every 1":    {func(o *Options) { o.Load.RefuseEvery = 1 }, "refuse-every"},
		"backoff inverted":  {func(o *Options) { o.Load.MaxBackoff = time.Millisecond }, "max backoff"},
		"unknown fault":     {func(o *Options) { o.Faults = []FaultKind{"meteor"} }, `unknown fault "meteor"`},
		"slow beyond proxy": {func(o *Options) { o.SlowDelay = time.Minute }, "proxy's limit"},
		"fault at 1":        {func(o *Options) { o.FaultAt = 1 }, "fault-at"},
		"no timeout":        {func(o *Options) { o.Load.Timeout = 0 }, "load timeout"},
		"flood no clients":  {func(o *Options) { o.IRFlood.Clients = 0 }, "flood needs at least one client"},
		"flood no timeout":  {func(o *Options) { o.IRFlood.Timeout = 0 }, "flood timeout"},
		"flood negative":    {func(o *Options) { o.IRFlood.Images = -1 }, "must not be negative"},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			o := valid()
			c.mutate(&o)
			err := o.Validate()
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Errorf("got %v, want an error mentioning %q", err, c.want)
			}
		})
	}
}
