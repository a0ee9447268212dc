package snapshot

// Limits are pam_limits settings.
type Limits struct {
	Entries []LimitEntry `json:"entries"`
	// Effective maps a domain ("*", "@group", "user") to item to value, after
	// limits.conf(5) precedence. The "*" domain is always present.
	Effective map[string]map[string]LimitValue `json:"effective"`
}

// LimitEntry is one line of limits.conf or limits.d.
type LimitEntry struct {
	Domain string `json:"domain"`
	Type   string `json:"type"`
	Item   string `json:"item"`
	Value  string `json:"value"`
	Source string `json:"source"`
}

// LimitValue is an effective soft/hard pair. "unlimited" spells no limit;
// "" means not set by configuration (the kernel default applies).
type LimitValue struct {
	Soft string `json:"soft"`
	Hard string `json:"hard"`
}
