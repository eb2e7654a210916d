package trace

import (
	"context"
	"net/http"
	"sync"
	"sync/atomic"
	"unicode/utf8"

	"k8s.io/apiserver/pkg/warning"
)

// requestKey is where a request's trace state sits in its context.
type requestKey struct{}

// requestState is one HTTP request's trace state. Upstream makes a new admission attributes
// record for the validating phase and for every retry of an update or a patch, so what is
// the request's, not one record's, lives here: whether it is traced (the authorizer is asked
// once), its Recorder, and the runes of every warning its response carries so far (the
// trace's and everyone else's), which the trace's budget is measured against.
type requestState struct {
	// parent is the context the request had before this state: its warning recorder is
	// upstream's, which writes the response's headers.
	parent context.Context
	// written counts the runes of the warnings added to the response through this state.
	written atomic.Int64

	mu      sync.Mutex
	decided bool
	// recorder is the request's trace; nil when it is not traced.
	recorder *Recorder
}

var _ warning.Recorder = &requestState{}

// WithRequest returns ctx carrying a new request's trace state, and a warning recorder that
// counts what the response carries before handing each warning to ctx's own. A ctx that has
// the state already is returned as is.
func WithRequest(ctx context.Context) context.Context {
	if _, ok := ctx.Value(requestKey{}).(*requestState); ok {
		return ctx
	}
	q := &requestState{parent: ctx}
	return warning.WithWarningRecorder(context.WithValue(ctx, requestKey{}, q), q)
}

// WithRequestHandler gives every request handler serves its trace state (WithRequest). The
// command puts it innermost in the server's handler chain when the trace is on, inside
// upstream's warning recorder; without it no request is traced.
func WithRequestHandler(handler http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		handler.ServeHTTP(w, req.WithContext(WithRequest(req.Context())))
	})
}

// requestFrom returns ctx's request state; nil outside a request given one.
func requestFrom(ctx context.Context) *requestState {
	q, _ := ctx.Value(requestKey{}).(*requestState)
	return q
}

// AddWarning counts text and hands it to the response's recorder.
func (q *requestState) AddWarning(agent, text string) {
	q.written.Add(int64(utf8.RuneCountInString(text)))
	warning.AddWarning(q.parent, agent, text)
}
