package fleetaudit.fleet_rules.jobnodes_test

import data.fleetaudit.fleet_rules.jobs

worker(name, i) := {"metadata": {"name": sprintf("%s-worker-%d", [name, i]), "namespace": "ml", "labels": {"training.kubeflow.org/job-name": name}}, "spec": {"containers": [{"name": "c", "image": "img"}]}}

host(name, labels, model, pods) := {"host": name, "labels": labels, "nvidia": {"gpus": [{"model": model}, {"model": model}]}, "pods": pods}

h100 := "NVIDIA H100 80GB HBM3"

a100 := "NVIDIA A100-SXM4-40GB"

test_gpu_model_minority if {
	hosts := [
		host("a", {}, h100, [worker("j", 0)]),
		host("b", {}, h100, [worker("j", 1)]),
		host("c", {}, a100, [worker("j", 2)]),
	]
	[f] := [f | some f in jobs.job_node_type_skew with input as {"hosts": hosts}]
	f.host == "c"
	f.msg == "node type of job j GPU NVIDIA A100-SXM4-40GB differs from the fleet's majority GPU NVIDIA H100 80GB HBM3 (2 of 3 hosts)"
}

test_instance_type_label if {
	p5 := {"node.kubernetes.io/instance-type": "p5.48xlarge"}
	p5e := {"node.kubernetes.io/instance-type": "p5e.48xlarge"}
	hosts := [
		host("a", p5, h100, [worker("j", 0)]),
		host("b", p5, h100, [worker("j", 1)]),
		host("c", p5e, h100, [worker("j", 2)]),
	]
	[f] := [f | some f in jobs.job_node_type_skew with input as {"hosts": hosts}]
	f.host == "c"
	contains(f.msg, "instance type p5e.48xlarge, GPU NVIDIA H100 80GB HBM3 differs")
}

# One node type, one worker, separate jobs, or hosts of unknown type: nothing.
test_no_skew if {
	same := [host("a", {}, h100, [worker("j", 0)]), host("b", {}, h100, [worker("j", 1)])]
	count(jobs.job_node_type_skew) == 0 with input as {"hosts": same}
	single := [host("a", {}, h100, [worker("j", 0)]), host("b", {}, a100, [])]
	count(jobs.job_node_type_skew) == 0 with input as {"hosts": single}
	apart := [host("a", {}, h100, [worker("j", 0)]), host("b", {}, a100, [worker("k", 0)])]
	count(jobs.job_node_type_skew) == 0 with input as {"hosts": apart}
	unknown := [host("a", {}, h100, [worker("j", 0)]), {"host": "b", "nvidia": {"gpus": []}, "pods": [worker("j", 1)]}]
	count(jobs.job_node_type_skew) == 0 with input as {"hosts": unknown}
}
