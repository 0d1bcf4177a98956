// Package signedannotation is the one rule for a record the driver keeps
// in an annotation of an object a tenant can write (a Plan's plan-status,
// a dry-run RestoreJob's rehearsal): strict JSON of the record's own
// fields and nothing after it, bounded in bytes, and signed with the
// provenance key for one object (its kind of record, namespace, name and
// UID), so that a record edited, copied onto another object (or a
// re-created one of the same name) or made up never verifies. The driver
// believes only a record that verifies; tools without the key may show
// one (Peek) and decide nothing by it.
package signedannotation

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/etcd-backup-driver/etcd-backup-driver/internal/provenance"
)

// Signed is a record type whose Signature field (the driver's mark over
// the rest) SignatureField reaches.
type Signed[T any] interface {
	*T
	SignatureField() *string
}

// Form is one kind of record: its annotation, its size bound and the
// name its signatures are bound to.
type Form struct {
	Annotation string
	MaxBytes   int
	// Domain names the record in its signatures ("plan-status"): a record
	// of one kind never verifies as another's.
	Domain string
}

// ErrTooLarge: the signed record is longer than the form's bound.
var ErrTooLarge = errors.New("record over its bound")

// Read returns the driver's record on obj: ok is false when it has none,
// or one the driver did not write for this object (it does not parse
// strictly, is too long, or its signature does not verify), and ignored
// then says why ("" when there is no annotation at all). The error is only
// for keys that cannot be read now (retry). The record comes back without
// its signature.
func Read[T any, P Signed[T]](ctx context.Context, keys provenance.Keys, f Form, obj metav1.Object) (rec T, ok bool, ignored string, err error) {
	var zero T
	raw, found := obj.GetAnnotations()[f.Annotation]
	if !found {
		return zero, false, "", nil
	}
	rec, err = parse[T](raw, f.MaxBytes)
	if err != nil {
		return zero, false, err.Error(), nil
	}
	body, err := unsigned[T, P](rec)
	if err != nil {
		return zero, false, err.Error(), nil
	}
	verified, err := provenance.CheckMark(ctx, keys, f.domain(obj), body, *P(&rec).SignatureField())
	if err != nil {
		return zero, false, "", fmt.Errorf("verify the %s record on %s/%s: %w", f.Domain, obj.GetNamespace(), obj.GetName(), err)
	}
	if !verified {
		return zero, false, "its signature is not the driver's for this object", nil
	}
	*P(&rec).SignatureField() = ""
	return rec, true, "", nil
}

// Peek reads obj's record without verifying it, for display by tools that
// do not hold the driver's key; nothing is decided by it. false: no
// record, or one that does not parse.
func Peek[T any](f Form, obj metav1.Object) (T, bool) {
	var zero T
	raw, ok := obj.GetAnnotations()[f.Annotation]
	if !ok {
		return zero, false
	}
	rec, err := parse[T](raw, f.MaxBytes)
	if err != nil {
		return zero, false
	}
	return rec, true
}

// Encode returns rec as the annotation's value, signed for obj; a record
// longer than the bound is ErrTooLarge (the caller may cut it and retry).
func Encode[T any, P Signed[T]](ctx context.Context, keys provenance.Keys, f Form, obj metav1.Object, rec T) (string, error) {
	body, err := unsigned[T, P](rec)
	if err != nil {
		return "", err
	}
	mark, err := provenance.Mark(ctx, keys, f.domain(obj), body)
	if err != nil {
		return "", err
	}
	*P(&rec).SignatureField() = mark
	out, err := json.Marshal(rec)
	if err != nil {
		return "", fmt.Errorf("encode the %s record on %s/%s: %w", f.Domain, obj.GetNamespace(), obj.GetName(), err)
	}
	if len(out) > f.MaxBytes {
		return "", fmt.Errorf("%w: the %s record on %s/%s is %d bytes, over %d", ErrTooLarge, f.Domain, obj.GetNamespace(), obj.GetName(), len(out), f.MaxBytes)
	}
	return string(out), nil
}

// domain binds a record to one object of the form.
func (f Form) domain(obj metav1.Object) string {
	return "etcd-backup-driver " + f.Domain + "\n" + obj.GetNamespace() + "\n" + obj.GetName() + "\n" + string(obj.GetUID())
}

// unsigned is rec's signed bytes: its JSON without the signature.
func unsigned[T any, P Signed[T]](rec T) ([]byte, error) {
	*P(&rec).SignatureField() = ""
	body, err := json.Marshal(rec)
	if err != nil {
		return nil, fmt.Errorf("encode the record: %w", err)
	}
	return body, nil
}

// parse reads one JSON object with only T's fields, nothing after it, of
// at most max bytes.
func parse[T any](raw string, max int) (T, error) {
	var rec T
	if len(raw) > max {
		return rec, fmt.Errorf("it is %d bytes, over %d", len(raw), max)
	}
	dec := json.NewDecoder(bytes.NewReader([]byte(raw)))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&rec); err != nil {
		var zero T
		return zero, fmt.Errorf("it does not parse: %v", err)
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		var zero T
		return zero, errors.New("it does not parse: data after the record")
	}
	return rec, nil
}
