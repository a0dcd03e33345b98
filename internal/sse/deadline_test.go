package sse_test

import (
	"bytes"
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"agentserver/internal/sse"
)

// TestWriterDropsClientThatStopsReading opens a stream with a client that
// sends its request and never reads: once the socket buffers are full, the
// next write must fail within the write timeout instead of blocking for good
// (holding the connection and its buffers after the stream has nothing more
// to say).
func TestWriterDropsClientThatStopsReading(t *testing.T) {
	handlerErr := make(chan error, 1)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		sw := sse.NewWriter(w)
		sw.SetWriteTimeout(200 * time.Millisecond)
		data := bytes.Repeat([]byte("x"), 64<<10)
		for {
			if err := sw.Event("", "values", data); err != nil {
				handlerErr <- err
				return
			}
		}
	}))
	defer srv.Close()
	conn, err := net.Dial("tcp", srv.Listener.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if tc, ok := conn.(*net.TCPConn); ok {
		tc.SetReadBuffer(4 << 10)
	}
	if _, err := conn.Write([]byte("GET / HTTP/1.1\r\nHost: x\r\n\r\n")); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-handlerErr:
		var ne net.Error
		if !errors.As(err, &ne) || !ne.Timeout() {
			t.Fatalf("write failed with %v, want a timeout", err)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("the stream kept blocking on a client that does not read")
	}
}
