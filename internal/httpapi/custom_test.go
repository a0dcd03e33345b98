package httpapi

import "testing"

func TestMatchAppPath(t *testing.T) {
	for _, c := range []struct {
		pattern, path string
		want          bool
	}{
		{"/hello", "/hello", true},
		{"/hello", "/hello/", true},
		{"/hello", "/hell", false},
		{"/hello", "/hello/x", false},
		{"/users/:id", "/users/42", true},
		{"/users/:id", "/users", false},
		{"/users/:id{[0-9]+}/posts", "/users/42/posts", true},
		{"/public/*", "/public/a/b", true},
		{"/public/*", "/public", true},
		{"/public/*", "/publicity", false},
		{"*", "/anything", true},
		{"/*", "/", true},
	} {
		if got := matchAppPath(c.pattern, c.path); got != c.want {
			t.Errorf("matchAppPath(%q, %q) = %v, want %v", c.pattern, c.path, got, c.want)
		}
	}
}
