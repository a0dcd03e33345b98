package api

import (
	"encoding/json"
	"strings"

	"agentserver/internal/jsonx"
)

// UnmarshalJSON decodes a store PUT body without scanning its value more
// than once: the value (often the bulk of the body, up to the body limit)
// is kept as the span of data it occupies, and only the other fields are
// decoded. It matches member names as encoding/json does (the last member
// whose name equals "value" ignoring case wins). Data that is not an
// object is decoded by encoding/json, which says why it is refused.
func (r *StorePutRequest) UnmarshalJSON(data []byte) error {
	type plain StorePutRequest
	members, ok := jsonx.ObjectMembers(data)
	if !ok {
		return json.Unmarshal(data, (*plain)(r))
	}
	isValue := func(m jsonx.Member) bool { return strings.EqualFold(m.Name(), "value") }
	var value json.RawMessage
	for _, m := range members {
		if isValue(m) {
			value = json.RawMessage(m.Value)
		}
	}
	var p plain
	if err := json.Unmarshal(jsonx.ReplaceMembers(members, isValue, "null"), &p); err != nil {
		return err
	}
	p.Value = value
	*r = StorePutRequest(p)
	return nil
}
