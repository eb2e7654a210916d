package controlplane

import (
	"fmt"
	"net/http"
)

// GetOK returns nil when a GET of url answers 200, else why not: the readiness check of
// etcd's /health and of other components' health endpoints, polled while they start.
func GetOK(client *http.Client, url string) error {
	resp, err := client.Get(url)
	if err != nil {
		return err
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("%s: %s", url, resp.Status)
	}
	return nil
}
