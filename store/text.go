package store

import (
	"encoding/json"
	"strconv"
	"strings"
	"unicode/utf8"
)

// Strings from hosts (names, messages, errors) may hold any bytes, but
// PostgreSQL's TEXT takes neither invalid UTF-8 nor NUL. Both backends
// store such a string as textMark and its Go quoting, and read it back
// as it was: the same rows on either, and nothing lost.

// textMark starts an escaped string; a string that starts with it is
// escaped too, so that reading it back is never ambiguous.
const textMark = "\x01"

// dbText is s as a TEXT column stores it.
func dbText(s string) string {
	if utf8.ValidString(s) && !strings.ContainsRune(s, 0) && !strings.HasPrefix(s, textMark) {
		return s
	}
	return textMark + strconv.Quote(s)
}

// fromDBText is a TEXT column's value as it was given to dbText.
func fromDBText(s string) string {
	if !strings.HasPrefix(s, textMark) {
		return s
	}
	if u, err := strconv.Unquote(s[len(textMark):]); err == nil {
		return u
	}
	return s
}

// asJSONText is s as a JSON document read back holds it: invalid UTF-8
// replaced, as encoding/json does.
func asJSONText(s string) string {
	if utf8.ValidString(s) {
		return s
	}
	b, err := json.Marshal(s)
	if err != nil {
		return s
	}
	var out string
	if json.Unmarshal(b, &out) != nil {
		return s
	}
	return out
}
