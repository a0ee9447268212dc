package cluster

import (
	"fmt"
	"io"
)

// progress writes one line that each page rewrites ("\r"), for a terminal;
// done ends it. With no writer it does nothing.
type progress struct {
	w     io.Writer
	shown bool
}

func (p *progress) show(nodes, pods int) {
	if p.w == nil {
		return
	}
	fmt.Fprintf(p.w, "\rkubernetes: %d nodes, %d pods listed", nodes, pods)
	p.shown = true
}

func (p *progress) done() {
	if p.shown {
		fmt.Fprintln(p.w)
	}
}
