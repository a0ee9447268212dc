package remediate

import (
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strings"
)

// dropinHeader opens a drop-in fleetaudit writes; an existing one is edited
// in place (its keys replaced, others kept), never duplicated.
const dropinHeader = "# Written by fleetaudit remediate: overrides for this layer's fleets.\n# Edit values here; fleetaudit replaces its keys in place and keeps the rest.\n"

// Drop-in paths, relative to a layer (as under /), by fix kind. Each sorts
// after the usual numbered files of its directory, so its values are the
// ones read last; the gate's proof checks that they win.
const (
	grubDropin     = "etc/default/grub.d/99-fleetaudit.cfg"
	sysctlDropin   = "etc/sysctl.d/99-fleetaudit.conf"
	limitsDropin   = "etc/security/limits.d/99-fleetaudit.conf"
	logindDropin   = "etc/systemd/logind.conf.d/99-fleetaudit.conf"
	modulesDropin  = "etc/modules-load.d/99-fleetaudit.conf"
	modprobeDropin = "etc/modprobe.d/99-fleetaudit.conf"
	// NCCL reads its environment before /etc/nccl.conf (setenv without
	// overwrite), and a login shell sources profile.d/*.sh in order after
	// /etc/environment: the last profile.d script is the highest
	// precedence the NCCL collector knows.
	ncclDropin = "etc/profile.d/99-fleetaudit.sh"
	// A unit's drop-ins are read in file name order across every
	// directory, and "systemctl edit" writes override.conf, which sorts
	// after any numbered name: "zz-" sorts after both, so the limit set
	// here is the last assignment systemd reads.
	serviceDropinName = "zz-fleetaudit.conf"
)

// serviceDropin is the drop-in of unit, relative to a layer.
func serviceDropin(unit string) string {
	return "etc/systemd/system/" + unit + ".d/" + serviceDropinName
}

func lines(old []byte) []string {
	if len(old) == 0 {
		return nil
	}
	return strings.Split(strings.TrimSuffix(string(old), "\n"), "\n")
}

func joinLines(ls []string) []byte {
	return []byte(strings.Join(ls, "\n") + "\n")
}

func withHeader(ls []string) []string {
	if len(ls) == 0 {
		return lines([]byte(dropinHeader))
	}
	return ls
}

// editKeyValue replaces the lines whose key (by keyOf, "" for none) is in
// set with format(key, value), and appends the keys not found, sorted.
func editKeyValue(old []byte, set map[string]string, keyOf func(string) string, format func(k, v string) string) []byte {
	ls := withHeader(lines(old))
	done := map[string]bool{}
	var out []string
	for _, l := range ls {
		k := keyOf(l)
		v, ok := set[k]
		if k == "" || !ok {
			out = append(out, l)
			continue
		}
		if done[k] {
			continue // a later duplicate would override the replaced line
		}
		done[k] = true
		out = append(out, format(k, v))
	}
	for _, k := range slices.Sorted(maps.Keys(set)) {
		if !done[k] {
			out = append(out, format(k, set[k]))
		}
	}
	return joinLines(out)
}

// sysctlKeyOf reads a sysctl.d line's key as systemd-sysctl does: "-" in
// front ignores errors, "/" and "." both separate.
func sysctlKeyOf(l string) string {
	l = strings.TrimSpace(l)
	if l == "" || l[0] == '#' || l[0] == ';' {
		return ""
	}
	k, _, ok := strings.Cut(l, "=")
	if !ok {
		return ""
	}
	return strings.ReplaceAll(strings.TrimPrefix(strings.TrimSpace(k), "-"), "/", ".")
}

func editSysctl(old []byte, set map[string]string) []byte {
	norm := map[string]string{}
	for k, v := range set {
		norm[strings.ReplaceAll(k, "/", ".")] = strings.Join(strings.Fields(v), " ")
	}
	return editKeyValue(old, norm, sysctlKeyOf, func(k, v string) string { return k + " = " + v })
}

// editLimits sets one limits.conf line "domain type item value"; type "-"
// (both) replaces the soft and hard lines of the domain and item too.
func editLimits(old []byte, set map[string]string) []byte {
	domain, typ, item, value := cmpOr(set["domain"], "*"), cmpOr(set["type"], "-"), set["item"], set["value"]
	ls := withHeader(lines(old))
	var out []string
	placed := false
	for _, l := range ls {
		f := strings.Fields(l)
		if len(f) == 4 && !strings.HasPrefix(f[0], "#") && f[0] == domain && f[2] == item && (typ == "-" || f[1] == typ || f[1] == "-") {
			if !placed {
				out = append(out, strings.Join([]string{domain, typ, item, value}, "    "))
				placed = true
			}
			if f[1] == "-" && typ != "-" {
				// "-" set both; keep the other type's value from it.
				other := map[string]string{"soft": "hard", "hard": "soft"}[typ]
				out = append(out, strings.Join([]string{domain, other, item, f[3]}, "    "))
			}
			continue
		}
		out = append(out, l)
	}
	if !placed {
		out = append(out, strings.Join([]string{domain, typ, item, value}, "    "))
	}
	return joinLines(out)
}

func cmpOr(s, def string) string {
	if s == "" {
		return def
	}
	return s
}

// editLogind sets keys of the [Login] section of a logind.conf drop-in.
func editLogind(old []byte, set map[string]string) []byte {
	return editSection(old, "[Login]", set)
}

// editServiceLimits sets keys of the [Service] section of a unit drop-in.
func editServiceLimits(old []byte, set map[string]string) []byte {
	return editSection(old, "[Service]", set)
}

// editSection sets keys of one section of a systemd-style INI drop-in: a
// key there is replaced in place (a later duplicate dropped), the others
// are added at the section's end, or in a new section at the file's end.
func editSection(old []byte, header string, set map[string]string) []byte {
	ls := withHeader(lines(old))
	section := ""
	done := map[string]bool{}
	loginEnd := -1 // index after the [Login] section's last line
	var out []string
	for _, l := range ls {
		t := strings.TrimSpace(l)
		if strings.HasPrefix(t, "[") && strings.HasSuffix(t, "]") {
			section = t
		} else if section == header {
			if k, _, ok := strings.Cut(t, "="); ok && !strings.HasPrefix(t, "#") && !strings.HasPrefix(t, ";") {
				k = strings.TrimSpace(k)
				if v, want := set[k]; want {
					if done[k] {
						continue
					}
					done[k] = true
					out = append(out, k+"="+v)
					loginEnd = len(out)
					continue
				}
			}
		}
		out = append(out, l)
		if section == header && t != "" {
			loginEnd = len(out)
		}
	}
	var add []string
	for _, k := range slices.Sorted(maps.Keys(set)) {
		if !done[k] {
			add = append(add, k+"="+set[k])
		}
	}
	if len(add) == 0 {
		return joinLines(out)
	}
	if loginEnd < 0 {
		return joinLines(append(append(out, header), add...))
	}
	return joinLines(slices.Insert(out, loginEnd, add...))
}

// editList adds the lines not yet present (modules-load.d: a module a line;
// modprobe.d: "blacklist NAME").
func editList(old []byte, want []string) []byte {
	ls := withHeader(lines(old))
	have := map[string]bool{}
	for _, l := range ls {
		have[strings.Join(strings.Fields(l), " ")] = true
	}
	for _, w := range want {
		if !have[w] {
			ls = append(ls, w)
			have[w] = true
		}
	}
	return joinLines(ls)
}

// editNCCLEnv sets "export NAME=value" lines of a profile.d script.
func editNCCLEnv(old []byte, set map[string]string) []byte {
	keyOf := func(l string) string {
		rest, ok := strings.CutPrefix(strings.TrimSpace(l), "export ")
		if !ok {
			return ""
		}
		k, _, ok := strings.Cut(strings.TrimSpace(rest), "=")
		if !ok {
			return ""
		}
		return k
	}
	return editKeyValue(old, set, keyOf, func(k, v string) string { return "export " + k + "=" + v })
}

// grubLine is the one assignment fleetaudit writes to its GRUB drop-in: it
// appends to GRUB_CMDLINE_LINUX_DEFAULT, which grub-mkconfig's 10_linux
// passes after GRUB_CMDLINE_LINUX, and the kernel takes the last occurrence
// of a parameter, so these values win over any set earlier.
var grubLine = regexp.MustCompile(`^GRUB_CMDLINE_LINUX_DEFAULT="\$GRUB_CMDLINE_LINUX_DEFAULT((?: [^"$\x60\\ ]+)*)"$`)

// editGrub sets boot params in fleetaudit's GRUB drop-in, replacing a param
// already there in place.
func editGrub(old []byte, set map[string]string) ([]byte, error) {
	token := func(k string) string {
		if set[k] == "" {
			return k
		}
		return k + "=" + set[k]
	}
	ls := withHeader(lines(old))
	for i, l := range ls {
		m := grubLine.FindStringSubmatch(l)
		if m == nil {
			continue
		}
		done := map[string]bool{}
		var toks []string
		for t := range strings.FieldsSeq(m[1]) {
			k, _, _ := strings.Cut(t, "=")
			if _, ok := set[k]; ok {
				if done[k] {
					continue
				}
				done[k] = true
				t = token(k)
			}
			toks = append(toks, t)
		}
		for _, k := range slices.Sorted(maps.Keys(set)) {
			if !done[k] {
				toks = append(toks, token(k))
			}
		}
		ls[i] = `GRUB_CMDLINE_LINUX_DEFAULT="$GRUB_CMDLINE_LINUX_DEFAULT ` + strings.Join(toks, " ") + `"`
		return joinLines(ls), nil
	}
	for _, l := range ls {
		if strings.Contains(l, "GRUB_CMDLINE_LINUX") && !strings.HasPrefix(strings.TrimSpace(l), "#") {
			return nil, fmt.Errorf("%s sets the kernel command line in a form fleetaudit does not edit (%q); change it by hand", grubDropin, l)
		}
	}
	var toks []string
	for _, k := range slices.Sorted(maps.Keys(set)) {
		toks = append(toks, token(k))
	}
	ls = append(ls, `GRUB_CMDLINE_LINUX_DEFAULT="$GRUB_CMDLINE_LINUX_DEFAULT `+strings.Join(toks, " ")+`"`)
	return joinLines(ls), nil
}
