package remediate

import "testing"

// editPod (capabilities, limits, sizeLimit, env set and removed) on any
// input either refuses or returns a file it checked; it never panics.
func FuzzEditPod(f *testing.F) {
	f.Add([]byte(pytorchJob), pytorchWorkerLine, 0)
	f.Add([]byte("kind: Pod\nspec:\n  containers:\n  - name: c\n    image: x"), 1, 0)
	f.Add([]byte("kind: Pod\nspec:\n  containers:\n  - {name: c, image: x}\n  volumes:\n  - name: v\n    emptyDir: {}\n"), 1, 1)
	f.Add([]byte("kind: Pod\nspec:\n  containers:\n  - name: c\n    resources:\n      limits: {memory: 1Gi}\n"), 1, 2)
	f.Add([]byte("kind: Pod\nspec:\n  containers:\n  - name: c\n    env:\n    - name: FI_PROVIDER\n      value: tcp   # x\n    - {name: B, value: b}\n"), 1, 3)
	f.Add([]byte("kind: Pod\nspec:\n  containers:\n  - name: c\n    env:   # tuning\n    - name: FI_PROVIDER\n      # why\n      value: \"1\"\n    image: x\n"), 1, 4)
	f.Add([]byte("kind: Pod\nspec:\n  containers:\n  - {name: c, env: [{name: FI_PROVIDER, valueFrom: {fieldRef: {fieldPath: x}}}]}\n"), 1, 3)
	f.Fuzz(func(t *testing.T, data []byte, line, which int) {
		c := PodChange{Line: line, Container: "c"}
		switch which % 5 {
		case 0:
			c.AddCapabilities = []string{"IPC_LOCK"}
		case 1:
			c.Container, c.Volume, c.Size = "", "v", "1Gi"
		case 2:
			c.Limits = map[string]string{"memory": "2Gi"}
		case 3:
			c.Env = map[string]string{"FI_PROVIDER": "efa", "NCCL_COLLNET_ENABLE": "0"}
		default:
			c.RemoveEnv = []string{"FI_PROVIDER"}
		}
		out, err := editPod(data, c)
		if err == nil && out == nil {
			t.Fatal("no error and no file")
		}
	})
}
