package subagents

import (
	"crypto/sha256"
	"encoding/hex"
	"strings"
	"testing"
	"unicode/utf8"
)

func TestResultOfStrings(t *testing.T) {
	usage := map[string]any{"input_tokens": 10, "output_tokens": 5, "total_tokens": 15}
	cases := []struct {
		name string
		o    outcome
		text string
	}{
		{"completed", outcome{status: "completed", result: "42"}, "Task Succeeded. Result: 42"},
		{"turn capped", outcome{status: "completed", stopReason: "turn_capped", result: "partial"}, "Task Succeeded (capped: turn budget). Result: partial"},
		{"token capped", outcome{status: "completed", stopReason: "token_capped", result: "partial"}, "Task Succeeded (capped: token budget). Result: partial"},
		{"failed", outcome{status: "failed", err: "boom"}, "Task failed. Error: boom"},
		{"failed capped", outcome{status: "failed", stopReason: "token_capped", err: "no answer"}, "Task failed (capped: token budget). Error: no answer"},
		{"cancelled", outcome{status: "cancelled", err: "Cancelled by user"}, "Task cancelled by user. Error: Cancelled by user"},
		{"timed out", outcome{status: "timed_out", err: "Execution timed out after 1 seconds"}, "Task timed out. Error: Execution timed out after 1 seconds"},
	}
	for _, c := range cases {
		c.o.model, c.o.usage = "m1", usage
		res := resultOf(c.o)
		if res.Content != c.text {
			t.Errorf("%s: content %q, want %q", c.name, res.Content, c.text)
		}
		meta := res.Metadata
		if meta["subagent_status"] != c.o.status || meta["subagent_model_name"] != "m1" {
			t.Errorf("%s: metadata %v", c.name, meta)
		}
		if u, _ := meta["subagent_token_usage"].(map[string]any); u["total_tokens"] != 15 {
			t.Errorf("%s: usage %v", c.name, meta["subagent_token_usage"])
		}
		if got, _ := meta["subagent_stop_reason"].(string); got != c.o.stopReason {
			t.Errorf("%s: stop reason %q, want %q", c.name, got, c.o.stopReason)
		}
		_, hasBrief := meta["subagent_result_brief"]
		_, hasSum := meta["subagent_result_sha256"]
		_, hasErr := meta["subagent_error"]
		if completed := c.o.status == "completed"; hasBrief != completed || hasSum != completed || hasErr == completed {
			t.Errorf("%s: brief %v sha %v error %v", c.name, hasBrief, hasSum, hasErr)
		}
	}
	// No usage reported: the key is absent, never an estimated zero.
	if _, ok := resultOf(outcome{status: "failed", err: "x"}).Metadata["subagent_token_usage"]; ok {
		t.Error("usage key present without usage")
	}
	if _, ok := resultOf(outcome{status: "failed", err: "x"}).Metadata["subagent_stop_reason"]; ok {
		t.Error("stop reason key present without a stop reason")
	}
}

func TestResultOfBoundsTheBriefNotTheContent(t *testing.T) {
	long := "HEAD" + strings.Repeat("abcdefghij", 500) + "TAIL" // 5008 bytes
	res := resultOf(outcome{status: "completed", result: long})
	if res.Content != "Task Succeeded. Result: "+long {
		t.Fatal("the content must carry the full result")
	}
	brief := res.Metadata["subagent_result_brief"].(string)
	if len(brief) != briefLimit {
		t.Fatalf("brief is %d long, want %d", len(brief), briefLimit)
	}
	head, tail, ok := strings.Cut(brief, "\n...\n")
	if !ok || !strings.HasPrefix(long, head) || !strings.HasSuffix(long, tail) || len(head) != briefLimit*2/3 {
		t.Fatalf("brief is not head (2/3) + marker + tail: head %d tail %d", len(head), len(tail))
	}
	if !strings.HasPrefix(head, "HEAD") || !strings.HasSuffix(tail, "TAIL") {
		t.Fatal("brief lost the ends of the result")
	}
	sum := sha256.Sum256([]byte(long))
	if res.Metadata["subagent_result_sha256"] != hex.EncodeToString(sum[:]) {
		t.Fatal("sha256 must be of the full result")
	}
	// Errors are bounded the same way.
	errRes := resultOf(outcome{status: "failed", err: long})
	if e := errRes.Metadata["subagent_error"].(string); len(e) != briefLimit || !strings.HasPrefix(e, "HEAD") || !strings.HasSuffix(e, "TAIL") {
		t.Fatalf("error brief %d long", len(e))
	}
	// Short texts are kept as they are.
	if b := resultOf(outcome{status: "completed", result: "short"}).Metadata["subagent_result_brief"]; b != "short" {
		t.Fatalf("short brief = %v", b)
	}
	exact := strings.Repeat("x", briefLimit)
	if b := resultOf(outcome{status: "completed", result: exact}).Metadata["subagent_result_brief"]; b != exact {
		t.Fatal("a result of exactly the limit must not be cut")
	}
}

// TestResultOfBriefKeepsRunes: the brief of a long non-ASCII result is cut
// on character boundaries (2,000 characters, as in DeerFlow), so the
// metadata stays valid UTF-8.
func TestResultOfBriefKeepsRunes(t *testing.T) {
	for _, long := range []string{strings.Repeat("é", 3000), strings.Repeat("日本語", 1000), "a" + strings.Repeat("😀", 2500)} {
		brief := resultOf(outcome{status: "completed", result: long}).Metadata["subagent_result_brief"].(string)
		if !utf8.ValidString(brief) {
			t.Fatalf("brief of %q… is not valid UTF-8", long[:8])
		}
		if n := utf8.RuneCountInString(brief); n != briefLimit {
			t.Fatalf("brief has %d characters, want %d", n, briefLimit)
		}
	}
	// 2,000 characters of multi-byte text are within the limit.
	short := strings.Repeat("é", briefLimit)
	if b := resultOf(outcome{status: "completed", result: short}).Metadata["subagent_result_brief"]; b != short {
		t.Fatal("2,000 two-byte characters must not be cut")
	}
}
