package policies

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/open-policy-agent/opa/v1/ast"
)

// object.get on input reads the path it names, also when the compiler
// binds input to a local first (some x in object.get(input, ...)); a local
// bound to input and read any other way is all of input.
func TestStaticReadsObjectGet(t *testing.T) {
	for _, tc := range []struct {
		body  string
		whole bool
		paths string
	}{
		{`some k, v in object.get(input, ["node", "allocatable"], {}); v == k`, false, `[["node" "allocatable"]]`},
		{`x := object.get(input, "labels", {}); x.a == 1`, false, `[["labels"]]`},
		{`x := object.get(input.nvidia, ["gpus"], []); count(x) > 0`, false, `[["nvidia" "gpus"]]`},
		{`y := input; y.host == "a"`, true, `[]`},
		{`y := input; object.get(y, "a", 0) == 1; y.host == "b"`, true, `[]`},
		{`k := "a"; object.get(input, [k], 0) == 1`, true, `[]`},
	} {
		mod := "package t\n\nr if {\n\t" + tc.body + "\n}\n"
		c := ast.NewCompiler()
		c.Compile(map[string]*ast.Module{"t.rego": ast.MustParseModule(mod)})
		if c.Failed() {
			t.Fatalf("%s: %v", tc.body, c.Errors)
		}
		got := staticReads(c, ast.MustParseRef("data.t.r"))
		if got.whole != tc.whole || fmt.Sprint(got.paths) != tc.paths {
			t.Errorf("%s: whole %v paths %v, want %v %s", tc.body, got.whole, got.paths, tc.whole, tc.paths)
		}
	}
}

// A rule reached through data by a computed key (data.lib[k]) may be any
// rule below the ground part of the ref: their reads are the rule's.
func TestStaticReadsDataIndirection(t *testing.T) {
	lib := "package lib\n\nteam := input.labels.team\n\nhost := input.host\n"
	for _, tc := range []struct {
		body  string
		paths string
	}{
		{`some k in ["team"]; data.lib[k] == "red"`, `[["labels" "team"] ["host"]]`},
		{`k := concat("", ["te", "am"]); data.lib[k] == "red"`, `[["labels" "team"] ["host"]]`},
		{`some k in ["lib"]; data[k].team == "red"`, `[["labels" "team"] ["host"]]`},
		{`data.lib.team == "red"`, `[["labels" "team"]]`},
	} {
		mod := "package t\n\nr if {\n\t" + tc.body + "\n}\n"
		c := ast.NewCompiler()
		c.Compile(map[string]*ast.Module{"t.rego": ast.MustParseModule(mod), "lib.rego": ast.MustParseModule(lib)})
		if c.Failed() {
			t.Fatalf("%s: %v", tc.body, c.Errors)
		}
		got := staticReads(c, ast.MustParseRef("data.t.r"))
		slices.SortFunc(got.paths, func(a, b inputPath) int { return strings.Compare(fmt.Sprint(b), fmt.Sprint(a)) })
		if got.whole || fmt.Sprint(got.paths) != tc.paths {
			t.Errorf("%s: whole %v paths %v, want %s", tc.body, got.whole, got.paths, tc.paths)
		}
	}
}

// Input read whole, or in a way whose path is not constant, is all of it;
// a section walked or passed to a function is that section.
func TestStaticReadsWhole(t *testing.T) {
	for _, tc := range []struct {
		body  string
		whole bool
		paths string
	}{
		{`walk(input, [p, v]); v == "red"`, true, `[]`},
		{`s := {x | walk(input, x)}; count(s) > 3`, true, `[]`},
		{`x := input; x.labels.team == "red"`, true, `[]`},
		{`k := "labels"; input[k].team == "red"`, true, `[]`},
		{`some k, v in input; k == "host"`, true, `[]`},
		{`k := concat("", ["lab", "els"]); object.get(input, k, {}).team == "red"`, true, `[]`},
		{`some k in ["team"]; object.get(input, ["labels", k], "") == "red"`, true, `[]`},
		{`object.keys(input)["labels"]`, true, `[]`},
		{`x := [input]; x[0].labels.team == "red"`, true, `[]`},
		{`x := object.get({"a": input}, ["a", "labels"], {}); x.team == "red"`, true, `[]`},
		{`f(input) == "red"`, true, `[]`},
		{`x := h with input.sysctl.running as {}; count(x) == 0`, true, `[]`},
		{`f2(input.labels) == "red"`, false, `[["labels"]]`},
		{`walk(input.limits, [p, v]); v == "red"`, false, `[["limits"]]`},
		{`every v in input.labels { v == "red" }`, false, `[["labels"]]`},
		{`input.labels[input.host] == "red"`, false, `[["host"] ["labels"]]`},
		{`input.nvidia.gpus[0].model == "red"`, false, `[["nvidia" "gpus" 0 "model"]]`},
	} {
		mod := "package t\n\nf(x) := x.labels.team\n\nf2(x) := x.team\n\nh := input.sysctl.running\n\nr if {\n\t" + tc.body + "\n}\n"
		c := ast.NewCompiler()
		c.Compile(map[string]*ast.Module{"t.rego": ast.MustParseModule(mod)})
		if c.Failed() {
			t.Fatalf("%s: %v", tc.body, c.Errors)
		}
		got := staticReads(c, ast.MustParseRef("data.t.r"))
		slices.SortFunc(got.paths, func(a, b inputPath) int { return strings.Compare(fmt.Sprint(a), fmt.Sprint(b)) })
		if got.whole != tc.whole || fmt.Sprint(got.paths) != tc.paths {
			t.Errorf("%s: whole %v paths %v, want %v %s", tc.body, got.whole, got.paths, tc.whole, tc.paths)
		}
	}
}

// object.remove(input..., keys) with constant keys (written out, or a rule
// that is that value and nothing else) reads the object less those keys;
// read any other way too, or with keys that are not constant, it is the
// object whole.
func TestStaticReadsObjectRemove(t *testing.T) {
	lib := "package t\n\nL := {\"root\", \"ro\"}\n\nM := {\"root\"} if input.x\n\np := object.remove(input.boot.params, L)\n"
	for _, tc := range []struct {
		body  string
		names string
	}{
		{`object.remove(input.boot.params, {"ro", "root"}).quiet == ""`, `[boot.params less ro,root]`},
		{`some k, v in object.remove(input.boot.params, L); k == v`, `[boot.params less ro,root]`},
		{`p.quiet == ""`, `[boot.params less ro,root]`},
		{`p.quiet == input.boot.params.root`, `[boot.params less ro,root boot.params.root]`},
		{`p.quiet == ""; count(input.boot.params) > 1`, `[boot.params]`},
		{`count(object.remove(input.boot.params, L)) == count(object.remove(input.boot.params, ["ro"]))`, `[boot.params less ro]`},
		{`object.remove(input.boot.params, M).quiet == ""`, `[boot.params x]`},
		// A type test guards object.remove: the key of a value that is not
		// an object is all of it.
		{`x := input.boot.params; is_object(x); object.remove(x, L).quiet == ""`, `[boot.params less ro,root]`},
		{`x := input.boot.params; is_object(x); x.quiet == ""`, `[boot.params]`},
		{`k := "root"; object.remove(input.boot.params, {k}).quiet == ""`, `[boot.params]`},
	} {
		mod := lib + "\nr if {\n\t" + tc.body + "\n}\n"
		c := ast.NewCompiler()
		c.Compile(map[string]*ast.Module{"t.rego": ast.MustParseModule(mod)})
		if c.Failed() {
			t.Fatalf("%s: %v", tc.body, c.Errors)
		}
		got := staticReads(c, ast.MustParseRef("data.t.r")).named()
		slices.Sort(got.names)
		if got.whole || fmt.Sprint(got.names) != tc.names {
			t.Errorf("%s: whole %v reads %v, want %s", tc.body, got.whole, got.names, tc.names)
		}
	}
}
