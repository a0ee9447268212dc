package collectors

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/fleetaudit/fleetaudit/internal/safeio"
	"github.com/fleetaudit/fleetaudit/kube"
)

// collectPods adds the pods and pod templates of Options.Manifests, each
// with the file and line it came from as the source of "pods.<i>".
func collectPods(c *collection) {
	for _, name := range c.opts.Manifests {
		if c.ctx.Err() != nil {
			return
		}
		if c.opts.ManifestFS != nil {
			objs, errs := kube.ReadManifests(c.opts.ManifestFS, name)
			c.addPods(objs, errs, name, func(file string) string { return file })
			continue
		}
		info, err := os.Stat(name)
		if err != nil {
			c.fail("pods", name, err)
			continue
		}
		// Read through a DirFS so kube names files relative to dir, and
		// name them as the user did by joining dir back; safeio's never
		// blocks on a FIFO or reads a device.
		dir, root := name, "."
		if !info.IsDir() {
			dir, root = filepath.Dir(name), filepath.Base(name)
		}
		objs, errs := kube.ReadManifests(safeio.DirFS(dir), root)
		c.addPods(objs, errs, name, func(file string) string { return filepath.Join(dir, filepath.FromSlash(file)) })
	}
}

// addPods records objs and errs read from manifests named name; local maps
// a file's path in the manifest FS to the name users know it by.
func (c *collection) addPods(objs []kube.Object, errs []error, name string, local func(string) string) {
	for _, o := range objs {
		fact := fmt.Sprintf("pods.%d", len(c.snap.Pods))
		c.snap.Pods = append(c.snap.Pods, o.Pod)
		c.snap.Sources[fact] = fmt.Sprintf("%s:%d", local(o.File), o.Line)
	}
	for _, err := range errs {
		var me *kube.ManifestError
		if !errors.As(err, &me) {
			c.fail("pods", name, err)
			continue
		}
		file := local(me.File)
		if me.Line > 0 {
			c.fail("pods", file, fmt.Errorf("line %d: %w", me.Line, me.Err))
		} else {
			c.fail("pods", file, me.Err)
		}
	}
}
