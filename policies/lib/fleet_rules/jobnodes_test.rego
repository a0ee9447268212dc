package fleetaudit.fleet_rules.jobnodes_test

import data.fleetaudit.fleet_rules.jobs
import data.fleetaudit.lib.skew

worker(name, i) := {"metadata": {"name": sprintf("%s-worker-%d", [name, i]), "namespace": "ml", "labels": {"training.kubeflow.org/job-name": name}}, "spec": {"containers": [{"name": "c", "image": "img"}]}}

host(labels, model, pods) := {"labels": labels, "nvidia": {"gpus": [{"model": model}, {"model": model}]}, "pods": pods}

h100 := "NVIDIA H100 80GB HBM3"

a100 := "NVIDIA A100-SXM4-40GB"

test_gpu_model_minority if {
	hosts := [
		host({}, h100, [worker("j", 0)]),
		host({}, h100, [worker("j", 1)]),
		host({}, a100, [worker("j", 2)]),
	]
	[f] := [f | some f in jobs.job_node_type_skew with input as skew.fleet_input(hosts)]
	f.group == 2
	f.msg == "node type of job j GPU NVIDIA A100-SXM4-40GB differs from the fleet's majority GPU NVIDIA H100 80GB HBM3 (2 of 3 hosts)"
}

test_instance_type_label if {
	p5 := {"node.kubernetes.io/instance-type": "p5.48xlarge"}
	p5e := {"node.kubernetes.io/instance-type": "p5e.48xlarge"}
	hosts := [
		host(p5, h100, [worker("j", 0)]),
		host(p5, h100, [worker("j", 1)]),
		host(p5e, h100, [worker("j", 2)]),
	]
	[f] := [f | some f in jobs.job_node_type_skew with input as skew.fleet_input(hosts)]
	f.group == 2
	contains(f.msg, "instance type p5e.48xlarge, GPU NVIDIA H100 80GB HBM3 differs")
}

# Without the label, an EC2 host's DMI product name is its instance type;
# another vendor's product name is not.
ec2(t) := {"sys_vendor": "Amazon EC2", "product_name": t}

test_instance_type_from_dmi if {
	hosts := [
		object.union(host({}, h100, [worker("j", 0)]), {"dmi": ec2("p5.48xlarge")}),
		object.union(host({}, h100, [worker("j", 1)]), {"dmi": ec2("p5.48xlarge")}),
		object.union(host({}, h100, [worker("j", 2)]), {"dmi": ec2("p4d.24xlarge")}),
	]
	[f] := [f | some f in jobs.job_node_type_skew with input as skew.fleet_input(hosts)]
	f.group == 2
	contains(f.msg, "instance type p4d.24xlarge, GPU NVIDIA H100 80GB HBM3 differs")
	other := [
		object.union(host({}, h100, [worker("j", 0)]), {"dmi": {"sys_vendor": "Dell Inc.", "product_name": "PowerEdge XE9680"}}),
		object.union(host({}, h100, [worker("j", 1)]), {"dmi": {"sys_vendor": "Supermicro", "product_name": "SYS-821GE-TNHR"}}),
	]
	count(jobs.job_node_type_skew) == 0 with input as skew.fleet_input(other)
}

# One node type, one worker, separate jobs, or hosts of unknown type: nothing.
test_no_skew if {
	same := [host({}, h100, [worker("j", 0)]), host({}, h100, [worker("j", 1)])]
	count(jobs.job_node_type_skew) == 0 with input as skew.fleet_input(same)
	single := [host({}, h100, [worker("j", 0)]), host({}, a100, [])]
	count(jobs.job_node_type_skew) == 0 with input as skew.fleet_input(single)
	apart := [host({}, h100, [worker("j", 0)]), host({}, a100, [worker("k", 0)])]
	count(jobs.job_node_type_skew) == 0 with input as skew.fleet_input(apart)
	unknown := [host({}, h100, [worker("j", 0)]), {"nvidia": {"gpus": []}, "pods": [worker("j", 1)]}]
	count(jobs.job_node_type_skew) == 0 with input as skew.fleet_input(unknown)
}
