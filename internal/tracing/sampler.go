package tracing

import (
	"encoding/binary"
	"fmt"
	"strconv"
	"strings"

	"go.opentelemetry.io/otel/trace"
)

// sampler decides whether a new span records, as the standard
// OTEL_TRACES_SAMPLER values describe: a root decision (always, never, or
// a fraction of trace ids), optionally overridden by the parent's sampled
// flag when the span has a parent.
type sampler struct {
	parentBased bool
	// bound: a trace id samples when its lower 63 bits are below it (the
	// ratio decision OpenTelemetry's SDKs make, so services agree on a
	// trace); 0 never samples, and always is everything.
	bound  uint64
	always bool
}

// loadSampler reads OTEL_TRACES_SAMPLER and OTEL_TRACES_SAMPLER_ARG
// (default parentbased_always_on).
func loadSampler(getenv func(string) string) (sampler, error) {
	name := strings.ToLower(strings.TrimSpace(getenv("OTEL_TRACES_SAMPLER")))
	if name == "" {
		name = "parentbased_always_on"
	}
	s := sampler{}
	root, ok := strings.CutPrefix(name, "parentbased_")
	s.parentBased = ok
	switch root {
	case "always_on":
		s.always = true
	case "always_off":
	case "traceidratio":
		ratio := 1.0
		if arg := strings.TrimSpace(getenv("OTEL_TRACES_SAMPLER_ARG")); arg != "" {
			r, err := strconv.ParseFloat(arg, 64)
			if err != nil || r < 0 || r > 1 {
				return s, fmt.Errorf("OTEL_TRACES_SAMPLER_ARG=%q: want a ratio from 0 to 1", arg)
			}
			ratio = r
		}
		if ratio >= 1 {
			s.always = true
		} else {
			s.bound = uint64(ratio * (1 << 63))
		}
	default:
		return s, fmt.Errorf("OTEL_TRACES_SAMPLER=%s: want always_on, always_off, traceidratio or parentbased_ one of those", name)
	}
	return s, nil
}

// sample decides for a span of trace tid below parent (invalid for a root).
func (s sampler) sample(parent trace.SpanContext, tid trace.TraceID) bool {
	if s.parentBased && parent.IsValid() {
		return parent.IsSampled()
	}
	if s.always {
		return true
	}
	return binary.BigEndian.Uint64(tid[8:16])>>1 < s.bound
}
