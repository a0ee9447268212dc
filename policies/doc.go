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
// # The engine core
//
// This package is the engine core: compile (engine.go, load.go, rule.go,
// reads.go, params.go, capabilities.go), per-rule evaluation (eval.go,
// fleeteval.go), coverage.go, evidence (finding.go, project.go,
// identity.go, podevidence.go) and the oracle (oracle.go:
// Engine.EvalHost and Engine.EvalFleet, the plain evaluation tests hold the
// runner to). The runner, which audits a run's hosts and shares what they
// share, is package policies/fleetrun (fleetrun.RunAudit, the one
// production path); it uses the core only through runner.go's exports, and
// the core imports nothing of it.
package policies
