package sse

import (
	"bufio"
	"bytes"
	"errors"
	"io"
)

// Frame is one event read from a text/event-stream.
type Frame struct {
	ID   string
	Name string
	Data []byte
}

// Reader reads the events of a text/event-stream, as EventSource does:
// an event is dispatched at the blank line that ends it when it had a
// data field; comments (heartbeats) are skipped; several data lines are
// joined with newlines; an event without an event field is "message".
type Reader struct {
	br *bufio.Reader
}

// maxFrameLine bounds one line of a stream read by a Reader.
const maxFrameLine = 64 << 20

// NewReader reads events from r.
func NewReader(r io.Reader) *Reader {
	return &Reader{br: bufio.NewReaderSize(r, 64<<10)}
}

// ErrLineTooLong reports a stream line over the Reader's bound.
var ErrLineTooLong = errors.New("sse: line too long")

// Next returns the next event, or io.EOF at the end of the stream
// (io.ErrUnexpectedEOF when it ends inside an event).
func (r *Reader) Next() (Frame, error) {
	var f Frame
	var data [][]byte
	hasData, inEvent := false, false
	for {
		line, err := r.readLine()
		if err != nil {
			if errors.Is(err, io.EOF) && inEvent {
				return Frame{}, io.ErrUnexpectedEOF
			}
			return Frame{}, err
		}
		if len(line) == 0 {
			if hasData {
				if f.Name == "" {
					f.Name = "message"
				}
				f.Data = bytes.Join(data, []byte("\n"))
				return f, nil
			}
			f, data, inEvent = Frame{}, nil, false
			continue
		}
		if line[0] == ':' {
			continue
		}
		inEvent = true
		field, value, _ := bytes.Cut(line, []byte(":"))
		value = bytes.TrimPrefix(value, []byte(" "))
		switch string(field) {
		case "id":
			f.ID = string(value)
		case "event":
			f.Name = string(value)
		case "data":
			data = append(data, bytes.Clone(value))
			hasData = true
		}
	}
}

// readLine returns one line without its line ending.
func (r *Reader) readLine() ([]byte, error) {
	var long []byte
	for {
		part, err := r.br.ReadSlice('\n')
		if errors.Is(err, bufio.ErrBufferFull) {
			long = append(long, part...)
			if len(long) > maxFrameLine {
				return nil, ErrLineTooLong
			}
			continue
		}
		if err != nil && (len(part) == 0 || !errors.Is(err, io.EOF)) {
			return nil, err
		}
		line := part
		if long != nil {
			line = append(long, part...)
		}
		line = bytes.TrimSuffix(line, []byte("\n"))
		line = bytes.TrimSuffix(line, []byte("\r"))
		return line, nil
	}
}
