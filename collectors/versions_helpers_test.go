package collectors

import (
	"context"

	"github.com/fleetaudit/fleetaudit/snapshot"
)

// versionsTestCollection runs one family's collector against src.
func versionsTestCollection(src Source) *collection {
	return &collection{
		ctx:  context.Background(),
		src:  src,
		snap: snapshot.New(""),
		opts: Options{MaxFileSize: DefaultMaxFileSize},
	}
}
