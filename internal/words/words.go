// Package words spells counts in what users read: "1 pod", "2 pods",
// "1 policy", "3 policies". One home, so that no command writes "1 errors".
package words

import "strconv"

// Count is n with a regular noun in the number n takes: "1 pod", "2 pods".
func Count(n int, noun string) string { return CountAs(n, noun, noun+"s") }

// CountAs is n with one or many: "1 policy", "2 policies".
func CountAs(n int, one, many string) string {
	if n == 1 {
		return "1 " + one
	}
	return strconv.Itoa(n) + " " + many
}
