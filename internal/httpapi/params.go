package httpapi

import (
	"encoding/json"
	"strings"

	"github.com/google/uuid"
)

// parseBool reads the boolean encodings clients send in query strings:
// 1/0, true/false, yes/no, on/off (any case). Absent or empty is def.
func parseBool(p *string, def bool) (bool, error) {
	if p == nil || *p == "" {
		return def, nil
	}
	switch strings.ToLower(strings.TrimSpace(*p)) {
	case "1", "true", "yes", "on", "t", "y":
		return true, nil
	case "0", "false", "no", "off", "f", "n":
		return false, nil
	}
	return false, invalidf("expected a boolean (1/0, true/false, yes/no), got " + quote(*p))
}

// parseList flattens a repeated query parameter whose values may also be
// JSON array strings (the JS SDK) or comma-free single values.
func parseList(values []string) []string {
	var out []string
	for _, v := range values {
		v = strings.TrimSpace(v)
		if strings.HasPrefix(v, "[") {
			var arr []string
			if err := json.Unmarshal([]byte(v), &arr); err == nil {
				out = append(out, arr...)
				continue
			}
		}
		if v != "" {
			out = append(out, v)
		}
	}
	return out
}

// checkpointIDFrom extracts a checkpoint id from the encodings clients use
// for "before" and checkpoint selectors: a string id, an object with
// checkpoint_id, or a RunnableConfig {configurable: {checkpoint_id}}.
func checkpointIDFrom(v any) (*uuid.UUID, error) {
	var s string
	switch t := v.(type) {
	case nil:
		return nil, nil
	case string:
		s = t
	case map[string]any:
		if conf, ok := t["configurable"].(map[string]any); ok {
			return checkpointIDFrom(conf)
		}
		if id, ok := t["checkpoint_id"]; ok {
			return checkpointIDFrom(id)
		}
		return nil, nil
	default:
		return nil, invalidf("checkpoint must be an id string or an object with checkpoint_id")
	}
	if s == "" {
		return nil, nil
	}
	id, err := uuid.Parse(s)
	if err != nil {
		return nil, invalidf("checkpoint_id " + quote(s) + " is not a UUID")
	}
	return &id, nil
}

func quote(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

func intOr(p *int, def int) int {
	if p == nil {
		return def
	}
	return *p
}
