package safeio

import (
	"errors"
	"os"
	"path/filepath"
	"syscall"
	"testing"
)

func TestReadFileRefusesFIFOWithoutBlocking(t *testing.T) {
	fifo := filepath.Join(t.TempDir(), "cmdline")
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Skipf("mkfifo: %v", err)
	}
	_, err := ReadFile(fifo, 1<<20)
	if !errors.Is(err, ErrNotRegular) {
		t.Fatalf("ReadFile(FIFO) = %v, want ErrNotRegular", err)
	}
}

func TestReadFileRefusesDevice(t *testing.T) {
	_, err := ReadFile("/dev/zero", 1<<20)
	if !errors.Is(err, ErrNotRegular) {
		t.Fatalf("ReadFile(/dev/zero) = %v, want ErrNotRegular", err)
	}
	link := filepath.Join(t.TempDir(), "snap.json")
	if err := os.Symlink("/dev/zero", link); err != nil {
		t.Fatal(err)
	}
	if _, err := ReadFile(link, 1<<20); !errors.Is(err, ErrNotRegular) {
		t.Fatalf("ReadFile(link to /dev/zero) = %v, want ErrNotRegular", err)
	}
}

func TestReadFileCap(t *testing.T) {
	p := filepath.Join(t.TempDir(), "f")
	if err := os.WriteFile(p, []byte("0123456789"), 0o644); err != nil {
		t.Fatal(err)
	}
	if b, err := ReadFile(p, 10); err != nil || string(b) != "0123456789" {
		t.Fatalf("ReadFile at the cap = %q, %v", b, err)
	}
	if _, err := ReadFile(p, 9); !errors.Is(err, ErrTooLarge) {
		t.Fatalf("ReadFile over the cap = %v, want ErrTooLarge", err)
	}
}
