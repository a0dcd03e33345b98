package tracing

import (
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"strconv"
	"strings"
	"time"

	"go.opentelemetry.io/otel/attribute"
)

// exportConfig is the exporter's configuration from the standard
// OTEL_EXPORTER_OTLP_* and OTEL_BSP_* variables.
type exportConfig struct {
	endpoint      string // the full URL spans are posted to
	headers       []pair
	timeout       time.Duration // one request
	gzip          bool
	tls           *tls.Config // nil: Go's defaults
	scheduleDelay time.Duration
	exportTimeout time.Duration // one batch, retries included
	maxQueue      int
	maxBatch      int
}

// pair is one entry of a key=value list.
type pair struct{ key, value string }

// transport is the HTTP transport of the exporter's client.
func (c exportConfig) transport() *http.Transport {
	t := http.DefaultTransport.(*http.Transport).Clone()
	if c.tls != nil {
		t.TLSClientConfig = c.tls
	}
	return t
}

// env reads the trace-specific variable OTEL_EXPORTER_OTLP_TRACES_<name>,
// else the general OTEL_EXPORTER_OTLP_<name>.
func otlpEnv(getenv func(string) string, name string) string {
	if v := getenv("OTEL_EXPORTER_OTLP_TRACES_" + name); v != "" {
		return v
	}
	return getenv("OTEL_EXPORTER_OTLP_" + name)
}

// loadExportConfig reads the exporter's configuration; a value that is
// set but unusable is an error naming the variable.
func loadExportConfig(getenv func(string) string) (exportConfig, error) {
	c := exportConfig{}
	var err error
	if c.endpoint, err = tracesEndpoint(getenv); err != nil {
		return c, err
	}
	if p := otlpEnv(getenv, "PROTOCOL"); p != "" && p != "http/protobuf" {
		return c, fmt.Errorf("OTEL_EXPORTER_OTLP_PROTOCOL=%s: this server exports OTLP over HTTP with protobuf only (http/protobuf)", p)
	}
	if c.headers, err = keyValueList("OTEL_EXPORTER_OTLP_HEADERS", otlpEnv(getenv, "HEADERS")); err != nil {
		return c, err
	}
	switch comp := otlpEnv(getenv, "COMPRESSION"); comp {
	case "", "none":
	case "gzip":
		c.gzip = true
	default:
		return c, fmt.Errorf("OTEL_EXPORTER_OTLP_COMPRESSION=%s: want gzip or none", comp)
	}
	if c.tls, err = otlpTLS(getenv); err != nil {
		return c, err
	}
	durations := []struct {
		name string
		v    string
		dst  *time.Duration
		def  time.Duration
	}{
		{"OTEL_EXPORTER_OTLP_TIMEOUT", otlpEnv(getenv, "TIMEOUT"), &c.timeout, 10 * time.Second},
		{"OTEL_BSP_SCHEDULE_DELAY", getenv("OTEL_BSP_SCHEDULE_DELAY"), &c.scheduleDelay, 5 * time.Second},
		{"OTEL_BSP_EXPORT_TIMEOUT", getenv("OTEL_BSP_EXPORT_TIMEOUT"), &c.exportTimeout, 30 * time.Second},
	}
	for _, d := range durations {
		ms, err := envInt(d.name, d.v, int(d.def/time.Millisecond))
		if err != nil {
			return c, err
		}
		*d.dst = time.Duration(ms) * time.Millisecond
	}
	if c.maxQueue, err = envInt("OTEL_BSP_MAX_QUEUE_SIZE", getenv("OTEL_BSP_MAX_QUEUE_SIZE"), 2048); err != nil {
		return c, err
	}
	if c.maxBatch, err = envInt("OTEL_BSP_MAX_EXPORT_BATCH_SIZE", getenv("OTEL_BSP_MAX_EXPORT_BATCH_SIZE"), 512); err != nil {
		return c, err
	}
	c.maxBatch = min(c.maxBatch, c.maxQueue)
	return c, nil
}

// tracesEndpoint is where spans go: OTEL_EXPORTER_OTLP_TRACES_ENDPOINT as
// it is, else OTEL_EXPORTER_OTLP_ENDPOINT with v1/traces added to its path.
func tracesEndpoint(getenv func(string) string) (string, error) {
	name, raw := "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", getenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT")
	if raw == "" {
		name, raw = "OTEL_EXPORTER_OTLP_ENDPOINT", getenv("OTEL_EXPORTER_OTLP_ENDPOINT")
	}
	u, err := url.Parse(raw)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return "", fmt.Errorf("%s=%q: want an http:// or https:// URL", name, raw)
	}
	if name == "OTEL_EXPORTER_OTLP_ENDPOINT" {
		u.Path = strings.TrimSuffix(u.Path, "/") + "/v1/traces"
	}
	return u.String(), nil
}

// keyValueList reads the "key=value,key=value" form of the OTEL_*
// variables named name, with percent-encoded values.
func keyValueList(name, raw string) ([]pair, error) {
	var out []pair
	for part := range strings.SplitSeq(raw, ",") {
		if strings.TrimSpace(part) == "" {
			continue
		}
		k, v, ok := strings.Cut(part, "=")
		k = strings.TrimSpace(k)
		value, err := url.PathUnescape(strings.TrimSpace(v))
		if !ok || k == "" || err != nil {
			return nil, fmt.Errorf("%s: %q is not key=value", name, part)
		}
		out = append(out, pair{k, value})
	}
	return out, nil
}

// otlpTLS reads the collector's CA certificate and the client certificate
// and key (PEM files), nil when none is set.
func otlpTLS(getenv func(string) string) (*tls.Config, error) {
	ca, cert, key := otlpEnv(getenv, "CERTIFICATE"), otlpEnv(getenv, "CLIENT_CERTIFICATE"), otlpEnv(getenv, "CLIENT_KEY")
	if ca == "" && cert == "" && key == "" {
		return nil, nil
	}
	c := &tls.Config{MinVersion: tls.VersionTLS12}
	if ca != "" {
		pem, err := os.ReadFile(ca)
		if err != nil {
			return nil, fmt.Errorf("OTEL_EXPORTER_OTLP_CERTIFICATE: %w", err)
		}
		c.RootCAs = x509.NewCertPool()
		if !c.RootCAs.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("OTEL_EXPORTER_OTLP_CERTIFICATE: no PEM certificate in %s", ca)
		}
	}
	if cert != "" || key != "" {
		pair, err := tls.LoadX509KeyPair(cert, key)
		if err != nil {
			return nil, fmt.Errorf("OTEL_EXPORTER_OTLP_CLIENT_CERTIFICATE/CLIENT_KEY: %w", err)
		}
		c.Certificates = []tls.Certificate{pair}
	}
	return c, nil
}

// envInt reads a non-negative integer variable, def when unset.
func envInt(name, v string, def int) (int, error) {
	if v == "" {
		return def, nil
	}
	n, err := strconv.Atoi(strings.TrimSpace(v))
	if err != nil || n < 0 {
		return 0, fmt.Errorf("%s=%q: want a non-negative integer", name, v)
	}
	return n, nil
}

// limits are the span limits of the OTEL_SPAN_*, OTEL_EVENT_* and
// OTEL_LINK_* variables (OTEL_ATTRIBUTE_* as the general fallback).
type limits struct {
	attrs, events, links, eventAttrs, linkAttrs int
	valueLen                                    int // -1: no limit
}

// loadLimits reads the span limits (defaults: 128 of everything, values
// of any length).
func loadLimits(getenv func(string) string) (limits, error) {
	attrCount, err := envInt("OTEL_ATTRIBUTE_COUNT_LIMIT", getenv("OTEL_ATTRIBUTE_COUNT_LIMIT"), 128)
	if err != nil {
		return limits{}, err
	}
	valueLen, err := envInt("OTEL_ATTRIBUTE_VALUE_LENGTH_LIMIT", getenv("OTEL_ATTRIBUTE_VALUE_LENGTH_LIMIT"), -1)
	if err != nil {
		return limits{}, err
	}
	l := limits{}
	for _, f := range []struct {
		name string
		dst  *int
		def  int
	}{
		{"OTEL_SPAN_ATTRIBUTE_COUNT_LIMIT", &l.attrs, attrCount},
		{"OTEL_SPAN_EVENT_COUNT_LIMIT", &l.events, 128},
		{"OTEL_SPAN_LINK_COUNT_LIMIT", &l.links, 128},
		{"OTEL_EVENT_ATTRIBUTE_COUNT_LIMIT", &l.eventAttrs, attrCount},
		{"OTEL_LINK_ATTRIBUTE_COUNT_LIMIT", &l.linkAttrs, attrCount},
		{"OTEL_SPAN_ATTRIBUTE_VALUE_LENGTH_LIMIT", &l.valueLen, valueLen},
	} {
		if *f.dst, err = envInt(f.name, getenv(f.name), f.def); err != nil {
			return limits{}, err
		}
	}
	return l, nil
}

// addAttrs adds kvs to dst: a key already there takes the new value, an
// invalid one is skipped, and one beyond max is counted in dropped.
func (l limits) addAttrs(dst []attribute.KeyValue, dropped, max int, kvs []attribute.KeyValue) ([]attribute.KeyValue, int) {
next:
	for _, kv := range kvs {
		if !kv.Valid() {
			continue
		}
		kv = l.truncate(kv)
		for i := range dst {
			if dst[i].Key == kv.Key {
				dst[i] = kv
				continue next
			}
		}
		if len(dst) >= max {
			dropped++
			continue
		}
		dst = append(dst, kv)
	}
	return dst, dropped
}

// truncate cuts a string value (or each string of a slice) to the value
// length limit, in characters.
func (l limits) truncate(kv attribute.KeyValue) attribute.KeyValue {
	if l.valueLen < 0 {
		return kv
	}
	switch kv.Value.Type() {
	case attribute.STRING:
		if s := kv.Value.AsString(); len(s) > l.valueLen {
			return attribute.String(string(kv.Key), cutRunes(s, l.valueLen))
		}
	case attribute.STRINGSLICE:
		ss := kv.Value.AsStringSlice()
		for i, s := range ss {
			ss[i] = cutRunes(s, l.valueLen)
		}
		return attribute.StringSlice(string(kv.Key), ss)
	}
	return kv
}

// cutRunes is s cut to at most n characters.
func cutRunes(s string, n int) string {
	for i := range s {
		if n == 0 {
			return s[:i]
		}
		n--
	}
	return s
}
