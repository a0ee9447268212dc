package policies

import (
	"context"
	"testing"

	"github.com/open-policy-agent/opa/v1/storage"
)

func storage_read(t *testing.T, ctx context.Context, store storage.Store) storage.Transaction {
	t.Helper()
	txn, err := store.NewTransaction(ctx)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { store.Abort(ctx, txn) })
	return txn
}
