package config

import (
	"errors"
	"fmt"
	"math"
	"os"
	"time"

	"agentserver/internal/configfile"
)

// ThreadTTL is the checkpointer.ttl section of langgraph.json.
type ThreadTTL struct {
	// Strategy is "delete" (default) or "keep_latest".
	Strategy string
	// DefaultTTL is given, in minutes, to threads created without a ttl;
	// 0: none.
	DefaultTTL float64
	// SweepInterval is how often expired threads are looked for; 0: the
	// server's default.
	SweepInterval time.Duration
	// SweepLimit bounds the threads one sweep handles; 0: the server's
	// default.
	SweepLimit int
}

// StoreTTL is the store.ttl section of langgraph.json.
type StoreTTL struct {
	// DefaultTTL is given, in minutes, to items put without a ttl; 0: none.
	DefaultTTL float64
	// RefreshOnRead is what reads that do not say refresh_ttl do (default
	// true).
	RefreshOnRead bool
	// SweepInterval is how often expired items are deleted; 0: the
	// server's default.
	SweepInterval time.Duration
}

// TTLs are the TTL policies of langgraph.json.
type TTLs struct {
	Threads ThreadTTL
	Store   StoreTTL
}

// ttlFile is the part of langgraph.json that TTLs come from. Numbers are
// pointers so that an absent key keeps its default.
type ttlFile struct {
	Checkpointer *struct {
		TTL *struct {
			Strategy             *string  `json:"strategy"`
			DefaultTTL           *float64 `json:"default_ttl"`
			SweepIntervalMinutes *float64 `json:"sweep_interval_minutes"`
			SweepLimit           *int     `json:"sweep_limit"`
		} `json:"ttl"`
	} `json:"checkpointer"`
	Store *struct {
		TTL *struct {
			DefaultTTL           *float64 `json:"default_ttl"`
			RefreshOnRead        *bool    `json:"refresh_on_read"`
			SweepIntervalMinutes *float64 `json:"sweep_interval_minutes"`
		} `json:"ttl"`
	} `json:"store"`
}

// LoadTTLs reads the checkpointer.ttl and store.ttl sections of the
// langgraph.json at path and checks them. Absent sections give no default
// TTLs, refresh on read, and the default sweep intervals.
func LoadTTLs(path string) (TTLs, error) {
	out := TTLs{Store: StoreTTL{RefreshOnRead: true}}
	var f ttlFile
	if err := readSections(path, &f, "", "checkpointer", "store"); err != nil {
		return out, err
	}
	var err error
	var errs []error
	if f.Checkpointer != nil && f.Checkpointer.TTL != nil {
		c := f.Checkpointer.TTL
		out.Threads.Strategy = "delete"
		if c.Strategy != nil {
			out.Threads.Strategy = *c.Strategy
		}
		if s := out.Threads.Strategy; s != "delete" && s != "keep_latest" {
			errs = append(errs, fmt.Errorf("checkpointer.ttl.strategy %q: want delete or keep_latest", s))
		}
		out.Threads.DefaultTTL, err = minutesOf("checkpointer.ttl.default_ttl", c.DefaultTTL)
		errs = append(errs, err)
		out.Threads.SweepInterval, err = intervalOf("checkpointer.ttl.sweep_interval_minutes", c.SweepIntervalMinutes)
		errs = append(errs, err)
		if c.SweepLimit != nil {
			out.Threads.SweepLimit = *c.SweepLimit
			if *c.SweepLimit < 1 {
				errs = append(errs, fmt.Errorf("checkpointer.ttl.sweep_limit: want at least 1, got %d", *c.SweepLimit))
			}
		}
	}
	if f.Store != nil && f.Store.TTL != nil {
		c := f.Store.TTL
		if c.RefreshOnRead != nil {
			out.Store.RefreshOnRead = *c.RefreshOnRead
		}
		out.Store.DefaultTTL, err = minutesOf("store.ttl.default_ttl", c.DefaultTTL)
		errs = append(errs, err)
		out.Store.SweepInterval, err = intervalOf("store.ttl.sweep_interval_minutes", c.SweepIntervalMinutes)
		errs = append(errs, err)
	}
	if err := errors.Join(errs...); err != nil {
		return out, fmt.Errorf("%s: %w", path, err)
	}
	return out, nil
}

// readSections decodes the langgraph.json at path into f, a struct of the
// sections the caller reads. The objects named by open (the top level is
// "") may hold keys f does not have (others read them); every other
// unknown key is refused.
func readSections(path string, f any, open ...string) error {
	err := configfile.ReadFile(path, f, configfile.Options{Open: open})
	var ce *configfile.Error
	if err != nil && !errors.As(err, &ce) {
		return fmt.Errorf("read %s: %w", path, err)
	}
	return err
}

// maxMinutes bounds TTLs and intervals (about 190 years).
const maxMinutes = 1e8

// minutesOf checks an optional positive number of minutes (absent: 0).
func minutesOf(name string, v *float64) (float64, error) {
	if v == nil {
		return 0, nil
	}
	if math.IsNaN(*v) || *v <= 0 || *v > maxMinutes {
		return 0, fmt.Errorf("%s: want a positive number of minutes, at most %g, got %v", name, float64(maxMinutes), *v)
	}
	return *v, nil
}

// intervalOf checks an optional positive interval in minutes (fractions
// allowed; absent: 0).
func intervalOf(name string, v *float64) (time.Duration, error) {
	m, err := minutesOf(name, v)
	return time.Duration(m * float64(time.Minute)), err
}

// CheckGraphsFile checks that the langgraph.json named by --config is
// there and is a file; its error names the flag, since the file a reader
// forgot to name is the usual cause.
func CheckGraphsFile(path string) error {
	st, err := os.Stat(path)
	switch {
	case errors.Is(err, os.ErrNotExist):
		return fmt.Errorf("--config %s: no such file (run the server where your langgraph.json is, or name it with --config or %s)", path, EnvConfig)
	case err != nil:
		return fmt.Errorf("--config %s: %w", path, err)
	case st.IsDir():
		return fmt.Errorf("--config %s: is a directory; name the langgraph.json file in it", path)
	}
	return nil
}
