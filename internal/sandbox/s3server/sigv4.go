package s3server

import (
	"crypto/hmac"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"fmt"
	"net/http"
	"net/url"
	"sort"
	"strings"
)

const sigV4Algorithm = "AWS4-HMAC-SHA256"

// requireSignature lets a request through only when its Authorization header
// is a Signature Version 4 made with creds. The seed signature of streaming
// uploads is checked like any other; per-chunk signatures are not (gofakes3
// decodes the chunks), which is enough to prove the client holds the secret.
func requireSignature(creds Credentials, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if err := verifySigV4(r, creds); err != nil {
			w.Header().Set("Content-Type", "application/xml")
			w.WriteHeader(http.StatusForbidden)
			_, _ = fmt.Fprintf(w, "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<Error><Code>%s</Code><Message>%s</Message></Error>", err.code, xmlEscape(err.msg))
			return
		}
		if err := decodeStreamingBody(r); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		next.ServeHTTP(w, r)
	})
}

type authError struct{ code, msg string }

func verifySigV4(r *http.Request, creds Credentials) *authError {
	auth := r.Header.Get("Authorization")
	if auth == "" {
		return &authError{"AccessDenied", "anonymous access is not allowed; sign requests with AWS Signature Version 4"}
	}
	alg, fields, ok := strings.Cut(auth, " ")
	if !ok || alg != sigV4Algorithm {
		return &authError{"AccessDenied", "only AWS Signature Version 4 is accepted"}
	}
	parts := map[string]string{}
	for _, f := range strings.Split(fields, ",") {
		k, v, _ := strings.Cut(strings.TrimSpace(f), "=")
		parts[k] = v
	}
	credential := strings.Split(parts["Credential"], "/")
	if len(credential) != 5 {
		return &authError{"AuthorizationHeaderMalformed", "malformed Credential"}
	}
	if subtle.ConstantTimeCompare([]byte(credential[0]), []byte(creds.AccessKeyID)) != 1 {
		return &authError{"InvalidAccessKeyId", "the access key ID does not exist"}
	}
	date, region, service := credential[1], credential[2], credential[3]
	signedHeaders := strings.Split(parts["SignedHeaders"], ";")
	amzDate := r.Header.Get("X-Amz-Date")
	payload := r.Header.Get("X-Amz-Content-Sha256")
	if payload == "" {
		payload = "UNSIGNED-PAYLOAD"
	}

	var canon strings.Builder
	canon.WriteString(r.Method + "\n")
	canon.WriteString(canonicalPath(r.URL) + "\n")
	canon.WriteString(canonicalQuery(r.URL.Query()) + "\n")
	for _, h := range signedHeaders {
		v := r.Header.Values(http.CanonicalHeaderKey(h))
		if h == "host" {
			v = []string{r.Host}
		}
		if h == "content-length" && len(v) == 0 {
			v = []string{fmt.Sprint(r.ContentLength)}
		}
		for i := range v {
			v[i] = strings.Join(strings.Fields(v[i]), " ")
		}
		canon.WriteString(h + ":" + strings.Join(v, ",") + "\n")
	}
	canon.WriteString("\n" + parts["SignedHeaders"] + "\n" + payload)

	scope := strings.Join(credential[1:], "/")
	sum := sha256.Sum256([]byte(canon.String()))
	toSign := sigV4Algorithm + "\n" + amzDate + "\n" + scope + "\n" + hex.EncodeToString(sum[:])
	key := hmacSHA256([]byte("AWS4"+creds.SecretAccessKey), date)
	key = hmacSHA256(key, region)
	key = hmacSHA256(key, service)
	key = hmacSHA256(key, "aws4_request")
	want := hex.EncodeToString(hmacSHA256(key, toSign))
	if !hmac.Equal([]byte(want), []byte(parts["Signature"])) {
		return &authError{"SignatureDoesNotMatch", "the request signature does not match the one computed with the configured secret key"}
	}
	return nil
}

func hmacSHA256(key []byte, data string) []byte {
	m := hmac.New(sha256.New, key)
	m.Write([]byte(data))
	return m.Sum(nil)
}

// canonicalPath is the URI-encoded path; S3 encodes each segment once.
func canonicalPath(u *url.URL) string {
	p := u.EscapedPath()
	if p == "" {
		return "/"
	}
	segs := strings.Split(p, "/")
	for i, s := range segs {
		dec, err := url.PathUnescape(s)
		if err != nil {
			continue
		}
		segs[i] = uriEncode(dec)
	}
	return strings.Join(segs, "/")
}

func canonicalQuery(q url.Values) string {
	var pairs []string
	for k, vs := range q {
		for _, v := range vs {
			pairs = append(pairs, uriEncode(k)+"="+uriEncode(v))
		}
	}
	sort.Strings(pairs)
	return strings.Join(pairs, "&")
}

// uriEncode is SigV4's UriEncode: everything but unreserved characters is
// percent-encoded with upper-case hex.
func uriEncode(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		c := s[i]
		if (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-' || c == '_' || c == '.' || c == '~' {
			b.WriteByte(c)
			continue
		}
		fmt.Fprintf(&b, "%%%02X", c)
	}
	return b.String()
}

func xmlEscape(s string) string {
	return strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;").Replace(s)
}
