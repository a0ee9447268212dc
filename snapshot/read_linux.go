package snapshot

import (
	"errors"
	"fmt"
	"syscall"

	"github.com/fleetaudit/fleetaudit/internal/safeio"
)

// readRegular is readInto for a regular file in fewer system calls than
// through an os.File (no poller registration, one fstat, no finalizer): a
// fleet's worth of snapshots spends much of its reading there. ok is false
// when the file is not a regular one; readInto then opens it as safeio
// does, for the same error. Only a regular file is read; the cap applies
// to what is read, not to what fstat says.
func readRegular(file string, into []byte) (b []byte, ok bool, err error) {
	var fd int
	for {
		fd, err = syscall.Open(file, syscall.O_RDONLY|syscall.O_NONBLOCK|syscall.O_NOCTTY|syscall.O_CLOEXEC, 0)
		if !errors.Is(err, syscall.EINTR) {
			break
		}
	}
	if err != nil {
		return nil, true, err
	}
	defer syscall.Close(fd)
	var st syscall.Stat_t
	if err := syscall.Fstat(fd, &st); err != nil {
		return nil, true, err
	}
	if st.Mode&syscall.S_IFMT != syscall.S_IFREG {
		return nil, false, nil
	}
	b = into[:0]
	if want := int(min(st.Size, MaxBytes)) + 1; cap(b) < want {
		b = make([]byte, 0, want)
	}
	for {
		if len(b) == cap(b) {
			if len(b) > MaxBytes {
				break
			}
			b = append(b, 0)[:len(b)]
		}
		n, err := syscall.Read(fd, b[len(b):min(cap(b), MaxBytes+1)])
		if errors.Is(err, syscall.EINTR) {
			continue
		}
		if err != nil {
			return nil, true, err
		}
		if n == 0 {
			break
		}
		b = b[:len(b)+n]
	}
	if len(b) > MaxBytes {
		return nil, true, fmt.Errorf("%w: over the %d byte limit", safeio.ErrTooLarge, MaxBytes)
	}
	return b, true, nil
}
