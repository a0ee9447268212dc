package fleetrun

import (
	"crypto/sha256"
	"encoding/binary"
	"slices"
	"strings"

	"github.com/fleetaudit/fleetaudit/policies"
)

// Each fleet rule on groups of its own facts. A fleet's groups split its
// hosts by every fact any fleet rule reads, so a fleet whose hosts all
// differ somewhere (a root=UUID boot parameter each) has a group per host,
// and a rule reading one fact of two values would walk all of them. A
// built-in fleet rule reads only the facts its METADATA declares, and its
// coverage and evidence only the errors, the source and the sources of
// those facts: it is evaluated on the groups as they fall by the members
// of the projection those lie in, each standing for the hosts of the
// fleet's groups it merges (its "count" their sum), and each of its
// findings, made on the first of them, is given to every one. The
// built-in library weighs a group by its count, never by how many groups
// there are. TestRegroupedIsWholeGroups holds both to it on generated
// fleets. A user rule's reads cannot be proven (policies.Queries.Reads
// cuts input.groups[_] at its index, and a rule may count the groups): it
// keeps the fleet's groups, and so does a built-in rule that reaches a
// user's code (Queries.BuiltinOnly).

// unit is a set of groups a fleet rule is evaluated on: the fleet's own,
// or those of a rule's facts.
type unit struct {
	groups []*policies.FleetGroup
	in     *policies.GroupInput
	// members are the fleet's groups (indexes) each group of in merges;
	// nil: in's groups are the fleet's.
	members [][]int32
	// hosts are the hosts of each of in's groups.
	hosts []int
}

// of is the fleet groups unit group j stands for.
func (u *unit) of(j int, buf []int32) []int32 {
	if u.members == nil {
		return append(buf[:0], int32(j))
	}
	return u.members[j]
}

// regroups reports whether fleet rule r is evaluated on groups of its own
// declared facts: a built-in rule reaching no user code, whose facts hold
// no "*".
func regroups(fq *policies.Queries, r *policies.Rule) bool {
	return len(r.Facts) > 0 && !slices.ContainsFunc(r.Facts, func(f string) bool { return strings.HasPrefix(f, "*") }) && fq.BuiltinOnly(r)
}

// factsKey names r's declared facts: rules that declare the same share
// their groups.
func factsKey(r *policies.Rule) string {
	facts := slices.Clone(r.Facts)
	slices.Sort(facts)
	return strings.Join(slices.Compact(facts), "\n")
}

// regroup is the unit of fleet rule r's facts over the fleet's groups,
// nil when it would not have fewer groups. Hosts are in one of r's groups
// when they agree on every member of their projections r's facts lie in
// (and the errors, source and sources): a finer split than by the facts
// alone, found from the digests of the members' parts
// (runState.fleetProjection), not by walking them.
func (s *runState) regroup(r *policies.Rule, groups []*policies.FleetGroup) *unit {
	reads := map[string]bool{}
	readsMember := func(name string) bool {
		in, ok := reads[name]
		if !ok {
			in = name == "errors" || name == "source" || name == "sources" || slices.ContainsFunc(r.Facts, func(f string) bool {
				return f == name || strings.HasPrefix(f, name+".")
			})
			reads[name] = in
		}
		return in
	}
	byKey := map[digest]int{}
	var reps []int
	var members [][]int32
	var hosts []int
	var key []byte
	for i, g := range groups {
		parts, ok := s.parts[g.Projection()]
		if !ok {
			// A projection not hashed: the fleet's groups.
			return nil
		}
		key = key[:0]
		for _, p := range parts {
			if readsMember(p.name) {
				key = binary.AppendUvarint(key, uint64(len(p.name)))
				key = append(append(key, p.name...), p.part[:]...)
			}
		}
		d := sha256.Sum256(key)
		j, seen := byKey[d]
		if !seen {
			j = len(reps)
			byKey[d] = j
			reps = append(reps, i)
			members = append(members, nil)
			hosts = append(hosts, 0)
		}
		members[j] = append(members[j], int32(i))
		hosts[j] += g.Count()
	}
	if len(reps) == len(groups) {
		return nil
	}
	fgs := make([]*policies.FleetGroup, len(reps))
	for j, i := range reps {
		fgs[j] = policies.NewFleetGroup(groups[i].Projection())
		fgs[j].AddHosts(hosts[j])
	}
	return &unit{groups: fgs, members: members, hosts: hosts}
}
