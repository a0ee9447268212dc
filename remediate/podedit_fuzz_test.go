package remediate

import "testing"

// editPod on any input either refuses or returns a file it checked; it
// never panics.
func FuzzEditPod(f *testing.F) {
	f.Add([]byte(pytorchJob), pytorchWorkerLine, 0)
	f.Add([]byte("kind: Pod\nspec:\n  containers:\n  - name: c\n    image: x"), 1, 0)
	f.Add([]byte("kind: Pod\nspec:\n  containers:\n  - {name: c, image: x}\n  volumes:\n  - name: v\n    emptyDir: {}\n"), 1, 1)
	f.Add([]byte("kind: Pod\nspec:\n  containers:\n  - name: c\n    resources:\n      limits: {memory: 1Gi}\n"), 1, 2)
	f.Fuzz(func(t *testing.T, data []byte, line, which int) {
		c := PodChange{Line: line, Container: "c"}
		switch which % 3 {
		case 0:
			c.AddCapabilities = []string{"IPC_LOCK"}
		case 1:
			c.Container, c.Volume, c.Size = "", "v", "1Gi"
		default:
			c.Limits = map[string]string{"memory": "2Gi"}
		}
		out, err := editPod(data, c)
		if err == nil && out == nil {
			t.Fatal("no error and no file")
		}
	})
}
