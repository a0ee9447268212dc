package kube

import (
	"regexp"
	"strings"
)

// Redacted replaces a value that must not reach a snapshot, a report or the
// store.
const Redacted = "(redacted)"

// lastApplied holds a copy of the whole object kubectl apply sent: the pod
// again, env values included.
const lastApplied = "kubectl.kubernetes.io/last-applied-configuration"

// keptEnv matches the env names whose values the pod rules read (NCCL's and
// libfabric's settings: pods.rego, nccl.rego, net.rego, jobs.rego). Every
// other value is redacted, whatever its name: HF_TOKEN, WANDB_API_KEY and
// DB_PASSWORD alike, and the ones no list of words would catch.
var keptEnv = regexp.MustCompile(`^(NCCL|FI)_[A-Z0-9_]*$`)

// secretWord marks a flag or variable name whose value is a secret, in
// command lines and scripts.
const secretWord = `(?:TOKEN|SECRET|PASSWORD|PASSWD|CREDENTIAL|API[_-]?KEY|PRIVATE[_-]?KEY|ACCESS[_-]?KEY|AUTH)`

var (
	// --hf-token=VALUE, --password VALUE, NAME_TOKEN=VALUE inside one
	// argument (a shell script given to sh -c).
	secretFlagValue = regexp.MustCompile(`(?i)(-{1,2}[a-z0-9_.-]*` + secretWord + `[a-z0-9_.-]*)(=|\s+)("[^"]*"|'[^']*'|\S+)`)
	secretAssign    = regexp.MustCompile(`(?i)\b([a-z0-9_]*` + secretWord + `[a-z0-9_]*)=("[^"]*"|'[^']*'|\S+)`)
	// A flag that takes the next argument as a secret: --hf-token VALUE.
	secretFlag = regexp.MustCompile(`(?i)^-{1,2}[a-z0-9_.-]*` + secretWord + `[a-z0-9_.-]*$`)
	// Words that hold a secret word and name no secret: --max-tokens 2048,
	// --author NAME.
	notSecret = regexp.MustCompile(`(?i)TOKENS|AUTHOR`)
	isSecret  = regexp.MustCompile(`(?i)` + secretWord)
	// Credentials of a known shape, and a password in a URL.
	knownToken  = regexp.MustCompile(`\b(?:hf_[A-Za-z0-9]{20,}|gh[pousr]_[A-Za-z0-9]{20,}|github_pat_[A-Za-z0-9_]{20,}|sk-[A-Za-z0-9_-]{20,}|xox[abprs]-[A-Za-z0-9-]{10,}|AKIA[0-9A-Z]{16})\b`)
	bearer      = regexp.MustCompile(`(?i)\b(bearer|basic)(\s+)[A-Za-z0-9._~+/=-]{8,}`)
	urlPassword = regexp.MustCompile(`([a-zA-Z][a-zA-Z0-9+.-]*://[^/\s:@]+:)[^@\s/]+@`)
)

// RedactPod removes from a pod (Kubernetes JSON, as Object.Pod holds it)
// what may carry a secret and no pod rule reads, in place: every pod source
// (manifest files, a config repo, the API server) passes its pods through
// it before they reach a snapshot.
//
//   - env: a value is kept only for NCCL_* and FI_* names; any other value
//     becomes Redacted, its name kept. valueFrom references (a Secret's name
//     and key, no value) are kept.
//   - command, args, and the exec commands and HTTP headers of probes and
//     lifecycle hooks: the value of a secret-named flag or variable
//     (--hf-token X, --api-key=X, DB_PASSWORD=X in a script), tokens of a
//     known shape (hf_, ghp_, sk-, AKIA, "Bearer X"), a URL's password, and
//     every HTTP header value become Redacted; the rest of the line is kept.
//   - managedFields and the last-applied-configuration annotation (a second
//     copy of the object) are dropped.
func RedactPod(pod map[string]any) {
	if meta, ok := pod["metadata"].(map[string]any); ok {
		delete(meta, "managedFields")
		if a, ok := meta["annotations"].(map[string]any); ok {
			delete(a, lastApplied)
		}
	}
	spec, _ := pod["spec"].(map[string]any)
	redactSpec(spec)
	// A pod-shaped object may still hold a template (spec(p) in pods.rego).
	if t, ok := spec["template"].(map[string]any); ok {
		s, _ := t["spec"].(map[string]any)
		redactSpec(s)
	}
}

func redactSpec(spec map[string]any) {
	if spec == nil {
		return
	}
	for _, key := range []string{"containers", "initContainers", "ephemeralContainers"} {
		cs, _ := spec[key].([]any)
		for _, c := range cs {
			if c, ok := c.(map[string]any); ok {
				redactContainer(c)
			}
		}
	}
}

func redactContainer(c map[string]any) {
	env, _ := c["env"].([]any)
	for _, e := range env {
		e, ok := e.(map[string]any)
		if !ok {
			continue
		}
		v, has := e["value"]
		if !has || v == nil || v == "" {
			continue
		}
		if name, _ := e["name"].(string); !keptEnv.MatchString(name) {
			e["value"] = Redacted
		}
	}
	redactArgs(c["command"])
	redactArgs(c["args"])
	for _, probe := range []string{"livenessProbe", "readinessProbe", "startupProbe"} {
		redactHandler(c[probe])
	}
	if l, ok := c["lifecycle"].(map[string]any); ok {
		redactHandler(l["postStart"])
		redactHandler(l["preStop"])
	}
}

// redactHandler redacts a probe's or hook's exec command and HTTP headers.
func redactHandler(h any) {
	m, ok := h.(map[string]any)
	if !ok {
		return
	}
	if ex, ok := m["exec"].(map[string]any); ok {
		redactArgs(ex["command"])
	}
	if get, ok := m["httpGet"].(map[string]any); ok {
		hs, _ := get["httpHeaders"].([]any)
		for _, h := range hs {
			if h, ok := h.(map[string]any); ok {
				if _, ok := h["value"]; ok {
					h["value"] = Redacted
				}
			}
		}
	}
}

// secretName reports whether a flag or variable name says its value is a
// secret.
func secretName(name string) bool {
	return isSecret.MatchString(notSecret.ReplaceAllString(name, ""))
}

// redactArgs redacts the secrets of a command line, in place.
func redactArgs(v any) {
	args, ok := v.([]any)
	if !ok {
		return
	}
	for i, a := range args {
		s, ok := a.(string)
		if !ok {
			continue
		}
		if i > 0 {
			if prev, ok := args[i-1].(string); ok && secretFlag.MatchString(prev) && secretName(prev) {
				args[i] = Redacted
				continue
			}
		}
		args[i] = RedactText(s)
	}
}

// RedactText replaces the secrets of one line of text (a command's
// argument, a shell script): values of secret-named flags and variables,
// tokens of a known shape, URL passwords.
func RedactText(s string) string {
	if s == "" {
		return s
	}
	s = secretFlagValue.ReplaceAllStringFunc(s, func(m string) string {
		sub := secretFlagValue.FindStringSubmatch(m)
		if !secretName(sub[1]) {
			return m
		}
		return sub[1] + sub[2] + Redacted
	})
	s = secretAssign.ReplaceAllStringFunc(s, func(m string) string {
		name, _, _ := strings.Cut(m, "=")
		if !secretName(name) {
			return m
		}
		return name + "=" + Redacted
	})
	s = knownToken.ReplaceAllString(s, Redacted)
	s = bearer.ReplaceAllString(s, "${1}${2}"+Redacted)
	return urlPassword.ReplaceAllString(s, "${1}"+Redacted+"@")
}
