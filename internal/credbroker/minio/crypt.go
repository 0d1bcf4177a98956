package minio

import (
	"bytes"
	"crypto/pbkdf2"
	"crypto/rand"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"

	"github.com/secure-io/sio-go"
	"golang.org/x/crypto/argon2"
)

// MinIO's admin API encrypts the bodies that carry secrets (new service
// account keys, listings) with a key derived from the secret key of the
// credential that signs the request. The envelope is
//
//	salt (32 bytes) | algorithm id (1 byte) | nonce (8 bytes) | sio stream
//
// where the stream is a secure-io/sio DARE stream sealed with AES-256-GCM or
// ChaCha20-Poly1305 under a key derived from the password by Argon2id
// (time 1, memory 64 MiB, 4 threads) or PBKDF2-SHA256 (8192 rounds).
const (
	algArgon2idAESGCM   = 0x00
	algArgon2idChaCha20 = 0x01
	algPBKDF2AESGCM     = 0x02

	saltLen    = 32
	nonceLen   = 8
	headerLen  = saltLen + 1 + nonceLen
	pbkdf2Iter = 8192
)

// maxBody bounds what the client decrypts: listings of a few thousand
// service accounts fit well within it.
const maxBody = 16 << 20

// seal encrypts plaintext for the server. It always uses PBKDF2 with
// AES-256-GCM: the server accepts every algorithm id, and PBKDF2 spares the
// driver Argon2id's 64 MiB per request.
func seal(password string, plaintext []byte) ([]byte, error) {
	var hdr [headerLen]byte
	if _, err := io.ReadFull(rand.Reader, hdr[:]); err != nil {
		return nil, fmt.Errorf("random salt and nonce: %w", err)
	}
	hdr[saltLen] = algPBKDF2AESGCM
	stream, err := streamFor(password, hdr[:saltLen], algPBKDF2AESGCM)
	if err != nil {
		return nil, err
	}
	var out bytes.Buffer
	out.Write(hdr[:])
	w := stream.EncryptWriter(&out, hdr[saltLen+1:], nil)
	if _, err := w.Write(plaintext); err != nil {
		return nil, fmt.Errorf("encrypt: %w", err)
	}
	if err := w.Close(); err != nil {
		return nil, fmt.Errorf("encrypt: %w", err)
	}
	return out.Bytes(), nil
}

// open decrypts a body the server sealed with password.
func open(password string, sealed []byte) ([]byte, error) {
	if len(sealed) < headerLen {
		return nil, errors.New("encrypted body is shorter than its header")
	}
	salt, alg, nonce := sealed[:saltLen], sealed[saltLen], sealed[saltLen+1:headerLen]
	stream, err := streamFor(password, salt, alg)
	if err != nil {
		return nil, err
	}
	plain, err := io.ReadAll(io.LimitReader(stream.DecryptReader(bytes.NewReader(sealed[headerLen:]), nonce, nil), maxBody))
	if err != nil {
		return nil, fmt.Errorf("decrypt: %w", err)
	}
	return plain, nil
}

func streamFor(password string, salt []byte, alg byte) (*sio.Stream, error) {
	switch alg {
	case algArgon2idAESGCM:
		return sio.AES_256_GCM.Stream(argon2.IDKey([]byte(password), salt, 1, 64*1024, 4, 32))
	case algArgon2idChaCha20:
		return sio.ChaCha20Poly1305.Stream(argon2.IDKey([]byte(password), salt, 1, 64*1024, 4, 32))
	case algPBKDF2AESGCM:
		key, err := pbkdf2.Key(sha256.New, password, salt, pbkdf2Iter, 32)
		if err != nil {
			return nil, err
		}
		return sio.AES_256_GCM.Stream(key)
	default:
		return nil, fmt.Errorf("unknown encryption algorithm id %#x", alg)
	}
}
