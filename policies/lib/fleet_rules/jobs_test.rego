package fleetaudit.fleet_rules.jobs_test

import data.fleetaudit.fleet_rules.jobs

worker(name, job, image, env) := {
	"metadata": {"name": name, "namespace": "ml", "labels": {"training.kubeflow.org/job-name": job, "training.kubeflow.org/job-role": "worker"}},
	"spec": {"containers": [{"name": "w", "image": image, "env": env}]},
}

launcher(job) := {
	"metadata": {"name": "launcher", "namespace": "ml", "labels": {"training.kubeflow.org/job-name": job, "training.kubeflow.org/job-role": "launcher"}},
	"spec": {"containers": [{"name": "l", "image": "mpioperator/launcher:0.5", "env": []}]},
}

fleet(pods_by_host) := {"fleet": "gpu", "hosts": [{"host": h, "pods": ps} | some h, ps in pods_by_host]}

img := "nvcr.io/nvidia/pytorch:24.05-py3"

test_one_worker_on_another_image if {
	f := fleet({
		"gpu-1": [worker("w0", "llm", img, []), launcher("llm")],
		"gpu-2": [worker("w1", "llm", img, [])],
		"gpu-3": [worker("w2", "llm", img, [])],
		"gpu-4": [worker("w3", "llm", "nvcr.io/nvidia/pytorch:24.04-py3", [])],
	})
	[x] := [x | some x in jobs.job_image_skew with input as f]
	x.host == "gpu-4"
	x.expected == img
}

test_launcher_image_is_not_skew if {
	f := fleet({"gpu-1": [worker("w0", "llm", img, []), launcher("llm")], "gpu-2": [worker("w1", "llm", img, [])]})
	count(jobs.job_image_skew) == 0 with input as f
}

test_nccl_env_differs if {
	env := [{"name": "NCCL_IB_HCA", "value": "mlx5"}]
	f := fleet({
		"gpu-1": [worker("w0", "llm", img, env)],
		"gpu-2": [worker("w1", "llm", img, env)],
		"gpu-3": [worker("w2", "llm", img, env)],
		"gpu-4": [worker("w3", "llm", img, [{"name": "NCCL_IB_HCA", "value": "mlx5_0"}])],
	})
	[x] := [x | some x in jobs.job_nccl_env_skew with input as f]
	x.host == "gpu-4"
}

test_different_jobs_are_not_compared if {
	f := fleet({"gpu-1": [worker("a0", "a", img, [])], "gpu-2": [worker("b0", "b", "other:1", [])]})
	count(jobs.job_image_skew) == 0 with input as f
}
