//go:build unix

package offheap

import "syscall"

func mmap(n int) ([]byte, error) {
	return syscall.Mmap(-1, 0, n, syscall.PROT_READ|syscall.PROT_WRITE, syscall.MAP_ANON|syscall.MAP_PRIVATE)
}

func munmap(b []byte) error { return syscall.Munmap(b) }
