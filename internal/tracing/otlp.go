package tracing

import (
	"math"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"
	"google.golang.org/protobuf/encoding/protowire"
)

// This file writes OTLP protobuf (opentelemetry/proto/trace/v1 and
// common/v1) directly from the spans, with no intermediate message
// structs: the field numbers below are the proto files'.

// Field numbers of Span.
const (
	spanTraceID       = 1
	spanSpanID        = 2
	spanTraceState    = 3
	spanParentSpanID  = 4
	spanName          = 5
	spanKind          = 6
	spanStart         = 7
	spanEnd           = 8
	spanAttributes    = 9
	spanDroppedAttrs  = 10
	spanEvents        = 11
	spanDroppedEvents = 12
	spanLinks         = 13
	spanDroppedLinks  = 14
	spanStatus        = 15
	spanFlags         = 16
)

// Flags of Span.flags and Link.flags above the W3C trace flags: whether
// the parent (or linked) span's remoteness is known, and whether it is
// remote.
const (
	flagHasIsRemote = 0x100
	flagIsRemote    = 0x200
)

// beginMessage appends the tag of field num and one byte reserved for the
// length of the message that follows; endMessage writes the length once
// the message is written.
func beginMessage(b []byte, num protowire.Number) ([]byte, int) {
	b = protowire.AppendTag(b, num, protowire.BytesType)
	return append(b, 0), len(b)
}

// endMessage writes the length of the message begun at at (beginMessage's
// second result), moving the message when its length needs more than the
// one byte reserved.
func endMessage(b []byte, at int) []byte {
	n := len(b) - at - 1
	if n < 0x80 {
		b[at] = byte(n)
		return b
	}
	size := protowire.SizeVarint(uint64(n))
	b = append(b, make([]byte, size-1)...)
	copy(b[at+size:], b[at+1:at+1+n])
	protowire.AppendVarint(b[at:at], uint64(n))
	return b
}

func appendBytesField(b []byte, num protowire.Number, v []byte) []byte {
	b = protowire.AppendTag(b, num, protowire.BytesType)
	return protowire.AppendBytes(b, v)
}

func appendStringField(b []byte, num protowire.Number, v string) []byte {
	b = protowire.AppendTag(b, num, protowire.BytesType)
	return protowire.AppendString(b, v)
}

func appendVarintField(b []byte, num protowire.Number, v uint64) []byte {
	b = protowire.AppendTag(b, num, protowire.VarintType)
	return protowire.AppendVarint(b, v)
}

func appendFixed64Field(b []byte, num protowire.Number, v uint64) []byte {
	b = protowire.AppendTag(b, num, protowire.Fixed64Type)
	return protowire.AppendFixed64(b, v)
}

func appendFixed32Field(b []byte, num protowire.Number, v uint32) []byte {
	b = protowire.AppendTag(b, num, protowire.Fixed32Type)
	return protowire.AppendFixed32(b, v)
}

// appendSpan appends s, ended at end, as field num (ScopeSpans.spans).
func appendSpan(b []byte, num protowire.Number, s *span, endNanos uint64) []byte {
	b, at := beginMessage(b, num)
	tid, sid := s.sc.TraceID(), s.sc.SpanID()
	b = appendBytesField(b, spanTraceID, tid[:])
	b = appendBytesField(b, spanSpanID, sid[:])
	if ts := s.sc.TraceState().String(); ts != "" {
		b = appendStringField(b, spanTraceState, ts)
	}
	if s.parent.IsValid() {
		b = appendBytesField(b, spanParentSpanID, s.parent[:])
	}
	b = appendStringField(b, spanName, s.name)
	kind := s.kind
	if kind == trace.SpanKindUnspecified {
		kind = trace.SpanKindInternal
	}
	b = appendVarintField(b, spanKind, uint64(kind))
	b = appendFixed64Field(b, spanStart, unixNanos(s.start.UnixNano()))
	b = appendFixed64Field(b, spanEnd, endNanos)
	b = appendKeyValues(b, spanAttributes, s.attrs)
	if s.droppedAttrs > 0 {
		b = appendVarintField(b, spanDroppedAttrs, uint64(s.droppedAttrs))
	}
	for _, e := range s.events {
		b = appendEvent(b, e)
	}
	if s.droppedEvents > 0 {
		b = appendVarintField(b, spanDroppedEvents, uint64(s.droppedEvents))
	}
	for _, l := range s.links {
		b = appendLink(b, l)
	}
	if s.droppedLinks > 0 {
		b = appendVarintField(b, spanDroppedLinks, uint64(s.droppedLinks))
	}
	if s.status != codes.Unset {
		b = appendStatus(b, s.status, s.statusMsg)
	}
	flags := uint32(s.sc.TraceFlags()) | flagHasIsRemote
	if s.remote {
		flags |= flagIsRemote
	}
	b = appendFixed32Field(b, spanFlags, flags)
	return endMessage(b, at)
}

// unixNanos is a Unix time in nanoseconds as OTLP's fixed64 (0 before
// 1970, which no clock here reads).
func unixNanos(n int64) uint64 { return uint64(max(n, 0)) }

// appendEvent appends e as a Span.events entry.
func appendEvent(b []byte, e event) []byte {
	b, at := beginMessage(b, spanEvents)
	b = appendFixed64Field(b, 1, unixNanos(e.at.UnixNano())) // time_unix_nano
	b = appendStringField(b, 2, e.name)                      // name
	b = appendKeyValues(b, 3, e.attrs)                       // attributes
	if e.dropped > 0 {
		b = appendVarintField(b, 4, uint64(e.dropped)) // dropped_attributes_count
	}
	return endMessage(b, at)
}

// appendLink appends l as a Span.links entry.
func appendLink(b []byte, l link) []byte {
	b, at := beginMessage(b, spanLinks)
	tid, sid := l.sc.TraceID(), l.sc.SpanID()
	b = appendBytesField(b, 1, tid[:]) // trace_id
	b = appendBytesField(b, 2, sid[:]) // span_id
	if ts := l.sc.TraceState().String(); ts != "" {
		b = appendStringField(b, 3, ts) // trace_state
	}
	b = appendKeyValues(b, 4, l.attrs) // attributes
	if l.dropped > 0 {
		b = appendVarintField(b, 5, uint64(l.dropped)) // dropped_attributes_count
	}
	flags := uint32(l.sc.TraceFlags()) | flagHasIsRemote
	if l.sc.IsRemote() {
		flags |= flagIsRemote
	}
	b = appendFixed32Field(b, 6, flags) // flags
	return endMessage(b, at)
}

// appendStatus appends Span.status. OTLP numbers the codes differently
// from the API: UNSET 0, OK 1, ERROR 2.
func appendStatus(b []byte, code codes.Code, msg string) []byte {
	b, at := beginMessage(b, spanStatus)
	if msg != "" {
		b = appendStringField(b, 2, msg) // message
	}
	otlpCode := uint64(1)
	if code == codes.Error {
		otlpCode = 2
	}
	b = appendVarintField(b, 3, otlpCode) // code
	return endMessage(b, at)
}

// appendKeyValues appends each of kvs as a KeyValue field num.
func appendKeyValues(b []byte, num protowire.Number, kvs []attribute.KeyValue) []byte {
	for _, kv := range kvs {
		b = appendKeyValue(b, num, kv)
	}
	return b
}

// appendKeyValue appends kv as a KeyValue (key 1, value 2) field num.
func appendKeyValue(b []byte, num protowire.Number, kv attribute.KeyValue) []byte {
	b, at := beginMessage(b, num)
	b = appendStringField(b, 1, string(kv.Key))
	b = appendAnyValue(b, 2, kv.Value)
	return endMessage(b, at)
}

// Field numbers of AnyValue's oneof.
const (
	anyString = 1
	anyBool   = 2
	anyInt    = 3
	anyDouble = 4
	anyArray  = 5
	anyKVList = 6
	anyBytes  = 7
)

// appendAnyValue appends v as an AnyValue field num. An empty value is an
// AnyValue with no field set.
func appendAnyValue(b []byte, num protowire.Number, v attribute.Value) []byte {
	b, at := beginMessage(b, num)
	switch v.Type() {
	case attribute.BOOL:
		b = appendVarintField(b, anyBool, protowire.EncodeBool(v.AsBool()))
	case attribute.INT64:
		b = appendVarintField(b, anyInt, uint64(v.AsInt64()))
	case attribute.FLOAT64:
		b = appendFixed64Field(b, anyDouble, math.Float64bits(v.AsFloat64()))
	case attribute.STRING:
		b = appendStringField(b, anyString, v.AsString())
	case attribute.BYTESLICE:
		b = appendBytesField(b, anyBytes, v.AsByteSlice())
	case attribute.BOOLSLICE:
		b = appendArray(b, v.AsBoolSlice(), attribute.BoolValue)
	case attribute.INT64SLICE:
		b = appendArray(b, v.AsInt64Slice(), attribute.Int64Value)
	case attribute.FLOAT64SLICE:
		b = appendArray(b, v.AsFloat64Slice(), attribute.Float64Value)
	case attribute.STRINGSLICE:
		b = appendArray(b, v.AsStringSlice(), attribute.StringValue)
	case attribute.SLICE:
		b = appendArray(b, v.AsSlice(), func(v attribute.Value) attribute.Value { return v })
	case attribute.MAP:
		var list int
		b, list = beginMessage(b, anyKVList)
		b = appendKeyValues(b, 1, v.AsMap()) // KeyValueList.values
		b = endMessage(b, list)
	}
	return endMessage(b, at)
}

// appendArray appends vs as AnyValue.array_value (ArrayValue.values, 1).
func appendArray[T any](b []byte, vs []T, value func(T) attribute.Value) []byte {
	b, at := beginMessage(b, anyArray)
	for _, v := range vs {
		b = appendAnyValue(b, 1, value(v))
	}
	return endMessage(b, at)
}
