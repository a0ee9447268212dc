package collectors

import (
	"bytes"
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"strings"
)

// distInfoMetadata is the part of a wheel's METADATA file we use.
type distInfoMetadata struct {
	Name, Version         string
	NameLine, VersionLine int
}

// parseDistInfoMetadata reads the header block of a .dist-info/METADATA
// file (Python core metadata, RFC 822 style): "Field: value" lines,
// continuation lines starting with blanks, ended by an empty line after which
// the description body follows. The first Name and Version count.
func parseDistInfoMetadata(data []byte) (distInfoMetadata, []error) {
	var md distInfoMetadata
	var errs []error
	for i, raw := range strings.Split(string(data), "\n") {
		n := i + 1
		line := strings.TrimRight(raw, "\r")
		if strings.TrimSpace(line) == "" {
			break
		}
		if line[0] == ' ' || line[0] == '\t' {
			continue
		}
		field, value, ok := strings.Cut(line, ":")
		if !ok || field == "" || strings.ContainsAny(field, " \t") {
			errs = append(errs, fmt.Errorf("%w: line %d: not a \"Field: value\" line: %.40q", ErrParse, n, line))
			continue
		}
		value = strings.TrimSpace(value)
		switch strings.ToLower(field) {
		case "name":
			if md.NameLine == 0 {
				md.Name, md.NameLine = value, n
			}
		case "version":
			if md.VersionLine == 0 && value != "" {
				md.Version, md.VersionLine = value, n
			}
		}
	}
	if md.VersionLine == 0 {
		errs = append(errs, fmt.Errorf("%w: no Version field", ErrParse))
	}
	return md, errs
}

// parseRecord lists the files of a wheel's RECORD (CSV rows of path, hash,
// size; paths relative to the site-packages directory).
func parseRecord(data []byte) ([]string, error) {
	r := csv.NewReader(bytes.NewReader(data))
	r.FieldsPerRecord = -1
	r.ReuseRecord = true
	var files []string
	for {
		row, err := r.Read()
		if errors.Is(err, io.EOF) {
			return files, nil
		}
		if err != nil {
			return files, fmt.Errorf("%w: %w", ErrParse, err)
		}
		if len(row) > 0 && row[0] != "" {
			files = append(files, row[0])
		}
	}
}
