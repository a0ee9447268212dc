package fleetaudit.fleet_rules.jobs_test

import data.fleetaudit.fleet_rules.jobs
import data.fleetaudit.lib.skew

worker(name, job, image, env) := {
	"metadata": {"name": name, "namespace": "ml", "labels": {"training.kubeflow.org/job-name": job, "training.kubeflow.org/job-role": "worker"}},
	"spec": {"containers": [{"name": "w", "image": image, "env": env}]},
}

launcher(job) := {
	"metadata": {"name": "launcher", "namespace": "ml", "labels": {"training.kubeflow.org/job-name": job, "training.kubeflow.org/job-role": "launcher"}},
	"spec": {"containers": [{"name": "l", "image": "mpioperator/launcher:0.5", "env": []}]},
}

# One group (host) per list of pods.
fleet(pods) := skew.fleet_input([{"pods": ps} | some ps in pods])

img := "nvcr.io/nvidia/pytorch:24.05-py3"

test_one_worker_on_another_image if {
	f := fleet([
		[worker("w0", "llm", img, []), launcher("llm")],
		[worker("w1", "llm", img, [])],
		[worker("w2", "llm", img, [])],
		[worker("w3", "llm", "nvcr.io/nvidia/pytorch:24.04-py3", [])],
	])
	[x] := [x | some x in jobs.job_image_skew with input as f]
	x.group == 3
	x.expected == img
	x.msg == "image of job llm nvcr.io/nvidia/pytorch:24.04-py3 differs from the fleet's majority nvcr.io/nvidia/pytorch:24.05-py3 (3 of 4 hosts)"
}

test_launcher_image_is_not_skew if {
	f := fleet([[worker("w0", "llm", img, []), launcher("llm")], [worker("w1", "llm", img, [])]])
	count(jobs.job_image_skew) == 0 with input as f
}

test_nccl_env_differs if {
	env := [{"name": "NCCL_IB_HCA", "value": "mlx5"}]
	f := fleet([
		[worker("w0", "llm", img, env)],
		[worker("w1", "llm", img, env)],
		[worker("w2", "llm", img, env)],
		[worker("w3", "llm", img, [{"name": "NCCL_IB_HCA", "value": "mlx5_0"}])],
	])
	[x] := [x | some x in jobs.job_nccl_env_skew with input as f]
	x.group == 3
	x.evidence == ["pods.0"]
	x.expected == `NCCL_IB_HCA=mlx5`
	x.msg == `NCCL environment of job llm differs across its workers: NCCL_IB_HCA is "mlx5" in ml/w0 (container w), ml/w1 (container w), ml/w2 (container w), "mlx5_0" in ml/w3 (container w); 3 of its 4 workers have NCCL_IB_HCA=mlx5`
}

# A PyTorchJob as audit --manifests reads it: one pod per replica spec, all
# on one host.
replica(job, type, env) := {
	"kind": "PyTorchJob",
	"metadata": {"name": sprintf("%s-%s", [job, type]), "namespace": "research", "labels": {"training.kubeflow.org/job-name": job, "training.kubeflow.org/replica-type": type}},
	"spec": {"containers": [{"name": "pytorch", "image": img, "env": env}]},
}

test_pytorchjob_env_skew_names_variable_values_and_places_once if {
	f := fleet([[
		replica("llm", "master", [{"name": "NCCL_DEBUG", "value": "INFO"}, {"name": "NCCL_IB_HCA", "value": "mlx5_0"}]),
		replica("llm", "worker", [{"name": "NCCL_IB_HCA", "value": "mlx5"}]),
	]])
	[x] := [x | some x in jobs.job_nccl_env_skew with input as f]
	x.group == 0
	x.basis == "none"
	x.evidence == ["pods.0", "pods.1"]
	x.msg == `NCCL environment of job llm differs across its workers: NCCL_DEBUG is "INFO" in research/llm-master (container pytorch), unset in research/llm-worker; NCCL_IB_HCA is "mlx5" in research/llm-worker (container pytorch), "mlx5_0" in research/llm-master (container pytorch); no setting is shared by 60% of its 2 workers`
}

test_pytorchjob_same_env_is_not_skew if {
	env := [{"name": "NCCL_IB_HCA", "value": "mlx5"}, {"name": "OMP_NUM_THREADS", "value": "8"}]
	f := fleet([[replica("llm", "master", env), replica("llm", "worker", env)]])
	count(jobs.job_nccl_env_skew) == 0 with input as f
}

# Only NCCL_* and FI_* variables are compared.
test_pytorchjob_other_env_is_not_skew if {
	f := fleet([[
		replica("llm", "master", [{"name": "OMP_NUM_THREADS", "value": "8"}]),
		replica("llm", "worker", [{"name": "OMP_NUM_THREADS", "value": "4"}]),
	]])
	count(jobs.job_nccl_env_skew) == 0 with input as f
}

test_nccl_env_from_secret_is_named if {
	f := fleet([[
		replica("llm", "master", [{"name": "FI_PROVIDER", "valueFrom": {"configMapKeyRef": {"name": "fi", "key": "provider"}}}]),
		replica("llm", "worker", [{"name": "FI_PROVIDER", "value": "efa"}]),
	]])
	[x] := [x | some x in jobs.job_nccl_env_skew with input as f]
	contains(x.msg, `FI_PROVIDER is "efa" in research/llm-worker (container pytorch), from configMapKeyRef in research/llm-master (container pytorch);`)
}

# A batch Job's pods on several hosts are compared by their job-name label;
# a Deployment's pods name no job and are not compared.
batch_pod(name, labels, env) := {
	"metadata": {"name": name, "namespace": "ml", "labels": labels},
	"spec": {"containers": [{"name": "c", "image": img, "env": env}]},
}

test_batch_job_env_skew if {
	job := {"batch.kubernetes.io/job-name": "bench"}
	f := fleet([
		[batch_pod("bench-a", job, [{"name": "NCCL_ALGO", "value": "Ring"}])],
		[batch_pod("bench-b", job, [{"name": "NCCL_ALGO", "value": "Ring"}])],
		[batch_pod("bench-c", job, [{"name": "NCCL_ALGO", "value": "Tree"}])],
	])
	[x] := [x | some x in jobs.job_nccl_env_skew with input as f]
	x.group == 2
	x.evidence == ["pods.0"]
	x.msg == `NCCL environment of job bench differs across its workers: NCCL_ALGO is "Ring" in ml/bench-a (container c), ml/bench-b (container c), "Tree" in ml/bench-c (container c); 2 of its 3 workers have NCCL_ALGO=Ring`
}

test_deployment_pods_are_not_a_job if {
	app := {"app": "serve"}
	f := fleet([
		[batch_pod("serve-1", app, [{"name": "NCCL_ALGO", "value": "Ring"}])],
		[batch_pod("serve-2", app, [{"name": "NCCL_ALGO", "value": "Tree"}])],
	])
	count(jobs.job_nccl_env_skew) == 0 with input as f
}

test_different_jobs_are_not_compared if {
	f := fleet([[worker("a0", "a", img, [])], [worker("b0", "b", "other:1", [])]])
	count(jobs.job_image_skew) == 0 with input as f
}

# Workers vote one each, whatever the size of their group.
test_workers_vote_once if {
	f := skew.fleet_input([
		{"count": 5, "pods": [worker("w0", "llm", "other:1", [])]},
		{"pods": [worker("w1", "llm", img, [])]},
		{"pods": [worker("w2", "llm", img, [])]},
	])
	[x] := [x | some x in jobs.job_image_skew with input as f]
	x.group == 0
}
