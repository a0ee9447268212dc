package inventory

import "testing"

func TestAnsibleSSHVariables(t *testing.T) {
	inv, err := Parse("/inv/hosts.ini", []byte(`[gpu]
gpu-01 ansible_host=10.0.0.1 ansible_port=2222 ansible_user=audit ansible_ssh_private_key_file=~/.ssh/audit ansible_become=true
gpu-02 ansible_host=10.0.0.2 ansible_ssh_common_args='-o ProxyJump=ops@bastion:2200'
gpu-03 ansible_ssh_common_args='-o ProxyCommand="ssh -W %h:%p -q ops@bastion"'
gpu-04 ansible_ssh_common_args="-J jump1,jump2" fleetaudit_remote_root=/mnt/image
`))
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]Host{
		"gpu-01": {Address: "10.0.0.1", Port: 2222, User: "audit", Identity: "~/.ssh/audit", Become: true},
		"gpu-02": {Address: "10.0.0.2", Jump: "ops@bastion:2200"},
		"gpu-03": {Jump: "ops@bastion"},
		"gpu-04": {Jump: "jump1,jump2", RemoteRoot: "/mnt/image"},
	}
	for _, h := range inv.Hosts {
		w := want[h.Name]
		if h.Address != w.Address || h.Port != w.Port || h.User != w.User || h.Identity != w.Identity || h.Become != w.Become || h.Jump != w.Jump || h.RemoteRoot != w.RemoteRoot {
			t.Errorf("%s = %+v, want %+v", h.Name, h, w)
		}
	}
}
