package windows

// How HNS objects are listed and deleted, given hcn's calls and how to tell
// its "not found" errors (hns.go passes both): no Windows call of its own,
// so it builds, and is tested, on any OS.

import (
	"fmt"
	"strings"

	"github.com/capwin/capwin/node-components/host"
)

// listAttempts is how often Networks and Endpoints list again when an object
// disappears while they list: hcn lists the ids, then reads each object.
const listAttempts = 3

// deleteObject deletes the HNS object id of a kind (network, endpoint) with
// del; a missing one is host.ErrNotExist. hcn's errors for a missing object
// vary, so when del fails the objects are listed to tell.
func deleteObject[T any](kind, id string, del func() error, list func() ([]T, error), idOf func(T) string, notFound func(error) bool) error {
	if !isGUID(id) {
		return fmt.Errorf("deleting HNS %s %q: not an HNS id: %w", kind, id, host.ErrNotExist)
	}
	err := del()
	if err == nil {
		return nil
	}
	if notFound(err) || !exists(list, idOf, id, notFound) {
		return fmt.Errorf("deleting HNS %s %s: %w", kind, id, host.ErrNotExist)
	}
	return fmt.Errorf("deleting HNS %s %s: %w", kind, id, err)
}

// listRetrying lists again when an object disappeared while hcn listed.
func listRetrying[T any](list func() ([]T, error), notFound func(error) bool) ([]T, error) {
	var err error
	for range listAttempts {
		var items []T
		items, err = list()
		if err == nil || !notFound(err) {
			return items, err
		}
	}
	return nil, err
}

// exists reports whether an object with id is listed; when listing fails it
// says yes, so that the caller reports its own error rather than a
// not-found.
func exists[T any](list func() ([]T, error), idOf func(T) string, id string, notFound func(error) bool) bool {
	items, err := listRetrying(list, notFound)
	if err != nil {
		return true
	}
	for _, it := range items {
		if strings.EqualFold(idOf(it), id) {
			return true
		}
	}
	return false
}
