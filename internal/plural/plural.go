// Package plural writes counts in English for the sentences that say what
// a command did ("1 entry", "3 entries"), so that every summary and skip
// log agrees on the one rule: the singular for one, else the plural, a
// final "y" after a consonant becoming "ies" (entry, body) and any other
// word taking "s" (line, key).
package plural

import (
	"strconv"
	"strings"
)

// Noun is noun as n of it says it: "entry" for 1, "entries" otherwise.
func Noun(n int, noun string) string {
	switch {
	case n == 1:
		return noun
	case len(noun) > 1 && noun[len(noun)-1] == 'y' && !strings.ContainsRune("aeiou", rune(noun[len(noun)-2])):
		return noun[:len(noun)-1] + "ies"
	}
	return noun + "s"
}

// Count is n and noun: "1 body", "2 bodies", "0 answer header fields".
func Count(n int, noun string) string {
	return strconv.Itoa(n) + " " + Noun(n, noun)
}
