package testutil

import (
	"io"
	"net/http"
)

// Fetch sends a request without a body and returns the response and its
// body as text, whatever the content type (Do wants JSON).
func (s *Server) Fetch(method, path string, header http.Header) (*http.Response, string) {
	s.T.Helper()
	resp, raw := s.send(s.newRequest(method, path, nil), header)
	return resp, string(raw)
}

// send adds header to req, sends it and reads the whole answer.
func (s *Server) send(req *http.Request, header http.Header) (*http.Response, []byte) {
	s.T.Helper()
	for k, v := range header {
		req.Header[k] = v
	}
	resp, err := s.Client.Do(req)
	if err != nil {
		s.T.Fatal(err)
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	if err != nil {
		s.T.Fatal(err)
	}
	return resp, raw
}
