// Package policies is the policy engine. It compiles the Rego rule library
// (embedded here, plus user policy directories) once, prepares one query per
// fleet and scope, and evaluates host snapshots and fleet projections
// concurrently.
//
// Host rules are multi-value rules in packages under data.fleetaudit.rules
// (every `name contains f if` rule there is a finding rule; helpers are
// complete rules, functions, or live elsewhere); they see one snapshot as
// input. Fleet-wide rules live under
// data.fleetaudit.fleet_rules and see each distinct configuration of a fleet
// once: {"fleet": name, "count": hosts, "groups": [{"group", "count",
// projection}]} (see fleetpass.go).
// Both read the fleet's parameters at data.fleetaudit.params and its name at
// data.fleetaudit.fleet. Each rule yields finding objects
//
//	{"msg": string, "evidence": [fact path], "severity"?: override,
//	 "fix"?: object, "expected"?: value, "basis"?: string, "group"?: index}
//
// ("group" is required in fleet rules) and carries its id, severity, title,
// remediation and references in a METADATA block.
//
// # The engine core and the runner
//
// The engine core (compile: engine.go, load.go, rule.go, reads.go,
// params.go, capabilities.go; per-rule evaluation: eval.go, fleeteval.go,
// oracle.go; coverage.go; evidence: finding.go, project.go, identity.go,
// podevidence.go) reads alone and names nothing the runner files declare
// (TestCoreUsesNoRunner); the runner files (run.go, fleetrun.go,
// classes.go, dedup.go, sections.go, hostrecords.go, fleetpass.go,
// testrun.go) build on it.
//
// # The runner
//
// Engine.RunAudit is the one production path: audit runs a run's hosts
// through it, and the gate (configrepo) each rendered fleet as one host.
// Engine.Run wraps it for tests; Engine.EvalHost and Engine.EvalFleet
// (oracle.go) are the plain evaluation the tests hold it to. RunAudit takes
// an iterator of HostInput and runs each host in one of RunOptions.Workers
// long-lived workers (runState.host, one worker's scratch in worker). A
// host goes through these steps, each reusing what an earlier host of the
// run already computed:
//
//  1. Bytes. HostInput.Read returns the snapshot file's bytes
//     (snapshot.ReadFile) and selects this path; an input with Load only
//     (audit clears Read for --kube, which needs every document) skips to
//     the document. hostMember finds the span of the top-level "host"
//     member's value.
//  2. Class (classes.go, dedup.go). classTable.find hashes the bytes less
//     that span and compares them with the class's first file (class.same).
//     A host of a class seen before, in a fleet none of whose rules reads
//     the host name (fleetQueries.shareable), takes that class's template
//     for its fleet and is never decoded.
//  3. Sections (sections.go). runState.decode splits the file into its
//     top-level members (snapshot.SplitMembers); each distinct member
//     is decoded once per run into a section held in the sectionCache, with
//     what depends on it alone computed once (section.value, its path
//     digests, its projection part). docSections records which section
//     each member of the document is.
//  4. Document. snapshot.Assemble joins the sections into the document, the
//     map Decoder.Document makes of the same bytes (HostInput.Load returns
//     it directly). runState.evalDoc picks the host's fleet (RunOptions.FleetOf)
//     and its fleetQueries.
//  5. Coverage (coverage.go). coverageOf says which sections were collected:
//     coverage.skipped lists the rules that do not run on the host,
//     coverage.unread marks a host not read at all, coverage.admits later
//     withholds findings resting on facts a family's error left unread.
//  6. Rule keys (dedup.go, reads.go). runState.evalRules builds each rule's
//     key with ruleKeys.appendKey: the fleet, the rule and the digest of
//     every input path it reads, as staticReads found them in the compiled
//     Rego (ruleReads; a rule that reads input whole is keyed by all of it,
//     host name included). A key already in runState.results reuses that
//     rule's raw result.
//  7. Result (fleetrun.go, eval.go). runState.evalMissing evaluates the
//     rules without a result: all in one query when none is known (a fleet's
//     first host), else each alone (fleetQueries.single) on the sections it reads
//     (Engine.ruleInputSections), each within the rule budget
//     (RunOptions.HostTimeout, evalBudget); a rule over it becomes the
//     host's overBudget finding. appendRuleFindings turns raw results into
//     Findings with the host's own evidence (docSections.evidence) and
//     coverage. The host's findings, skipped rules and projection form a
//     template, shared by its class; hostNames.record keeps one hostRecord
//     per host.
//  8. Group (fleetpass.go, project.go). Each host's fleet projection
//     (runState.fleetProjection: Project, made from sections by
//     Engine.projectSections) is interned by content; runState.fleetPass
//     groups the hosts of a fleet by projection into fleetGroups and
//     Engine.evalGroups (fleeteval.go) evaluates the fleet-wide rules once
//     per fleet on its groups, each finding naming a group (groupIndex).
//  9. Report. The Audit holds the records, the templates and the groups:
//     Audit.Hosts yields each HostRun, Audit.Each yields every finding in
//     report order, a group's findings given to each of its hosts
//     (Audit.Findings returns them all at once, in input order);
//     audit.Result.All streams them to the reports.
package policies
