package access_test

import (
	"context"
	"errors"
	"testing"

	"github.com/gatehouse-auth/gatehouse/internal/access"
	"github.com/gatehouse-auth/gatehouse/internal/store"
)

// TestSelfAndZeroHaveNoRights: the user's own principal and the zero
// principal (a caller nobody named) are refused by every decision, so
// neither can stand in for a credential by accident. The decisions for
// these kinds read nothing, hence the empty Queries.
func TestSelfAndZeroHaveNoRights(t *testing.T) {
	ctx := context.Background()
	for name, p := range map[string]access.Principal{"Self": access.Self(), "zero": {}} {
		for _, need := range []access.Level{access.Read, access.Write, access.Manage} {
			if err := access.App(ctx, store.Queries{}, p, "app", need); !errors.Is(err, access.ErrForbidden) {
				t.Errorf("App(%s, level %d) = %v; want ErrForbidden", name, need, err)
			}
		}
		if _, err := access.Workspace(ctx, store.Queries{}, p, "ws", access.RoleMember); !errors.Is(err, access.ErrForbidden) {
			t.Errorf("Workspace(%s) = %v; want ErrForbidden", name, err)
		}
		if err := access.OperatorOnly(p); !errors.Is(err, access.ErrForbidden) {
			t.Errorf("OperatorOnly(%s) = %v; want ErrForbidden", name, err)
		}
		if access.Reaches(p, "app", "ws") || access.Reaches(p, "", "ws") {
			t.Errorf("Reaches(%s) = true; want false", name)
		}
	}
	if access.Self().Kind != access.KindSelf || access.Self() == (access.Principal{}) {
		t.Errorf("Self() = %+v; want a principal of kind self, not the zero value", access.Self())
	}
}
