package config

// Webhooks is LangGraph's webhooks section of langgraph.json, the part
// this server reads: webhooks.url's require_https, and its own
// allow_private.
type Webhooks struct {
	// RequireHTTPS refuses http:// webhook URLs.
	RequireHTTPS bool
	// AllowPrivate, when set, says whether webhooks may go to loopback,
	// private, link-local or unspecified addresses; nil leaves the
	// default to the server (refused when per-user auth is on).
	AllowPrivate *bool
}

type webhooksFile struct {
	Webhooks *struct {
		URL *struct {
			RequireHTTPS bool  `json:"require_https"`
			AllowPrivate *bool `json:"allow_private"`
		} `json:"url"`
	} `json:"webhooks"`
}

// LoadWebhooks reads the webhooks section of the langgraph.json at path.
func LoadWebhooks(path string) (Webhooks, error) {
	var f webhooksFile
	// LangGraph's other keys of the section are left to it.
	if err := readSections(path, &f, "", "webhooks", "webhooks.url"); err != nil {
		return Webhooks{}, err
	}
	if f.Webhooks == nil || f.Webhooks.URL == nil {
		return Webhooks{}, nil
	}
	return Webhooks{RequireHTTPS: f.Webhooks.URL.RequireHTTPS, AllowPrivate: f.Webhooks.URL.AllowPrivate}, nil
}
