package tracing

import (
	"runtime"
	"strings"

	"go.opentelemetry.io/otel/attribute"

	"agentserver/internal/version"
)

// resourceAttributes describe this process to the collector: service.name
// (ServiceName, or OTEL_SERVICE_NAME), telemetry.sdk.*, and whatever
// OTEL_RESOURCE_ATTRIBUTES adds ("key=value,key=value", values
// percent-encoded), which overrides all but OTEL_SERVICE_NAME.
func resourceAttributes(getenv func(string) string) ([]attribute.KeyValue, error) {
	attrs := []attribute.KeyValue{
		attribute.String("service.name", ServiceName),
		attribute.String("telemetry.sdk.name", ServiceName),
		attribute.String("telemetry.sdk.language", "go"),
		attribute.String("telemetry.sdk.version", version.Get().Version),
		attribute.String("process.runtime.version", runtime.Version()),
	}
	set := func(kv attribute.KeyValue) {
		for i := range attrs {
			if attrs[i].Key == kv.Key {
				attrs[i] = kv
				return
			}
		}
		attrs = append(attrs, kv)
	}
	extra, err := keyValueList("OTEL_RESOURCE_ATTRIBUTES", getenv("OTEL_RESOURCE_ATTRIBUTES"))
	if err != nil {
		return nil, err
	}
	for _, kv := range extra {
		set(attribute.String(kv.key, kv.value))
	}
	if name := strings.TrimSpace(getenv("OTEL_SERVICE_NAME")); name != "" {
		set(attribute.String("service.name", name))
	}
	return attrs, nil
}

// encodeResource is ResourceSpans.resource (field 1, Resource.attributes
// field 1) with its tag.
func encodeResource(attrs []attribute.KeyValue) []byte {
	b, at := beginMessage(nil, 1)
	b = appendKeyValues(b, 1, attrs)
	return endMessage(b, at)
}

// encodeScope is ScopeSpans.scope (field 1: InstrumentationScope name 1,
// version 2) with its tag.
func encodeScope() []byte {
	b, at := beginMessage(nil, 1)
	b = appendStringField(b, 1, ServiceName)
	b = appendStringField(b, 2, version.Get().Version)
	return endMessage(b, at)
}
