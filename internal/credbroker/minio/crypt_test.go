package minio

import (
	"bytes"
	"testing"
)

func TestSealOpen(t *testing.T) {
	plain := bytes.Repeat([]byte(`{"accessKey":"k","secretKey":"s"}`), 5000) // several sio fragments
	sealed, err := seal("password", plain)
	if err != nil {
		t.Fatal(err)
	}
	if sealed[saltLen] != algPBKDF2AESGCM {
		t.Fatalf("algorithm id %#x", sealed[saltLen])
	}
	got, err := open("password", sealed)
	if err != nil || !bytes.Equal(got, plain) {
		t.Fatalf("round trip: %v", err)
	}
	if _, err := open("wrong", sealed); err == nil {
		t.Fatal("opened with the wrong password")
	}
	sealed[len(sealed)-1] ^= 1
	if _, err := open("password", sealed); err == nil {
		t.Fatal("opened a tampered body")
	}
	if _, err := open("password", sealed[:10]); err == nil {
		t.Fatal("opened a truncated header")
	}
}
