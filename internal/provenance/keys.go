package provenance

import (
	"context"
	"errors"
	"fmt"
	"regexp"
)

// MinKeyBytes is the shortest key accepted for signing or verifying.
const MinKeyBytes = 32

// ErrUnknownKey: a signature names a key the keyring does not hold.
var ErrUnknownKey = errors.New("unknown provenance key")

var keyID = regexp.MustCompile(`^[a-z0-9][a-z0-9-]{0,62}$`)

// Keys is where signing and verifying keys come from.
type Keys interface {
	// Active returns the key that signs new Backups.
	Active(ctx context.Context) (id string, key []byte, err error)
	// Lookup returns the key with id, or ErrUnknownKey.
	Lookup(ctx context.Context, id string) ([]byte, error)
}

// StaticKeys is a fixed keyring, for tests and tools.
type StaticKeys struct {
	ActiveID string
	Keys     map[string][]byte
}

// Active implements Keys.
func (s StaticKeys) Active(context.Context) (string, []byte, error) {
	k, ok := s.Keys[s.ActiveID]
	if !ok {
		return "", nil, fmt.Errorf("%w: active key %q", ErrUnknownKey, s.ActiveID)
	}
	return s.ActiveID, k, nil
}

// Lookup implements Keys.
func (s StaticKeys) Lookup(_ context.Context, id string) ([]byte, error) {
	k, ok := s.Keys[id]
	if !ok {
		return nil, fmt.Errorf("%w: %q", ErrUnknownKey, id)
	}
	return k, nil
}
