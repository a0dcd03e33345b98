package protostream

import (
	"encoding/json"
	"fmt"
)

// decodeStored rebuilds an Event from its stored envelope.
func decodeStored(seq int64, raw []byte) (Event, error) {
	var env struct {
		Method string `json:"method"`
		Params struct {
			Namespace []string `json:"namespace"`
			Data      struct {
				Name any `json:"name"`
			} `json:"data"`
		} `json:"params"`
	}
	if err := json.Unmarshal(raw, &env); err != nil {
		return Event{}, fmt.Errorf("decode stored thread event %d: %w", seq, err)
	}
	ev := Event{Seq: seq, Method: env.Method, Namespace: env.Params.Namespace, Raw: raw}
	if name, ok := env.Params.Data.Name.(string); ok && env.Method == "custom" {
		ev.Name = name
	}
	return ev, nil
}
