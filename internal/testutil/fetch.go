package testutil

import (
	"io"
	"net/http"
)

// Fetch sends a request without a body and returns the response and its
// body as text, whatever the content type (Do wants JSON).
func (s *Server) Fetch(method, path string, header http.Header) (*http.Response, string) {
	s.T.Helper()
	req := s.newRequest(method, path, nil)
	for k, v := range header {
		req.Header[k] = v
	}
	resp, err := s.Client.Do(req)
	if err != nil {
		s.T.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		s.T.Fatal(err)
	}
	return resp, string(body)
}
