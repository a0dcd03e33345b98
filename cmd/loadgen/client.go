package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"time"
)

// newClient returns a keep-alive client that holds at least conns idle
// connections to one host, so that no worker ever dials mid-measurement.
func newClient(conns int) *http.Client {
	tr := &http.Transport{
		DialContext:         (&net.Dialer{Timeout: 5 * time.Second, KeepAlive: 30 * time.Second}).DialContext,
		MaxIdleConns:        conns + 16,
		MaxIdleConnsPerHost: conns + 16,
		IdleConnTimeout:     2 * time.Minute,
		DisableCompression:  true,
		ForceAttemptHTTP2:   false,
	}
	return &http.Client{Transport: tr, Timeout: 2 * time.Minute}
}

// result is what one request produced.
type result struct {
	status int
	// total is X-Pagination-Total, or -1 when absent.
	total int
	body  []byte
}

// do sends one request with a JSON body and reads the whole response, so that
// the connection returns to the pool. keepBody keeps the response body.
func do(ctx context.Context, c *http.Client, method, url string, body []byte, keepBody bool) (result, error) {
	var rd io.Reader
	if body != nil {
		rd = bytes.NewReader(body)
	}
	req, err := http.NewRequestWithContext(ctx, method, url, rd)
	if err != nil {
		return result{}, err
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := c.Do(req)
	if err != nil {
		return result{}, err
	}
	defer resp.Body.Close()
	r := result{status: resp.StatusCode, total: -1}
	if keepBody || resp.StatusCode >= 300 {
		r.body, err = io.ReadAll(resp.Body)
	} else {
		_, err = io.Copy(io.Discard, resp.Body)
	}
	if err != nil {
		return r, err
	}
	if v := resp.Header.Get("X-Pagination-Total"); v != "" {
		if n, err := strconv.Atoi(v); err == nil {
			r.total = n
		}
	}
	if resp.StatusCode >= 300 {
		return r, fmt.Errorf("%s %s: status %d: %.300s", method, url, resp.StatusCode, r.body)
	}
	return r, nil
}
