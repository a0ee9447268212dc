// Package fleetrun is the policy runner: it audits a run's hosts with an
// engine (policies.Engine) and shares every evaluation hosts can share.
// RunAudit is the one production path: audit runs a run's hosts through
// it, and the gate (configrepo) each rendered fleet as one host. Run wraps
// it for tests; policies.Engine.EvalHost and EvalFleet are the plain
// evaluation (the oracle) the tests here hold it to (evalguard_test.go).
// The runner uses the engine core only through its exports
// (policies/runner.go).
//
// RunAudit takes an iterator of HostInput and runs each host in one of
// RunOptions.Workers long-lived workers (runState.host, one worker's
// scratch in worker). A host goes through these steps, each reusing what
// an earlier host of the run already computed:
//
//  1. Bytes. HostInput.Read returns the snapshot file's bytes
//     (snapshot.ReadFile) and selects this path; an input with Load only
//     (audit clears Read for --kube, which needs every document) skips to
//     the document. hostMember finds the span of the top-level "host"
//     member's value.
//  2. Class (classes.go, dedup.go). classTable.find hashes the bytes less
//     that span and compares them with the class's first file (class.same).
//     A host of a class seen before, in a fleet none of whose rules reads
//     the host name (policies.Queries.Shareable), takes that class's
//     template for its fleet and is never decoded.
//  3. Sections (sections.go). runState.decode splits the file into its
//     top-level members (snapshot.SplitKnown, a member equal to the one the
//     worker last saw under its name taken as that section); each distinct
//     member is decoded once per run into a section held in the
//     sectionCache, with what depends on it alone computed once
//     (section.value, made by the worker's converter, its path
//     digests, its projection part). docSections records which section
//     each member of the document is.
//  4. Document. snapshot.Assemble joins the sections into the document, the
//     map Decoder.Document makes of the same bytes (HostInput.Load returns
//     it directly). runState.evalDoc picks the host's fleet
//     (RunOptions.FleetOf) and its policies.Queries.
//  5. Coverage. policies.CoverageOf says which sections were collected:
//     Coverage.Skipped lists the rules that do not run on the host,
//     Coverage.Unread marks a host not read at all, Coverage.Admits later
//     withholds findings resting on facts a family's error left unread.
//  6. Rule keys (dedup.go). runState.evalRules builds each rule's key with
//     ruleKeys.appendKey: the fleet, the rule and the digest of every input
//     path it reads (policies.Queries.Reads, found in the compiled Rego; a
//     rule that reads input whole is keyed by all of it, host name
//     included). A key already in runState.results reuses that rule's raw
//     result. A rule that keeps missing is checked once for being constant
//     in the fleet (policies.Queries.Missed); then its key is the fleet and
//     the rule alone.
//  7. Result (fleetrun.go). runState.evalMissing evaluates the rules
//     without a result on the sections they read
//     (Engine.RuleInputSections): in one query (Queries.EvalRules, one
//     prepared per set of rules), or, when that fails or runs out of the
//     rule budget (RunOptions.HostTimeout), each alone (Queries.EvalAlone)
//     within it; a rule over it becomes the host's overBudget finding.
//     policies.AppendRuleFindings turns raw results into Findings with the
//     host's own evidence (docSections.evidence) and coverage. The host's
//     findings, skipped rules and projection form a template, shared by its
//     class; hostNames.record keeps one hostRecord per host.
//  8. Group (fleetpass.go, regroup.go). Each host's fleet projection
//     (runState.fleetProjection: policies.Engine.Project's, made from
//     sections by projectSections) is interned by content, with a digest
//     of each member's part; runState.fleetPass groups the hosts of a
//     fleet by projection into policies.FleetGroups, and evalFleet
//     evaluates each fleet-wide rule once per fleet (Queries.EvalGroupRule)
//     on a policies.GroupInput, each finding naming a group: a built-in
//     rule on the groups of the members its facts lie in (runState.regroup,
//     found from those digests), a user rule on the fleet's groups.
//  9. Report. The Audit holds the records, the templates and the groups:
//     Audit.Hosts yields each HostRun, Audit.Each yields every finding in
//     report order, a group's findings given to each of its hosts
//     (policies.ForHost; Audit.Findings returns them all at once, in input
//     order; Audit.Tally counts them without making them); audit.Result.All
//     streams them to the reports, a finding every host of a group (or of a
//     rule's group) has marked as shared.
package fleetrun
