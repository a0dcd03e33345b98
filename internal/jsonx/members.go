package jsonx

import (
	"bytes"
	"encoding/json"
	"unicode/utf8"
)

// Member is one member of an encoded JSON object, as spans of it: the key
// with its quotes, and the value.
type Member struct {
	Key, Value []byte
}

// Name returns the member's key decoded.
func (m Member) Name() string {
	inner := m.Key[1 : len(m.Key)-1]
	if bytes.IndexByte(inner, '\\') < 0 && utf8.Valid(inner) {
		return string(inner)
	}
	var s string
	if json.Unmarshal(m.Key, &s) != nil {
		return ""
	}
	return s
}

// ObjectMembers splits data, a valid JSON document, into the members of
// its top-level object, in order, without decoding their values: long
// strings are crossed with bytes.IndexByte rather than byte by byte. It
// reports false when data is not an object. Its input must be valid JSON
// (json.Valid): it does not check the syntax it skips.
func ObjectMembers(data []byte) ([]Member, bool) {
	i := skipSpace(data, 0)
	if i >= len(data) || data[i] != '{' {
		return nil, false
	}
	var members []Member
	i = skipSpace(data, i+1)
	if i < len(data) && data[i] == '}' {
		return members, true
	}
	for i < len(data) && data[i] == '"' {
		keyEnd := stringEnd(data, i)
		if keyEnd < 0 {
			return nil, false
		}
		colon := skipSpace(data, keyEnd)
		if colon >= len(data) || data[colon] != ':' {
			return nil, false
		}
		start := skipSpace(data, colon+1)
		end := valueEnd(data, start)
		if end < 0 {
			return nil, false
		}
		members = append(members, Member{Key: data[i:keyEnd], Value: data[start:end]})
		i = skipSpace(data, end)
		if i >= len(data) {
			return nil, false
		}
		switch data[i] {
		case ',':
			i = skipSpace(data, i+1)
		case '}':
			return members, true
		default:
			return nil, false
		}
	}
	return nil, false
}

// skipSpace returns the index of the first byte at or after i that is not
// JSON white space.
func skipSpace(data []byte, i int) int {
	for i < len(data) {
		switch data[i] {
		case ' ', '\t', '\r', '\n':
			i++
		default:
			return i
		}
	}
	return i
}

// stringEnd returns the index just after the string that starts with the
// quote at i, or -1 when it does not end.
func stringEnd(data []byte, i int) int {
	j := i + 1
	for {
		q := bytes.IndexByte(data[j:], '"')
		if q < 0 {
			return -1
		}
		j += q
		backslashes := 0
		for k := j - 1; k > i && data[k] == '\\'; k-- {
			backslashes++
		}
		j++
		if backslashes%2 == 0 {
			return j
		}
	}
}

// valueEnd returns the index just after the value that starts at i, or -1
// when it does not end.
func valueEnd(data []byte, i int) int {
	if i >= len(data) {
		return -1
	}
	switch data[i] {
	case '"':
		return stringEnd(data, i)
	case '{', '[':
		depth := 0
		for j := i; j < len(data); {
			k := bytes.IndexAny(data[j:], `"{}[]`)
			if k < 0 {
				return -1
			}
			j += k
			switch data[j] {
			case '"':
				if j = stringEnd(data, j); j < 0 {
					return -1
				}
				continue
			case '{', '[':
				depth++
			default:
				depth--
			}
			j++
			if depth == 0 {
				return j
			}
		}
		return -1
	default:
		j := i
		for j < len(data) && !isValueDelimiter(data[j]) {
			j++
		}
		return j
	}
}

// isValueDelimiter reports whether b ends a number or a literal.
func isValueDelimiter(b byte) bool {
	switch b {
	case ',', '}', ']', ' ', '\t', '\r', '\n':
		return true
	}
	return false
}

// ReplaceMembers returns members encoded as an object, with the value of
// every member for which replace reports true replaced by with.
func ReplaceMembers(members []Member, replace func(Member) bool, with string) []byte {
	out := make([]byte, 0, 256)
	out = append(out, '{')
	for i, m := range members {
		if i > 0 {
			out = append(out, ',')
		}
		out = append(out, m.Key...)
		out = append(out, ':')
		if replace(m) {
			out = append(out, with...)
		} else {
			out = append(out, m.Value...)
		}
	}
	return append(out, '}')
}
