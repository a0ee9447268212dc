package collectors

import (
	"bytes"
	"errors"
	"io"
	"regexp"
)

// NCCL's src/init.cc keeps its banner in the library so that `strings` shows
// the version: VERSION_STRING is "NCCL version " MAJOR.MINOR.PATCH
// NCCL_SUFFIX "+cuda" CUDA_MAJOR.CUDA_MINOR, e.g. "NCCL version 2.18.3+cuda12.2".
var (
	ncclBannerPrefix = []byte("NCCL version ")
	ncclBanner       = regexp.MustCompile(`^NCCL version (\d+\.\d+\.\d+)[0-9A-Za-z._~-]*(?:\+cuda\d+\.\d+)?`)
)

const (
	// ncclScanLimit caps how much of one library is read (libnccl is 200-400 MB).
	ncclScanLimit = 1 << 30
	ncclScanChunk = 1 << 20
	// ncclBannerMax bounds a banner's length; chunks overlap by this much so a
	// banner split across two reads is still seen whole.
	ncclBannerMax = 128
)

// scanNCCLVersion streams r in chunks of chunk bytes, reading at most limit
// bytes, and returns the version of the first NCCL banner it finds and the
// banner itself; "" when there is none.
func scanNCCLVersion(r io.Reader, limit int64, chunk int) (version, banner string, err error) {
	buf := make([]byte, chunk+ncclBannerMax)
	r = io.LimitReader(r, limit)
	kept := 0
	for {
		n, rerr := io.ReadFull(r, buf[kept:])
		data := buf[:kept+n]
		atEOF := errors.Is(rerr, io.EOF) || errors.Is(rerr, io.ErrUnexpectedEOF)
		if rerr != nil && !atEOF {
			return "", "", rerr
		}
		if v, b, ok := findNCCLBanner(data, atEOF); ok {
			return v, b, nil
		}
		if atEOF {
			return "", "", nil
		}
		kept = copy(buf, data[len(data)-ncclBannerMax:])
	}
}

// findNCCLBanner finds the first banner in data. One starting within
// ncclBannerMax of the end counts only at EOF: it may be cut short, and the
// next chunk, which starts with data's tail, sees it whole.
func findNCCLBanner(data []byte, atEOF bool) (version, banner string, ok bool) {
	for off := 0; ; {
		i := bytes.Index(data[off:], ncclBannerPrefix)
		if i < 0 {
			return "", "", false
		}
		start := off + i
		if !atEOF && start+ncclBannerMax > len(data) {
			return "", "", false
		}
		end := min(len(data), start+ncclBannerMax)
		if m := ncclBanner.FindSubmatchIndex(data[start:end]); m != nil {
			return string(data[start+m[2] : start+m[3]]), string(data[start : start+m[1]]), true
		}
		off = start + len(ncclBannerPrefix)
	}
}
