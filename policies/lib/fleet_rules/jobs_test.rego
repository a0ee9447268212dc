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
