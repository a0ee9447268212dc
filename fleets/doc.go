// Package fleets loads fleet profiles, decides which fleet a host belongs to,
// and says which rules run for a fleet with which parameters.
//
// A profile is one YAML file:
//
//	name: gpu-training            # optional: defaults to the file name without extension
//	description: GPU training nodes
//	includes: [common]            # merged first, in order; see Set.Resolve
//	match:                        # any one criterion matches; empty matches nothing
//	  groups: [gpu, gpu-training] # inventory groups (Ansible groups included)
//	  labels:                     # all must match; "*" = present with any value
//	    node.kubernetes.io/instance-type: p5.48xlarge
//	  hostnames: ["gpu-*"]        # path.Match globs, case-insensitive
//	rules:
//	  include: ["tag:gpu-training", "nccl-*"]  # rule ids or tag:TAG, globs
//	  exclude: [numa-balancing-enabled]        # applied after every include
//	  severity: {iommu-translating: low}       # per-rule severity override
//	params:                       # data.fleetaudit.params for the policies
//	  memlock_min_kb: unlimited
//	  baseline: {nccl_version: "2.21.5", driver_version: "550.90.07"}
//
// Unknown keys anywhere outside params are errors naming the file, line and
// key. Params the built-in rules read are type-checked; other params pass
// through for user policies. Versions must be quoted: 550.90 is a number.
//
// The built-ins (gpu-training and web-serving, both including common) are
// embedded. Load adds user directories (--fleets DIR); a user profile with
// the name of a built-in replaces it entirely. To extend a built-in instead,
// give the profile another name and include the built-in.
//
// Matching order: the inventory's fleet for the host wins; otherwise user
// profiles are tried in load order (directories as given, files by name, so
// 10-gpu-inference.yaml sorts before 20-gpu-batch.yaml), then the
// built-ins by name. The first profile with a matching criterion wins. The
// common baseline never matches.
package fleets
