package collectors

import "errors"

// ErrParse is wrapped by every parser error.
var ErrParse = errors.New("parse error")
