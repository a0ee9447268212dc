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
//	  facts: {gpus: true}         # all must hold, from the host's snapshot
//	rules:
//	  include: ["tag:gpu-training", "nccl-*"]  # rule ids or tag:TAG, globs
//	  exclude: [numa-balancing-enabled]        # applied after every include
//	  severity: {iommu-translating: low}       # per-rule severity override
//	params:                       # data.fleetaudit.params for the policies
//	  memlock_min_kb: unlimited
//	  baseline: {nccl_version: "2.21.5", driver_version: "550.90.07"}
//
// Match criteria are alternatives: a host matches when it is in one of the
// groups, OR carries every label of labels, OR its name matches one of the
// hostnames, OR it shows every fact of facts. Within labels and within facts
// every entry must hold (AND). facts knows gpus (NVIDIA GPUs: nvidia.present
// or a non-empty nvidia.gpus) and rdma (a non-empty rdma.devices); true wants
// the fact present, false absent, and a host whose snapshot could not be
// read, or lacks the section, meets no fact condition.
//
// Unknown keys anywhere outside params are errors naming the file, line and
// key. Params the built-in rules read are type-checked. Once the policies
// are compiled (audit, gate, policies list), Set.Check makes a parameter no
// rule reads (built-in or --policies) an error (unless some rule reads
// data.fleetaudit.params with a computed key, which no list of names can
// cover), and so is a rules.include or
// rules.exclude entry that selects no rule id or tag and a rules.severity id
// no rule has, each naming FILE:LINE and the closest known name. Versions
// must be quoted: 550.90 is a number.
//
// --fleets names a profile file or a directory of them; only regular files
// are read, up to 1 MiB each.
//
// The built-ins (gpu-training and web-serving, both including common) are
// embedded. Load adds user directories (--fleets DIR); a user profile with
// the name of a built-in replaces it entirely. To extend a built-in instead,
// give the profile another name and include the built-in.
//
// Matching order: the inventory's fleet for the host wins; otherwise user
// profiles are tried in load order (directories as given, files by name, so
// 10-gpu-inference.yaml sorts before 20-gpu-batch.yaml), then the
// built-ins by name, in two passes: first groups, labels and hostnames, the
// names people gave, then facts. The first profile matching in a pass wins,
// so a GPU host named web-01 stays in web-serving, and a GPU host no name
// matches (trn-01) lands in gpu-training, whose facts want GPUs. The common
// baseline never matches.
package fleets
