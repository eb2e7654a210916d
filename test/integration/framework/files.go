package framework

import (
	"bytes"
	"context"
	"os"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"
)

// WaitForFileContaining waits until the file holds text, such as an audit log's event for a
// request just answered (the log may be written after the response).
func WaitForFileContaining(t testing.TB, path, text string) {
	t.Helper()
	err := wait.PollUntilContextTimeout(context.Background(), 100*time.Millisecond, 30*time.Second, true, func(context.Context) (bool, error) {
		data, err := os.ReadFile(path)
		return err == nil && bytes.Contains(data, []byte(text)), nil
	})
	if err != nil {
		t.Fatalf("%s never held %q: %v", path, text, err)
	}
}
