package snapshot

// Limits are pam_limits settings.
type Limits struct {
	// Entries are the lines pam_limits accepts, in the order it reads them.
	Entries []LimitEntry `json:"entries"`
	// Effective maps a domain ("*", "@group", "user") to item to value, after
	// pam_limits precedence. The "*" domain (a user only the wildcard
	// matches) is always present.
	Effective map[string]map[string]LimitValue `json:"effective"`
	// Exempt marks domains a "<domain> -" line exempts from pam_limits: it
	// sets nothing for them, so their Effective map is empty.
	Exempt map[string]bool `json:"exempt"`
	// Files are the files read, limits.conf first.
	Files []string `json:"files"`
}

// LimitEntry is one line of limits.conf or limits.d. Type and Item are
// lower-cased as pam_limits reads them; an exemption line has no Item.
type LimitEntry struct {
	Domain string     `json:"domain"`
	Type   string     `json:"type"`
	Item   string     `json:"item"`
	Value  string     `json:"value"`
	Source Provenance `json:"source"`
}

// LimitValue is an effective soft/hard pair in the unit limits.conf uses
// (KiB for sizes, minutes for cpu). "unlimited" spells no limit (for nofile
// pam_limits sets fs.nr_open instead); "" means not set by configuration,
// so the inherited limit applies.
type LimitValue struct {
	Soft string `json:"soft"`
	Hard string `json:"hard"`
}
