package chartdoc

import (
	"os"
	"path/filepath"
	"runtime"
	"testing"

	. "github.com/onsi/gomega"
)

func chartDir(name string) string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(file), "..", "..", "charts", name)
}

func TestParse(t *testing.T) {
	values := []byte(`## @section Common parameters
## @param name {string} The name.
name: ""
## @param count {int} How many.
count: 3
## @param obj {object} An object.
obj:
  ## @param obj.size {quantity} Its size.
  size: 4Gi
## @section Other
## @param list {[]string} A list | with a pipe.
list: [a]
`)
	g := NewWithT(t)
	params, err := Parse(values)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(params).To(Equal([]Param{
		{Section: "Common parameters", Name: "name", Type: "string", Description: "The name.", Value: `""`},
		{Section: "Common parameters", Name: "count", Type: "int", Description: "How many.", Value: "3"},
		{Section: "Common parameters", Name: "obj", Type: "object", Description: "An object.", Value: "{}"},
		{Section: "Common parameters", Name: "obj.size", Type: "quantity", Description: "Its size.", Value: "4Gi"},
		{Section: "Other", Name: "list", Type: "[]string", Description: "A list | with a pipe.", Value: "[]"},
	}))
	table := Table(params)
	g.Expect(table).To(ContainSubstring("### Other\n\n| Name | Description | Type | Value |"))
	g.Expect(table).To(ContainSubstring("| `list` | A list \\| with a pipe. | `[]string` | `[]` |"))
	// The generated table parses back into the same rows.
	rows := ParseTableRows(table)
	g.Expect(rows).To(HaveLen(5))
	g.Expect(rows[4]).To(Equal(Row{"list", "A list | with a pipe.", "[]string", "[]"}))
}

func TestParseRejectsBadComments(t *testing.T) {
	for name, values := range map[string]string{
		"documents a missing value": "## @param gone {string} Gone.\nname: x\n",
		"no type":                   "## @param name The name.\nname: x\n",
		"not yaml":                  "name: [\n",
	} {
		t.Run(name, func(t *testing.T) {
			_, err := Parse([]byte(values))
			NewWithT(t).Expect(err).To(HaveOccurred())
		})
	}
}

func TestSpliceNeedsMarkers(t *testing.T) {
	g := NewWithT(t)
	_, err := Splice("# no markers\n", "table")
	g.Expect(err).To(MatchError(ContainSubstring("lacks the markers")))
	out, err := Splice("a\n"+BeginMarker+"\nold\n"+EndMarker+"\nb\n", "new\n")
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(out).To(Equal("a\n" + BeginMarker + "\nnew\n" + EndMarker + "\nb\n"))
}

// The committed README is what `make chart-docs` produces from values.yaml.
func TestChartREADMEsAreCurrent(t *testing.T) {
	for _, chart := range []string{"etcd"} {
		t.Run(chart, func(t *testing.T) {
			g := NewWithT(t)
			want, err := Generate(chartDir(chart))
			g.Expect(err).NotTo(HaveOccurred())
			got, err := os.ReadFile(filepath.Join(chartDir(chart), "README.md"))
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(string(got)).To(Equal(want), "run `make chart-docs`")
		})
	}
}

// The etcd chart's parameter table equals the chart reference's table row
// for row: names, descriptions, types and defaults, in order.
func TestEtcdREADMEMatchesSeed(t *testing.T) {
	g := NewWithT(t)
	seed, err := os.ReadFile(filepath.Join(chartDir("etcd"), "testdata", "seed-parameters.md"))
	g.Expect(err).NotTo(HaveOccurred())
	readme, err := os.ReadFile(filepath.Join(chartDir("etcd"), "README.md"))
	g.Expect(err).NotTo(HaveOccurred())
	want := ParseTableRows(string(seed))
	g.Expect(want).To(HaveLen(8), "the seed copy lists eight parameters")
	g.Expect(ParseTableRows(string(readme))).To(Equal(want))
}
