package snapshot

// Firewall is the host firewall as the services that load it at boot
// configure it, read from their files (never by running a command): a
// rendered config repo or an image has the same facts as a live host.
// A member is nil when that firewall is not installed (none of its files
// or unit exist). Provenance: firewall.<fw>.enabled is the unit's
// enablement link (or "default: ..." when there is none);
// default_zone, enabled (ufw), default_input_policy are the file:line that
// set them; each zone, rule and chain is the file:line that declares it.
type Firewall struct {
	Firewalld *Firewalld `json:"firewalld,omitempty"`
	UFW       *UFW       `json:"ufw,omitempty"`
	Nftables  *Nftables  `json:"nftables,omitempty"`
}

// Firewalld is firewalld's permanent configuration.
type Firewalld struct {
	// Enabled is true when firewalld.service is enabled (a link in an
	// /etc/systemd/system/*.wants directory) and not masked.
	Enabled bool `json:"enabled"`
	// DefaultZone is DefaultZone= of firewalld.conf, "public" when unset.
	DefaultZone string `json:"default_zone"`
	// Zones are the zones that can receive traffic: the default zone and
	// every zone that binds a source or an interface, keyed by name. A
	// zone file in /etc/firewalld/zones replaces the one of the same name
	// in /usr/lib/firewalld/zones.
	Zones map[string]FirewalldZone `json:"zones"`
}

// FirewalldZone is one zone file (firewalld.zone(5)).
type FirewalldZone struct {
	File string `json:"file"`
	// Target is the zone's target attribute as written ("ACCEPT",
	// "%%REJECT%%", "DROP", "default"), "" when absent (the default:
	// reject all but ICMP).
	Target string `json:"target"`
	// Sources are the source bindings: an address or prefix, or
	// "ipset:NAME" / "mac:ADDR".
	Sources    []string `json:"sources"`
	Interfaces []string `json:"interfaces"`
	Services   []string `json:"services"`
	// Ports are "PORT[-PORT]/PROTOCOL", and "all/PROTOCOL" for a
	// <protocol> element (every port of that protocol).
	Ports []string        `json:"ports"`
	Rules []FirewalldRule `json:"rules"`
}

// FirewalldRule is one rich rule (<rule> of a zone file).
type FirewalldRule struct {
	Family string `json:"family,omitempty"`
	// Source is the rule's source ("" for any): an address or prefix, or
	// "ipset:NAME" / "mac:ADDR"; SourceInvert when it is negated.
	Source       string `json:"source,omitempty"`
	SourceInvert bool   `json:"source_invert,omitempty"`
	// Action is accept, reject, drop or mark; "" when the rule only logs.
	Action string `json:"action"`
	// Match is what else the rule matches ("service ssh", "port
	// 22/tcp"), empty when nothing: then it applies to every packet
	// from Source.
	Match []string `json:"match"`
}

// UFW is ufw's configuration: /etc/ufw/ufw.conf, /etc/default/ufw and the
// rules ufw wrote to /etc/ufw/user.rules and user6.rules.
type UFW struct {
	// Enabled is ENABLED=yes in ufw.conf: ufw-init loads the rules at
	// boot only then.
	Enabled bool `json:"enabled"`
	// ServiceEnabled is true when ufw.service (which runs ufw-init) is
	// enabled and not masked.
	ServiceEnabled bool `json:"service_enabled"`
	// DefaultInputPolicy is DEFAULT_INPUT_POLICY of /etc/default/ufw,
	// lower case ("drop", "reject", "accept"); "" when unset.
	DefaultInputPolicy string `json:"default_input_policy"`
	// Rules are the "### tuple ###" lines of the user rules files.
	Rules []UFWRule `json:"rules"`
	// BeforeRules are the rules of the ufw-before-input chain of
	// /etc/ufw/before.rules and ufw6-before-input of before6.rules, which
	// ufw loads ahead of the user rules (where sites add their own
	// accepts).
	BeforeRules []IptablesRule `json:"before_rules"`
}

// IptablesRule is one "-A CHAIN ..." line of an iptables-restore file,
// split as NftRule is.
type IptablesRule struct {
	// Source is -s (an address or prefix), "" for any; SourceNegated for
	// "! -s".
	Source        string `json:"source,omitempty"`
	SourceNegated bool   `json:"source_negated,omitempty"`
	// Interface is -i, "" for any ("! -i" is a match).
	Interface string `json:"interface,omitempty"`
	// Match are its other options, one per -p or -m with the options
	// iptables gives that match ("-p tcp --dport 22", "-m conntrack
	// --ctstate NEW", "-p udp --sport 547 --dport 546" from "-p udp -s A
	// --sport 547 -d B --dport 546"), and one per other basic option
	// ("-d B", "! -i ib0").
	Match []string `json:"match"`
	// Target is -j (ACCEPT, DROP, a chain), "" for none.
	Target string `json:"target"`
	IPv6   bool   `json:"ipv6,omitempty"`
}

// UFWRule is one ufw rule as its tuple line records it.
type UFWRule struct {
	// Action is allow, deny, reject or limit (a _log suffix dropped).
	Action string `json:"action"`
	// Route is true for a "route:" rule (forwarded traffic).
	Route bool `json:"route,omitempty"`
	// Protocol is "any", "tcp", "udp", ...; DPort and SPort "any" or
	// ports; Dst and Src addresses or prefixes ("0.0.0.0/0", "::/0" for
	// any).
	Protocol string `json:"protocol"`
	DPort    string `json:"dport"`
	Dst      string `json:"dst"`
	SPort    string `json:"sport"`
	Src      string `json:"src"`
	// DApp and SApp are application profiles, "" for none.
	DApp string `json:"dapp,omitempty"`
	SApp string `json:"sapp,omitempty"`
	// Direction is "in" or "out"; Interface the interface it is bound
	// to, "" for any.
	Direction string `json:"direction"`
	Interface string `json:"interface,omitempty"`
	// IPv6 is true for a rule of user6.rules.
	IPv6 bool `json:"ipv6,omitempty"`
}

// Nftables is the ruleset nftables.service loads at boot.
type Nftables struct {
	// Enabled is true when nftables.service is enabled and not masked.
	Enabled bool `json:"enabled"`
	// File is the ruleset file the unit loads (its ExecStart= nft -f
	// argument, else /etc/nftables.conf or /etc/sysconfig/nftables.conf).
	File string `json:"file"`
	// Chains are the chains of the ip, ip6 and inet tables, in the order
	// declared, include files followed.
	Chains []NftChain `json:"chains"`
}

// NftChain is one chain.
type NftChain struct {
	Family string `json:"family"`
	Table  string `json:"table"`
	Name   string `json:"name"`
	// Hook is the base chain's hook ("input", "forward", ...), "" for a
	// regular chain; Policy its policy ("accept", "drop"), "" when not
	// written (accept).
	Hook   string    `json:"hook,omitempty"`
	Policy string    `json:"policy,omitempty"`
	Rules  []NftRule `json:"rules"`
}

// NftRule is one rule of a chain, split into what decides whether it
// covers a peer: its source addresses, its input interfaces, everything
// else it matches, and its verdict.
type NftRule struct {
	// Saddr are the addresses, prefixes or ranges "ip saddr" / "ip6
	// saddr" matches (named sets and defines resolved; "@NAME" for a set
	// whose elements the file does not list); SaddrNegated for "!=".
	Saddr        []string `json:"saddr,omitempty"`
	SaddrNegated bool     `json:"saddr_negated,omitempty"`
	// Iifname are the input interfaces (iif, iifname) it matches.
	Iifname []string `json:"iifname,omitempty"`
	// Match are its other match expressions ("tcp dport 22", "ct state
	// established,related"), as written.
	Match []string `json:"match"`
	// Verdict is accept, drop, reject, jump, goto, return, queue,
	// continue, vmap, or "" (counter or log only); Target the chain of a
	// jump or goto.
	Verdict string `json:"verdict"`
	Target  string `json:"target,omitempty"`
}

// DMI is the system identification the firmware reports
// (/sys/class/dmi/id). On an EC2 instance built on Nitro, SysVendor is
// "Amazon EC2" and ProductName the instance type ("p5.48xlarge").
// Provenance: dmi.<field> is its file; a field is absent when not read.
type DMI struct {
	SysVendor   string `json:"sys_vendor,omitempty"`
	ProductName string `json:"product_name,omitempty"`
}
