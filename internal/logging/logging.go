// Package logging builds the server's logger: text for a person at a
// terminal, JSON lines for a log collector, with durations written as
// people read them ("425ms", "1.5s") in both.
package logging

import (
	"fmt"
	"io"
	"log/slog"
	"os"
	"time"
)

// Formats of the log.
const (
	Text = "text"
	JSON = "json"
)

// New returns a logger writing to w in format (Text or JSON; "" picks Text
// when w is a terminal and JSON otherwise) at level and above.
func New(w io.Writer, format string, level slog.Level) (*slog.Logger, error) {
	if format == "" {
		format = JSON
		if isTerminal(w) {
			format = Text
		}
	}
	opts := &slog.HandlerOptions{Level: level, ReplaceAttr: readableDurations}
	switch format {
	case Text:
		return slog.New(slog.NewTextHandler(w, opts)), nil
	case JSON:
		return slog.New(slog.NewJSONHandler(w, opts)), nil
	}
	return nil, fmt.Errorf("log format %q: want text or json", format)
}

// readableDurations writes a duration attribute as a rounded string
// ("425ms") instead of a count of nanoseconds.
func readableDurations(_ []string, a slog.Attr) slog.Attr {
	if a.Value.Kind() == slog.KindDuration {
		a.Value = slog.StringValue(Round(a.Value.Duration()).String())
	}
	return a
}

// Round keeps three significant digits of a duration, or whole
// microseconds below a millisecond, so that "425.305895ms" reads "425ms".
func Round(d time.Duration) time.Duration {
	for _, s := range roundSteps {
		if d >= s.from {
			return d.Round(s.unit)
		}
	}
	return d.Round(time.Microsecond)
}

// roundSteps give, from the largest, the unit durations from a bound on
// are rounded to.
var roundSteps = []struct{ from, unit time.Duration }{
	{100 * time.Second, time.Second},
	{10 * time.Second, 100 * time.Millisecond},
	{time.Second, 10 * time.Millisecond},
	{100 * time.Millisecond, time.Millisecond},
	{10 * time.Millisecond, 100 * time.Microsecond},
	{time.Millisecond, 10 * time.Microsecond},
}

// isTerminal reports whether w is a character device (a terminal).
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	fi, err := f.Stat()
	return err == nil && fi.Mode()&os.ModeCharDevice != 0
}
