# Pods of one distributed job across the hosts of a fleet.
package fleetaudit.fleet_rules.jobs

import data.fleetaudit.lib.skew

# Labels that name the job a pod belongs to, most specific first.
job_label_keys := ["training.kubeflow.org/job-name", "batch.kubernetes.io/job-name", "job-name", "leaderworkerset.sigs.k8s.io/name"]

job_of(p) := p.metadata.labels[k] if {
	some k in job_label_keys
	p.metadata.labels[k]
} else := ""

launcher(p) if p.metadata.labels["training.kubeflow.org/job-role"] == "launcher"

launcher(p) if p.metadata.labels["mpi-job-role"] == "launcher"

pod_name(p) := sprintf("%s/%s", [object.get(p, ["metadata", "namespace"], "default"), object.get(p, ["metadata", "name"], "?")])

# Worker pods as [job, pod name, group, pod, fact path]. A pod is one
# worker whatever the size of its group (pod names are unique in a cluster,
# so a group of hosts running the same pods is one host's copies).
workers := [[job, pod_name(p), g.group, p, sprintf("pods.%d", [i])] |
	some g in input.groups
	some i, p in object.get(g, "pods", [])
	not launcher(p)
	job := job_of(p)
	job != ""
]

images(p) := concat(",", sort([c.image | some c in p.spec.containers]))

nccl_env(p) := concat(" ", sort({sprintf("%s=%s", [e.name, object.get(e, "value", "")]) |
	some c in p.spec.containers
	some e in object.get(c, "env", [])
	regex.match(`^(NCCL|FI)_`, e.name)
}))

jobs := {w[0] | some w in workers}

# values[job][pod] for one per-pod property.
image_values := {job: {w[1]: images(w[3]) | some w in workers; w[0] == job} | some job in jobs}

env_values := {job: {w[1]: nccl_env(w[3]) | some w in workers; w[0] == job} | some job in jobs}

group_of := {w[1]: w[2] | some w in workers}

# METADATA
# title: Worker pods of one job run different images
# description: >-
#   The worker pods of one job (by training.kubeflow.org/job-name,
#   batch.kubernetes.io/job-name or job-name label) run different container
#   images: ranks with different NCCL, CUDA or framework builds fail at init
#   or hang in collectives. The expected image is the one at least 60% of the
#   workers run; below that, no consensus is the finding. An MPIJob's launcher
#   is not a worker and is not compared.
# related_resources:
# - ref: https://www.kubeflow.org/docs/components/trainer/legacy-v1/user-guides/mpi/
#   description: MPIJob launcher and worker roles
# custom:
#   id: job-image-skew
#   severity: high
#   profiles: [gpu-training]
#   remediation: >-
#     Restart the job with one image for every worker (pin the image by
#     digest so a moving tag cannot split a job).
#   facts:
#   - pods
job_image_skew contains f if {
	some job, pods in image_values
	exp := skew.from_distribution(skew.votes(pods), null)
	some pod, v in pods
	f := skew.finding(group_of[pod], v, exp, sprintf("image of job %s", [job]), ["pods"])
}

# METADATA
# title: NCCL environment differs across the workers of one job
# description: >-
#   The NCCL_* and FI_* variables of a job's worker pods differ: ranks that
#   disagree on algorithms, protocols, transports or interfaces fail at init
#   or hang. Compared as in job-image-skew; launchers are not compared.
# related_resources:
# - ref: https://docs.nvidia.com/deeplearning/nccl/user-guide/docs/env.html
#   description: NCCL environment variables
# custom:
#   id: job-nccl-env-skew
#   severity: high
#   profiles: [gpu-training]
#   remediation: >-
#     Set NCCL and libfabric variables once in the job template, not per
#     worker or per host.
#   facts:
#   - pods
job_nccl_env_skew contains f if {
	some job, pods in env_values
	exp := skew.from_distribution(skew.votes(pods), null)
	some pod, v in pods
	skewed_group(v, exp)
	g := group_of[pod]
	f := object.union(
		{
			"group": g,
			"msg": sprintf("NCCL environment of job %s differs across its workers: %s; %s", [job, concat("; ", env_differences(job)), env_expectation(exp)]),
			# Each of the job's pods on this group, so each cites its own file and line.
			"evidence": [w[4] | some w in job_workers(job); w[2] == g],
			"basis": exp.basis,
		},
		{"expected": exp.value | exp.basis != "none"},
	)
}

# A group is named when one of its workers holds other than the majority's
# environment, or every group of the job when there is no majority; the
# message describes the whole job, so each group is named once per job.
skewed_group(v, exp) if {
	exp.basis != "none"
	v != exp.value
}

skewed_group(_, exp) if exp.basis == "none"

job_workers(job) := [w | some w in workers; w[0] == job]

nccl_var(name) if regex.match(`^(NCCL|FI)_`, name)

env_value(e) := sprintf("%q", [e.value]) if is_string(e.value)

else := sprintf("from %s", [concat(",", sort(object.keys(e.valueFrom)))]) if e.valueFrom

else := `""`

# env_settings(job)[var][value] are the places (pod and container) of job's
# workers that set var to value, for the variables that differ; "unset"
# lists the pods where no container sets it.
env_settings(job) := {var: {val: sort(value_places(job, var, val)) | some val in vals(job, var)} |
	some var in env_vars(job)
	count(vals(job, var)) > 1
}

env_vars(job) := {e.name |
	some w in job_workers(job)
	some c in w[3].spec.containers
	some e in object.get(c, "env", [])
	nccl_var(e.name)
}

set_places(job, var) := {[env_value(e), sprintf("%s (container %s)", [w[1], c.name])] |
	some w in job_workers(job)
	some c in w[3].spec.containers
	some e in object.get(c, "env", [])
	e.name == var
}

unset_places(job, var) := {["unset", w[1]] |
	some w in job_workers(job)
	every c in w[3].spec.containers {
		every e in object.get(c, "env", []) {
			e.name != var
		}
	}
}

places(job, var) := set_places(job, var) | unset_places(job, var)

vals(job, var) := {p[0] | some p in places(job, var)}

value_places(job, var, val) := [p[1] | some p in places(job, var); p[0] == val]

env_differences(job) := [sprintf("%s is %s", [var, concat(", ", [sprintf("%s in %s", [val, concat(", ", ps)]) | some val, ps in byval])]) |
	some var, byval in env_settings(job)
]

env_expectation(exp) := sprintf("%d of its %d workers have %s", [exp.hosts, exp.of, env_text(exp.value)]) if exp.basis == "majority"

env_expectation(exp) := sprintf("no setting is shared by %d%% of its %d workers", [skew.threshold, exp.of]) if exp.basis == "none"

env_text("") := "none of these set"

env_text(v) := v if v != ""
