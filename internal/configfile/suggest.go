package configfile

import (
	"fmt"
	"reflect"
	"sort"
	"strings"
)

// suggest returns " (did you mean "x"?)" for the known key closest to
// key, when one is close enough to be a slip, else " (known keys: …)".
func suggest(key string, fields map[string]reflect.Type) string {
	names := make([]string, 0, len(fields))
	for n := range fields {
		names = append(names, n)
	}
	sort.Strings(names)
	best, bestDist := "", 0
	for _, n := range names {
		d := distance(strings.ToLower(key), strings.ToLower(n))
		if best == "" || d < bestDist {
			best, bestDist = n, d
		}
	}
	limit := max(1, min(len(key), len(best))/3)
	if best != "" && (bestDist <= limit || strings.HasPrefix(best, key) && len(key) >= 3) {
		return fmt.Sprintf(" (did you mean %q?)", best)
	}
	if len(names) > 20 {
		return ""
	}
	return " (known keys: " + strings.Join(names, ", ") + ")"
}

// distance is the edit distance of a and b (insertions, deletions,
// substitutions and swaps of neighbours).
func distance(a, b string) int {
	ra, rb := []rune(a), []rune(b)
	d := make([][]int, len(ra)+1)
	for i := range d {
		d[i] = make([]int, len(rb)+1)
		d[i][0] = i
	}
	for j := range rb {
		d[0][j+1] = j + 1
	}
	for i := 1; i <= len(ra); i++ {
		for j := 1; j <= len(rb); j++ {
			cost := 1
			if ra[i-1] == rb[j-1] {
				cost = 0
			}
			d[i][j] = min(d[i-1][j]+1, d[i][j-1]+1, d[i-1][j-1]+cost)
			if i > 1 && j > 1 && ra[i-1] == rb[j-2] && ra[i-2] == rb[j-1] {
				d[i][j] = min(d[i][j], d[i-2][j-2]+1)
			}
		}
	}
	return d[len(ra)][len(rb)]
}
