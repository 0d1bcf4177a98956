package s3server

import (
	"bufio"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
)

// decodeStreamingBody turns an aws-chunked request body (the STREAMING-*
// payload modes SDKs use for uploads, signed or unsigned, with or without
// trailing checksums) into the plain object bytes, because gofakes3 decodes
// only one of those modes and only on single-part uploads. Headers are
// rewritten to describe the decoded body.
func decodeStreamingBody(r *http.Request) error {
	mode := r.Header.Get("X-Amz-Content-Sha256")
	if !strings.HasPrefix(mode, "STREAMING-") {
		return nil
	}
	size, err := strconv.ParseInt(r.Header.Get("X-Amz-Decoded-Content-Length"), 10, 64)
	if err != nil {
		return fmt.Errorf("streaming upload without a valid X-Amz-Decoded-Content-Length")
	}
	r.Body = &chunkReader{src: bufio.NewReader(r.Body), closer: r.Body}
	r.ContentLength = size
	r.Header.Set("Content-Length", strconv.FormatInt(size, 10))
	r.Header.Set("X-Amz-Content-Sha256", "UNSIGNED-PAYLOAD")
	r.Header.Del("X-Amz-Decoded-Content-Length")
	r.Header.Del("X-Amz-Trailer")
	r.Header.Del("Content-Encoding")
	return nil
}

// chunkReader reads "<hex size>[;ext]\r\n<data>\r\n" chunks until the
// zero-size one, then discards the trailer.
type chunkReader struct {
	src    *bufio.Reader
	closer io.Closer
	left   int64
	done   bool
}

func (c *chunkReader) Read(p []byte) (int, error) {
	if c.done {
		return 0, io.EOF
	}
	if c.left == 0 {
		line, err := c.src.ReadString('\n')
		if err != nil {
			return 0, fmt.Errorf("aws-chunked body: read chunk header: %w", err)
		}
		line = strings.TrimRight(line, "\r\n")
		if line == "" { // the CRLF that ends the previous chunk
			return c.Read(p)
		}
		sizeHex, _, _ := strings.Cut(line, ";")
		n, err := strconv.ParseInt(sizeHex, 16, 64)
		if err != nil {
			return 0, fmt.Errorf("aws-chunked body: bad chunk size %q", sizeHex)
		}
		if n == 0 {
			c.done = true
			_, _ = io.Copy(io.Discard, c.src) // trailer
			return 0, io.EOF
		}
		c.left = n
	}
	if int64(len(p)) > c.left {
		p = p[:c.left]
	}
	n, err := c.src.Read(p)
	c.left -= int64(n)
	if err == io.EOF && c.left > 0 {
		err = io.ErrUnexpectedEOF
	}
	return n, err
}

func (c *chunkReader) Close() error { return c.closer.Close() }
