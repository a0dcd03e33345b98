package main

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"sync"
	"time"
)

// streamSummary is what one SSE response held.
type streamSummary struct {
	// events counts dispatched events; comment-only blocks (heartbeats) are
	// not events.
	events              int
	first, second, last string
	// firstAt is when the first event was complete (its terminating blank
	// line read), measured from the t0 given to readStream; secondAt the
	// same for the second event.
	firstAt, secondAt time.Duration
	// errorData is the data of the first "error" event, if any.
	errorData []byte
}

// readStream reads an SSE body to its end and summarises it. An event is
// dispatched at the blank line that ends it if it had an event or data field;
// an event without an "event:" line is named "message", as in EventSource.
// streamReaders recycles the readers of finished streams, so that the load
// generator's own garbage does not weigh on the machine it measures.
var streamReaders = sync.Pool{New: func() any { return bufio.NewReaderSize(nil, 16<<10) }}

func readStream(body io.Reader, t0 time.Time) (streamSummary, error) {
	var s streamSummary
	br := streamReaders.Get().(*bufio.Reader)
	br.Reset(body)
	defer func() {
		br.Reset(nil)
		streamReaders.Put(br)
	}()
	var name string
	var data []byte
	fields := false
	for {
		line, err := br.ReadSlice('\n')
		if errors.Is(err, bufio.ErrBufferFull) {
			// A line longer than the buffer: ReadSlice's slice is only
			// valid until the next read, so gather a copy.
			long := append([]byte(nil), line...)
			for errors.Is(err, bufio.ErrBufferFull) {
				line, err = br.ReadSlice('\n')
				long = append(long, line...)
			}
			line = long
		}
		if err != nil {
			if errors.Is(err, io.EOF) {
				if fields {
					return s, fmt.Errorf("stream ended inside an event (after %d events)", s.events)
				}
				return s, nil
			}
			return s, err
		}
		line = bytes.TrimRight(line, "\r\n")
		switch {
		case len(line) == 0:
			if !fields {
				continue
			}
			if name == "" {
				name = "message"
			}
			switch s.events {
			case 0:
				s.first, s.firstAt = name, time.Since(t0)
			case 1:
				s.second, s.secondAt = name, time.Since(t0)
			}
			s.events++
			s.last = name
			if name == "error" && s.errorData == nil {
				s.errorData = append([]byte{}, data...)
			}
			name, data, fields = "", data[:0], false
		case line[0] == ':':
			// comment (heartbeat)
		default:
			k, v, _ := bytes.Cut(line, []byte(":"))
			v = bytes.TrimPrefix(v, []byte(" "))
			switch string(k) {
			case "event":
				name, fields = string(v), true
			case "data":
				data, fields = append(data, v...), true
			case "id", "retry":
			}
		}
	}
}
