package protostream

import "testing"

// AllEvents is a valid filter that selects an event of every channel, at
// any depth, custom events with a name included.
func TestAllEventsSelectsEveryEvent(t *testing.T) {
	f := AllEvents()
	if err := f.Validate(); err != nil {
		t.Fatal(err)
	}
	evs := []Event{
		{Method: "custom", Name: "progress", Namespace: []string{"task:call_1", "inner"}},
		{Method: "custom"},
		{Method: "input.requested"},
		{Method: "input.answered"},
	}
	for c := range knownChannels {
		if c != "input" && c != "custom" {
			evs = append(evs, Event{Method: c, Namespace: []string{"async_task:1"}})
		}
	}
	for _, ev := range evs {
		if !f.Matches(&ev) {
			t.Errorf("AllEvents does not select %s %q in %v", ev.Method, ev.Name, ev.Namespace)
		}
	}
}
