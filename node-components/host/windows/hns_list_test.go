package windows

import (
	"errors"
	"slices"
	"testing"

	"github.com/capwin/capwin/node-components/host"
)

// errGone stands for hcn's "not found" errors in these tests.
var errGone = errors.New("element not found")

func isGone(err error) bool { return errors.Is(err, errGone) }

func TestListRetrying(t *testing.T) {
	calls := 0
	vanishingOnce := func() ([]string, error) {
		calls++
		if calls == 1 {
			return nil, errGone
		}
		return []string{"a"}, nil
	}
	if got, err := listRetrying(vanishingOnce, isGone); err != nil || !slices.Equal(got, []string{"a"}) || calls != 2 {
		t.Errorf("after one object vanished: %v, %v after %d calls; want [a] after 2", got, err, calls)
	}

	calls = 0
	alwaysVanishing := func() ([]string, error) { calls++; return nil, errGone }
	if _, err := listRetrying(alwaysVanishing, isGone); !errors.Is(err, errGone) || calls != listAttempts {
		t.Errorf("when objects keep vanishing: %v after %d calls, want errGone after %d", err, calls, listAttempts)
	}

	calls = 0
	broken := errors.New("HNS is down")
	failing := func() ([]string, error) { calls++; return nil, broken }
	if _, err := listRetrying(failing, isGone); !errors.Is(err, broken) || calls != 1 {
		t.Errorf("another error: %v after %d calls, want it at once", err, calls)
	}
}

func TestDeleteObject(t *testing.T) {
	const id = "B6A7D0C8-1A2B-4C3D-8E9F-0123456789AB"
	broken := errors.New("access denied")
	listOf := func(ids ...string) func() ([]string, error) {
		return func() ([]string, error) { return ids, nil }
	}
	idOf := func(s string) string { return s }
	for name, tc := range map[string]struct {
		id      string
		delErr  error
		list    func() ([]string, error)
		want    error
		deletes int
	}{
		"deleted":           {id: id, list: listOf(id), deletes: 1},
		"not an HNS id":     {id: "External", list: listOf(), want: host.ErrNotExist},
		"hcn says missing":  {id: id, delErr: errGone, list: listOf(id), want: host.ErrNotExist, deletes: 1},
		"no longer listed":  {id: id, delErr: broken, list: listOf("0F0F0F0F-1A2B-4C3D-8E9F-0123456789AB"), want: host.ErrNotExist, deletes: 1},
		"listed, any case":  {id: id, delErr: broken, list: listOf("b6a7d0c8-1a2b-4c3d-8e9f-0123456789ab"), want: broken, deletes: 1},
		"listing fails too": {id: id, delErr: broken, list: func() ([]string, error) { return nil, errors.New("HNS is down") }, want: broken, deletes: 1},
	} {
		t.Run(name, func(t *testing.T) {
			deletes := 0
			del := func() error { deletes++; return tc.delErr }
			err := deleteObject("network", tc.id, del, tc.list, idOf, isGone)
			if (tc.want == nil) != (err == nil) || (tc.want != nil && !errors.Is(err, tc.want)) {
				t.Errorf("deleteObject = %v, want %v", err, tc.want)
			}
			if deletes != tc.deletes {
				t.Errorf("%d deletes, want %d", deletes, tc.deletes)
			}
		})
	}
}
