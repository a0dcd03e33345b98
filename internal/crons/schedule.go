package crons

import (
	"fmt"
	"strings"
	"time"
	// The zone database is built in, so that a machine without
	// /usr/share/zoneinfo still knows every IANA zone.
	_ "time/tzdata"

	"github.com/robfig/cron/v3"

	"agentserver/internal/errdefs"
)

// Schedule is a parsed cron expression read in one time zone.
type Schedule struct {
	spec cron.Schedule
	loc  *time.Location
}

var (
	minuteParser = cron.NewParser(cron.Minute | cron.Hour | cron.Dom | cron.Month | cron.Dow | cron.Descriptor)
	secondParser = cron.NewParser(cron.SecondOptional | cron.Minute | cron.Hour | cron.Dom | cron.Month | cron.Dow | cron.Descriptor)
)

// ParseSchedule reads a five-field cron expression (minute hour
// day-of-month month day-of-week, or a descriptor such as @hourly) in the
// IANA zone tz (empty: UTC). With seconds, a sixth leading seconds field
// is accepted too. An "@every <duration>" interval must be a positive
// whole number of seconds, and at least a minute unless seconds is set.
// Errors wrap errdefs.ErrInvalid.
func ParseSchedule(expr, tz string, seconds bool) (Schedule, error) {
	if err := checkEvery(expr, seconds); err != nil {
		return Schedule{}, err
	}
	parser := minuteParser
	if seconds {
		parser = secondParser
	}
	return parse(expr, tz, parser, seconds)
}

// parseStored reads the schedule of a stored cron, which was checked when
// it was stored: seconds are accepted whatever the configuration, and the
// rules of ParseSchedule that came later do not apply, so that a restart
// (with --cron-seconds turned off, or a newer build) does not stop a
// stored cron from moving on.
func parseStored(expr, tz string) (Schedule, error) {
	return parse(expr, tz, secondParser, true)
}

// everyPrefix starts an interval schedule ("@every 90s").
const everyPrefix = "@every "

// checkEvery applies the rules of an interval schedule: the cron library
// would turn an interval under a second (zero and negative included) into
// one second, and round any other down to whole seconds, so those are
// refused rather than run at another rate than asked; an interval under a
// minute is a seconds schedule, accepted only with seconds.
func checkEvery(expr string, seconds bool) error {
	rest, ok := strings.CutPrefix(expr, everyPrefix)
	if !ok {
		return nil
	}
	d, err := time.ParseDuration(rest)
	if err != nil {
		return nil // the parser reports it
	}
	switch {
	case d <= 0:
		return fmt.Errorf("schedule %q: the interval must be positive: %w", expr, errdefs.ErrInvalid)
	case d%time.Second != 0:
		return fmt.Errorf("schedule %q: the interval must be a whole number of seconds: %w", expr, errdefs.ErrInvalid)
	case d < time.Minute && !seconds:
		return fmt.Errorf("schedule %q: intervals under a minute need seconds schedules, which this server does not accept (--cron-seconds): %w", expr, errdefs.ErrInvalid)
	}
	return nil
}

// parse reads expr with parser in the zone tz.
func parse(expr, tz string, parser cron.Parser, seconds bool) (Schedule, error) {
	if strings.Contains(expr, "TZ=") {
		return Schedule{}, fmt.Errorf("schedule %q: give the time zone in the timezone field: %w", expr, errdefs.ErrInvalid)
	}
	loc := time.UTC
	if tz != "" {
		l, err := time.LoadLocation(tz)
		if err != nil || tz == "Local" {
			return Schedule{}, fmt.Errorf("timezone %q is not an IANA time zone: %w", tz, errdefs.ErrInvalid)
		}
		loc = l
	}
	spec, err := parser.Parse(expr)
	if err != nil {
		hint := "five fields: minute hour day-of-month month day-of-week"
		if seconds {
			hint += ", optionally after a seconds field"
		}
		return Schedule{}, fmt.Errorf("schedule %q: %v (%s): %w", expr, err, hint, errdefs.ErrInvalid)
	}
	return Schedule{spec: spec, loc: loc}, nil
}

// Next returns the first firing strictly after t, in UTC, or false when
// the schedule never fires again (the parser looks five years ahead).
//
// Daylight saving time: a local time skipped by the clock moving forward
// does not fire that day; a local time the clock passes twice when it
// moves back fires once, the first time (a firing must move the wall
// clock forward).
func (s Schedule) Next(t time.Time) (time.Time, bool) {
	from := t.In(s.loc)
	n := from
	// Only firings inside a repeated hour are skipped: at most 3600 of
	// them (a seconds schedule).
	for range 4096 {
		n = s.spec.Next(n)
		if n.IsZero() {
			return time.Time{}, false
		}
		if wallClock(n).After(wallClock(from)) {
			return n.UTC(), true
		}
	}
	return n.UTC(), true
}

// wallClock is a local time's calendar reading, without its offset.
func wallClock(t time.Time) time.Time {
	y, mo, d := t.Date()
	h, mi, sec := t.Clock()
	return time.Date(y, mo, d, h, mi, sec, t.Nanosecond(), time.UTC)
}
