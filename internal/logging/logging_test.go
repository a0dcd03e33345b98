package logging

import (
	"bytes"
	"encoding/json"
	"log/slog"
	"strings"
	"testing"
	"time"
)

// Durations read as people write them, in both formats.
func TestDurationsAreReadable(t *testing.T) {
	for _, format := range []string{Text, JSON} {
		var buf bytes.Buffer
		log, err := New(&buf, format, slog.LevelInfo)
		if err != nil {
			t.Fatal(err)
		}
		log.Info("model call failed; retrying", "delay", 425305895*time.Nanosecond)
		out := buf.String()
		if !strings.Contains(out, "425ms") || strings.Contains(out, "425305895") {
			t.Fatalf("%s: %s", format, out)
		}
		if format == JSON {
			var line map[string]any
			if err := json.Unmarshal([]byte(out), &line); err != nil || line["delay"] != "425ms" {
				t.Fatalf("json line %s: %v", out, err)
			}
		}
	}
}

// A writer that is not a terminal gets JSON lines by default.
func TestDefaultFormatOffATerminalIsJSON(t *testing.T) {
	var buf bytes.Buffer
	log, err := New(&buf, "", slog.LevelInfo)
	if err != nil {
		t.Fatal(err)
	}
	log.Info("serving")
	if !json.Valid(bytes.TrimSpace(buf.Bytes())) {
		t.Fatalf("not JSON: %s", buf.String())
	}
	if _, err := New(&buf, "xml", slog.LevelInfo); err == nil {
		t.Fatal("an unknown format was accepted")
	}
}

func TestRound(t *testing.T) {
	for in, want := range map[time.Duration]string{
		425305895 * time.Nanosecond: "425ms", 1234567 * time.Nanosecond: "1.23ms", 1500 * time.Nanosecond: "2µs",
		12345678901 * time.Nanosecond: "12.3s", 3*time.Minute + 7*time.Second + 400*time.Millisecond: "3m7s",
	} {
		if got := Round(in).String(); got != want {
			t.Errorf("Round(%v) = %s, want %s", in, got, want)
		}
	}
}
