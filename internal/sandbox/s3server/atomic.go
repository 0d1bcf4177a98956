package s3server

import (
	"fmt"
	"io"
	"net/http"
	"os"
	"sync"
)

// atomicWrites gives the file backend S3's semantics for readers and
// writers of one object: gofakes3 writes an object in place (truncate,
// then copy), so a read during a write saw part of the new object, and
// an upload broken off left the object truncated where S3 keeps the old
// one whole. Here a request's body is first spooled to a file of dir in
// full, and only then, under a write lock that no read holds, handed to
// gofakes3; reads hold the read lock while they are served.
func atomicWrites(dir string, next http.Handler) http.Handler {
	var mu sync.RWMutex
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodGet || r.Method == http.MethodHead {
			mu.RLock()
			defer mu.RUnlock()
			next.ServeHTTP(w, r)
			return
		}
		if r.Body != nil && r.Body != http.NoBody {
			spool, err := spoolBody(dir, r)
			if err != nil {
				http.Error(w, err.Error(), http.StatusBadRequest)
				return
			}
			defer os.Remove(spool.Name())
			defer spool.Close()
			r.Body = spool
		}
		mu.Lock()
		defer mu.Unlock()
		next.ServeHTTP(w, r)
	})
}

// spoolBody reads r's whole body into a temporary file of dir, refusing
// one shorter than its Content-Length, and returns it rewound.
func spoolBody(dir string, r *http.Request) (*os.File, error) {
	f, err := os.CreateTemp(dir, "upload-*")
	if err != nil {
		return nil, err
	}
	n, err := io.Copy(f, r.Body)
	if err == nil && r.ContentLength >= 0 && n != r.ContentLength {
		err = fmt.Errorf("request body of %d bytes, %d announced", n, r.ContentLength)
	}
	if err == nil {
		_, err = f.Seek(0, io.SeekStart)
	}
	if err != nil {
		f.Close()
		os.Remove(f.Name())
		return nil, fmt.Errorf("read the request body: %w", err)
	}
	return f, nil
}
