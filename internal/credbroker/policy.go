package credbroker

import (
	"encoding/json"
	"slices"
)

// statement is one statement of an S3 (IAM-language) policy, in the shape
// this package writes and compares.
type statement struct {
	Effect    string         `json:"Effect"`
	Action    []string       `json:"Action"`
	Resource  []string       `json:"Resource,omitempty"`
	Condition map[string]any `json:"Condition,omitempty"`
}

type document struct {
	Version   string      `json:"Version"`
	Statement []statement `json:"Statement"`
}

// scopeStatements allow list of the bucket only under the prefix, get and
// put of objects under it, abort of its own multipart uploads and a read
// of the bucket's location. Nothing else: no delete, no other prefix, no
// bucket or admin action.
func scopeStatements(s Scope) []statement {
	bucket := "arn:aws:s3:::" + s.Bucket
	return []statement{
		{Effect: "Allow", Action: []string{"s3:ListBucket"}, Resource: []string{bucket},
			Condition: map[string]any{"StringLike": map[string]any{"s3:prefix": []string{s.Prefix + "*"}}}},
		{Effect: "Allow", Action: []string{"s3:GetObject", "s3:PutObject", "s3:AbortMultipartUpload", "s3:ListMultipartUploadParts"},
			Resource: []string{bucket + "/" + s.Prefix + "*"}},
		{Effect: "Allow", Action: []string{"s3:GetBucketLocation"}, Resource: []string{bucket}},
	}
}

func marshal(d document) json.RawMessage {
	out, err := json.Marshal(d)
	if err != nil {
		panic(err) // strings and maps of strings always marshal
	}
	return out
}

// Policy is the own policy of a tenant key: its scope's statements. MinIO,
// Ceph RGW and AWS IAM all read this language.
func Policy(s Scope) json.RawMessage {
	return marshal(document{Version: "2012-10-17", Statement: scopeStatements(s)})
}

// ParentPolicy is the policy of a tenant's parent identity: its scope's
// statements and an explicit deny of every admin action, so that a key
// under it that lost its own policy still reaches the scope only, and no
// key under it can mint or change keys (MinIO lets an account create keys
// of its own parent unless a policy denies it). It cannot stop a key from
// listing, inspecting or deleting its own parent's keys: MinIO allows that
// without asking any policy, which is why each tenant has a parent of its
// own.
func ParentPolicy(s Scope) json.RawMessage {
	return marshal(document{Version: "2012-10-17", Statement: append(scopeStatements(s),
		statement{Effect: "Deny", Action: []string{"admin:*"}})})
}

// SamePolicy reports whether two policy documents say the same: the same
// statements, whatever the order of statements, actions and resources, and
// whatever formatting the provider gave the document back in. A document
// that does not parse is never the same.
func SamePolicy(a, b json.RawMessage) bool {
	x, okA := canonical(a)
	y, okB := canonical(b)
	return okA && okB && x == y
}

func canonical(raw json.RawMessage) (string, bool) {
	var d document
	if len(raw) == 0 || json.Unmarshal(raw, &d) != nil || len(d.Statement) == 0 {
		return "", false
	}
	parts := make([]string, 0, len(d.Statement))
	for _, st := range d.Statement {
		st.Action, st.Resource = sorted(st.Action), sorted(st.Resource)
		if len(st.Condition) == 0 {
			st.Condition = nil
		}
		b, err := json.Marshal(st) // maps marshal with sorted keys
		if err != nil {
			return "", false
		}
		parts = append(parts, string(b))
	}
	slices.Sort(parts)
	out, _ := json.Marshal(struct {
		V string
		S []string
	}{d.Version, parts})
	return string(out), true
}

func sorted(s []string) []string {
	s = slices.Clone(s)
	slices.Sort(s)
	return slices.Compact(s)
}
