package framework

import "sync"

// WarningRecorder is a client-go warning handler that keeps every warning the server sends,
// for tests that assert on admission warnings. Set it as rest.Config.WarningHandler.
type WarningRecorder struct {
	mu       sync.Mutex
	warnings []string
}

// HandleWarningHeader records one warning.
func (w *WarningRecorder) HandleWarningHeader(_ int, _ string, text string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.warnings = append(w.warnings, text)
}

// All returns the warnings recorded so far.
func (w *WarningRecorder) All() []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return append([]string(nil), w.warnings...)
}

// Take returns the warnings recorded so far and forgets them.
func (w *WarningRecorder) Take() []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	out := w.warnings
	w.warnings = nil
	return out
}
