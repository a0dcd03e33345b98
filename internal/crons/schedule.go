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
// is accepted too. Errors wrap errdefs.ErrInvalid.
func ParseSchedule(expr, tz string, seconds bool) (Schedule, error) {
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
	parser := minuteParser
	if seconds {
		parser = secondParser
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
