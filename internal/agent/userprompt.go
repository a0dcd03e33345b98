package agent

import (
	"encoding/json"
	"regexp"

	"agentserver/internal/graph"
)

// userField matches a {user.<field>} placeholder of a system prompt.
var userField = regexp.MustCompile(`\{user\.([A-Za-z0-9_]+)\}`)

// fillUser replaces each {user.<field>} of prompt with that field of the
// run's caller (config.configurable.langgraph_auth_user: identity,
// display_name, permissions, custom claims). A string field is written
// as is, any other value as JSON, and a field the caller lacks (or a run
// without a per-user caller) as nothing, so that a prompt written for
// users still reads when the operator runs the agent.
func fillUser(prompt string, rt *graph.Runtime) string {
	if !userField.MatchString(prompt) {
		return prompt
	}
	var user map[string]any
	if conf, ok := rt.Config["configurable"].(map[string]any); ok {
		user, _ = conf["langgraph_auth_user"].(map[string]any)
	}
	return userField.ReplaceAllStringFunc(prompt, func(m string) string {
		switch v := user[userField.FindStringSubmatch(m)[1]].(type) {
		case nil:
			return ""
		case string:
			return v
		default:
			raw, err := json.Marshal(v)
			if err != nil {
				return ""
			}
			return string(raw)
		}
	})
}
